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
// decode), with apply_qk (ABI 3) the qk form's blocks per call form (the queries, the keys, the pair: score
// identity and findings), the properties, the verdict line (the door's, then each form's, then the qk form's).
[[nodiscard]] std::string plugin_summary(const plugin_audit_result& r, const std::string& version,
                                         const std::string& command);
// The dump audit's keys (of the prefill form's dump; kind "plugin"; pass and exit_code the whole
// plugin audit's, the judge's alone — both forms — under "judge"), findings (plugin_audit.hpp's order,
// each with its "form": "prefill", "decode", "both" or "" for a property's), "forms": {"prefill": {...},
// "decode": {...}} each with ran, pass, max_error_ulps, worst_ratio, call_findings and findings; with apply_qk
// (ABI 3) "qk": {entry, query_heads, key_heads, pass, forms: {"prefill": {...}, "decode": {...}}, each with ran,
// pass, queries and keys (pass, max_error_ulps, worst_ratio, findings), score, call_findings and the pair's
// findings} (no "qk" key without it); plus "plugin", "seed", "max_success", "rerun", "properties".
[[nodiscard]] std::string plugin_json(const plugin_audit_result& r, const std::string& version, const std::string& command);
// One testcase for the judge's verdict on both forms (failure type: the first bug class), with apply_qk one for
// the qk form's (its first bug class), one per property.
[[nodiscard]] std::string plugin_junit(const plugin_audit_result& r, const std::string& version, const std::string& command);

}  // namespace ropecheck::audit
