// ropecheck/judge/describe.hpp — a declared convention in one line, every field a rule reads, each number
// the shortest decimal that reads back as it ("head_dim 128, rotary_dim 128, base 500000, scaling
// llama3, ..."): what the plugin door and the conformance suite say they judged against. Covered by
// tests/audit/plugin_audit_test.cpp (PluginAudit.the_correct_example_plugin_passes_every_property: the
// line, field by field).
#pragma once

#include <string>

#include "ropecheck/config.hpp"

namespace ropecheck::judge {

[[nodiscard]] std::string convention_line(const rope_config& c);

}  // namespace ropecheck::judge
