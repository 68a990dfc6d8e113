// tests/judge/pass_drift_test.cpp — angle error growing with position (pass_drift.cpp).
#include "judge/judge_dumps.hpp"

namespace {

using namespace ropecheck;
using namespace ropecheck::judge_test;

TEST(Diagnose, Fp32AnglesInAFloat64Dump) {
  const auto c = claimed_config();
  const auto v = audit::audit(
      make_dump<double, double>(rope_geometry::of(c), hf_angle<double>(c), kPos, kPos, "float64"), c);
  print("fp32 angles, float64 dump", v);
  expect_top(v, "angle_drift_fp32");
}

// Strict mode: the fp32 drift a default audit only warns about fails and is named.
TEST(Diagnose, StrictModeFailsFp32Drift) {
  const auto c = claimed_config();
  const auto d = make_dump<float>(rope_geometry::of(c), hf_angle<float>(c), kPos, kPos, "float32");
  audit::audit_options strict;
  strict.strict = true;
  const auto v = audit::audit(d, c, strict);
  print("HF fp32, strict", v);
  expect_top(v, "angle_drift_fp32");
  EXPECT_TRUE(audit::audit(d, c).pass);
}

}  // namespace
