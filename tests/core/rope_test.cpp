// Tests of ropecheck/rope.hpp: the kernel in every storage/compute pairing against the MPFR
// reference's exact rotation; layouts, partial rotary, many heads, the inverse, any position;
// and the interleaved -> half-split weight permutation HF uses.
#include "ropecheck/rope.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <random>
#include <vector>

#include "ropecheck/judge/error_model.hpp"
#include "ropecheck/error.hpp"
#include "ropecheck/judge/exact_strategy.hpp"
#include "ropecheck/reference/reference.hpp"
#include "ropecheck/presets.hpp"
#include "support/positions.hpp"
#include "support/rope_check.hpp"

namespace ropecheck {
namespace {

using reference::rope_reference;

template <class S, class C>
struct pairing {
  using storage = S;
  using compute = C;
};

template <class P>
class RopeKernel : public ::testing::Test {};
// Storage/compute pairings real kernels use: same-type eager arithmetic in every hardware type,
// 16-bit storage with fp32 compute (fused GPU kernels), fp32 storage with fp64 compute.
using Pairings = ::testing::Types<pairing<float, float>, pairing<double, double>, pairing<long double, long double>,
                                  pairing<bfloat16, bfloat16>, pairing<float16, float16>, pairing<bfloat16, float>,
                                  pairing<float16, float>, pairing<float, double>>;
TYPED_TEST_SUITE(RopeKernel, Pairings);

TYPED_TEST(RopeKernel, rotation_with_exact_cos_sin_is_within_the_arithmetic_bound_for_every_config) {
  using S = typename TypeParam::storage;
  using C = typename TypeParam::compute;
  for (const auto& nc : rule_sweep()) {
    const rope_reference ref(nc.cfg, nc.seq_len);
    const judge::exact_angle<C> cs(ref);
    const auto r = test::check_rotation<S, C>(nc.cfg, ref, cs, 3, test::regime_positions(std::int64_t{1} << 40, 60, test::test_seed()),
                                              test::test_seed());
    // sec. 2 + 1: exact cos/sin rounded once to C (u_C af), then the arithmetic bound.
    const long double af = ref.attention_factor().value();
    const long double bound = judge::rotation_bound<C, S>(unit_roundoff<C>() * af * 2, af);
    EXPECT_LE(r.worst / bound, 1.0L) << nc.name << ": " << r.describe();
    std::printf("[ropecheck] %-26s %s/%s worst error %.3Lg of bound %.3Lg (per unit of af(|x_a|+|x_b|))\n",
                nc.name.c_str(), scalar_name<S>().data(), scalar_name<C>().data(), r.worst, bound);
  }
}

TYPED_TEST(RopeKernel, inverse_rotation_undoes_the_rotation_within_twice_the_bound) {
  using S = typename TypeParam::storage;
  using C = typename TypeParam::compute;
  const auto nc = rule_sweep()[1];  // llama3, attention factor 1
  const rope_reference ref(nc.cfg);
  const judge::exact_angle<C> cs(ref);
  const rope_geometry g = rope_geometry::of(nc.cfg);
  std::mt19937_64 rng(test::test_seed());
  for (const std::int64_t p : {std::int64_t{0}, std::int64_t{1}, std::int64_t{4095}, std::int64_t{1} << 24,
                               (std::int64_t{1} << 31) - 1, std::int64_t{1} << 40}) {
    const auto x = test::random_vector<S>(static_cast<std::size_t>(g.head_dim), rng);
    std::vector<S> y(x.size()), back(x.size());
    rotate_heads<C>(std::span<const S>(x), std::span<S>(y), 1, g, p, cs);
    rotate_heads<C>(std::span<const S>(y), std::span<S>(back), 1, g, p, cs, rotation_sense::inverse);
    const long double bound = 2 * judge::rotation_bound<C, S>(2 * unit_roundoff<C>(), 1.0L) + unit_roundoff<S>();
    for (int band = 0; band < g.bands(); ++band) {
      const auto [a, b] = g.pair_of(band);
      const long double scale = std::fabs(scalar_traits<S>::widen(x[a])) + std::fabs(scalar_traits<S>::widen(x[b]));
      for (int j : {a, b}) {
        const long double err = std::fabs(scalar_traits<S>::widen(back[j]) - scalar_traits<S>::widen(x[j]));
        ASSERT_LE(err, 2 * bound * scale) << "position " << p << " coordinate " << j;
      }
    }
  }
}

// The conventions the families issue added: nanochat's reversed rotation (R(-p)) and Gemma 4's
// proportional RoPE (frozen bands), each against the reference's own rotation of that convention, and
// each far from the other convention (the test can fail both ways).
TYPED_TEST(RopeKernel, reversed_and_proportional_conventions_are_within_the_arithmetic_bound) {
  using S = typename TypeParam::storage;
  using C = typename TypeParam::compute;
  rope_config reversed;
  reversed.direction = rotation_direction::reversed;
  rope_config proportional;
  proportional.head_dim = proportional.rotary_dim = 256;
  proportional.base = 1e6;
  proportional.frozen_bands = 96;
  for (const rope_config& cfg : {reversed, proportional}) {
    const rope_reference ref(cfg);
    const judge::exact_angle<C> cs(ref);
    const auto r = test::check_rotation<S, C>(cfg, ref, cs, 2, test::regime_positions(std::int64_t{1} << 40, 40, test::test_seed()),
                                              test::test_seed());
    const long double bound = judge::rotation_bound<C, S>(unit_roundoff<C>() * 2, 1.0L);
    EXPECT_LE(r.worst / bound, 1.0L) << to_string(cfg.direction) << ", frozen " << cfg.frozen_bands << ": " << r.describe();
  }
  // Forward where the reference turns the other way: not a rounding matter.
  const rope_reference ref(reversed);
  const judge::exact_angle<C> cs(ref);
  const auto wrong = test::check_rotation<S, C>(rope_config{}, ref, cs, 1, {1, 100, 5000}, test::test_seed());
  EXPECT_GT(wrong.worst, 1e-2L) << wrong.describe();
}

TEST(RopeKernel, pass_through_coordinates_are_bit_identical_and_y_may_alias_x) {
  const auto nc = rule_sweep().back();  // GPT-J: 64 of 256 rotated
  const rope_reference ref(nc.cfg);
  const judge::exact_angle<float> cs(ref);
  const rope_geometry g = rope_geometry::of(nc.cfg);
  std::mt19937_64 rng(test::test_seed());
  const auto x = test::random_vector<float>(2 * static_cast<std::size_t>(g.head_dim), rng);
  std::vector<float> y(x.size()), in_place = x;
  rotate_heads<float>(std::span<const float>(x), std::span<float>(y), 2, g, 12345, cs);
  rotate_heads<float>(std::span<const float>(in_place), std::span<float>(in_place), 2, g, 12345, cs);
  for (std::size_t j = 0; j < x.size(); ++j) {
    EXPECT_TRUE(bitwise_equal(y[j], in_place[j])) << j;
    if (static_cast<int>(j % g.head_dim) >= g.rotary_dim) {
      EXPECT_TRUE(bitwise_equal(y[j], x[j])) << j;
    }
  }
}

TEST(RopeKernel, the_wrong_layout_is_far_outside_the_bound) {
  // Rotating with half-split pairs what the reference rotates interleaved: not a rounding matter.
  auto nc = rule_sweep().front();
  nc.cfg.pair_layout = layout::interleaved;
  const rope_reference ref(nc.cfg);
  const judge::exact_angle<double> cs(ref);
  rope_config wrong = nc.cfg;
  wrong.pair_layout = layout::half_split;
  const auto r = test::check_rotation<double, double>(wrong, ref, cs, 1, {1, 100, 5000}, test::test_seed());
  EXPECT_GT(r.worst, 1e-3L) << r.describe();
}

TEST(RopeKernel, rejects_buffers_of_the_wrong_size) {
  const rope_reference ref(rule_sweep().front().cfg);
  const judge::exact_angle<float> cs(ref);
  std::vector<float> x(127), y(127);
  EXPECT_THROW(rotate_heads<float>(std::span<const float>(x), std::span<float>(y), 1, rope_geometry{}, 0, cs),
               std::invalid_argument);
  EXPECT_THROW((rope_geometry{128, 130, layout::half_split}.check()), std::invalid_argument);
  EXPECT_THROW((rope_geometry{128, 63, layout::half_split}.check()), std::invalid_argument);
}

// ---------------------------------------------------------------------------------------------
// Layout conversion: HF's permute of W_q/W_k.

TEST(WeightPermutation, half_split_rope_of_permuted_coordinates_is_the_permuted_interleaved_rope_bit_for_bit) {
  for (const int rotary : {128, 64, 32}) {
    rope_config il;
    il.rotary_dim = rotary;
    il.pair_layout = layout::interleaved;
    rope_config hs = il;
    hs.pair_layout = layout::half_split;
    const rope_reference ref(il);  // frequencies do not depend on the layout
    const judge::exact_angle<float> cs(ref);
    std::mt19937_64 rng(test::test_seed());
    const int heads = 4;
    const auto x = test::random_vector<float>(static_cast<std::size_t>(heads * il.head_dim), rng);
    std::vector<float> px(x.size()), y_il(x.size()), p_y_il(x.size()), y_hs(x.size());
    permute_interleaved_to_half_split<float>(x, px, heads, il.head_dim, rotary);
    for (const std::int64_t p : {std::int64_t{0}, std::int64_t{7}, std::int64_t{100000}, std::int64_t{1} << 35}) {
      rotate_heads<float>(std::span<const float>(x), std::span<float>(y_il), heads, rope_geometry::of(il), p, cs);
      rotate_heads<float>(std::span<const float>(px), std::span<float>(y_hs), heads, rope_geometry::of(hs), p, cs);
      permute_interleaved_to_half_split<float>(y_il, p_y_il, heads, il.head_dim, rotary);
      for (std::size_t j = 0; j < x.size(); ++j)
        ASSERT_TRUE(bitwise_equal(y_hs[j], p_y_il[j])) << "rotary " << rotary << " position " << p << " index " << j;
    }
  }
}

TEST(WeightPermutation, permuting_wq_and_wk_rows_preserves_every_attention_score) {
  // A model trained interleaved (W_q, W_k) and the HF-converted one (P W_q, P W_k) under
  // half-split give the same scores: <R q_m, R k_n> summed in another order, so equal to within
  // the summation error of a d-term dot product: d u_double sum |terms| (Higham 3.1).
  const int heads = 2, d = 128, in = 16;
  rope_config il;
  il.pair_layout = layout::interleaved;
  rope_config hs = il;
  hs.pair_layout = layout::half_split;
  const rope_reference ref(il);
  const judge::exact_angle<double> cs(ref);
  std::mt19937_64 rng(test::test_seed());
  const auto wq = test::random_vector<double>(static_cast<std::size_t>(heads * d * in), rng);
  const auto wk = test::random_vector<double>(static_cast<std::size_t>(heads * d * in), rng);
  std::vector<double> pwq(wq.size()), pwk(wk.size());
  permute_interleaved_to_half_split<double>(wq, pwq, heads, d, d, in);
  permute_interleaved_to_half_split<double>(wk, pwk, heads, d, d, in);
  auto project = [&](const std::vector<double>& w, const std::vector<double>& x) {
    std::vector<double> out(static_cast<std::size_t>(heads * d));
    for (std::size_t r = 0; r < out.size(); ++r)
      for (int c = 0; c < in; ++c) out[r] += w[r * in + static_cast<std::size_t>(c)] * x[static_cast<std::size_t>(c)];
    return out;
  };
  const auto xm = test::random_vector<double>(in, rng), xn = test::random_vector<double>(in, rng);
  const std::int64_t m = 70000, n = 12;
  auto rotated = [&](const std::vector<double>& w, const std::vector<double>& x, const rope_config& c, std::int64_t p) {
    auto q = project(w, x);
    rotate_heads<double>(std::span<const double>(q), std::span<double>(q), heads, rope_geometry::of(c), p, cs);
    return q;
  };
  const auto q_il = rotated(wq, xm, il, m), k_il = rotated(wk, xn, il, n);
  const auto q_hs = rotated(pwq, xm, hs, m), k_hs = rotated(pwk, xn, hs, n);
  for (int h = 0; h < heads; ++h) {
    double s_il = 0, s_hs = 0, abs_sum = 0;
    for (int j = 0; j < d; ++j) {
      const auto k = static_cast<std::size_t>(h * d + j);
      s_il += q_il[k] * k_il[k];
      s_hs += q_hs[k] * k_hs[k];
      abs_sum += std::fabs(q_il[k] * k_il[k]);
    }
    EXPECT_LE(std::fabs(s_il - s_hs), 2 * d * unit_roundoff<double>() * abs_sum) << "head " << h;
    EXPECT_NE(s_il, 0.0);
  }
}

TEST(WeightPermutation, the_inverse_permutation_restores_the_original) {
  std::vector<int> w(3 * 96 * 2), p(w.size()), back(w.size());
  for (std::size_t i = 0; i < w.size(); ++i) w[i] = static_cast<int>(i);
  permute_interleaved_to_half_split<int>(w, p, 3, 96, 48, 2);
  permute_half_split_to_interleaved<int>(p, back, 3, 96, 48, 2);
  EXPECT_EQ(back, w);
  EXPECT_NE(p, w);
}

}  // namespace
}  // namespace ropecheck
