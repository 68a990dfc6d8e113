// conformance/drivers/drift_run.hpp — one property against a kernel driven from outside, the way
// every door reports it (`ropecheck audit --plugin`, the conformance suite).
//
// The property runs first with the exact-angle allowance, without shrinking; a failure there is run
// again, shrinking, with the fp32-angle allowance, and passing that makes it a drift warning: the
// excess is angle drift only, which fp32 angles (HF, llama.cpp) have by design. Strict mode, or a
// replay of this property (RC_PARAMS="reproduce=..."), is one run with shrinking, under the exact-angle
// allowance when strict and the fp32-angle one otherwise.
#pragma once

#include <string>
#include <utility>

#include "property_runner.hpp"
#include "property_report.hpp"
#include "rope_properties.hpp"

namespace ropecheck::test {

struct drift_outcome {
  property_outcome outcome;  // the reported run (shrunk counterexample, reproduce string)
  bool drift_warning = false;
  std::string drift;         // the exact-angle run's first message line, when drift_warning
};

// `id` names the property in reproduce strings; `run` carries seed, cases, listener and the
// reproduce entries (its listener must be set when reproduce entries are).
inline drift_outcome run_with_drift(const named_property& p, const std::string& id, const rope_under_test& exact_angles,
                                    const rope_under_test& fp32_angles, property_run run, bool strict) {
  run.cases = p.cases;
  auto once = [&](const std::string& name, const rope_under_test& impl, bool shrink) {
    property_run r = run;
    if (!shrink) r.params.disableShrinking = true;
    return run_property(name, p.make(impl), r);
  };
  drift_outcome d;
  const bool replaying = run.reproduce && run.reproduce->count(id) > 0;
  if (strict || replaying) {
    d.outcome = once(id, strict ? exact_angles : fp32_angles, true);
    return d;
  }
  // Unshrunk: only whether the exact-angle allowance holds matters here.
  property_outcome exact = once(id + "/exact-angles", exact_angles, false);
  if (exact.passed) {
    d.outcome = std::move(exact);
    return d;
  }
  d.outcome = once(id, fp32_angles, true);
  if (d.outcome.passed) {
    d.drift_warning = true;
    d.drift = first_line(property_message(exact.description));
  }
  return d;
}

}  // namespace ropecheck::test
