// Tests of ropecheck/attention.hpp: the softmax's rows sum to one within its error model, the
// causal mask hides the future exactly, and cases where every operation is exact come out
// bit for bit — in float, double, long double, bfloat16 and float16.
#include "ropecheck/attention.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <random>
#include <vector>

#include "ropecheck/scalar.hpp"
#include "support/positions.hpp"

namespace ropecheck {
namespace {

template <class T>
class Attention : public ::testing::Test {};
using ScalarTypes = ::testing::Types<float, double, long double, bfloat16, float16>;
TYPED_TEST_SUITE(Attention, ScalarTypes);

template <class T>
T exact(long double v) {
  const T t = scalar_traits<T>::narrow(v);
  if (scalar_traits<T>::widen(t) != v) throw std::logic_error("test value not exact in T");
  return t;
}

// A rows x cols matrix of k / 64 with |k| <= k_max: exact in bf16 (8 significant bits) and wider.
template <class T>
matrix<T> random_matrix(std::size_t rows, std::size_t cols, int k_max, std::mt19937_64& rng) {
  matrix<T> m(rows, cols);
  for (auto& v : m.values) {
    const auto k = static_cast<int>(rng() % static_cast<std::uint64_t>(2 * k_max + 1)) - k_max;
    v = exact<T>(static_cast<long double>(k) / 64.0L);
  }
  return m;
}

// gamma_n = n u / (1 - n u), Higham's bound for n successive roundings.
long double gamma_of(int n, long double u) { return n * u / (1.0L - n * u); }

TYPED_TEST(Attention, softmax_rows_sum_to_one_within_the_error_of_the_denominator_and_the_division) {
  using T = TypeParam;
  std::mt19937_64 rng(test::test_seed());
  const long double u = unit_roundoff<T>();
  long double worst_ratio = 0;
  for (int n : {1, 2, 3, 7, 16, 64}) {
    for (int trial = 0; trial < 20; ++trial) {
      // |q|, |k| <= 2, d = 8: scores up to 8 * 4 / sqrt(8) ~ 11, so the weights span many octaves.
      const auto q = random_matrix<T>(static_cast<std::size_t>(n), 8, 128, rng);
      const auto k = random_matrix<T>(static_cast<std::size_t>(n), 8, 128, rng);
      const auto v = random_matrix<T>(static_cast<std::size_t>(n), 3, 128, rng);
      const auto r = scaled_dot_product_attention(q, k, v);
      for (std::size_t i = 0; i < r.weights.rows; ++i) {
        long double sum = 0;
        for (std::size_t j = 0; j < r.weights.cols; ++j) sum += scalar_traits<T>::widen(r.weights(i, j));
        // Error model (attention.hpp's contract): D~ = D (1 + delta), |delta| <= gamma_{n-1};
        // w~_j = e_j / D~ (1 + eps_j), |eps_j| <= u; so |sum_j w~_j - 1| <= (u + gamma_{n-1}) / (1 - gamma_{n-1}).
        // Plus: a weight that lands among the subnormals is off by up to half their spacing
        // (float16: 2^-25) instead of u relative, and the long double sum here adds gamma_n(2^-64).
        const long double g = gamma_of(n - 1, u);
        const long double bound = (u + g) / (1.0L - g) +
                                  n * scalar_traits<T>::widen(std::numeric_limits<T>::denorm_min()) +
                                  gamma_of(n, unit_roundoff<long double>());
        const long double err = std::fabs(sum - 1.0L);
        EXPECT_LE(err, bound) << scalar_name<T>() << " n=" << n << " row " << i;
        worst_ratio = std::max(worst_ratio, err / bound);
      }
    }
  }
  std::printf("[ropecheck] %s: worst |sum of a softmax row - 1| is %.3Lg of its bound\n", scalar_name<T>().data(),
              worst_ratio);
}

TYPED_TEST(Attention, causal_mask_gives_the_future_exactly_zero_weight_and_no_influence) {
  using T = TypeParam;
  std::mt19937_64 rng(test::test_seed() + 1);
  constexpr std::size_t n = 6;
  const auto q = random_matrix<T>(n, 4, 200, rng);
  auto k = random_matrix<T>(n, 4, 200, rng);
  auto v = random_matrix<T>(n, 5, 200, rng);
  const auto r = scaled_dot_product_attention(q, k, v, {.mask = attention_mask::causal});
  for (std::size_t i = 0; i < n; ++i)
    for (std::size_t j = i + 1; j < n; ++j) {
      EXPECT_EQ(scalar_traits<T>::bits(r.weights(i, j)), scalar_traits<T>::bits(T(0))) << i << "," << j;  // +0, bitwise
      EXPECT_TRUE(std::isinf(static_cast<long double>(scalar_traits<T>::widen(r.scores(i, j)))));
      EXPECT_LT(scalar_traits<T>::widen(r.scores(i, j)), 0.0L);
    }
  // The first token sees only itself: weight exp(0)/exp(0) = 1 exactly, so its output is V's row 0.
  for (std::size_t c = 0; c < v.cols; ++c)
    EXPECT_EQ(scalar_traits<T>::bits(r.output(0, c)), scalar_traits<T>::bits(v(0, c)));
  // Changing the keys and values of the future leaves every earlier output bit for bit the same.
  for (std::size_t i = 0; i + 1 < n; ++i) {
    auto k2 = k;
    auto v2 = v;
    for (std::size_t j = i + 1; j < n; ++j)
      for (std::size_t c = 0; c < 4; ++c) {
        k2(j, c) = T(k2(j, c) + T(1));
        v2(j, c) = T(v2(j, c) - T(3));
      }
    const auto r2 = scaled_dot_product_attention(q, k2, v2, {.mask = attention_mask::causal});
    for (std::size_t c = 0; c < v.cols; ++c)
      EXPECT_EQ(scalar_traits<T>::bits(r2.output(i, c)), scalar_traits<T>::bits(r.output(i, c))) << "row " << i;
  }
}

TYPED_TEST(Attention, causal_mask_with_fewer_queries_than_keys_aligns_the_queries_with_the_last_keys) {
  using T = TypeParam;
  std::mt19937_64 rng(test::test_seed() + 2);
  const auto q = random_matrix<T>(2, 4, 100, rng);
  const auto k = random_matrix<T>(5, 4, 100, rng);
  const auto v = random_matrix<T>(5, 2, 100, rng);
  const auto r = scaled_dot_product_attention(q, k, v, {.mask = attention_mask::causal});
  // Query 0 sits at key position 3 (a KV cache holding 3 earlier tokens): it sees keys 0..3.
  EXPECT_EQ(scalar_traits<T>::bits(r.weights(0, 4)), scalar_traits<T>::bits(T(0)));
  for (std::size_t j = 0; j < 4; ++j) EXPECT_GT(scalar_traits<T>::widen(r.weights(0, j)), 0.0L);
  for (std::size_t j = 0; j < 5; ++j) EXPECT_GT(scalar_traits<T>::widen(r.weights(1, j)), 0.0L);
  EXPECT_THROW((void)scaled_dot_product_attention(k, q, q, {.mask = attention_mask::causal}), std::invalid_argument);
}

TYPED_TEST(Attention, equal_scores_give_exactly_the_mean_of_the_values) {
  using T = TypeParam;
  // Q = 0: every score is 0, every e_j = exp(0) = 1, D = 4, w_j = 1/4 exactly; the values are
  // small integers, so every partial sum of w_j v_j is exact and the output is the exact mean.
  const matrix<T> q(4, 3);
  std::mt19937_64 rng(test::test_seed() + 3);
  const auto k = random_matrix<T>(4, 3, 255, rng);
  const matrix<T> v(4, 2, {exact<T>(1), exact<T>(-8), exact<T>(2), exact<T>(4), exact<T>(3), exact<T>(0),
                           exact<T>(6), exact<T>(12)});
  const auto r = scaled_dot_product_attention(q, k, v);
  for (std::size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(scalar_traits<T>::bits(r.output(i, 0)), scalar_traits<T>::bits(exact<T>(3)));
    EXPECT_EQ(scalar_traits<T>::bits(r.output(i, 1)), scalar_traits<T>::bits(exact<T>(2)));
    for (std::size_t j = 0; j < 4; ++j) EXPECT_EQ(scalar_traits<T>::bits(r.weights(i, j)), scalar_traits<T>::bits(exact<T>(0.25L)));
  }
}

TYPED_TEST(Attention, scores_are_the_scaled_dot_products_plus_the_bias_exactly_when_all_steps_are_exact) {
  using T = TypeParam;
  // d = 4: scale 1/sqrt(4) = 1/2 is exact; integer entries keep every product and sum exact.
  const matrix<T> q(2, 4, {exact<T>(1), exact<T>(2), exact<T>(0), exact<T>(-1), exact<T>(3), exact<T>(0), exact<T>(1), exact<T>(1)});
  const matrix<T> k(3, 4, {exact<T>(2), exact<T>(1), exact<T>(5), exact<T>(0), exact<T>(-1), exact<T>(1), exact<T>(1), exact<T>(1),
                           exact<T>(0), exact<T>(0), exact<T>(2), exact<T>(-4)});
  const matrix<T> v(3, 1, {exact<T>(1), exact<T>(2), exact<T>(3)});
  const std::vector<T> bias{exact<T>(0), exact<T>(-0.5L), exact<T>(-1), exact<T>(0.25L), exact<T>(0), exact<T>(-2)};
  const auto r = scaled_dot_product_attention(q, k, v, {.bias = bias});
  // Q K^T = [[4, 0, 4], [11, -1, -2]]; halved, plus the bias.
  const long double expected[2][3] = {{2.0L, -0.5L, 1.0L}, {5.75L, -0.5L, -3.0L}};
  for (std::size_t i = 0; i < 2; ++i)
    for (std::size_t j = 0; j < 3; ++j)
      EXPECT_EQ(scalar_traits<T>::bits(r.scores(i, j)), scalar_traits<T>::bits(exact<T>(expected[i][j]))) << i << "," << j;
  // T5's convention: no scaling.
  const auto t5 = scaled_dot_product_attention(q, k, v, {.scale = 1.0L});
  EXPECT_EQ(scalar_traits<T>::bits(t5.scores(1, 0)), scalar_traits<T>::bits(exact<T>(11)));
}

TYPED_TEST(Attention, self_attention_is_attention_of_the_projections_bit_for_bit) {
  using T = TypeParam;
  std::mt19937_64 rng(test::test_seed() + 4);
  const auto x = random_matrix<T>(5, 6, 255, rng);
  const attention_head<T> w{random_matrix<T>(6, 4, 16, rng), random_matrix<T>(6, 4, 16, rng),
                            random_matrix<T>(6, 3, 16, rng)};
  const auto a = self_attention(x, w, {.mask = attention_mask::causal});
  const auto p = project(x, w);
  const auto b = scaled_dot_product_attention(p.q, p.k, p.v, {.mask = attention_mask::causal});
  ASSERT_EQ(a.output.values.size(), b.output.values.size());
  for (std::size_t i = 0; i < a.output.values.size(); ++i)
    EXPECT_EQ(scalar_traits<T>::bits(a.output.values[i]), scalar_traits<T>::bits(b.output.values[i]));
  // Everything stays in T: no silent promotion of bf16 * float to float.
  static_assert(std::is_same_v<typename decltype(a.output.values)::value_type, T>);
}

TYPED_TEST(Attention, rejects_shapes_that_do_not_fit) {
  using T = TypeParam;
  const matrix<T> q(2, 4), k(3, 4), v(3, 2), k_bad(3, 5), v_bad(2, 2);
  EXPECT_THROW((void)scaled_dot_product_attention(q, k_bad, v), std::invalid_argument);
  EXPECT_THROW((void)scaled_dot_product_attention(q, k, v_bad), std::invalid_argument);
  const std::vector<T> bias(5, T(0));
  EXPECT_THROW((void)scaled_dot_product_attention(q, k, v, {.bias = bias}), std::invalid_argument);
  EXPECT_THROW((void)matmul(q, v), std::invalid_argument);
  EXPECT_THROW((matrix<T>(2, 2, std::vector<T>(3, T(0)))), std::invalid_argument);
}

}  // namespace
}  // namespace ropecheck
