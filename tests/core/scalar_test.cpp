// Tests of ropecheck/scalar.hpp: traits, bit patterns, and single-rounding narrowing.
#include "ropecheck/scalar.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>

namespace ropecheck {
namespace {

template <class T>
class ScalarTraits : public ::testing::Test {};
using HardwareScalars = ::testing::Types<float, double, long double, bfloat16, float16>;
TYPED_TEST_SUITE(ScalarTraits, HardwareScalars);

TYPED_TEST(ScalarTraits, digits_match_numeric_limits) {
  EXPECT_EQ(scalar_traits<TypeParam>::digits, int{std::numeric_limits<TypeParam>::digits});
  EXPECT_EQ(unit_roundoff<TypeParam>(), std::ldexp(1.0L, -int{std::numeric_limits<TypeParam>::digits}));
  // epsilon is the gap from 1 to the next value, read off the bit patterns. (Not from
  // numeric_limits: Eigen 3.4's numeric_limits<half>::epsilon() is 0x0800 = 2^-13, not 2^-10.)
  using tr = scalar_traits<TypeParam>;
  const TypeParam one = tr::narrow(1.0L);
  EXPECT_EQ(epsilon<TypeParam>(), tr::widen(tr::from_bits(tr::bits(one) + 1)) - 1.0L);
}

TYPED_TEST(ScalarTraits, bit_pattern_round_trips_and_tells_signed_zeros_apart) {
  using tr = scalar_traits<TypeParam>;
  const TypeParam values[] = {TypeParam(0.0f), TypeParam(-0.0f), TypeParam(1.0f), TypeParam(-2.5f),
                              std::numeric_limits<TypeParam>::denorm_min(),
                              std::numeric_limits<TypeParam>::infinity(),
                              (std::numeric_limits<TypeParam>::max)()};
  for (const auto v : values) EXPECT_EQ(tr::bits(tr::from_bits(tr::bits(v))), tr::bits(v));
  EXPECT_NE(tr::bits(TypeParam(0.0f)), tr::bits(TypeParam(-0.0f)));
}

TYPED_TEST(ScalarTraits, widening_is_exact_and_narrowing_returns_the_value) {
  using tr = scalar_traits<TypeParam>;
  for (int k = -10; k <= 10; ++k) {
    const long double v = std::ldexp(1.0L + std::ldexp(1.0L, 1 - tr::digits), k);  // 1 + eps, scaled
    const TypeParam t = tr::narrow(v);
    EXPECT_EQ(tr::widen(t), v) << "2^" << k << " (1 + eps) is representable and must survive";
  }
}

// Every one of the 65536 bf16 and half bit patterns widens and narrows back to itself.
template <class T>
void expect_all_16bit_patterns_round_trip() {
  using tr = scalar_traits<T>;
  int failures = 0;
  for (std::uint32_t b = 0; b <= 0xffff; ++b) {
    const T v = tr::from_bits(static_cast<std::uint16_t>(b));
    const T back = tr::narrow(tr::widen(v));
    const bool nan = std::isnan(static_cast<float>(v));
    if (nan ? !std::isnan(static_cast<float>(back)) : tr::bits(back) != b) ++failures;
  }
  EXPECT_EQ(failures, 0);
}
TEST(Scalar16, every_bfloat16_value_round_trips_through_long_double) { expect_all_16bit_patterns_round_trip<bfloat16>(); }
TEST(Scalar16, every_float16_value_round_trips_through_long_double) { expect_all_16bit_patterns_round_trip<float16>(); }

// Reference rounding for a 16-bit type: the nearest of the two neighbours bracketing v, ties to
// the even bit pattern, computed from the value set itself (no float conversion involved).
template <class T>
std::uint16_t nearest_even_pattern(long double v) {
  using tr = scalar_traits<T>;
  // Walk positive patterns (monotone in value) to the bracketing pair.
  const long double a = std::fabs(v);
  std::uint32_t lo = 0, hi = 0x7c00;  // bf16 and half both order positive finite patterns by value
  if constexpr (std::is_same_v<T, bfloat16>) hi = 0x7f80;
  while (hi - lo > 1) {
    const std::uint32_t mid = (lo + hi) / 2;
    (tr::widen(tr::from_bits(static_cast<std::uint16_t>(mid))) <= a ? lo : hi) = mid;
  }
  const long double dlo = a - tr::widen(tr::from_bits(static_cast<std::uint16_t>(lo)));
  const long double dhi = tr::widen(tr::from_bits(static_cast<std::uint16_t>(hi))) - a;
  std::uint32_t r = dlo < dhi ? lo : dhi < dlo ? hi : (lo % 2 == 0 ? lo : hi);
  if (std::signbit(v)) r |= 0x8000u;
  return static_cast<std::uint16_t>(r);
}

template <class T>
void expect_narrow_rounds_once(std::uint64_t seed) {
  using tr = scalar_traits<T>;
  std::uint64_t s = seed;
  auto next = [&] { s = s * 6364136223846793005ull + 1442695040888963407ull; return s >> 11; };
  int mismatches = 0;
  for (int n = 0; n < 200000; ++n) {
    // Values just around midpoints between neighbours are where double rounding goes wrong.
    const std::uint16_t base = static_cast<std::uint16_t>(0x0400 + next() % 0x3000);
    const long double a = tr::widen(tr::from_bits(base)), b = tr::widen(tr::from_bits(base + 1));
    const long double mid = (a + b) / 2;
    const long double offset = std::ldexp(static_cast<long double>(static_cast<std::int64_t>(next() % 2001) - 1000),
                                          -static_cast<int>(30 + next() % 30)) * (b - a);
    const long double v = mid + offset;
    if (tr::bits(tr::narrow(v)) != nearest_even_pattern<T>(v)) ++mismatches;
  }
  EXPECT_EQ(mismatches, 0) << "seed " << seed;
}
TEST(Scalar16, narrowing_to_bfloat16_is_correctly_rounded_near_midpoints) { expect_narrow_rounds_once<bfloat16>(1); }
TEST(Scalar16, narrowing_to_float16_is_correctly_rounded_near_midpoints) { expect_narrow_rounds_once<float16>(2); }

// The case that motivates narrow(): Eigen's bfloat16(double) rounds to float first.
TEST(Scalar16, narrowing_avoids_the_double_rounding_of_eigens_constructor) {
  const double v = 1.0 + std::ldexp(1.0, -8) + std::ldexp(1.0, -30);  // just above a bf16 midpoint
  EXPECT_EQ(static_cast<float>(scalar_traits<bfloat16>::narrow(v)), 1.0f + std::ldexp(1.0f, -7));
  EXPECT_EQ(static_cast<float>(bfloat16(v)), 1.0f) << "Eigen's double rounding (documents why narrow exists)";
}

TEST(Scalar16, arithmetic_rounds_after_every_operation) {
  const bfloat16 a(1.0f), b(std::ldexp(1.0f, -9));
  const bfloat16 sum = a + b;  // 1 + 2^-9 is a tie below bf16's half ulp: rounds to 1
  EXPECT_EQ(static_cast<float>(sum), 1.0f);
  // ...while a bf16 mixed with a float silently becomes float: the trap kernels avoid.
  const auto mixed = a * 1.0f;
  static_assert(std::is_same_v<decltype(mixed), const float>);
}

}  // namespace
}  // namespace ropecheck
