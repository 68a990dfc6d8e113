// Tests of ropecheck/error.hpp: one error function, every special value.
#include "ropecheck/error.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

namespace ropecheck {
namespace {

constexpr double inf = std::numeric_limits<double>::infinity();
constexpr double nan = std::numeric_limits<double>::quiet_NaN();

TEST(UlpError, is_zero_for_the_exact_value_and_one_for_the_neighbour) {
  EXPECT_EQ(ulp_error<float>(1.0f, 1.0), 0.0L);
  EXPECT_EQ(ulp_error<float>(std::nextafter(1.0f, 2.0f), 1.0), 1.0L);
  EXPECT_EQ(ulp_error<double>(std::nextafter(1.0, 0.0), 1.0), 0.5L) << "below a power of two the spacing halves";
}

TEST(UlpError, measures_against_the_unevaluated_double_double_reference) {
  // reference 1 + 2^-60 as hi + lo: a long double result of exactly 1 is 2^-60 / 2^-63 = 8 ulps off.
  EXPECT_EQ(ulp_error<long double>(1.0L, 1.0, std::ldexp(1.0, -60)), 8.0L);
}

TEST(UlpError, treats_nan_and_infinity_by_rule) {
  EXPECT_EQ(ulp_error<float>(std::numeric_limits<float>::quiet_NaN(), nan), 0.0L);
  EXPECT_TRUE(std::isinf(ulp_error<float>(std::numeric_limits<float>::quiet_NaN(), 1.0)));
  EXPECT_TRUE(std::isinf(ulp_error<float>(1.0f, nan)));
  EXPECT_EQ(ulp_error<float>(std::numeric_limits<float>::infinity(), inf), 0.0L);
  EXPECT_TRUE(std::isinf(ulp_error<float>(std::numeric_limits<float>::infinity(), -inf)));
  EXPECT_TRUE(std::isinf(ulp_error<float>(3.0f, inf)));
}

TEST(UlpError, uses_subnormal_spacing_below_the_smallest_normal) {
  const float tiny = std::numeric_limits<float>::denorm_min();
  EXPECT_EQ(ulp_error<float>(2 * tiny, static_cast<double>(tiny)), 1.0L);
  EXPECT_EQ(ulp_error<float>(tiny, 0.0), 1.0L);
  EXPECT_EQ(ulp_of<bfloat16>(0.0L), std::ldexp(1.0L, -133));
  EXPECT_EQ(ulp_of<float16>(1e-6L), std::ldexp(1.0L, -24));
}

TEST(UlpError, counts_signed_zeros_equal_but_bitwise_equal_does_not) {
  EXPECT_EQ(ulp_error<double>(-0.0, 0.0), 0.0L);
  EXPECT_FALSE(bitwise_equal(-0.0, 0.0));
  EXPECT_TRUE(bitwise_equal(bfloat16(1.5f), bfloat16(1.5f)));
}

TEST(ScaledError, divides_the_absolute_error_by_the_scale) {
  EXPECT_EQ(scaled_error(1.5L, 1.0, 0.0, 0.25L), 2.0L);
  EXPECT_EQ(scaled_error(1.0L, 1.0, 0.0, 0.0L), 0.0L) << "no error is no error whatever the scale";
  EXPECT_TRUE(std::isinf(scaled_error(1.0L, nan, 0.0, 1.0L)));
}

}  // namespace
}  // namespace ropecheck
