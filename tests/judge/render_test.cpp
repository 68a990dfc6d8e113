// tests/judge/render_test.cpp — the one rendering of findings (ropecheck/judge/render.hpp) every door uses.
#include <gtest/gtest.h>

#include "ropecheck/judge/classes.hpp"
#include "ropecheck/judge/render.hpp"

namespace ropecheck::judge_test {
namespace {

using namespace ropecheck::judge;

TEST(Render, FindingLine) {
  EXPECT_EQ(finding_line({classes::base_wrong, "base is 10000", 0.9}, "  "), "  [base_wrong] base is 10000\n");
  EXPECT_EQ(finding_line({classes::base_wrong, "", 0.9}, ""), "[base_wrong] \n");
}

TEST(Render, BlockByVerdict) {
  const findings_layout audit{"\n", "  ", " (see the distances above)"};
  verdict v;
  v.pass = true;
  EXPECT_EQ(findings_block(v, audit), "") << "a clean pass says nothing";
  v.findings = {{classes::angle_drift_fp32, "drift", 0.5}};
  EXPECT_EQ(findings_block(v, audit), "\nwarnings:\n  [angle_drift_fp32] drift\n");
  v.pass = false;
  v.findings.insert(v.findings.begin(), {classes::base_wrong, "base", 0.9});
  EXPECT_EQ(findings_block(v, audit), "\ndiagnosis (most evidence first):\n  [base_wrong] base\n  [angle_drift_fp32] drift\n");
  v.findings.clear();
  EXPECT_EQ(findings_block(v, audit), "\ndiagnosis: no known bug class explains the error (see the distances above)\n");
  EXPECT_EQ(findings_block(v, {"  ", "    ", ""}), "  diagnosis: no known bug class explains the error\n");
}

}  // namespace
}  // namespace ropecheck::judge_test
