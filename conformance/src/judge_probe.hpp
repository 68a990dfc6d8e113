// conformance/src/judge_probe.hpp — the probe set applied by a user's kernel and judged (internal).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <vector>

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

// make_probe(declared, seed, heads), without the tokens past the adapter's max_position (seed: r.seed, heads:
// probe_heads by default).
[[nodiscard]] judge::probe_set probe_for(const resolved& r);
[[nodiscard]] judge::probe_set probe_for(const resolved& r, std::uint64_t seed, int heads);
// The probe set applied by `apply` (a kernel's apply or apply_k) in the calls of judge::plan_calls(p, form),
// y in the order of p's tokens. Throws what apply throws.
using apply_fn = std::function<void(std::span<const long double>, std::span<long double>, const call&)>;
[[nodiscard]] std::vector<long double> apply_probe(const apply_fn& apply, const judge::probe_set& p, call_form form);
// apply_probe as the judge reads it: p's positions and inputs, the outputs, the kernel's dtype name.
[[nodiscard]] judge::dump applied_dump(const apply_fn& apply, const judge::probe_set& p, call_form form,
                                       const std::string& dtype);
// Throws what apply() throws.
[[nodiscard]] probe_verdict judge_probe_verdict(const kernel& k, const resolved& r, call_form form);
// The verdict in lines: what was judged, the figures, the diagnosis (no replay line).
[[nodiscard]] std::string verdict_lines(const kernel& k, const resolved& r, call_form form, const probe_verdict& pv);

}  // namespace ropecheck::conformance::detail
