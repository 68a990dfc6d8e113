// tools/audit/plugin_output.hpp — what `ropecheck audit --plugin` prints and writes: the dump audit's
// own summary, JSON and JUnit for the judge's verdict on the probe (audit_output.hpp), followed by the
// properties. The json header stays inside plugin_output.cpp.
#pragma once

#include <string>

#include "audit_output.hpp"
#include "plugin_audit.hpp"

namespace ropecheck::audit {

// The probe's audit in one call form as a dump audit's report (source: the plugin; claimed: its
// declared convention; a note saying how the calls were made).
[[nodiscard]] audit_report plugin_probe_report(const plugin_audit_result& r, const plugin_form_result& form,
                                               const std::string& version, const std::string& command);

// The summary: the kernel, the door's call findings, one dump-audit block per call form (prefill,
// decode), the properties, the verdict line (the door's, then each form's).
[[nodiscard]] std::string plugin_summary(const plugin_audit_result& r, const std::string& version,
                                         const std::string& command);
// The dump audit's keys (of the prefill form's dump; kind "plugin"; pass and exit_code the whole
// plugin audit's, the judge's alone — both forms — under "judge"), findings (plugin_audit.hpp's order,
// each with its "form": "prefill", "decode", "both" or "" for a property's), "forms": {"prefill": {...},
// "decode": {...}} each with ran, pass, max_error_ulps, worst_ratio, call_findings and findings; plus
// "plugin", "seed", "max_success", "rerun", "properties".
[[nodiscard]] std::string plugin_json(const plugin_audit_result& r, const std::string& version, const std::string& command);
// One testcase for the judge's verdict on both forms (failure type: the first bug class), one per property.
[[nodiscard]] std::string plugin_junit(const plugin_audit_result& r, const std::string& version, const std::string& command);

}  // namespace ropecheck::audit
