// ropecheck/judge/error_model.hpp — the error model every tolerance comes from: the judge's table (the audit,
// the plugin door, the report's verdicts and the tests all read this one file). Covered by
// tests/judge/allowance_test.cpp (Allowance.*: the judge's terms are this table's), and each bound by the
// kernels' tests: tests/core/angle_test.cpp (AngleStrategy.*), tests/core/rope_test.cpp,
// tests/core/schedule_test.cpp (the frequency bounds band by band).
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
//    where k_freq u bounds inv_freq~'s relative error (section 5, rule by rule: pow 2u, the
//    exponent's rounding e ln(base) u, one u per operation, the YaRN/Llama-3 mixing amplifiers),
//    k_pos = 1 when p is rounded to the type (p > 2^digits) and 0 otherwise, and the product
//    rounds once.
//    ggml forms theta_i by i repeated fp32 products with theta_scale = powf(base, -2/d), whose own
//    relative error is (2/d) ln(base) u + 2u: the errors add up over the chain,
//      k_freq(ggml, i) = i ((2/d) ln(base) + 2 + 1) + 2.
//
// 4. Consequently, for a strategy with angle bound A = k u_T |phi| and cos/sin in T:
//      |c~ - af cos phi| <= af (A + 2 u_T) + u_T af  (+ u_Cache af when re-rounded into a cache).
//
// 7. Scores read from attention outputs (judge/src/readout.cpp, the attention form of the probe). With v
//    one-hot per key, a row of o = softmax(s) v is the softmax weights, stored in T; key j's score minus
//    the zero key's is log(w_j / w_0). Each weight is one rounding of an fp32 softmax into T (u_T relative;
//    a 16-bit T, or u_32 for fp32 outputs), the fp32 softmax's exp and division add 3 u_32 to each, so
//      |log(w_j / w_0) - (s_j - s_0)| <= 2 (u_T + 3 u_32)                      (absolute, in score units)
//    s itself is q'.k' times the scale, each rounded into T by an eager kernel (a 16-bit matmul's result,
//    then the multiply by the scale): 2 u_T |s| <= 2 u_T sqrt(2) C for the designed |s| <= sqrt(2) C.
//    q' and k' each carry a side's allowance (sections 1-4): the cos/sin, rotation and store terms twice,
//    and the angle terms at m and at n (linear in |p|: the angle term at m + n). Relative to C (the
//    designed score magnitude, af (|x_a| + |x_b|) of the evidence), the read-out adds
//      fixed_T + 2 sqrt(2) u_T + 2 (u_T + 3 u_32) / C
//    to a side's fixed part (readout.cpp score_readout_allowance).
//
// The known-bad strategies have error models of their own, used by tests that show they exceed
// the good ones: positions in bf16 move p by up to 2^-9 p (u_bf16 |p|); a bf16 cos/sin cache is
// off by up to u_bf16 = 2^-8 *absolute* at every position; fast_sin/fast_cos by <= 1.1e-3.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numbers>
#include <type_traits>

#include "ropecheck/config.hpp"
#include "ropecheck/scalar.hpp"

namespace ropecheck::judge {

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

// k_freq of section 3 for band i when inv_freq is computed directly in T (section 5's bound);
// bf16/half schedules are computed in float and rounded once to T: the float bound scaled to
// u_T, plus that rounding.
template <class T>
[[nodiscard]] long double k_freq_direct(const rope_config& c, int band, std::int64_t seq_len = 0);

// k_freq of section 3 for HF's fp32 inv_freq (section 5's bound_hf).
[[nodiscard]] long double k_freq_hf(const rope_config& c, int band, std::int64_t seq_len = 0);

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


// ================================================================================================
// 5. Frequencies in detail: the per-band bounds of schedule.hpp's compute_frequencies<T> and
//    hf_frequencies_fp32, rule by rule (schedule_test checks them band by band; angle_test builds
//    the angle bound of section 3 on them).
// Tolerance table. Bookkeeping in units of u = 2^-digits(T), the unit roundoff of the type doing
// the step. A relative error of rho*u is at most rho ulps of the exact value (ulp(x) > |x| u), and
// a k-ulp library result is at most 2k u relative (ulp(x) <= 2|x| u). Nothing here is tuned.
//
//   kOp   = 1  one correctly rounded + - * / sqrt, or one conversion of a double parameter to T
//                (charged only when the parameter is not representable in T)
//   kPow  = 2  glibc pow / powf / powl: < 1 ulp (glibc libm-test-ulps, x86_64) -> 2u relative
//   kLog  = 2  glibc log / logf / logl: < 1 ulp, same reasoning
//   e ln b     the exponent e = 2i/d rounded to T (relative u, only when d is not a power of two)
//              moves base^-e by e ln(base) u relative
//   amplifiers  YaRN and Llama-3 mix interp = x/s and x: an absolute error delta in a mixing
//              weight moves the result by x (1 - 1/s) delta, and the result is >= x/s, so weight
//              errors are amplified by (s - 1) relative; derived per rule below.
// ================================================================================================
constexpr double kOp = 1.0;
constexpr double kPow = 2.0;
constexpr double kLog = 2.0;

template <class T>
double inexact(double v) {  // 1 when the double parameter v rounds on conversion to T
  return static_cast<double>(static_cast<T>(v)) == v ? 0.0 : 1.0;
}

inline bool power_of_two(int d) { return d > 0 && (d & (d - 1)) == 0; }

// Relative error (units of u) of x = base^-e_i formed as pow(T(base), -T(2i)/T(d)).
template <class T>
double rho_plain(double base, int d, int i) {
  const double e = 2.0 * i / d;
  return kPow + (power_of_two(d) ? 0.0 : e * std::log(base)) + e * inexact<T>(base);
}

// Exact (long double) YaRN correction range, as the reference and HF define it.
struct ramp_ends {
  long double low, high;
};
inline ramp_ends yarn_range(const rope_config& c) {
  const long double L0 = static_cast<long double>(c.trained_length());
  const long double pi = std::numbers::pi_v<long double>;
  auto cd = [&](double r) {
    return c.rotary_dim * std::log(L0 / (static_cast<long double>(r) * 2 * pi)) / (2 * std::log((long double)c.base));
  };
  long double lo = cd(c.beta_fast), hi = cd(c.beta_slow);
  if (c.truncate) {
    lo = std::floor(lo);
    hi = std::ceil(hi);
  }
  lo = std::max(lo, 0.0L);
  hi = std::min(hi, static_cast<long double>(c.rotary_dim - 1));
  if (lo == hi) hi += 0.001L;
  return {lo, hi};
}

inline double effective_factor(const rope_config& c) {
  if ((c.scaling == scaling_kind::yarn || c.scaling == scaling_kind::longrope) &&
      c.original_max_position_embeddings > 0 && c.factor == 1.0)
    return static_cast<double>(c.max_position_embeddings) / static_cast<double>(c.original_max_position_embeddings);
  return c.factor;
}

// The bound (ulps of T) for band i of compute_frequencies<T>.
template <class T>
double bound_native(const rope_config& c, int i, std::int64_t seq_len) {
  const int d = c.rotary_dim;
  const double e = 2.0 * i / d;
  const double s = effective_factor(c);
  const double s_in = inexact<T>(s);
  const double x = rho_plain<T>(c.base, d, i);
  switch (c.scaling) {
    case scaling_kind::none:
      return x;
    case scaling_kind::linear:
      return x + kOp + s_in;  // one division by T(s)
    case scaling_kind::ntk:
    case scaling_kind::dynamic_ntk: {
      // base' = b * r^k, k = d/(d-2) rounded (u), so r^k moves by k ln(r) u; pow 2u; product u.
      const double k = static_cast<double>(d) / (d - 2);
      double r = s, rho_r = s_in;
      if (c.scaling == scaling_kind::dynamic_ntk) {
        const double L = static_cast<double>(c.max_position_embeddings);
        const double seq = static_cast<double>(std::max<std::int64_t>(seq_len, c.max_position_embeddings));
        if (seq == L) return x;  // exactly the plain schedule
        // r = s*seq/L - (s-1): the product and quotient carry 2u (+ conversions) on A = s seq/L;
        // the subtraction cancels: relative to r that is A/r, plus (s-1)/r for s-1, plus u.
        const double A = s * seq / L;
        r = A - (s - 1);
        rho_r = (2 * kOp + s_in + inexact<T>(seq) + inexact<T>(L)) * A / r + (kOp + s_in) * (s - 1) / r + kOp;
      }
      const double rho_bp = inexact<T>(c.base) + k * rho_r + k * std::log(r) * kOp + kPow + kOp;
      const double bp = c.base * std::pow(r, k);
      // pow(b', -e): b''s relative error times e, pow's own 2u, the exponent's rounding e ln b'.
      return kPow + e * rho_bp + (power_of_two(d) ? 0.0 : e * std::log(bp));
    }
    case scaling_kind::yarn: {
      const auto [lo, hi] = yarn_range(c);
      const long double w = std::clamp((i - lo) / (hi - lo), 0.0L, 1.0L);
      // (x/s) w_i + x w_e, weights formed by one division each: interp term x + 3 (+ s), extrap
      // term x + 2, both positive, sum + 1.
      double rho = x + 3 * kOp + s_in + kOp;
      if (!c.truncate && w > 0 && w < 1) {
        // Non-integral ends carry the rounding of cd(): ~ (3/|ln y| + 2 kLog + 4) u relative each,
        // y = L0/(2 pi r); that shifts the weights by (|low| + |high|) rho_cd u / (high - low),
        // amplified by (s - 1).
        const double y_fast = static_cast<double>(c.trained_length()) / (c.beta_fast * 2 * std::numbers::pi);
        const double y_slow = static_cast<double>(c.trained_length()) / (c.beta_slow * 2 * std::numbers::pi);
        const double rho_cd = 3 / std::min(std::fabs(std::log(y_fast)), std::fabs(std::log(y_slow))) + 2 * kLog + 4;
        rho += (s - 1) * static_cast<double>((std::fabs(lo) + std::fabs(hi)) / (hi - lo)) * rho_cd;
      }
      return rho;
    }
    case scaling_kind::llama3: {
      const long double two_pi = 2 * std::numbers::pi_v<long double>;
      const long double f = std::pow((long double)c.base, -(long double)e);
      const long double wl = two_pi / f;
      const long double L0 = c.original_max_position_embeddings;
      if (wl < L0 / c.high_freq_factor) return x;                // unchanged
      if (wl > L0 / c.low_freq_factor) return x + kOp + s_in;    // x / s
      // smooth = (L0/wl - lo)/(hi - lo): L0/wl carries x + 4 (2 pi, *, /, /) relative, i.e. an
      // absolute error <= (x + 4) u * hi/(hi - lo) in smooth, + 3u for the subtraction, the
      // division and the parameters; amplified by (s - 1); the mix itself adds 5 roundings.
      const double H = c.high_freq_factor / (c.high_freq_factor - c.low_freq_factor);
      return x + (s - 1) * ((x + 4) * H + 3) + 5 * kOp + s_in;
    }
    case scaling_kind::longrope: {
      const auto& ext = seq_len > c.trained_length() ? c.long_factor : c.short_factor;
      // 1/(T(ext_i) * pow(b, e)): conversion, product, reciprocal.
      return x + inexact<T>(ext[static_cast<std::size_t>(i)]) + 2 * kOp;
    }
  }
  return 0;
}

// Attention factor bound (ulps of T).
template <class T>
double bound_attention_native(const rope_config& c) {
  if (c.attention_factor) return inexact<T>(*c.attention_factor);
  const double s = effective_factor(c);
  if (c.scaling == scaling_kind::yarn) {
    // 0.1 m ln s + 1: 0.1 (u), m (conversion), product, ln (2u + conversion of s / ln s), product,
    // sum (+1, the sum only shrinks the relative error of the term). The ratio doubles it, + 1.
    auto g = [&](double m) { return kOp + inexact<T>(m) + kOp + kLog + inexact<T>(s) / std::log(s) + kOp + kOp; };
    if (c.mscale && c.mscale_all_dim && *c.mscale != 0 && *c.mscale_all_dim != 0)
      return g(*c.mscale) + g(*c.mscale_all_dim) + kOp;
    return g(1.0);
  }
  if (c.scaling == scaling_kind::longrope) {
    // sqrt(1 + ln s / ln L0): two logs, a quotient, a sum; sqrt halves the relative error, + 1.
    return (2 * kLog + 2 * kOp + inexact<T>(s) / std::log(s)) / 2 + kOp;
  }
  return 0;
}

// Bound (ulps of float) for band i of hf_frequencies_fp32.
inline double bound_hf(const rope_config& c, int i, std::int64_t seq_len) {
  using F = float;
  const int d = c.rotary_dim;
  const double e = 2.0 * i / d;
  const double s = effective_factor(c);
  const double s_in = inexact<F>(s);
  const double x = rho_plain<F>(c.base, d, i) + kOp;  // 1.0 / (base ** e): reciprocal
  switch (c.scaling) {
    case scaling_kind::none:
      return x;
    case scaling_kind::linear:
      return x + kOp + s_in;
    case scaling_kind::ntk:
    case scaling_kind::dynamic_ntk: {
      const double k = static_cast<double>(d) / (d - 2);
      double rho_bp, bp;
      if (c.scaling == scaling_kind::dynamic_ntk && seq_len > c.max_position_embeddings) {
        // fp32 runtime path, as in bound_native<float> but k rounded to fp32 (k ln r u).
        const double L = static_cast<double>(c.max_position_embeddings);
        const double A = s * static_cast<double>(seq_len) / L;
        const double r = A - (s - 1);
        const double rho_r = (2 * kOp + s_in + inexact<F>(static_cast<double>(seq_len)) + inexact<F>(L)) * A / r +
                             (kOp + inexact<F>(s - 1)) * (s - 1) / r + kOp;
        rho_bp = inexact<F>(c.base) + k * rho_r + k * std::log(r) * kOp + kPow + kOp;
        bp = c.base * std::pow(r, k);
      } else {
        // Python double base', rounded once to fp32 (double's own error is 2^-29 u_f: nil).
        bp = c.scaling == scaling_kind::ntk ? c.base * std::pow(s, k) : c.base;
        rho_bp = kOp;
      }
      return kPow + kOp + e * rho_bp + (power_of_two(d) ? 0.0 : e * std::log(bp));
    }
    case scaling_kind::yarn: {
      const auto [lo, hi] = yarn_range(c);
      const double w = static_cast<double>(std::clamp((i - lo) / (hi - lo), 0.0L, 1.0L));
      const bool inside = w > 0 && w < 1;
      const double ef = 1 - w, m = w / s + ef;  // exact extrapolation weight and inv/x
      // interp = 1/(s*pos): x + 1 + s; W = 1 - (1 - ramp) carries <= 2u absolute, 1 - ramp <= u;
      // each product 1u; sum 1u. Absolute terms are divided by m = inv/x.
      double rho = ((x + 2 * kOp + s_in) * w / s + (inside ? 2.0 / s : 0.0) + (x + kOp) * ef + (inside ? 1.0 : 0.0)) / m +
                   kOp;
      if (!c.truncate && inside) {
        // low, high rounded to fp32 (u each, Python's own error nil): weights move by
        // (|low| + |high|) u / (high - low), twice for (i - low) and the width, amplified by s - 1.
        rho += (s - 1) * 2 * static_cast<double>((std::fabs(lo) + std::fabs(hi)) / (hi - lo));
      }
      return rho;
    }
    case scaling_kind::llama3: {
      const long double f = std::pow((long double)c.base, -(long double)e);
      const long double wl = 2 * std::numbers::pi_v<long double> / f;
      const long double L0 = c.original_max_position_embeddings;
      if (wl < L0 / c.high_freq_factor) return x;
      if (wl > L0 / c.low_freq_factor) return x + kOp + s_in;
      // wavelen = reciprocal * 2pi_f (3 roundings), L0 / wavelen = reciprocal * L0 (2 more):
      // x + 5 relative in L0/wavelen, then as in bound_native.
      const double H = c.high_freq_factor / (c.high_freq_factor - c.low_freq_factor);
      return x + (s - 1) * ((x + 5) * H + 3 + inexact<F>(c.low_freq_factor)) + 5 * kOp + s_in;
    }
    case scaling_kind::longrope: {
      const auto& ext = seq_len > c.trained_length() ? c.long_factor : c.short_factor;
      return rho_plain<F>(c.base, d, i) + inexact<F>(ext[static_cast<std::size_t>(i)]) + 2 * kOp;
    }
  }
  return 0;
}

template <class T>
long double k_freq_direct(const rope_config& c, int band, std::int64_t seq_len) {
  if constexpr (std::is_floating_point_v<T>)
    return bound_native<T>(c, band, seq_len);
  else
    return bound_native<float>(c, band, seq_len) * (unit_roundoff<float>() / unit_roundoff<T>()) + 1.0L;
}

inline long double k_freq_hf(const rope_config& c, int band, std::int64_t seq_len) { return bound_hf(c, band, seq_len); }

// ================================================================================================
// 6. The judge's envelope: the k_freq judge::allowance charges every careful fp32 implementation
//    (the audit, the plugin door, the report's verdicts and the installed package read it here).
//    One coefficient per band, for any implementation whose frequencies are formed in fp32 (fp64
//    when fp32 is false: float64 dumps, strict mode), without knowing which chain it used:
//      plain      the shape of bound_hf's x = rho_plain + reciprocal: pow 2u, reciprocal 1u,
//                 e ln(base) when d is not a power of two, e for a base not representable in fp32
//      scaling    a conservative envelope of the rules' extra steps (section 5 rule by rule):
//                 linear + 2 (the division, an inexact factor); NTK / dynamic NTK 3 + e (4 + 2 ln s
//                 + ln base when d is not a power of two) (base' = base s^(d/(d-2)) and its pow);
//                 YaRN / Llama-3 6 + (s - 1)(2 rho + 16) (the mixing weights amplified by s - 1);
//                 LongRoPE + 3 (the ext factor's conversion, product, reciprocal)
//      ggml       with fp32, at least ggml's repeated products i ((2/d) ln base + 3) + 2 (section
//                 3's k_freq_ggml with the plain base), plus the scaling envelope above: DESIGN
//                 counts ggml as a careful fp32 implementation whose drift is a warning
//    The angle allowance is then (k + k_pos + 1) u |p theta| (section 3). tests/judge/allowance_test
//    checks, band by band over rule_sweep(), that it covers bound_hf for every rule (least margin 0u:
//    plain and partial schedules are exactly HF's shape) and k_freq_ggml for the plain schedule (it
//    is that bound). With a scaling rule it is up to ~6u BELOW k_freq_ggml (linear -1u, NTK -2.9u,
//    dynamic NTK at 16k -6u, LongRoPE -2.8u: ggml's section-3 bound charges 3u per scaling step and
//    the raised base), a known gap kept as it is so every allowance stays exactly as tight.
[[nodiscard]] inline double judge_k_freq(const rope_config& c, int band, bool fp32) {
  const int d = c.rotary_dim;
  const double e = 2.0 * band / d;
  const double base_inexact = fp32 && static_cast<double>(static_cast<float>(c.base)) != c.base ? 1.0 : 0.0;
  double rho = kPow + kOp /*reciprocal*/ + (power_of_two(d) ? 0.0 : e * std::log(c.base)) + e * base_inexact;
  const double s = std::max(c.factor, 1.0);
  switch (c.scaling) {
    case scaling_kind::none: break;
    case scaling_kind::linear: rho += 2; break;
    case scaling_kind::ntk:
    case scaling_kind::dynamic_ntk:
      rho += 3 + e * (4 + 2 * std::log(s) + std::log(c.base) * (power_of_two(d) ? 0.0 : 1.0));
      break;
    case scaling_kind::yarn:
    case scaling_kind::llama3: rho += 6 + (s - 1) * (2 * rho + 16); break;
    case scaling_kind::longrope: rho += 3; break;
  }
  if (fp32) rho = std::max(rho, band * ((2.0 / d) * std::log(c.base) + 3.0) + 2.0 + (rho - 3.0));
  return rho;
}

}  // namespace ropecheck::judge
