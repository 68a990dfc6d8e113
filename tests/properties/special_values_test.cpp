// Properties over every bit pattern: what the kernel and the error measure do with subnormals,
// signed zeros, huge values, infinities and NaN, where the outcome is defined.
#include <gtest/gtest.h>
#include <rapidcheck.h>

#include <cmath>
#include <vector>

#include "framework.hpp"
#include "generators.hpp"
#include "ropecheck/angle.hpp"
#include "ropecheck/error.hpp"
#include "ropecheck/presets.hpp"
#include "ropecheck/rope.hpp"

namespace ropecheck::test {
namespace {

template <class T>
class SpecialValues : public ::testing::Test {};
using Storage = ::testing::Types<float, double, bfloat16, float16>;
TYPED_TEST_SUITE(SpecialValues, Storage);

template <class T>
bool is_finite(T v) {
  return std::isfinite(static_cast<double>(scalar_traits<T>::widen(v)));
}

// Pythia rotates 32 of 128 coordinates: the other 96 must come out with the same bits, NaN
// payloads, signed zeros and subnormals included.
TYPED_TEST(SpecialValues, pass_through_coordinates_keep_every_bit_pattern) {
  using T = TypeParam;
  ROPECHECK_EXPECT_PROPERTY(std::string("pass_through_bits/") + std::string(scalar_name<T>()), [] {
    const auto cfg = *find_preset("pythia");
    const hf_angle<float> cs(cfg);
    std::vector<T> x(static_cast<std::size_t>(cfg.head_dim)), y(x.size());
    for (auto& v : x) v = *gen::any_bits<T>();
    const std::int64_t pos = *gen::position(std::int64_t{1} << 24);
    rotate_heads<float>(std::span<const T>(x), std::span<T>(y), 1, rope_geometry::of(cfg), pos, cs);
    for (std::size_t j = static_cast<std::size_t>(cfg.rotary_dim); j < x.size(); ++j)
      RC_ASSERT(scalar_traits<T>::bits(y[j]) == scalar_traits<T>::bits(x[j]));
  });
}

// A non-finite value in one rotated pair makes that pair non-finite and leaves every other pair
// bit-identical to the rotation without it: pairs are independent.
TYPED_TEST(SpecialValues, a_nan_or_infinity_poisons_exactly_its_own_pair) {
  using T = TypeParam;
  ROPECHECK_EXPECT_PROPERTY(std::string("non_finite_pair/") + std::string(scalar_name<T>()), [] {
    const auto cfg = *find_preset("llama2-7b");
    const auto g = rope_geometry::of(cfg);
    const direct_angle<float> cs(cfg);
    const auto xv = *gen::exact_vector(static_cast<std::size_t>(g.head_dim));
    std::vector<T> x(xv.size()), clean(x.size()), poisoned(x.size());
    for (std::size_t j = 0; j < x.size(); ++j) x[j] = scalar_traits<T>::narrow(xv[j]);
    const std::int64_t pos = *gen::position(std::int64_t{1} << 20);
    rotate_heads<float>(std::span<const T>(x), std::span<T>(clean), 1, g, pos, cs);
    const int band = *rc::gen::inRange(0, g.bands());
    const T special = *rc::gen::element(std::numeric_limits<T>::quiet_NaN(), std::numeric_limits<T>::infinity(),
                                        T(-std::numeric_limits<T>::infinity()));
    const auto [a, b] = g.pair_of(band);
    x[static_cast<std::size_t>(*rc::gen::element(a, b))] = special;
    rotate_heads<float>(std::span<const T>(x), std::span<T>(poisoned), 1, g, pos, cs);
    for (int other = 0; other < g.bands(); ++other) {
      const auto [oa, ob] = g.pair_of(other);
      for (const int j : {oa, ob}) {
        if (other == band) {
          // x_a * c or x_b * s is infinite or NaN; only a zero factor (cos or sin exactly 0, which
          // happens at position 0 for sin) can leave one output finite.
          continue;
        }
        RC_ASSERT(scalar_traits<T>::bits(poisoned[static_cast<std::size_t>(j)]) ==
                  scalar_traits<T>::bits(clean[static_cast<std::size_t>(j)]));
      }
    }
    RC_ASSERT(!is_finite(poisoned[static_cast<std::size_t>(a)]) || !is_finite(poisoned[static_cast<std::size_t>(b)]));
  });
}

// The error measure: zero against itself for every bit pattern (NaN against NaN included),
// infinite against a NaN on one side only.
TYPED_TEST(SpecialValues, ulp_error_is_zero_against_itself_for_every_bit_pattern) {
  using T = TypeParam;
  ROPECHECK_EXPECT_PROPERTY(std::string("ulp_error_self/") + std::string(scalar_name<T>()), [] {
    const T v = *gen::any_bits<T>();
    const double w = static_cast<double>(scalar_traits<T>::widen(v));
    RC_ASSERT(ulp_error<T>(v, w) == 0.0L);
    if (!std::isnan(w)) RC_ASSERT(std::isinf(ulp_error<T>(v, std::numeric_limits<double>::quiet_NaN())));
  });
}

TEST(SpecialValues16, every_bfloat16_and_float16_value_narrows_back_to_its_own_bits) {
  ROPECHECK_EXPECT_PROPERTY("round_trip_bf16", [] {
    const auto v = *gen::any_16bit_value<bfloat16>();
    if (std::isnan(static_cast<float>(v))) return;
    RC_ASSERT(scalar_traits<bfloat16>::bits(scalar_traits<bfloat16>::narrow(scalar_traits<bfloat16>::widen(v))) ==
              scalar_traits<bfloat16>::bits(v));
  });
  ROPECHECK_EXPECT_PROPERTY("round_trip_fp16", [] {
    const auto v = *gen::any_16bit_value<float16>();
    if (std::isnan(static_cast<float>(v))) return;
    RC_ASSERT(scalar_traits<float16>::bits(scalar_traits<float16>::narrow(scalar_traits<float16>::widen(v))) ==
              scalar_traits<float16>::bits(v));
  });
}

}  // namespace
}  // namespace ropecheck::test
