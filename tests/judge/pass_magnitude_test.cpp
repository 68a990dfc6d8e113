// tests/judge/pass_magnitude_test.cpp — the implied attention factor (pass_magnitude.cpp).
#include "judge/judge_dumps.hpp"

namespace {

using namespace ropecheck;
using namespace ropecheck::judge_test;

TEST(Diagnose, AttentionFactorMissing) {
  auto c = yarn_claim();
  auto impl = c;
  impl.attention_factor = 1.0;
  const auto v = judge::audit(make_dump<float>(rope_geometry::of(c), hf_angle<float>(impl), kPos, kPos, "float32"), c);
  print("yarn attention factor missing", v);
  expect_top(v, "attention_factor_wrong");
  EXPECT_NE(v.findings.front().sentence.find("missing"), std::string::npos);
}

}  // namespace
