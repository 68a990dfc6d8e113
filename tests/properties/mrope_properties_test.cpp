// tests/properties/mrope_properties_test.cpp — properties of M-RoPE (ropecheck/mrope.hpp and the
// reference's rotate_rows), over drawn head dims, contiguous and interleaved section splits, rows and
// inputs (RapidCheck through framework.hpp: the suite's seed, printed with any failure and its
// reproduce string):
//   * text tokens (every row p) give exactly plain RoPE at p: bit for bit in the kernel, and the
//     judge passes a dump of multimodal rows rotated by the kernel (within the reference's allowance);
//   * per-row relative offset: shifting row r by d leaves every band of the other rows bit for bit and
//     turns row r's bands as the 1-D kernel at q_r + d does; in the reference, it is the rotation by
//     d theta_i of the unshifted output, to long double rounding;
//   * orthogonality: every pair keeps its length, within the kernel's error bound (rope.hpp).
#include <gtest/gtest.h>
#include <rapidcheck.h>

#include <cmath>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "framework.hpp"
#include "generators.hpp"
#include "ropecheck/error.hpp"
#include "ropecheck/judge/judge.hpp"
#include "ropecheck/mrope.hpp"
#include "ropecheck/reference/reference.hpp"
#include "ropecheck/rope.hpp"
#include "ropecheck/schedule.hpp"

namespace ropecheck::test {
namespace {

// A valid M-RoPE split of a drawn head dim: contiguous with any three sections, or interleaved with
// s1 <= (bands + 1) / 3 and s2 <= bands / 3 (the most bands the stride-3 slices 1::3 and 2::3 hold).
rope_config drawn_mrope() {
  rope_config c;
  c.head_dim = c.rotary_dim = *gen::head_dim();
  c.base = *rc::gen::element(10000.0, 1000000.0, 5000000.0);
  const int nb = c.bands();
  c.mrope = *rc::gen::element(mrope_kind::contiguous, mrope_kind::interleaved);
  if (c.mrope == mrope_kind::contiguous) {
    const int s0 = *rc::gen::inRange(0, nb + 1);
    const int s1 = *rc::gen::inRange(0, nb - s0 + 1);
    c.mrope_section = {s0, s1, nb - s0 - s1};
  } else {
    const int s1 = *rc::gen::inRange(0, (nb + 1) / 3 + 1);
    const int s2 = *rc::gen::inRange(0, nb / 3 + 1);
    c.mrope_section = {nb - s1 - s2, s1, s2};
  }
  validate(c);
  return c;
}

std::vector<std::int64_t> drawn_rows(std::int64_t max) {
  const std::int64_t t = *gen::position(max);
  return {t, t + *rc::gen::inRange<std::int64_t>(-64, 64), t + *rc::gen::inRange<std::int64_t>(-64, 64)};
}

template <class S>
std::vector<S> narrowed(const std::vector<long double>& v) {
  std::vector<S> out(v.size());
  for (std::size_t j = 0; j < v.size(); ++j) out[j] = scalar_traits<S>::narrow(v[j]);
  return out;
}

template <class S, class C, class Strategy>
void text_tokens_are_plain_rope_bit_for_bit() {
  const rope_config c = drawn_mrope();
  const int heads = *rc::gen::inRange(1, 4);
  const std::int64_t p = *gen::position(std::int64_t{1} << 31);
  const std::vector<S> x = narrowed<S>(*gen::exact_vector(static_cast<std::size_t>(heads * c.head_dim)));
  std::vector<S> y_m(x.size()), y_1(x.size());
  const Strategy cs(c);
  const std::vector<int> br = mrope_band_rows_of(c);
  const std::vector<std::int64_t> rows = {p, p, p};
  rotate_heads_mrope<C>(std::span<const S>(x), std::span<S>(y_m), heads, rope_geometry::of(c), rows, br, cs);
  rotate_heads<C>(std::span<const S>(x), std::span<S>(y_1), heads, rope_geometry::of(c), p, cs);
  for (std::size_t j = 0; j < x.size(); ++j)
    if (!bitwise_equal(y_m[j], y_1[j]))
      RC_FAIL("M-RoPE with every row " + std::to_string(p) + " differs from plain RoPE at index " + std::to_string(j));
}

TEST(MropeProperty, text_tokens_give_plain_rope_bit_for_bit_in_the_kernel) {
  ROPECHECK_EXPECT_PROPERTY("mrope_text_is_plain/float_hf", (text_tokens_are_plain_rope_bit_for_bit<float, float, hf_angle<float>>));
  ROPECHECK_EXPECT_PROPERTY("mrope_text_is_plain/bf16_float_direct",
                            (text_tokens_are_plain_rope_bit_for_bit<bfloat16, float, direct_angle<float>>));
  ROPECHECK_EXPECT_PROPERTY("mrope_text_is_plain/double_direct", (text_tokens_are_plain_rope_bit_for_bit<double, double, direct_angle<double>>));
}

// The kernel's M-RoPE output on tokens with differing rows, judged against the reference: passes.
TEST(MropeProperty, the_kernel_on_multimodal_rows_passes_the_judge) {
  ROPECHECK_EXPECT_PROPERTY("mrope_kernel_passes_judge/float_hf", [] {
    const rope_config c = drawn_mrope();
    const int tokens = *rc::gen::inRange(1, 9);
    judge::dump d;
    d.tokens = tokens, d.heads = 2, d.head_dim = c.head_dim, d.dtype = "float32";
    std::vector<std::int64_t> rows(3 * static_cast<std::size_t>(tokens));
    for (int t = 0; t < tokens; ++t) {
      const auto r = drawn_rows(std::int64_t{1} << 20);
      for (std::size_t k = 0; k < 3; ++k) rows[k * static_cast<std::size_t>(tokens) + static_cast<std::size_t>(t)] = r[k];
    }
    d.position_rows = rows;
    d.positions.assign(rows.begin(), rows.begin() + tokens);
    const auto xv = *gen::exact_vector(static_cast<std::size_t>(tokens * 2 * c.head_dim));
    const std::vector<float> x = narrowed<float>(xv);
    std::vector<float> y(x.size());
    const std::vector<int> br = mrope_band_rows_of(c);
    rotate_tokens_mrope<float, float>(std::span<const float>(x), std::span<float>(y), rows, 3, 2, rope_geometry::of(c), br,
                                      hf_angle<float>(c));
    d.x.assign(x.begin(), x.end());
    d.y.assign(y.begin(), y.end());
    const judge::verdict v = judge::audit(d, c, judge::audit_options{});
    RC_ASSERT(v.pass);
  });
}

// Shifting row r by d: the other rows' bands bit for bit, row r's as the 1-D kernel at q_r + d.
template <class S, class C, class Strategy>
void shifting_one_row_changes_only_its_bands() {
  const rope_config c = drawn_mrope();
  const int heads = *rc::gen::inRange(1, 3);
  std::vector<std::int64_t> rows = drawn_rows(std::int64_t{1} << 24);
  const int r = *rc::gen::inRange(0, 3);
  const std::int64_t d = *rc::gen::inRange<std::int64_t>(-4096, 4097);
  const std::vector<S> x = narrowed<S>(*gen::exact_vector(static_cast<std::size_t>(heads * c.head_dim)));
  std::vector<S> y(x.size()), ys(x.size()), y1(x.size());
  const Strategy cs(c);
  const std::vector<int> br = mrope_band_rows_of(c);
  const rope_geometry g = rope_geometry::of(c);
  rotate_heads_mrope<C>(std::span<const S>(x), std::span<S>(y), heads, g, rows, br, cs);
  std::vector<std::int64_t> shifted = rows;
  shifted[static_cast<std::size_t>(r)] += d;
  rotate_heads_mrope<C>(std::span<const S>(x), std::span<S>(ys), heads, g, shifted, br, cs);
  rotate_heads<C>(std::span<const S>(x), std::span<S>(y1), heads, g, shifted[static_cast<std::size_t>(r)], cs);
  for (int h = 0; h < heads; ++h)
    for (int b = 0; b < c.bands(); ++b) {
      const auto [ia, ib] = g.pair_of(b);
      for (int j : {ia, ib}) {
        const auto k = static_cast<std::size_t>(h * c.head_dim + j);
        const bool own = br[static_cast<std::size_t>(b)] == r;
        if (!bitwise_equal(ys[k], own ? y1[k] : y[k]))
          RC_FAIL("band " + std::to_string(b) + " (row " + std::to_string(br[static_cast<std::size_t>(b)]) + ") after row " +
                  std::to_string(r) + " moved by " + std::to_string(d) + ": not " + (own ? "the 1-D kernel at the new position" : "unchanged"));
      }
    }
}

TEST(MropeProperty, shifting_one_row_changes_only_that_rows_bands_in_the_kernel) {
  ROPECHECK_EXPECT_PROPERTY("mrope_row_shift/float_hf", (shifting_one_row_changes_only_its_bands<float, float, hf_angle<float>>));
  ROPECHECK_EXPECT_PROPERTY("mrope_row_shift/bf16_float_direct", (shifting_one_row_changes_only_its_bands<bfloat16, float, direct_angle<float>>));
}

// The reference: rotate_rows(rows + d e_r) = R(d theta_i) rotate_rows(rows) on row r's bands, the rest
// unchanged. Both sides carry the reference's 2^-89 (|x_a| + |x_b|) per component (cos/sin 2^-90 and
// the double-double rotation); R(d theta) applied in long double adds 4 roundings of 2^-64 of values
// below sqrt(2) (|x_a| + |x_b|): the bound 2^-58 (|x_a| + |x_b|) holds both with room.
TEST(MropeProperty, shifting_one_row_rotates_its_bands_by_d_theta_in_the_reference) {
  ROPECHECK_EXPECT_PROPERTY("mrope_row_shift/reference", [] {
    const rope_config c = drawn_mrope();
    const reference::rope_reference R(c);
    std::vector<std::int64_t> rows = drawn_rows(std::int64_t{1} << 40);
    const int r = *rc::gen::inRange(0, 3);
    const std::int64_t d = *rc::gen::inRange<std::int64_t>(-100000, 100001);
    const auto xv = *gen::exact_vector(static_cast<std::size_t>(c.head_dim));
    const std::vector<double> x(xv.begin(), xv.end());
    std::vector<reference::dd> y(x.size()), ys(x.size());
    R.rotate_rows(rows, x, y);
    std::vector<std::int64_t> shifted = rows;
    shifted[static_cast<std::size_t>(r)] += d;
    R.rotate_rows(shifted, x, ys);
    const std::vector<int>& br = R.band_rows();
    const int nb = c.bands();
    for (int b = 0; b < nb; ++b) {
      const auto ia = static_cast<std::size_t>(b), ib = static_cast<std::size_t>(b + nb);  // half-split
      long double wa = y[ia].value(), wb = y[ib].value();
      if (br[static_cast<std::size_t>(b)] == r) {
        const auto t = R.cos_sin(d, b);
        const long double cd = t.cos.value(), sd = t.sin.value();
        const long double za = wa * cd - wb * sd, zb = wa * sd + wb * cd;
        wa = za, wb = zb;
      }
      const long double bound = 0x1p-58L * (std::fabs(static_cast<long double>(x[ia])) + std::fabs(static_cast<long double>(x[ib])));
      RC_ASSERT(std::fabs(ys[ia].value() - wa) <= bound);
      RC_ASSERT(std::fabs(ys[ib].value() - wb) <= bound);
    }
  });
}

// Orthogonality in double: per pair, | |y| - |x| | <= sqrt(2) (3u + u^2) (|x_a| + |x_b|), u = 2^-53:
// rope.hpp's (2u + u^2) per component with exact cos/sin, plus u (|x_a| + |x_b|) from cos and sin each
// rounded once (direct_angle<double>: libm within an ulp at |c|, |s| <= 1), the 2-vector's error norm
// at most sqrt(2) times its largest component; plus the two hypot roundings (within an ulp each, 2u|y|).
TEST(MropeProperty, every_pair_keeps_its_length) {
  ROPECHECK_EXPECT_PROPERTY("mrope_orthogonal/double_direct", [] {
    const rope_config c = drawn_mrope();
    const std::vector<std::int64_t> rows = drawn_rows(std::int64_t{1} << 20);
    const std::vector<double> x = narrowed<double>(*gen::exact_vector(static_cast<std::size_t>(c.head_dim)));
    std::vector<double> y(x.size());
    const std::vector<int> br = mrope_band_rows_of(c);
    const rope_geometry g = rope_geometry::of(c);
    rotate_heads_mrope<double>(std::span<const double>(x), std::span<double>(y), 1, g, rows, br, direct_angle<double>(c));
    constexpr double u = 0x1p-53;
    for (int b = 0; b < c.bands(); ++b) {
      const auto [ia, ib] = g.pair_of(b);
      const double xa = x[static_cast<std::size_t>(ia)], xb = x[static_cast<std::size_t>(ib)];
      const double nx = std::hypot(xa, xb), ny = std::hypot(y[static_cast<std::size_t>(ia)], y[static_cast<std::size_t>(ib)]);
      RC_ASSERT(std::fabs(ny - nx) <= std::sqrt(2.0) * (3 * u + u * u) * (std::fabs(xa) + std::fabs(xb)) + 2 * u * ny);
    }
  });
}

}  // namespace
}  // namespace ropecheck::test
