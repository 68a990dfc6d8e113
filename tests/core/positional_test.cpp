// Tests of ropecheck/positional.hpp: each scheme against its published rule.
//   sinusoidal   against sinl/cosl in long double, within the error model of its contract
//   learned      lookups past the table throw and name the position and the length
//   ALiBi        slopes bit for bit (8 heads), and against the reference code's rule (6, 12, 16)
//   T5           buckets by hand from HF's formula; monotone; saturating; equal to exact arithmetic
//   RoPE rows    rotate_rows is rope.hpp's kernel applied row by row
#include "ropecheck/positional.hpp"

#include <gtest/gtest.h>

#include <boost/multiprecision/cpp_int.hpp>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "ropecheck/scalar.hpp"
#include "support/positions.hpp"

namespace ropecheck {
namespace {

template <class T>
class Positional : public ::testing::Test {};
using ScalarTypes = ::testing::Types<float, double, long double, bfloat16, float16>;
TYPED_TEST_SUITE(Positional, ScalarTypes);

template <class T>
auto bits(T v) { return scalar_traits<T>::bits(v); }

// ---------------------------------------------------------------------------------------------
// Sinusoidal

template <class T, class C>
void check_sinusoidal_against_long_double(int d) {
  const sinusoidal_encoding<T, C> pe(d);
  const long double uc = unit_roundoff<C>();
  const long double ut = std::is_same_v<T, C> ? 0.0L : unit_roundoff<T>();
  const long double uld = unit_roundoff<long double>();
  long double worst = 0;
  std::string worst_at;
  for (std::int64_t m : test::regime_positions(4096, 40, test::test_seed())) {
    for (int k = 0; k < d; ++k) {
      const int i = k / 2;
      const long double e = static_cast<long double>(2 * i) / d;
      const long double angle = static_cast<long double>(m) * std::pow(10000.0L, -e);
      const long double ref = k % 2 == 0 ? std::sin(angle) : std::cos(angle);
      // Contract of sinusoidal_encoding: angle off by (e ln(base) [exponent rounding, amplified by
      // pow] + 2 [pow < 1 ulp] + 1 [the product]) u_C |angle|; sin/cos add <= 1 ulp <= 2 u_C; the
      // rounding to T adds u_T; second-order terms are covered by the factor (1 + 8 u_C). The
      // long double reference itself is off by a few u_ld |angle| (exponent, powl, the product, sinl).
      const long double bound = ((e * std::log(10000.0L) + 3.0L) * uc * angle + 2.0L * uc + ut) * (1.0L + 8.0L * uc) +
                                6.0L * uld * (angle + 1.0L);
      const long double err = std::fabs(scalar_traits<T>::widen(pe.value(m, k)) - ref);
      ASSERT_LE(err, bound) << scalar_name<T>() << "/" << scalar_name<C>() << " d=" << d << " m=" << m << " k=" << k;
      if (err / bound > worst) {
        worst = err / bound;
        worst_at = "m=" + std::to_string(m) + " k=" + std::to_string(k);
      }
    }
  }
  std::printf("[ropecheck] sinusoidal %s via %s, d=%d, positions <= 4096: worst error %.3Lg of its bound (%s)\n",
              scalar_name<T>().data(), scalar_name<C>().data(), d, worst, worst_at.c_str());
}

TEST(Sinusoidal, values_match_sin_and_cos_in_long_double_within_the_error_model) {
  check_sinusoidal_against_long_double<float, float>(64);
  check_sinusoidal_against_long_double<double, double>(64);
  check_sinusoidal_against_long_double<double, double>(48);  // 2i/48 is not a dyadic: the exponent rounds
  check_sinusoidal_against_long_double<bfloat16, float>(64);
  check_sinusoidal_against_long_double<float16, float>(32);
}

TYPED_TEST(Positional, sinusoidal_is_sin_0_and_cos_0_at_position_0_and_adds_to_x_in_t) {
  using T = TypeParam;
  const sinusoidal_encoding<T> pe(6);
  for (int k = 0; k < 6; ++k) EXPECT_EQ(bits(pe.value(0, k)), bits(T(k % 2 == 0 ? 0 : 1))) << k;
  // Vaswani sec. 3.5: PE[1, 0] = sin(1), PE[1, 1] = cos(1): libm in double (the default
  // Compute), then one rounding to T.
  EXPECT_EQ(bits(pe.value(1, 0)), bits(scalar_traits<T>::narrow(std::sin(1.0))));
  EXPECT_EQ(bits(pe.value(1, 1)), bits(scalar_traits<T>::narrow(std::cos(1.0))));
  matrix<T> x(3, 6);
  pe.add_to(x);
  for (std::size_t m = 0; m < 3; ++m)
    for (int k = 0; k < 6; ++k) EXPECT_EQ(bits(x(m, static_cast<std::size_t>(k))), bits(pe.value(static_cast<std::int64_t>(m), k)));
  EXPECT_THROW((void)pe.value(0, 6), std::out_of_range);
}

// ---------------------------------------------------------------------------------------------
// Learned absolute

TYPED_TEST(Positional, learned_table_lookup_past_its_length_throws_and_names_position_and_length) {
  using T = TypeParam;
  const learned_absolute<T> table(8, 4, test::test_seed());
  EXPECT_NO_THROW((void)table.at(7));
  for (std::int64_t bad : {std::int64_t{8}, std::int64_t{9}, std::int64_t{1} << 40, std::int64_t{-1},
                           std::numeric_limits<std::int64_t>::min()}) {
    try {
      (void)table.at(bad);
      ADD_FAILURE() << "position " << bad << " did not throw";
    } catch (const std::out_of_range& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find("position " + std::to_string(bad)), std::string::npos) << what;
      EXPECT_NE(what.find("length 8"), std::string::npos) << what;
    }
  }
  // add_to checks every position before it writes: X is untouched when one is out of range.
  matrix<T> x(2, 4);
  const std::vector<std::int64_t> positions{3, 8};
  EXPECT_THROW(table.add_to(x, positions), std::out_of_range);
  for (const T& v : x.values) EXPECT_EQ(bits(v), bits(T(0)));
}

TYPED_TEST(Positional, learned_table_from_a_seed_is_reproducible_and_exact_in_t) {
  using T = TypeParam;
  const auto seed = test::test_seed();
  const learned_absolute<T> a(16, 8, seed), b(16, 8, seed), c(16, 8, seed + 1);
  bool differs = false;
  for (std::int64_t p = 0; p < 16; ++p)
    for (std::size_t k = 0; k < 8; ++k) {
      EXPECT_EQ(bits(a.at(p)[k]), bits(b.at(p)[k]));
      differs = differs || bits(a.at(p)[k]) != bits(c.at(p)[k]);
      const long double v = scalar_traits<T>::widen(a.at(p)[k]) * 256.0L;  // a multiple of 1/256 in [-1, 1]
      EXPECT_EQ(v, std::round(v));
      EXPECT_LE(std::fabs(v), 256.0L);
    }
  EXPECT_TRUE(differs);
  // Given data: row p is the data's row p, and add_to adds it.
  std::vector<T> data;
  for (int i = 0; i < 6; ++i) data.push_back(T(i));
  const learned_absolute<T> given(3, 2, data);
  EXPECT_EQ(bits(given.at(2)[1]), bits(T(5)));
  matrix<T> x(2, 2, {T(1), T(1), T(1), T(1)});
  const std::vector<std::int64_t> positions{2, 0};
  given.add_to(x, positions);
  EXPECT_EQ(bits(x(0, 0)), bits(T(5)));
  EXPECT_EQ(bits(x(1, 1)), bits(T(2)));
  EXPECT_THROW((learned_absolute<T>(3, 2, std::vector<T>(5, T(0)))), std::invalid_argument);
}

// ---------------------------------------------------------------------------------------------
// ALiBi

TYPED_TEST(Positional, alibi_slopes_for_8_heads_are_exactly_2_to_the_minus_1_to_minus_8) {
  using T = TypeParam;
  const auto s = alibi_slopes<T>(8);
  ASSERT_EQ(s.size(), 8u);
  for (int h = 1; h <= 8; ++h)
    EXPECT_EQ(bits(s[static_cast<std::size_t>(h - 1)]), bits(scalar_traits<T>::narrow(std::ldexp(1.0L, -h)))) << h;
}

// The reference code's rule, transcribed from ofirpress/attention_with_linear_biases,
// fairseq/models/transformer.py (get_slopes), in the double arithmetic Python uses:
//   start = 2**(-2**-(log2(n)-3)); ratio = start; [start*ratio**i for i in range(n)]
//   non-power-of-two H: get_slopes_power_of_2(n) + get_slopes(2n)[0::2][:H-n]
std::vector<double> reference_slopes_power_of_2(int n) {
  const double start = std::pow(2.0, -std::pow(2.0, -(std::log2(static_cast<double>(n)) - 3)));
  const double ratio = start;
  std::vector<double> s;
  for (int i = 0; i < n; ++i) s.push_back(start * std::pow(ratio, static_cast<double>(i)));
  return s;
}
std::vector<double> reference_slopes(int heads) {
  const double l = std::log2(static_cast<double>(heads));
  if (l == std::floor(l)) return reference_slopes_power_of_2(heads);
  const int n = 1 << static_cast<int>(std::floor(l));
  auto s = reference_slopes_power_of_2(n);
  const auto twice = reference_slopes(2 * n);
  for (std::size_t i = 0; i < twice.size() && static_cast<int>(s.size()) < heads; i += 2) s.push_back(twice[i]);
  return s;
}

TYPED_TEST(Positional, alibi_slopes_for_6_and_12_heads_follow_the_reference_rule) {
  using T = TypeParam;
  const long double u = unit_roundoff<T>();
  // By hand from the rule: 6 heads = the 4-head rule (2^-2, 2^-4, 2^-6, 2^-8) then the 8-head
  // rule's slopes 1 and 3 (2^-1, 2^-3); 12 heads = 2^-1..2^-8 then the 16-head rule's odd ones.
  const std::vector<long double> exponents6{-2, -4, -6, -8, -1, -3};
  const std::vector<long double> exponents12{-1, -2, -3, -4, -5, -6, -7, -8, -0.5L, -1.5L, -2.5L, -3.5L};
  for (const auto& [heads, exponents] : {std::pair{6, exponents6}, std::pair{12, exponents12}}) {
    const auto s = alibi_slopes<T>(heads);
    ASSERT_EQ(s.size(), exponents.size());
    const auto ref = reference_slopes(heads);
    for (std::size_t h = 0; h < s.size(); ++h) {
      const long double e = exponents[h];
      const long double got = scalar_traits<T>::widen(s[h]);
      if (e == std::floor(e)) {
        EXPECT_EQ(bits(s[h]), bits(scalar_traits<T>::narrow(std::ldexp(1.0L, static_cast<int>(e))))) << heads << " heads, head " << h;
      } else {
        // 2^e with e a half-integer: s^2 must be 2^(2e), an exact power of two, up to (1+u)^2 - 1.
        const long double rel = got * got / std::ldexp(1.0L, static_cast<int>(2 * e)) - 1.0L;
        EXPECT_LE(std::fabs(rel), 2.0L * u + u * u) << heads << " heads, head " << h;
      }
      // Against the reference's own numbers: its double arithmetic drifts by up to 5 ulps
      // (start * ratio**i); ours is within 1 ulp of exact, so within 6 double ulps of it (plus
      // our rounding to T); in float it is what torch.Tensor(get_slopes(H)) stores, bit for bit.
      const long double tol = 6.0L * std::ldexp(std::fabs(ref[h]), -52) + u * got;
      EXPECT_LE(std::fabs(got - ref[h]), tol) << heads << " heads, head " << h;
      if constexpr (std::is_same_v<T, float>) {
        EXPECT_EQ(bits(s[h]), bits(static_cast<float>(ref[h])));
      }
    }
  }
}

TEST(Alibi, slopes_in_float_equal_the_reference_as_torch_stores_it_for_every_head_count_up_to_64) {
  for (int heads = 1; heads <= 64; ++heads) {
    const auto s = alibi_slopes<float>(heads);
    const auto ref = reference_slopes(heads);
    ASSERT_EQ(s.size(), ref.size());
    for (std::size_t h = 0; h < s.size(); ++h)
      EXPECT_EQ(bits(s[h]), bits(static_cast<float>(ref[h]))) << heads << " heads, head " << h;
  }
}

TYPED_TEST(Positional, alibi_bias_is_minus_slope_times_distance_causal_or_symmetric) {
  using T = TypeParam;
  const alibi<T> causal(8), symmetric(8, alibi_form::symmetric);
  // Head 0 has slope 1/2, head 7 slope 1/256.
  EXPECT_EQ(bits(causal.bias(0, 5, 2)), bits(T(-1.5f)));
  EXPECT_EQ(bits(causal.bias(0, 2, 5)), bits(T(1.5f)));  // the future: for the causal mask to hide
  EXPECT_EQ(bits(symmetric.bias(0, 2, 5)), bits(T(-1.5f)));
  EXPECT_EQ(bits(symmetric.bias(7, 0, 256)), bits(T(-1.0f)));
  EXPECT_EQ(bits(causal.bias(3, 4, 4)), bits(T(0)));  // +0 on the diagonal, not -0
  const auto b = symmetric.bias_matrix(1, 4);
  for (std::size_t i = 0; i < 4; ++i)
    for (std::size_t j = 0; j < 4; ++j)
      EXPECT_EQ(scalar_traits<T>::widen(b(i, j)), -0.25L * std::fabs(static_cast<long double>(i) - static_cast<long double>(j)));
}

// ---------------------------------------------------------------------------------------------
// T5

// By hand from HF's T5Attention._relative_position_bucket (models/t5/modeling_t5.py), defaults
// num_buckets 32, max_distance 128, r = key - query:
//   bidirectional: 16 buckets a side (+16 when r > 0), max_exact 8;
//     n >= 8: 8 + floor(8 log(n/8) / log(16)) = 8 + floor(log2(n^2 / 64)), capped at 15;
//     steps at n = 8 sqrt(2)^k: 11.3 -> 12, 16, 22.6 -> 23, 32, 45.3 -> 46, 64, 90.5 -> 91.
//   unidirectional: n = max(-r, 0), max_exact 16; n >= 16: 16 + floor((16/3) log2(n/16)), capped at 31;
//     steps at n = 16 * 2^(3k/16): 18.2 -> 19, ..., 30.6 -> 31, 34.9 -> 35, ..., 58.7 -> 59,
//     66.8 -> 67, 76.1 -> 77, 86.7 -> 87, 98.7 -> 99, 112.4 -> 113; e.g. 32 -> 16 + 5.33 -> 21,
//     64 -> 16 + 10.67 -> 26, 76 -> 16 + 11.99 -> 27 (one below the step at 76.1), 91 -> 16 + 13.37 -> 29.
TEST(T5Buckets, match_values_computed_by_hand_from_hfs_formula) {
  const std::vector<std::pair<std::int64_t, int>> bidirectional{
      {0, 0},    {-1, 1},   {-7, 7},   {-8, 8},   {-11, 8},  {-12, 9},  {-15, 9},  {-16, 10}, {-22, 10},
      {-23, 11}, {-32, 12}, {-45, 12}, {-46, 13}, {-64, 14}, {-90, 14}, {-91, 15}, {-128, 15}, {-100000, 15},
      {1, 17},   {7, 23},   {8, 24},   {12, 25},  {16, 26},  {23, 27},  {32, 28},  {46, 29},  {64, 30},
      {91, 31},  {127, 31}, {128, 31}, {1000000, 31}};
  for (const auto& [r, b] : bidirectional) EXPECT_EQ(t5_relative_position_bucket(r, true), b) << "bidirectional r=" << r;
  const std::vector<std::pair<std::int64_t, int>> causal{
      {5, 0},     {1, 0},     {0, 0},     {-1, 1},    {-15, 15},  {-16, 16},  {-18, 16}, {-19, 17}, {-32, 21},
      {-64, 26},  {-66, 26},  {-67, 27},  {-76, 27},  {-77, 28},  {-86, 28},  {-87, 29}, {-98, 29}, {-99, 30},
      {-112, 30}, {-113, 31}, {-127, 31}, {-128, 31}, {-5000, 31}};
  for (const auto& [r, b] : causal) EXPECT_EQ(t5_relative_position_bucket(r, false), b) << "unidirectional r=" << r;
}

TEST(T5Buckets, are_monotone_in_distance_in_range_and_saturate_from_max_distance_on) {
  for (bool bidirectional : {true, false}) {
    int previous_past = -1, previous_future = -1;
    for (std::int64_t n = 0; n <= 4096; ++n) {
      const int past = t5_relative_position_bucket(-n, bidirectional);
      const int future = t5_relative_position_bucket(n, bidirectional);
      EXPECT_GE(past, previous_past) << n;
      EXPECT_GE(future, previous_future) << n;
      EXPECT_GE(past, 0);
      EXPECT_LT(past, 32);
      EXPECT_GE(future, 0);
      EXPECT_LT(future, 32);
      if (n >= 128) {
        EXPECT_EQ(past, t5_relative_position_bucket(-128, bidirectional)) << n;
        EXPECT_EQ(future, t5_relative_position_bucket(128, bidirectional)) << n;
      }
      previous_past = past;
      previous_future = future;
    }
    for (std::int64_t far : {std::int64_t{1} << 40, std::numeric_limits<std::int64_t>::max()}) {
      EXPECT_EQ(t5_relative_position_bucket(far, bidirectional), t5_relative_position_bucket(128, bidirectional));
      EXPECT_EQ(t5_relative_position_bucket(-far, bidirectional), t5_relative_position_bucket(-128, bidirectional));
    }
    EXPECT_EQ(t5_relative_position_bucket(std::numeric_limits<std::int64_t>::min(), bidirectional),
              t5_relative_position_bucket(-128, bidirectional));
  }
}

// The rule in exact integer arithmetic: floor(S log(n/me) / log(md/me)) >= k iff
// (md/me)^k <= (n/me)^S iff md^k me^S <= n^S me^k (S = buckets - max_exact).
int exact_bucket(std::int64_t r, bool bidirectional, int num_buckets, int max_distance) {
  using boost::multiprecision::cpp_int;
  using boost::multiprecision::pow;
  int bucket = 0, buckets = num_buckets;
  std::int64_t n = 0;
  if (bidirectional) {
    buckets /= 2;
    if (r > 0) bucket += buckets;
    n = r < 0 ? -r : r;
  } else {
    n = r < 0 ? -r : 0;
  }
  const int me = buckets / 2;
  if (n < me) return bucket + static_cast<int>(n);
  const unsigned s = static_cast<unsigned>(buckets - me);
  int k = 0;
  while (me + k + 1 <= buckets - 1 &&
         pow(cpp_int(max_distance), static_cast<unsigned>(k + 1)) * pow(cpp_int(me), s) <=
             pow(cpp_int(n), s) * pow(cpp_int(me), static_cast<unsigned>(k + 1)))
    ++k;
  return bucket + me + k;
}

TEST(T5Buckets, hfs_float32_arithmetic_equals_exact_arithmetic_for_distances_up_to_5000) {
  for (bool bidirectional : {true, false})
    for (std::int64_t r = -5000; r <= 5000; ++r)
      ASSERT_EQ(t5_relative_position_bucket(r, bidirectional), exact_bucket(r, bidirectional, 32, 128))
          << (bidirectional ? "bidirectional" : "unidirectional") << " r=" << r;
}

TYPED_TEST(Positional, t5_bias_looks_up_its_table_by_bucket_and_head) {
  using T = TypeParam;
  std::vector<T> table;
  for (int i = 0; i < 32 * 3; ++i) table.push_back(scalar_traits<T>::narrow(i / 4.0L));
  const t5_relative_bias<T> t5(3, true, table);
  // Query 10, key 2: r = -8, bucket 8; head 2 reads table[8 * 3 + 2].
  EXPECT_EQ(bits(t5.bias(2, 10, 2)), bits(table[8 * 3 + 2]));
  EXPECT_EQ(bits(t5.bias(0, 2, 10)), bits(table[24 * 3 + 0]));  // r = +8: bucket 16 + 8
  const auto b = t5.bias_matrix(1, 5);
  for (std::size_t i = 0; i < 5; ++i)
    for (std::size_t j = 0; j < 5; ++j)
      EXPECT_EQ(bits(b(i, j)), bits(t5.bias(1, static_cast<std::int64_t>(i), static_cast<std::int64_t>(j))));
  const t5_relative_bias<T> seeded(2, false, test::test_seed());
  EXPECT_EQ(bits(seeded.bias(1, 3, 9)), bits(seeded.bias(1, 0, 0)));  // causal T5: the future is bucket 0
  EXPECT_THROW((void)t5.bias(3, 0, 0), std::out_of_range);
}

// ---------------------------------------------------------------------------------------------
// RoPE on rows of Q and K

TYPED_TEST(Positional, rotate_rows_is_the_rope_kernel_applied_to_each_row_at_its_position) {
  using T = TypeParam;
  rope_config cfg;
  cfg.head_dim = 8;
  cfg.rotary_dim = 8;
  const direct_angle<double> cs(cfg);
  const auto g = rope_geometry::of(cfg);
  std::mt19937_64 rng(test::test_seed());
  matrix<T> q(4, 8);
  for (auto& v : q.values) v = scalar_traits<T>::narrow(static_cast<long double>(static_cast<int>(rng() % 511) - 255) / 64.0L);
  const std::vector<std::int64_t> positions{0, 7, 300, 5};
  auto rotated = q;
  rotate_rows<T>(rotated, positions, g, cs);
  for (std::size_t r = 0; r < 4; ++r) {
    std::vector<T> expected(8);
    rotate_heads<T, T>(q.row(r), std::span<T>(expected), 1, g, positions[r], cs);
    for (std::size_t c = 0; c < 8; ++c) EXPECT_EQ(bits(rotated(r, c)), bits(expected[c])) << r << "," << c;
  }
  // Position 0 is the identity rotation: cos 0 = 1, sin 0 = 0 exactly.
  for (std::size_t c = 0; c < 8; ++c) EXPECT_EQ(bits(rotated(0, c)), bits(q(0, c)));
  EXPECT_THROW(rotate_rows<T>(rotated, std::vector<std::int64_t>{0, 1}, g, cs), std::invalid_argument);
}

}  // namespace
}  // namespace ropecheck
