// tests/error_model.hpp — the error model every tolerance in the tests comes from.
//
// One table, written once, each bound in units of the unit roundoff u_T = 2^-digits(T) of the type
// in which the step happens, with the reason next to it. Nothing here is tuned to a measurement:
// when a test fails against one of these bounds, either the code or this reasoning is wrong.
//
// Notation: p position, theta_i the exact frequency of band i, phi = p theta_i the exact angle,
// x_a, x_b the pair being rotated, af the attention factor (>= 1 where present).
//
// 1. Rotation arithmetic, given cos/sin c~, s~ in Compute C:
//      y_a = fl_C(fl_C(x_a c~) - fl_C(x_b s~))
//    each of the two products and the sum rounds once (u_C relative each), so
//      |y_a - (x_a c~ - x_b s~)| <= 2 u_C (|x_a c~| + |x_b s~|) + O(u_C^2) <= (2 u_C + 4 u_C^2) af (|x_a| + |x_b|)
//    then one rounding to Storage S when S is narrower: + u_S |y_a| <= u_S af (|x_a| + |x_b|).
//
// 2. cos/sin rounding: a correctly rounded c~ = fl_T(af cos phi) is off by u_T |c~| <= u_T af.
//    libm's cos/sin in T (glibc: < 1 ulp for float, double, long double) is off by <= 1 ulp of a
//    value <= 1, i.e. <= 2 u_T absolute; the multiply by af rounds once more: u_T af.
//
// 3. Angle error. A strategy that forms phi~ = fl(fl(p) * inv_freq~) has
//      |phi~ - phi| <= (k_freq + k_pos + 1) u |phi|
//    where k_freq u bounds inv_freq~'s relative error (below), k_pos = 1 when p is rounded to the
//    type (p > 2^digits) and 0 otherwise, and the product rounds once.
//    inv_freq = base^(-e), e = 2i/d: e rounds to the type (relative u), which moves base^-e by
//    e ln(base) u relative; pow adds <= 1 ulp (2u); a reciprocal or division adds u; each scaling
//    step (/factor, the YaRN or Llama-3 mix, the NTK base power) adds at most 3u. So
//      k_freq = e ln(base_eff) + 2 + 1 + 3 * scaling_steps.
//    ggml forms theta_i by i repeated fp32 products with theta_scale = powf(base, -2/d), whose own
//    relative error is (2/d) ln(base) u + 2u: the errors add up over the chain,
//      k_freq(ggml, i) = i ((2/d) ln(base) + 2 + 1) + 2.
//
// 4. Consequently, for a strategy with angle bound A = k u_T |phi| and cos/sin in T:
//      |c~ - af cos phi| <= af (A + 2 u_T) + u_T af  (+ u_Cache af when re-rounded into a cache).
//
// The known-bad strategies have error models of their own, used by tests that show they exceed
// the good ones: positions in bf16 move p by up to 2^-9 p (u_bf16 |p|); a bf16 cos/sin cache is
// off by up to u_bf16 = 2^-8 *absolute* at every position; fast_sin/fast_cos by <= 1.1e-3.
#pragma once

#include <cmath>
#include <cstdint>

#include "ropecheck/config.hpp"
#include "ropecheck/scalar.hpp"

namespace ropecheck::test {

// Rounding steps the scaling rule adds on top of the plain schedule (section 3).
[[nodiscard]] inline int scaling_steps(scaling_kind k) {
  switch (k) {
    case scaling_kind::none: return 0;
    case scaling_kind::linear: return 1;         // / factor
    case scaling_kind::ntk: return 2;            // factor^(d/(d-2)), base * that
    case scaling_kind::dynamic_ntk: return 3;    // the ratio, the power, base * that
    case scaling_kind::yarn: return 3;           // / factor, the two products of the mix, the sum
    case scaling_kind::llama3: return 3;         // same shape as YaRN's mix
    case scaling_kind::longrope: return 2;       // ext * base^e, reciprocal
  }
  return 3;
}

// The largest base a rule can reach, for e ln(base) (section 3): NTK-style rules raise it.
[[nodiscard]] inline double effective_base(const rope_config& c, std::int64_t seq_len = 0) {
  const double d = c.rotary_dim;
  if (c.scaling == scaling_kind::ntk) return c.base * std::pow(c.factor, d / (d - 2));
  if (c.scaling == scaling_kind::dynamic_ntk) {
    const double L = static_cast<double>(c.max_position_embeddings);
    const double s = std::max(static_cast<double>(seq_len), L);
    return c.base * std::pow(c.factor * s / L - (c.factor - 1), d / (d - 2));
  }
  return c.base;
}

// k_freq of section 3 for band i when inv_freq is computed directly in the type.
[[nodiscard]] inline long double k_freq_direct(const rope_config& c, int band, std::int64_t seq_len = 0) {
  const long double e = 2.0L * band / c.rotary_dim;
  return e * std::log(static_cast<long double>(effective_base(c, seq_len))) + 3.0L +
         3.0L * scaling_steps(c.scaling);
}

// k_freq of section 3 for ggml's repeated products.
[[nodiscard]] inline long double k_freq_ggml(const rope_config& c, int band, std::int64_t seq_len = 0) {
  const long double step = 2.0L / c.rotary_dim * std::log(static_cast<long double>(effective_base(c, seq_len))) + 3.0L;
  return band * step + 2.0L + 3.0L * scaling_steps(c.scaling);
}

// Angle bound in units of u_T |phi|: k_freq + k_pos + 1 (section 3).
template <class T>
[[nodiscard]] inline long double k_angle(long double k_freq, std::int64_t pos) {
  const bool pos_rounds = std::fabs(static_cast<long double>(pos)) > std::ldexp(1.0L, scalar_traits<T>::digits);
  return k_freq + (pos_rounds ? 1.0L : 0.0L) + 1.0L;
}

// Rotation arithmetic bound (section 1) in units of af (|x_a| + |x_b|), for cos/sin already
// known to within `cs_abs` (absolute, including af).
template <class Compute, class Storage>
[[nodiscard]] inline long double rotation_bound(long double cs_abs, long double af) {
  const long double uc = unit_roundoff<Compute>();
  const long double us = unit_roundoff<Storage>() < uc ? 0.0L : unit_roundoff<Storage>();
  const long double arith = (2.0L * uc + 4.0L * uc * uc) * af;
  const long double store = (scalar_traits<Storage>::digits < scalar_traits<Compute>::digits) ? us * af : 0.0L;
  return cs_abs + arith + store;
}

}  // namespace ropecheck::test
