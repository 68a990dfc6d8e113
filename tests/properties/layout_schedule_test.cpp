// Properties 5 (layouts) and 7 (schedules) of the suite.
//
// Layouts: the interleaved and half-split kernels are the same rotation up to HF's coordinate
// permutation, bit for bit; converting W_q/W_k by that permutation preserves every score; and a
// query rotated in one layout scored against a key rotated in the other breaks the relative-offset
// identity, which the property detects.
// Schedules: what each scaling rule promises, checked on the MPFR reference over random
// parameters ("exactly" below means to the long double evaluation of the reference's ratios, 2^-62).
#include <gtest/gtest.h>
#include <rapidcheck.h>

#include <cmath>
#include <numbers>
#include <vector>

#include "framework.hpp"
#include "generators.hpp"
#include "rope_properties.hpp"
#include "rope_under_test.hpp"
#include "ropecheck/schedule.hpp"

namespace ropecheck::test {
namespace {

// The reference's values carry ~2^-100, but the checks form ratios of them in long double: two
// roundings of hi + lo to 64 bits, a quotient and a product, each u_ld = 2^-64 relative.
constexpr long double tiny = 4 * 0x1p-64L;

rope_config drawn_geometry(layout l) {
  rope_config c;
  c.head_dim = *gen::head_dim();
  const double fraction = *gen::rotary_fraction();
  c.rotary_dim = static_cast<int>(c.head_dim * fraction) / 2 * 2;
  c.base = *rc::gen::element(10000.0, 500000.0, 1000000.0);
  c.pair_layout = l;
  return c;
}

// ---------------------------------------------------------------------------------------------
// Property 5: layouts.

template <class S, class C, class Strategy>
void expect_layouts_agree_under_the_coordinate_permutation() {
  const auto il = drawn_geometry(layout::interleaved);
  auto hs = il;
  hs.pair_layout = layout::half_split;
  const int heads = *rc::gen::inRange(1, 4);
  const std::int64_t pos = *gen::position(std::int64_t{1} << 31);
  const auto xv = *gen::exact_vector(static_cast<std::size_t>(heads * il.head_dim));
  std::vector<S> x(xv.size()), px(x.size()), y_il(x.size()), p_y_il(x.size()), y_hs(x.size());
  for (std::size_t j = 0; j < x.size(); ++j) x[j] = scalar_traits<S>::narrow(xv[j]);
  const Strategy cs(il);  // frequencies do not depend on the layout
  permute_interleaved_to_half_split<S>(x, px, heads, il.head_dim, il.rotary_dim);
  rotate_heads<C>(std::span<const S>(x), std::span<S>(y_il), heads, rope_geometry::of(il), pos, cs);
  rotate_heads<C>(std::span<const S>(px), std::span<S>(y_hs), heads, rope_geometry::of(hs), pos, cs);
  permute_interleaved_to_half_split<S>(y_il, p_y_il, heads, il.head_dim, il.rotary_dim);
  for (std::size_t j = 0; j < x.size(); ++j)
    if (!bitwise_equal(y_hs[j], p_y_il[j]))
      RC_FAIL("half_split(P x) differs from P interleaved(x) at index " + std::to_string(j) + ", position " +
              std::to_string(pos));
}

// Where positions are drawn follows the compute type's precision (scalar_traits<C>::digits >= 53, double
// at equality), never the implementation's name: a double kernel named like a float one still gets 2^31.
TEST(DrawRange, wide_compute_is_the_compute_types_precision_not_the_name) {
  const named_config nc{"llama2", *find_preset("llama2-7b")};
  const rope_config& c = nc.cfg;
  const auto dbl = bind_kernel<double, double>("not_named_so", nc, direct_angle<double>(c), direct_model<double>(nc));
  const auto ld = bind_kernel<long double, long double>("x", nc, direct_angle<long double>(c), direct_model<long double>(nc));
  const auto flt = bind_kernel<float, float>("double_in_name", nc, direct_angle<float>(c), direct_model<float>(nc));
  const auto bf = bind_kernel<bfloat16, float>("x", nc, hf_angle<float>(c), hf_model<float>(nc));
  EXPECT_TRUE(dbl.wide_compute);
  EXPECT_TRUE(ld.wide_compute);
  EXPECT_FALSE(flt.wide_compute);
  EXPECT_FALSE(bf.wide_compute);
  ASSERT_GT(dbl.max_position, std::int64_t{1} << 24);
  EXPECT_EQ(draw_max(dbl), dbl.max_position);  // min(its contract, 2^31)
  EXPECT_EQ(draw_max(flt), std::int64_t{1} << 24);
  EXPECT_TRUE(bind_mpfr_kernel(nc).wide_compute);
}

TEST(LayoutProperty, interleaved_and_half_split_kernels_agree_bit_for_bit_under_the_coordinate_permutation) {
  ROPECHECK_EXPECT_PROPERTY("layouts_coordinate_permutation/float_hf",
                            (expect_layouts_agree_under_the_coordinate_permutation<float, float, hf_angle<float>>));
  ROPECHECK_EXPECT_PROPERTY("layouts_coordinate_permutation/bf16_float_direct",
                            (expect_layouts_agree_under_the_coordinate_permutation<bfloat16, float, direct_angle<float>>));
  ROPECHECK_EXPECT_PROPERTY("layouts_coordinate_permutation/float_ggml",
                            (expect_layouts_agree_under_the_coordinate_permutation<float, float, ggml_angle>));
}

TEST(LayoutProperty, permuting_the_rows_of_wq_and_wk_preserves_every_score) {
  ROPECHECK_EXPECT_PROPERTY("layouts_weight_permutation", [] {
    const auto il = drawn_geometry(layout::interleaved);
    auto hs = il;
    hs.pair_layout = layout::half_split;
    const int in = *rc::gen::inRange(1, 9);
    const auto d = static_cast<std::size_t>(il.head_dim);
    const auto wq = *gen::exact_vector(d * static_cast<std::size_t>(in));
    const auto wk = *gen::exact_vector(d * static_cast<std::size_t>(in));
    const auto xm = *gen::exact_vector(static_cast<std::size_t>(in));
    const auto xn = *gen::exact_vector(static_cast<std::size_t>(in));
    const std::int64_t m = *gen::position(std::int64_t{1} << 24), n = *gen::position(std::int64_t{1} << 24);
    std::vector<long double> pwq(wq.size()), pwk(wk.size());
    permute_interleaved_to_half_split<long double>(wq, pwq, 1, il.head_dim, il.rotary_dim, static_cast<std::size_t>(in));
    permute_interleaved_to_half_split<long double>(wk, pwk, 1, il.head_dim, il.rotary_dim, static_cast<std::size_t>(in));
    const hf_angle<float> cs(il);
    // q = W x in long double (exact: 8 products of 9-bit numbers), stored as float (exact for the
    // small sums here: |q| <= 8 * 16 with 20 significant bits), rotated in fp32.
    auto rotated_projection = [&](const std::vector<long double>& w, const std::vector<long double>& x,
                                  const rope_config& c, std::int64_t p) {
      std::vector<float> q(d), y(d);
      for (std::size_t r = 0; r < d; ++r) {
        long double acc = 0;
        for (int k = 0; k < in; ++k) acc += w[r * static_cast<std::size_t>(in) + static_cast<std::size_t>(k)] * x[static_cast<std::size_t>(k)];
        q[r] = static_cast<float>(acc);
      }
      rotate_heads<float>(std::span<const float>(q), std::span<float>(y), 1, rope_geometry::of(c), p, cs);
      return y;
    };
    const auto q_il = rotated_projection(wq, xm, il, m), k_il = rotated_projection(wk, xn, il, n);
    const auto q_hs = rotated_projection(pwq, xm, hs, m), k_hs = rotated_projection(pwk, xn, hs, n);
    long double s_il = 0, s_hs = 0, abs_sum = 0;
    for (std::size_t j = 0; j < d; ++j) {
      s_il += static_cast<long double>(q_il[j]) * k_il[j];
      s_hs += static_cast<long double>(q_hs[j]) * k_hs[j];
      abs_sum += std::fabs(static_cast<long double>(q_il[j]) * k_il[j]);
    }
    // The same d products (exact in long double), summed in another order: 2 d u_ld sum|terms|.
    RC_ASSERT(std::fabs(s_il - s_hs) <= 2 * static_cast<long double>(d) * u_ld * abs_sum);
  });
}

TEST(LayoutProperty, a_query_rotated_interleaved_against_a_key_rotated_half_split_breaks_the_identity) {
  named_config il{"llama2_interleaved", *find_preset("llama2-7b")};
  il.cfg.pair_layout = layout::interleaved;
  named_config hs = il;
  hs.cfg.pair_layout = layout::half_split;
  const auto qi = bind_kernel<float, float>("hf_float", il, hf_angle<float>(il.cfg), hf_model<float>(il));
  const auto kh = bind_kernel<float, float>("hf_float", hs, hf_angle<float>(hs.cfg), hf_model<float>(hs));
  // The relative-offset property with its error-model bound: holds when both use one layout,
  // fails when the key is rotated in the other.
  const std::int64_t max = std::int64_t{1} << 20;
  const auto same = check_property("mixed_layouts/control", relative_offset_identity_holds_for(qi, qi, max), true);
  EXPECT_TRUE(same.passed) << "same layout must satisfy the identity: " << same.report();
  const auto mixed = check_property("mixed_layouts/detected", relative_offset_identity_holds_for(qi, kh, max), true);
  EXPECT_FALSE(mixed.passed) << "mixed layouts went undetected";
  std::printf("[ropecheck] mixed layouts detected (expected): %s\n", mixed.report().c_str());
}

// ---------------------------------------------------------------------------------------------
// Property 7: schedules, on the reference.

rope_config drawn_scaled(scaling_kind k) {
  rope_config c;
  c.head_dim = c.rotary_dim = *gen::head_dim();
  c.base = *rc::gen::element(10000.0, 500000.0, 1000000.0);
  c.scaling = k;
  c.factor = *rc::gen::element(2.0, 4.0, 8.0, 16.0, 40.0);
  return c;
}

TEST(ScheduleProperty, linear_scaling_is_position_interpolation_positions_divided_by_s) {
  ROPECHECK_EXPECT_PROPERTY("schedule_pi", [] {
    auto lin = drawn_scaled(scaling_kind::linear);
    auto plain = lin;
    plain.scaling = scaling_kind::none;
    const reference::rope_reference rl(lin), rp(plain);
    const auto s = static_cast<std::int64_t>(lin.factor);
    const std::int64_t p = *gen::position(std::int64_t{1} << 30);
    const int band = *rc::gen::inRange(0, lin.bands());
    // angle_linear(p s) = p s theta / s = angle_plain(p)
    const long double a = rl.angle(p * s, band).value(), b = rp.angle(p, band).value();
    RC_ASSERT(std::fabs(a - b) <= tiny * std::fabs(b) + 0x1p-100L);
  });
}

TEST(ScheduleProperty, ntk_keeps_band_zero_and_divides_the_last_band_by_exactly_s) {
  ROPECHECK_EXPECT_PROPERTY("schedule_ntk", [] {
    auto ntk = drawn_scaled(scaling_kind::ntk);
    auto plain = ntk;
    plain.scaling = scaling_kind::none;
    const reference::rope_reference rn(ntk), rp(plain);
    RC_ASSERT(rn.inv_freq(0).hi == 1.0 && rn.inv_freq(0).lo == 0.0);
    const int last = ntk.bands() - 1;
    const long double ratio = rn.inv_freq(last).value() / rp.inv_freq(last).value();
    RC_ASSERT(std::fabs(ratio * ntk.factor - 1.0L) <= tiny);
  });
}

TEST(ScheduleProperty, yarn_extrapolates_below_its_ramp_interpolates_above_and_scales_attention_by_0_1_ln_s_plus_1) {
  ROPECHECK_EXPECT_PROPERTY("schedule_yarn", [] {
    auto y = drawn_scaled(scaling_kind::yarn);
    y.max_position_embeddings = *rc::gen::element<std::int64_t>(2048, 4096, 8192, 32768);
    auto plain = y;
    plain.scaling = scaling_kind::none;
    const reference::rope_reference ry(y), rp(plain);
    // Ramp ends of HF's YaRN (truncate): floor/ceil of d ln(L / (2 pi beta)) / (2 ln base).
    const long double pi = std::numbers::pi_v<long double>;
    auto cd = [&](double beta) {
      return y.rotary_dim * std::log(static_cast<long double>(y.max_position_embeddings) / (2 * pi * beta)) /
             (2 * std::log(static_cast<long double>(y.base)));
    };
    const long double low = std::max(0.0L, std::floor(cd(y.beta_fast)));
    const long double high = std::min(static_cast<long double>(y.rotary_dim - 1), std::ceil(cd(y.beta_slow)));
    for (int i = 0; i < y.bands(); ++i) {
      const long double r = ry.inv_freq(i).value() / rp.inv_freq(i).value();
      if (i <= low) RC_ASSERT(std::fabs(r - 1.0L) <= tiny);                 // fast bands: unchanged
      if (i >= high) RC_ASSERT(std::fabs(r * y.factor - 1.0L) <= tiny);    // slow bands: / s
      RC_ASSERT(r <= 1.0L + tiny && r * y.factor >= 1.0L - tiny);          // in between: between
    }
    const long double af = ry.attention_factor().value();
    RC_ASSERT(std::fabs(af - (0.1L * std::log(static_cast<long double>(y.factor)) + 1.0L)) <= 1e-18L);
  });
}

TEST(ScheduleProperty, llama3_keeps_fast_bands_divides_slow_bands_and_is_continuous_at_both_boundaries) {
  ROPECHECK_EXPECT_PROPERTY("schedule_llama3", [] {
    auto l3 = drawn_scaled(scaling_kind::llama3);
    l3.original_max_position_embeddings = *rc::gen::element<std::int64_t>(2048, 4096, 8192);
    l3.max_position_embeddings = l3.original_max_position_embeddings * 16;
    l3.low_freq_factor = *rc::gen::element(1.0, 2.0);
    l3.high_freq_factor = *rc::gen::element(4.0, 8.0);
    auto plain = l3;
    plain.scaling = scaling_kind::none;
    const long double L0 = static_cast<long double>(l3.original_max_position_embeddings);
    const long double two_pi = 2 * std::numbers::pi_v<long double>;
    {
      const reference::rope_reference r3(l3), rp(plain);
      for (int i = 0; i < l3.bands(); ++i) {
        const long double f = rp.inv_freq(i).value(), wl = two_pi / f;
        const long double r = r3.inv_freq(i).value() / f;
        if (wl < L0 / l3.high_freq_factor) RC_ASSERT(std::fabs(r - 1.0L) <= tiny);
        if (wl > L0 / l3.low_freq_factor) RC_ASSERT(std::fabs(r * l3.factor - 1.0L) <= tiny);
        RC_ASSERT(r <= 1.0L + tiny && r * l3.factor >= 1.0L - tiny);
      }
    }
    // Continuity: move the base so that band i's wavelength sits at a boundary, then just either
    // side of it (relative eps in the base). Both sides must give the boundary's regime within the
    // change of the smooth weight, |d smooth| <= high eps / (high - low) (wavelength ~ base^(2i/d)).
    const int i = *rc::gen::inRange(1, l3.bands());
    const long double e = 2.0L * i / l3.rotary_dim;
    const long double eps = 1e-9L;
    for (const double boundary : {l3.high_freq_factor, l3.low_freq_factor}) {
      const long double base_at = std::pow(L0 / (boundary * two_pi), 1.0L / e);  // 2 pi base^e = L0 / boundary
      if (base_at <= 1.5L || base_at > 1e12L) continue;
      const long double want = boundary == l3.high_freq_factor ? 1.0L : 1.0L / l3.factor;
      for (const long double side : {-1.0L, 1.0L}) {
        auto a = l3, p = plain;
        a.base = p.base = static_cast<double>(base_at * (1 + side * eps));
        const reference::rope_reference ra(a), rpp(p);
        const long double r = ra.inv_freq(i).value() / rpp.inv_freq(i).value();
        const long double slack = l3.high_freq_factor * 2 * eps / (l3.high_freq_factor - l3.low_freq_factor) + 1e-15L;
        RC_ASSERT(std::fabs(r - want) <= slack);
      }
    }
  });
}

TEST(ScheduleProperty, dynamic_ntk_returns_to_the_base_schedule_for_a_short_sequence_after_a_long_one) {
  ROPECHECK_EXPECT_PROPERTY("schedule_dynamic_reset", [] {
    auto c = drawn_scaled(scaling_kind::dynamic_ntk);
    c.max_position_embeddings = *rc::gen::element<std::int64_t>(2048, 4096, 8192);
    const std::int64_t L = c.max_position_embeddings;
    dynamic_ntk_state state(c);
    const std::int64_t long_len = *rc::gen::inRange<std::int64_t>(L + 1, 16 * L);
    const std::int64_t short_len = *rc::gen::inRange<std::int64_t>(1, L);
    RC_ASSERT(state.update(long_len));
    RC_ASSERT(state.current().inv_freq.back() < state.original().inv_freq.back());  // stretched
    state.update(short_len);
    for (std::size_t i = 0; i < state.original().inv_freq.size(); ++i)
      RC_ASSERT(state.current().inv_freq[i] == state.original().inv_freq[i]);
  });
}

}  // namespace
}  // namespace ropecheck::test
