// tests/judge/pass_cos_sin_test.cpp — cos/sin errors independent of position (pass_cos_sin.cpp).
#include "judge/judge_dumps.hpp"

namespace {

using namespace ropecheck;
using namespace ropecheck::judge_test;

TEST(Diagnose, FastSinCos) {
  const auto c = claimed_config();
  const auto v = audit::audit(make_dump<float>(rope_geometry::of(c), fast_sincos_angle(c), kPos, kPos, "float32"), c);
  print("fast sin/cos", v);
  expect_top(v, "fast_sincos");
}

TEST(Diagnose, CosSinCacheInBf16) {
  const auto c = claimed_config();
  const auto v = audit::audit(
      make_dump<float>(rope_geometry::of(c), cached<bfloat16, hf_angle<float>>(hf_angle<float>(c)), kPos, kPos, "float32"), c);
  print("cos/sin cache in bf16", v);
  expect_top(v, "cos_sin_low_precision");
}

}  // namespace
