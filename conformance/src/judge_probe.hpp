// conformance/src/judge_probe.hpp — the probe set applied by a user's kernel and judged (internal).
#pragma once

#include <optional>
#include <string>

#include "driven.hpp"
#include "ropecheck/conformance/run.hpp"
#include "ropecheck/judge/judge.hpp"
#include "ropecheck/judge/probe.hpp"

namespace ropecheck::conformance::detail {

struct probe_verdict {
  judge::dump d;                 // what the kernel was given and returned
  judge::verdict v;              // the judge's verdict on it
  std::optional<judge::finding> nondeterministic;  // prefill: the second application differed (judge::repeat_call_finding)
};

// make_probe(declared, seed, probe_heads), without the tokens past the adapter's max_position.
[[nodiscard]] judge::probe_set probe_for(const resolved& r);
// Throws what apply() throws.
[[nodiscard]] probe_verdict judge_probe_verdict(const kernel& k, const resolved& r, call_form form);
// The verdict in lines: what was judged, the figures, the diagnosis (no replay line).
[[nodiscard]] std::string verdict_lines(const kernel& k, const resolved& r, call_form form, const probe_verdict& pv);

}  // namespace ropecheck::conformance::detail
