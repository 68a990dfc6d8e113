// tools/audit/plugin_output.hpp — what `ropecheck audit --plugin` prints and writes: the dump audit's
// own summary, JSON and JUnit for the judge's verdict on the probe (audit_output.hpp), followed by the
// properties. The json header stays inside plugin_output.cpp.
#pragma once

#include <string>

#include "audit_output.hpp"
#include "plugin_audit.hpp"

namespace ropecheck::audit {

// The probe's audit as a dump audit's report (source: the plugin; claimed: its declared convention).
[[nodiscard]] audit_report plugin_probe_report(const plugin_audit_result& r, const std::string& version,
                                               const std::string& command);

[[nodiscard]] std::string plugin_summary(const plugin_audit_result& r, const std::string& version,
                                         const std::string& command);
// The dump audit's keys (kind "plugin"; pass and exit_code the whole plugin audit's, the judge's
// alone under "judge"), findings: the door's, the judge's, then property_failed; plus "plugin",
// "seed", "max_success", "rerun", "properties".
[[nodiscard]] std::string plugin_json(const plugin_audit_result& r, const std::string& version, const std::string& command);
// One testcase for the judge's verdict (failure type: the first bug class), one per property.
[[nodiscard]] std::string plugin_junit(const plugin_audit_result& r, const std::string& version, const std::string& command);

}  // namespace ropecheck::audit
