// tests/judge/pass_cos_sin_test.cpp — cos/sin errors independent of position (pass_cos_sin.cpp).
#include "judge/judge_dumps.hpp"

#include <cmath>
#include <limits>

#include "passes.hpp"  // judge/src: the pass's threshold, tested at equality

namespace {

using namespace ropecheck;
using namespace ropecheck::judge_test;

constexpr double kInf = std::numeric_limits<double>::infinity();  // std::nextafter toward it: one ulp above

TEST(Diagnose, FastSinCos) {
  const auto c = claimed_config();
  const auto v = judge::audit(make_dump<float>(rope_geometry::of(c), fast_sincos_angle(c), kPos, kPos, "float32"), c);
  print("fast sin/cos", v);
  expect_top(v, "fast_sincos");
}

TEST(Diagnose, CosSinCacheInBf16) {
  const auto c = claimed_config();
  const auto v = judge::audit(
      make_dump<float>(rope_geometry::of(c), cached<bfloat16, hf_angle<float>>(hf_angle<float>(c)), kPos, kPos, "float32"), c);
  print("cos/sin cache in bf16", v);
  expect_top(v, "cos_sin_low_precision");
}

// A cos/sin error that grows with position is not fast_sincos (nor a low-precision cache): on
// positions 0..63 only, a frequency error of 1e-4 gives cos/sin errors ~ r p theta, 9x larger at
// 32..63 than at 1..7. Before, this was named fast_sincos; now nothing fits and it is unexplained.
TEST(Diagnose, ErrorGrowingWithPositionIsNotFastSinCos) {
  const auto c = claimed_config();
  std::vector<std::int64_t> pos;
  for (int i = 0; i < 64; ++i) pos.push_back(i);
  const auto v = judge::audit(
      make_dump<float, double>(rope_geometry::of(c), scaled_frequencies{c, 1e-4}, pos, pos, "float32"), c);
  print("positions 0..63, every frequency times 1 + 1e-4", v);
  expect_top(v, "unexplained");
  for (const auto& f : v.findings) {
    EXPECT_NE(f.bug_class, "fast_sincos") << f.sentence;
    EXPECT_NE(f.bug_class, "cos_sin_low_precision") << f.sentence;
  }
}

// ---- the growth ratio (the largest error at p 1..7 against the largest at 32..63) ----
// Equality does not grow: "at least a quarter" is inclusive. A frequency error, growing as p, gives
// at most 7/32 < 1/4 of the late error at 1..7, so the quarter itself is on the side of an error
// independent of position (fast_sincos, cos_sin_low_precision); x4 is exact, so the neighbours of
// late/4 are the neighbours of the threshold.
TEST(Diagnose, AQuarterOfTheLateErrorDoesNotGrow) {
  using judge::detail::error_does_not_grow;
  for (const double late : {1.0, 3e-3, 0.7}) {
    const double quarter = late / 4;  // exact
    EXPECT_TRUE(error_does_not_grow(quarter, late)) << late;
    EXPECT_FALSE(error_does_not_grow(std::nextafter(quarter, 0.0), late)) << late;
    EXPECT_TRUE(error_does_not_grow(std::nextafter(quarter, kInf), late)) << late;
  }
  EXPECT_FALSE(error_does_not_grow(7.0 / 32, 1.0));  // a frequency error's ratio grows
}

}  // namespace
