// tests/judge/pass_magnitude_test.cpp — the implied attention factor (pass_magnitude.cpp).
#include "judge/judge_dumps.hpp"

namespace {

using namespace ropecheck;
using namespace ropecheck::judge_test;

TEST(Diagnose, AttentionFactorMissing) {
  auto c = claimed_config(128);
  c.base = 1000000.0;
  c.scaling = scaling_kind::yarn;
  c.factor = 4.0;
  c.original_max_position_embeddings = 32768;
  c.max_position_embeddings = 131072;
  auto impl = c;
  impl.attention_factor = 1.0;
  const auto v = audit::audit(make_dump<float>(rope_geometry::of(c), hf_angle<float>(impl), kPos, kPos, "float32"), c);
  print("yarn attention factor missing", v);
  expect_top(v, "attention_factor_wrong");
  EXPECT_NE(v.findings.front().sentence.find("missing"), std::string::npos);
}

}  // namespace
