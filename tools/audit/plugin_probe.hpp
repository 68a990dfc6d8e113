// tools/audit/plugin_probe.hpp — the plugin door's probe: the judge's probe set applied by a foreign
// kernel, as the dump `ropecheck audit` would read from a file of its outputs (internal to the
// plugin audit; plugin_audit.hpp is the public face).
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "plugin_audit.hpp"
#include "plugin_child.hpp"
#include "ropecheck/judge/judge.hpp"
#include "ropecheck/judge/probe.hpp"

namespace ropecheck::audit {

struct probe_run {
  judge::dump d;                         // positions (and rows), x, y widened exactly; dtype the plugin's
  bool ran = false;                      // the kernel answered every call (d.y holds its first answer)
  std::vector<judge::finding> findings;  // about the calls (judge::class_kind::call): plugin_crashed, plugin_timeout,
                                         // plugin_out_of_bounds, plugin_error (nonzero return), nondeterministic
};

// The probe set p in the plugin's dtype, applied in the calls of judge::plan_calls(p, form) (a
// prefilled neighbour carries its probe token's inputs; its output is dropped). M-RoPE: each call is
// given its slice of p.position_rows (apply_call::position_rows), and the dump carries them. With `repeat` the whole
// plan is applied a second time and must answer bitwise the same (nondeterministic otherwise). The
// first failed call stops the form (findings: the door's, naming the call's positions).
[[nodiscard]] probe_run run_form(plugin::kernel_door& door, const judge::probe_set& p, judge::call_form form,
                                 plugin::dtype t, bool repeat);

// The qk form (plugin.h ABI 3, docs/scores.md) on the probe set q (its x are the queries, q.heads heads) and the keys
// and other inputs of judge::make_qk_inputs(q, in.kv_heads): the form's plan (judge::plan_calls(q, form)) applied
// through apply_qk, as python/ropecheck/_drive_qk.py and `ropecheck audit` of a qk outputs file apply it: once,
// and in prefill three more times: again (q's outputs, then k's, must repeat bitwise: nondeterministic), with
// the keys k_alt (q's outputs must not move) and with the queries q_alt (k's must not move:
// judge::crossing_finding's qk_crossed).
struct qk_probe_run {
  judge::dump queries, keys;             // {positions, q, q'} (q.heads heads) and {positions, k, k'} (kv_heads)
  bool ran = false;                      // the kernel answered every call of the first run
  std::vector<judge::finding> findings;  // about the calls: the door's (naming apply_qk and the run), then
                                         // prefill's nondeterministic and the crossing probe's qk_crossed
};
[[nodiscard]] qk_probe_run run_qk_form(plugin::kernel_door& door, const judge::probe_set& q, const judge::qk_inputs& in,
                                       judge::call_form form, plugin::dtype t);

// "float32", "float64", "bfloat16", "float16": the judge's names of the plugin dtypes.
[[nodiscard]] const char* judge_dtype(plugin::dtype t) noexcept;

// The door's finding for a failed apply() (status not ok), `what` saying which call it was.
[[nodiscard]] judge::finding door_finding(const plugin::apply_outcome& o, const std::string& what);

// The whole plugin audit (probe + judge + properties) of a kernel behind `door` that declares
// `declared` in dtype t (audit_plugin opens the door; tests open their own).
[[nodiscard]] plugin_audit_result audit_plugin_door(const std::filesystem::path& lib, const std::string& name,
                                                    const rope_config& declared, plugin::dtype t,
                                                    const std::shared_ptr<plugin::kernel_door>& door,
                                                    const plugin_audit_options& options);

}  // namespace ropecheck::audit
