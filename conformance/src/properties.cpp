// conformance/src/properties.cpp — one property of the suite against a user's kernel, with RapidCheck's
// shrinking, the suite's seed and a replay line; the drift rule is the plugin door's
// (conformance/drivers/drift_run.hpp).
#include <cstdlib>
#include <exception>
#include <string>
#include <string_view>
#include <vector>

#include "drift_run.hpp"
#include "driven.hpp"
#include "judge_probe.hpp"
#include "property_report.hpp"
#include "property_runner.hpp"
#include "rope_properties.hpp"
#include "suite_property.hpp"
#include "ropecheck/conformance/run.hpp"
#include "ropecheck/judge/sentence.hpp"

namespace ropecheck::conformance {
namespace {

using judge::fmt;

// What the judge says of the same kernel in decode calls (one token each, the form the properties
// call it in): the bug class a failing property points at.
std::string judge_hint(const kernel& k, const detail::resolved& r, std::vector<std::string>& classes) {
  try {
    const detail::probe_verdict pv = detail::judge_probe_verdict(k, r, call_form::decode);
    if (pv.v.pass || pv.v.findings.empty()) return "  the judge finds no bug class on the probe set in decode calls\n";
    std::string s = "  the judge on the probe set in decode calls (most evidence first):\n";
    for (const auto& f : pv.v.findings) {
      s += "    [" + f.bug_class + "] " + f.sentence + "\n";
      classes.push_back(f.bug_class);
    }
    return s;
  } catch (const std::exception& e) {
    return std::string("  (the judge could not run: ") + e.what() + ")\n";
  }
}

}  // namespace

namespace detail {

test::drift_outcome run_suite_property(const test::named_property& p, const test::driven_kernel& d, const resolved& r,
                                       const std::string& id) {
  const test::rope_under_test exact_angles = test::judged_binding(d, false);
  const test::rope_under_test fp32_angles = test::judged_binding(d, true);
  // RapidCheck's parameters come from RC_PARAMS (max_size, noshrink, reproduce=...); the seed and,
  // when the adapter gives one, max_success are the suite's.
  // (RapidCheck's configuration, which announces a seed of its own on stderr, is read only when
  // RC_PARAMS is set.)
  const rc::detail::Configuration config =
      std::getenv("RC_PARAMS") ? rc::detail::configuration() : rc::detail::Configuration{};
  test::detail::silent_listener silent;
  test::property_run run;
  run.params = config.testParams;
  run.params.seed = r.seed;
  if (r.opts.max_success > 0) run.params.maxSuccess = r.opts.max_success;
  run.listener = &silent;
  run.reproduce = &config.reproduce;
  return test::run_with_drift(p, id, exact_angles, fp32_angles, run, r.opts.strict);
}

std::string failure_lines(const test::property_outcome& o, const std::string& test_id) {
  std::string s = "  " + test::property_message(o.description) + "\n";
  if (!o.counterexample.empty()) s += "  shrunk counterexample:\n" + test::sparse_counterexample(o.counterexample);
  if (!o.reproduce.empty())
    s += "  replay: RC_PARAMS=\"" + o.reproduce + "\" " + executable_path() +
         (test_id.empty() ? std::string() : " --gtest_filter='" + test_id + "'") + "\n";
  return s;
}

}  // namespace detail

std::vector<std::string> property_names() {
  std::vector<std::string> v;
  for (const auto& p : test::rope_properties()) v.emplace_back(p.name);
  return v;
}

outcome check_property(const kernel& k, std::string_view property, const std::string& test_id) {
  outcome out;
  const auto all = test::rope_properties();
  const test::named_property* p = nullptr;
  for (const auto& q : all)
    if (property == q.name) p = &q;
  if (!p) {
    std::string names;
    for (const auto& q : all) names += (names.empty() ? "" : ", ") + std::string(q.name);
    out.message = "no property named " + std::string(property) + " (the suite has: " + names + ")\n";
    return out;
  }
  try {
    const detail::resolved r = detail::resolve(k);
    const test::driven_kernel d = detail::driven(k, r);
    if (property == "inverse_rotation_undoes_rotation" && !d.has_inverse) {
      out.status = status::skipped;
      out.message = "skipped: kernel " + k.name +
                    " declares neither options().inverse nor options().negative_positions, so R(p)^T cannot be asked of it\n";
      return out;
    }
    const std::string id = test_id.empty() ? "conformance/" + k.name + "/" + p->name : test_id;
    const test::drift_outcome o = detail::run_suite_property(*p, d, r, id);
    if (o.outcome.passed) {
      out.status = o.drift_warning ? status::warning : status::passed;
      out.message = fmt("%s: passed %d cases (seed %llu)\n", p->name, o.outcome.successes,
                        static_cast<unsigned long long>(o.outcome.seed));
      if (o.drift_warning)
        out.message += "  warning: within the fp32-angle allowance but not the exact-angle one (fp32 angle drift; "
                       "options().strict or ROPECHECK_STRICT=1 fails it): " + o.drift + "\n";
      return out;
    }
    out.status = status::failed;
    out.message = fmt("%s: FAILED after %d successful cases (seed %llu)\n", p->name, o.outcome.successes,
                      static_cast<unsigned long long>(o.outcome.seed));
    const std::string lines = detail::failure_lines(o.outcome, test_id);
    const auto replay = lines.find("  replay: ");
    out.message += lines.substr(0, replay) + judge_hint(k, r, out.bug_classes);
    if (replay != std::string::npos) out.message += lines.substr(replay);
  } catch (const std::exception& e) {
    out.status = status::failed;
    out.message = std::string("could not check ") + p->name + " on kernel " + k.name + ": " + e.what() + "\n";
  }
  return out;
}

}  // namespace ropecheck::conformance
