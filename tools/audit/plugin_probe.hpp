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

namespace ropecheck::audit {

struct probe_run {
  judge::dump d;                         // positions, x, y widened exactly; dtype the plugin's
  bool ran = false;               // the kernel answered (d.y holds its first answer)
  std::vector<judge::finding> findings;  // about the calls (judge::class_kind::call): plugin_crashed, plugin_timeout,
                                         // plugin_out_of_bounds, plugin_error (nonzero return), nondeterministic
};

// make_probe(declared, seed) in the plugin's dtype, applied twice in one call each (the second
// answer must be bitwise the first's).
[[nodiscard]] probe_run run_probe(plugin::kernel_door& door, const rope_config& declared, plugin::dtype t,
                                  std::uint64_t seed);

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
