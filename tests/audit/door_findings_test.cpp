// tests/audit/door_findings_test.cpp — the plugin door's own findings (tools/audit/plugin_probe.cpp door_finding,
// tools/audit/plugin_audit.cpp): each way a call can fail is named by its class of the catalogue
// (ropecheck/judge/classes.hpp, kind `call`), and a failing property is property_failed naming the property.
#include <gtest/gtest.h>

#include <iostream>
#include <string>

#include "plugin_audit.hpp"
#include "plugin_probe.hpp"
#include "ropecheck/judge/classes.hpp"

namespace ropecheck::audit {
namespace {

using plugin::apply_outcome;
using plugin::apply_status;

TEST(DoorFindings, EachFailedCallIsNamedByItsClassAndSaysWhichCall) {
  const struct {
    apply_status status;
    const char* bug_class;
  } cases[] = {{apply_status::crashed, judge::classes::plugin_crashed},
               {apply_status::timeout, judge::classes::plugin_timeout},
               {apply_status::out_of_bounds, judge::classes::plugin_out_of_bounds},
               {apply_status::error_code, judge::classes::plugin_error},
               {apply_status::unavailable, judge::classes::plugin_unavailable}};
  for (const auto& c : cases) {
    const judge::finding f = door_finding(apply_outcome{c.status, 3, 0, "what happened"}, "the probe's call 7");
    EXPECT_EQ(f.bug_class, c.bug_class);
    EXPECT_TRUE(judge::is_call_failure(f.bug_class)) << f.bug_class;
    EXPECT_EQ(f.sentence, "what happened (the probe's call 7)");
  }
  EXPECT_TRUE(door_finding(apply_outcome{}, "a call that worked").bug_class.empty());
}

TEST(DoorFindings, AFailingPropertyIsPropertyFailedNamingTheProperty) {
  plugin_audit_options o;
  o.seed = 0x5eed2026;
  o.max_success = 20;
  o.isolate = false;
  std::cout << "[ropecheck] seed " << *o.seed << " (probe and properties)\n";
  const plugin_audit_result r = audit_plugin(ROPECHECK_EXAMPLE_PLUGIN_BUGGY, o);
  int failed = 0, named = 0;
  for (const auto& p : r.properties) failed += p.passed ? 0 : 1;
  for (const auto& f : r.findings)
    if (f.bug_class == judge::classes::property_failed) {
      ++named;
      bool names_one = false;
      for (const auto& p : r.properties) names_one = names_one || (!p.passed && f.sentence.rfind(p.name + ": ", 0) == 0);
      EXPECT_TRUE(names_one) << f.sentence;
    }
  EXPECT_GT(failed, 0) << "the buggy example plugin (positions in bf16) fails properties";
  EXPECT_EQ(named, failed) << "one property_failed per failing property";
}

}  // namespace
}  // namespace ropecheck::audit
