// tools/sweep/measure.hpp — one implementation under test measured at one position (internal to
// the report engine; the figures' contract is in engine.hpp).
//
// typed_runner<S, Compute, Storage> traces strategy S band by band, measures every figure of
// position_errors against the reference row it is handed, and rotates the seeded head vectors with
// the strategy's own cos/sin in its Compute/Storage types. runner is its type-erased face, which
// the sweep (engine.cpp) drives and the registry (registry.cpp) creates.
#pragma once

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <memory>
#include <numbers>
#include <span>
#include <stdexcept>
#include <type_traits>
#include <utility>
#include <vector>

#include "sweep/report_data.hpp"
#include "ropecheck/angle.hpp"
#include "ropecheck/error.hpp"
#include "ropecheck/reference/reference.hpp"
#include "ropecheck/rope.hpp"
#include "ropecheck/scalar.hpp"

namespace ropecheck::sweep::detail {

using reference::dd;
using reference::rope_reference;

inline constexpr long double infinity = std::numeric_limits<long double>::infinity();
inline constexpr long double pi_ld = std::numbers::pi_v<long double>;
inline constexpr long double two_pi_ld = 2.0L * std::numbers::pi_v<long double>;

// ---------------------------------------------------------------------------------------------
// The reference at one position, shared by every implementation.
struct reference_band {
  dd angle;  // p theta
  dd cos;    // af cos(p theta)
  dd sin;    // af sin(p theta)
};

[[nodiscard]] inline dd split(long double v) {
  const auto hi = static_cast<double>(v);
  return {hi, static_cast<double>(v - static_cast<long double>(hi))};
}

// ropecheck::ulp_of<T>(hi + lo) for a double-double reference, without long double arithmetic:
// the exponent read from hi's bits, one less when hi is a power of two and lo points inwards.
// (Bitwise the same spacing; report_engine_test compares the resulting ulps with ulp_error.)
template <class T>
[[nodiscard]] double ulp_at(double hi, double lo) {
  constexpr int digits = scalar_traits<T>::digits;
  constexpr int min_exp = std::numeric_limits<T>::min_exponent - 1;
  const auto bits = std::bit_cast<std::uint64_t>(hi);
  const int biased = static_cast<int>((bits >> 52) & 0x7ff);
  int e = biased == 0 ? min_exp : biased - 1023;  // zero and subnormal doubles are below any T's normals
  if ((bits & 0xfffffffffffffULL) == 0 && biased != 0 && lo != 0.0 && std::signbit(lo) != std::signbit(hi)) --e;
  e = std::max(e, min_exp);
  return std::bit_cast<double>(static_cast<std::uint64_t>(e - digits + 1 + 1023) << 52);  // 2^(e - digits + 1), normal
}

// What every implementation is handed for one position. `halo` positions (the one before each
// segment) are evaluated only so that the first position of the segment has a predecessor.
struct position_context {
  std::int64_t pos = 0;
  bool halo = false;
  const reference_band* ref = nullptr;  // per band; null for a halo
  const double* q = nullptr;            // head_dim values, multiples of 1/128
  const double* k = nullptr;
  const long double* y_exact = nullptr;  // af R(p) q, exactly (to long double)
  const double* y_exact_d = nullptr;     // the same rounded to double
  long double q_norm = 0;
  long double qk_abs = 0;               // sum |q_j k_j|
};


// cos d and sin d for an angle error d in [-pi, pi]: a Taylor series up to |d| <= 1/4 (terms to
// d^17 / 17! and d^16 / 16!: truncation < 0.25^18 / 18! < 2^-88 relative to the result), libm's
// functions in M above (gross errors only). Angle errors of fp32 strategies stay below 1/4 up to
// positions ~2^22, so the common case never calls libm.
// (Reciprocals of the factorial steps rounded in M: 2^-60 relative on terms below 2^-4.)
template <class M>
inline void cos_sin_of_error(M d, M& c, M& s) {
  if (std::fabs(d) <= M(0x1p-12)) {  // the common case: terms to d^7 / 7!, d^6 / 6! (truncation < 2^-106)
    const M d2 = d * d;
    s = d * (M(1) - d2 * (M(1) / 6) * (M(1) - d2 * (M(1) / 20) * (M(1) - d2 * (M(1) / 42))));
    c = M(1) - d2 * M(0.5) * (M(1) - d2 * (M(1) / 12) * (M(1) - d2 * (M(1) / 30)));
  } else if (std::fabs(d) <= M(0.25)) {
    const M d2 = d * d;
    M ts = M(1) - d2 * (M(1) / 272);  // 16 * 17
    ts = M(1) - d2 * (M(1) / 210) * ts;
    ts = M(1) - d2 * (M(1) / 156) * ts;
    ts = M(1) - d2 * (M(1) / 110) * ts;
    ts = M(1) - d2 * (M(1) / 72) * ts;
    ts = M(1) - d2 * (M(1) / 42) * ts;
    ts = M(1) - d2 * (M(1) / 20) * ts;
    s = d * (M(1) - d2 * (M(1) / 6) * ts);
    M tc = M(1) - d2 * (M(1) / 240);  // 15 * 16
    tc = M(1) - d2 * (M(1) / 182) * tc;
    tc = M(1) - d2 * (M(1) / 132) * tc;
    tc = M(1) - d2 * (M(1) / 90) * tc;
    tc = M(1) - d2 * (M(1) / 56) * tc;
    tc = M(1) - d2 * (M(1) / 30) * tc;
    tc = M(1) - d2 * (M(1) / 12) * tc;
    c = M(1) - d2 * M(0.5) * tc;
  } else {
    c = std::cos(d);
    s = std::sin(d);
  }
}

// The angle of the complex number dot + i cross, i.e. of (c + i s) times the conjugate of the
// reference (c* + i s*): the applied angle's error, already reduced to (-pi, pi]. Small errors (the
// common case) by the Taylor series of atan(x), x = cross / dot: to x^5 / 5 for |x| <= 2^-12
// (truncation x^6 / 7 < 2^-74 relative) and to x^17 / 17 for |x| <= 1/16 (truncation
// x^18 / 19 < 2^-76 relative); libm's atan2 in M beyond (gross errors only). The quotient rounds once
// (2^-53 relative in double): the result is within ~2^-52 |error| of atan2(cross, dot).
template <class M>
[[nodiscard]] inline M angle_of(M cross, M dot) {
  if (dot > 0 && std::fabs(cross) <= M(0x1p-4) * dot) {
    const M x = cross / dot, x2 = x * x;
    if (std::fabs(x) <= M(0x1p-12)) return x * (M(1) - x2 * (M(1) / 3 - x2 * (M(1) / 5)));
    M t = M(1) / 15 - x2 * (M(1) / 17);
    t = M(1) / 13 - x2 * t;
    t = M(1) / 11 - x2 * t;
    t = M(1) / 9 - x2 * t;
    t = M(1) / 7 - x2 * t;
    t = M(1) / 5 - x2 * t;
    t = M(1) / 3 - x2 * t;
    return x * (M(1) - x2 * t);
  }
  return std::atan2(cross, dot);
}

// ---------------------------------------------------------------------------------------------
// One implementation under test, type-erased.
struct step_output {
  position_errors errors;
  bool equal_to_previous = false;  // applied angle(p - 1) == applied angle(p) in some band
};

struct segment_state {
  virtual ~segment_state() = default;
};

class runner {
 public:
  virtual ~runner() = default;
  [[nodiscard]] virtual std::unique_ptr<segment_state> new_state() const = 0;
  [[nodiscard]] virtual bool measures_in_long_double() const = 0;  // reads position_context::y_exact
  // Halo: only remembers the position's cos/sin and angles. Otherwise fills `out` and raises
  // band_max[b] to this position's applied angle error in band b.
  virtual void step(const position_context& ctx, segment_state& state, step_output& out,
                    std::span<double> band_max) const = 0;
  // The implementation's rotation of one head vector at `pos` (stored, widened exactly): x holds head_dim
  // values exact in its storage type (multiples of 1/128 in [-1, 1)). For the score figure (score_offsets.hpp).
  virtual void rotate_at(std::int64_t pos, std::span<const double> x, std::span<long double> y) const = 0;
};

template <class V>
struct table_source {
  const cos_sin_pair<V>* table;
  [[nodiscard]] cos_sin_pair<V> cos_sin(std::int64_t, int band) const { return table[band]; }
};

// A value known to be one of V's, held in M, back as V (no rounding, no long double on the way).
template <class V, class M>
[[nodiscard]] V exact_as(M x) {
  if constexpr (std::is_floating_point_v<V>) return static_cast<V>(x);
  else if constexpr (is_16bit_float_v<V>) return V(static_cast<float>(x));
  else return scalar_traits<V>::narrow(static_cast<long double>(x));
}

// Every band's trace at one position: strategies that form all bands together (ggml's chain)
// provide trace_bands.
template <class S>
void trace_all(const S& s, std::int64_t pos, std::span<angle_trace> out) {
  if constexpr (requires { s.trace_bands(pos, out); }) {
    s.trace_bands(pos, out);
  } else {
    for (std::size_t b = 0; b < out.size(); ++b) out[b] = s.trace(pos, static_cast<int>(b));
  }
}

template <class S, class Compute, class Storage>
class typed_runner final : public runner {
  using V = typename S::value_type;
  using vt = scalar_traits<V>;
  using st = scalar_traits<Storage>;

 public:
  typed_runner(S strategy, const rope_reference& ref)
      : s_(std::move(strategy)), g_(rope_geometry::of(ref.config())), bands_(ref.bands()), turning_(ref.config().turning_bands()),
        af_(ref.attention_factor().value()), af_m_(static_cast<M>(af_)) {
    if (s_.bands() != bands_) throw std::logic_error("report: strategy and reference disagree on bands");
    theta_.resize(static_cast<std::size_t>(bands_));
    minus_one_.resize(static_cast<std::size_t>(bands_));
    std::vector<angle_trace> tr(static_cast<std::size_t>(bands_));
    trace_all(s_, -1, tr);
    for (int b = 0; b < bands_; ++b) {
      const auto i = static_cast<std::size_t>(b);
      theta_[i] = ref.inv_freq(b);
      theta_m_.push_back(static_cast<M>(theta_[i].value()));
      minus_one_[i] = {vt::narrow(tr[i].cos_final), vt::narrow(tr[i].sin_final)};
    }
  }

  // The arithmetic of the measurement: double when the strategy's values have <= 24 significand
  // bits (its errors are >= 2^-24 relative and every value it forms is exact in double; measured
  // to ~2^-53), long double otherwise (double, long double implementations).
  using M = std::conditional_t<(scalar_traits<V>::digits <= 24), double, long double>;

  struct state final : segment_state {
    explicit state(int bands, int head_dim)
        : formed(static_cast<std::size_t>(bands)), cur(static_cast<std::size_t>(bands)),
          prev(static_cast<std::size_t>(bands)), prev_c(static_cast<std::size_t>(bands)), prev_s(prev_c.size()),
          qs(static_cast<std::size_t>(head_dim)), ks(qs.size()), yq(qs.size()), yk(qs.size()), ykr(qs.size()) {}
    std::vector<float> formed;  // fill_angles, for strategies that form all bands together
    std::vector<cos_sin_pair<V>> cur, prev;
    std::vector<M> prev_c, prev_s;  // the previous position's cos/sin, in M
    bool has_prev = false;
    std::vector<Storage> qs, ks, yq, yk, ykr;
  };

  [[nodiscard]] std::unique_ptr<segment_state> new_state() const override {
    return std::make_unique<state>(bands_, g_.head_dim);
  }
  [[nodiscard]] bool measures_in_long_double() const override { return std::is_same_v<M, long double>; }

  // Maxima over bands at one position.
  struct band_maxima {
    M angle = 0, tokens = 0, cs_abs = 0, cs_ulps = 0;  // angle, tokens: the applied angle
    // Squared magnitudes c^2 + s^2, largest and smallest (sqrt is monotone: the magnitude error
    // |hypot - af| at its largest over bands is sqrt(q_max) - af or af - sqrt(q_min)).
    M q_max = 0, q_min = std::numeric_limits<M>::infinity();
    M formed = 0, freq = 0, pos = 0, prod = 0, sincos = 0, cache = 0;
  };

  // Trace and measure band by band in one pass (the trace inlined, so that the compiler keeps a
  // float strategy's values in registers instead of round-tripping them through long double memory).
  void rotate_at(std::int64_t pos, std::span<const double> x, std::span<long double> y) const override {
    std::vector<Storage> xs(x.size()), ys(x.size());
    for (std::size_t j = 0; j < x.size(); ++j) xs[j] = st::narrow(static_cast<long double>(x[j]));  // exact
    rotate_heads<Compute, Storage>(std::span<const Storage>(xs), std::span<Storage>(ys), 1, g_, pos, s_);
    for (std::size_t j = 0; j < y.size(); ++j) y[j] = static_cast<long double>(st::widen(ys[j]));
  }

  void step(const position_context& ctx, segment_state& base, step_output& out,
            std::span<double> band_max) const override {
    auto& sv = static_cast<state&>(base);
    constexpr bool forms_all_bands = requires(const S& s, std::int64_t p, std::span<float> o) {
      s.fill_angles(p, o);
      s.trace_at(p, 0, 0.0f);
    };
    if constexpr (forms_all_bands) s_.fill_angles(ctx.pos, sv.formed);
    bool equal = false;
    band_maxima mx;
    for (int band = 0; band < bands_; ++band) {
      const auto b = static_cast<std::size_t>(band);
      basic_angle_trace<M> t;
      if constexpr (forms_all_bands) t = s_.template trace_at<M>(ctx.pos, band, sv.formed[b]);
      else t = s_.template trace<M>(ctx.pos, band);
      sv.cur[b] = {exact_as<V>(t.cos_final), exact_as<V>(t.sin_final)};  // exact: they are V's values
      // The applied angle equals the previous position's iff the pairs are parallel: cross product
      // 0 and dot product > 0 (exact in double for values of <= 24 significand bits; in long double
      // for double values it could read 0 only for angles within ~2^-64 rad of each other).
      const auto c = static_cast<M>(t.cos_final), s = static_cast<M>(t.sin_final);
      // Proportional RoPE's frozen bands never turn: equal at every p by design, not a lost position.
      if (band < turning_ && sv.has_prev && sv.prev_s[b] * c - sv.prev_c[b] * s == 0 && sv.prev_c[b] * c + sv.prev_s[b] * s > 0)
        equal = true;
      sv.prev_c[b] = c;
      sv.prev_s[b] = s;
      if (!ctx.halo) measure_band(ctx, band, t, sv, mx, band_max);
    }
    if (!ctx.halo) {
      out.equal_to_previous = equal;
      measure_rotations(ctx, sv, mx, out.errors);
    }
    std::swap(sv.cur, sv.prev);  // prev now holds this position's cos/sin
    sv.has_prev = true;
  }

 private:
  void measure_band(const position_context& ctx, int band, const basic_angle_trace<M>& t, const state& sv, band_maxima& mx,
                    std::span<double> band_max) const {
    constexpr M inf_m = std::numeric_limits<M>::infinity();
    constexpr M pi_m = std::numbers::pi_v<M>;
    auto mag = [](M x) { return std::isnan(x) ? std::numeric_limits<M>::infinity() : std::fabs(x); };
    const auto p = static_cast<M>(ctx.pos);
    const auto b = static_cast<std::size_t>(band);
    const reference_band& r = ctx.ref[b];
    const auto angle = static_cast<M>(t.angle), f_used = static_cast<M>(t.inv_freq_used);
    const auto p_used = static_cast<M>(t.position_used);
    const auto cf = static_cast<M>(t.cos_final), sf = static_cast<M>(t.sin_final);
    const auto cr = static_cast<M>(t.cos_raw), sr = static_cast<M>(t.sin_raw);
    // Angle error, reduced to (-pi, pi]. angle - hi is exact when the two are within a factor
    // 2 of each other (Sterbenz); subtracting lo rounds once, relative to the error itself.
    M d = inf_m;
    if (std::isfinite(angle)) {
      d = (angle - M(r.angle.hi)) - M(r.angle.lo);
      if (std::fabs(d) > pi_m) {  // gross errors only: reduce in long double (2 pi to 2^-64)
        long double dl = (t.angle - static_cast<long double>(r.angle.hi)) - static_cast<long double>(r.angle.lo);
        dl = std::remainder(dl, two_pi_ld);
        if (dl <= -pi_ld) dl += two_pi_ld;
        d = static_cast<M>(dl);
      }
    }
    mx.formed = std::max(mx.formed, mag(d));
    // The rotation applied: the angle of (cf, sf) against p theta, as the angle of
    // (cf + i sf) conj(af cos(p theta) + i af sin(p theta)); and its magnitude against af. A
    // non-finite or zero pair applies no rotation: an infinite angle error.
    const M rc = M(r.cos.hi) + M(r.cos.lo), rs = M(r.sin.hi) + M(r.sin.lo);
    M applied = inf_m, q = inf_m;
    if (std::isfinite(cf) && std::isfinite(sf)) {
      q = cf * cf + sf * sf;
      if (q > 0) applied = mag(angle_of(sf * rc - cf * rs, cf * rc + sf * rs));
    }
    band_max[b] = std::max(band_max[b], static_cast<double>(applied));
    mx.angle = std::max(mx.angle, applied);
    if (band < turning_) mx.tokens = std::max(mx.tokens, applied / theta_m_[b]);  // a frozen band has no token scale
    mx.q_max = std::max(mx.q_max, q);
    mx.q_min = std::min(mx.q_min, q);
    // cos/sin against af cos(p theta), af sin(p theta), absolute and in ulps of V.
    const M dc = mag((cf - M(r.cos.hi)) - M(r.cos.lo)), ds = mag((sf - M(r.sin.hi)) - M(r.sin.lo));
    mx.cs_abs = std::max(mx.cs_abs, std::max(dc, ds));
    if constexpr (std::is_same_v<M, double>) {
      mx.cs_ulps = std::max(mx.cs_ulps, std::max(dc / ulp_at<V>(r.cos.hi, r.cos.lo), ds / ulp_at<V>(r.sin.hi, r.sin.lo)));
    } else {
      mx.cs_ulps = std::max(mx.cs_ulps, std::max(ulp_error<V>(sv.cur[b].cos, r.cos.hi, r.cos.lo),
                                                 ulp_error<V>(sv.cur[b].sin, r.sin.hi, r.sin.lo)));
    }
    // Sources. frequency: p (f_used - theta), theta's double-double subtracted in two steps.
    mx.freq = std::max(mx.freq, mag(p * ((f_used - M(theta_[b].hi)) - M(theta_[b].lo))));
    mx.pos = std::max(mx.pos, mag((p_used - p) * f_used));
    mx.prod = std::max(mx.prod, mag(angle - p_used * f_used));
    // af cos(angle formed) = af cos(phi + d) = af cos phi cos d - af sin phi sin d.
    if (std::isfinite(d)) {
      M cd, sd;
      cos_sin_of_error(d, cd, sd);
      mx.sincos = std::max(mx.sincos, std::max(mag(cr - (rc * cd - rs * sd)), mag(sr - (rs * cd + rc * sd))));
    } else {
      mx.sincos = inf_m;
    }
    mx.cache = std::max(mx.cache, std::max(mag(cf - cr), mag(sf - sr)));
  }

  void measure_rotations(const position_context& ctx, state& sv, const band_maxima& mx, position_errors& e) const {
    auto mag = [](M x) { return std::isnan(x) ? std::numeric_limits<M>::infinity() : std::fabs(x); };
    // Rotations: q at p, k at p - 1 (the previous position's cos/sin), k at -1.
    const auto hd = static_cast<std::size_t>(g_.head_dim);
    for (std::size_t j = 0; j < hd; ++j) {
      sv.qs[j] = st::narrow(ctx.q[j]);  // exact: multiples of 1/128 in [-1, 1)
      sv.ks[j] = st::narrow(ctx.k[j]);
    }
    rotate_heads<Compute, Storage>(std::span<const Storage>(sv.qs), std::span<Storage>(sv.yq), 1, g_, ctx.pos,
                                   table_source<V>{sv.cur.data()});
    rotate_heads<Compute, Storage>(std::span<const Storage>(sv.ks), std::span<Storage>(sv.yk), 1, g_, ctx.pos - 1,
                                   table_source<V>{sv.prev.data()});
    rotate_heads<Compute, Storage>(std::span<const Storage>(sv.ks), std::span<Storage>(sv.ykr), 1, g_, -1,
                                   table_source<V>{minus_one_.data()});
    const M* y_exact = nullptr;
    if constexpr (std::is_same_v<M, double>) y_exact = ctx.y_exact_d;
    else y_exact = ctx.y_exact;
    M err2 = 0, ref2 = 0, arith2 = 0, lhs = 0, rhs = 0;
    for (std::size_t j = 0; j < hd; ++j) {
      const auto y = static_cast<M>(st::widen(sv.yq[j]));
      err2 += (y - y_exact[j]) * (y - y_exact[j]);
      ref2 += y_exact[j] * y_exact[j];
      lhs += y * static_cast<M>(st::widen(sv.yk[j]));
      rhs += static_cast<M>(ctx.q[j]) * static_cast<M>(st::widen(sv.ykr[j]));
    }
    // The rotation's own arithmetic: y against R~ q with the final cos/sin taken exactly (products
    // of an 8-bit input and a cos/sin of <= 24 bits are exact in double, of <= 53 in long double).
    for (int band = 0; band < bands_; ++band) {
      const auto [ia, ib] = g_.pair_of(band);
      const auto a = static_cast<std::size_t>(ia), bb = static_cast<std::size_t>(ib);
      const auto c = static_cast<M>(vt::widen(sv.cur[static_cast<std::size_t>(band)].cos));
      const auto s = static_cast<M>(vt::widen(sv.cur[static_cast<std::size_t>(band)].sin));
      const M qa = ctx.q[a], qb = ctx.q[bb];
      const M da = static_cast<M>(st::widen(sv.yq[a])) - (qa * c - qb * s);
      const M db = static_cast<M>(st::widen(sv.yq[bb])) - (qa * s + qb * c);
      arith2 += da * da + db * db;
    }
    for (std::size_t j = static_cast<std::size_t>(g_.rotary_dim); j < hd; ++j) {
      const M dj = static_cast<M>(st::widen(sv.yq[j])) - M(ctx.q[j]);
      arith2 += dj * dj;
    }
    const auto af = static_cast<M>(af_);
    const auto qn = static_cast<M>(ctx.q_norm), qk = static_cast<M>(ctx.qk_abs);

    e.position = ctx.pos;
    e.angle_rad = static_cast<double>(mx.angle);
    e.position_tokens = static_cast<double>(mx.tokens);
    e.cos_sin_abs = static_cast<double>(mx.cs_abs);
    e.cos_sin_ulps = static_cast<double>(mx.cs_ulps);
    e.magnitude_rel = static_cast<double>(
        std::max(std::sqrt(mx.q_max) - af_m_, af_m_ - std::sqrt(mx.q_min)) / af_m_);  // q_max = inf: inf
    e.rotated_relative = static_cast<double>(mag(ref2 > 0 ? std::sqrt(err2 / ref2) : std::sqrt(err2)));
    e.score_violation = static_cast<double>(mag(qk > 0 ? (lhs - af * rhs) / qk : lhs - af * rhs));
    e.sources.frequency_rad = static_cast<double>(mx.freq);
    e.sources.position_rad = static_cast<double>(mx.pos);
    e.sources.product_rad = static_cast<double>(mx.prod);
    e.sources.sin_cos = static_cast<double>(mx.sincos);
    e.sources.cache = static_cast<double>(mx.cache);
    e.sources.formed_angle_rad = static_cast<double>(mx.formed);
    e.sources.rotation = static_cast<double>(mag(qn > 0 ? std::sqrt(arith2) / qn : std::sqrt(arith2)));
  }

  S s_;
  rope_geometry g_;
  int bands_;
  int turning_;  // bands whose frequency is not 0 (all but proportional RoPE's frozen tail)
  long double af_;
  M af_m_;                                  // af in M (the magnitude's reference)
  std::vector<dd> theta_;                   // the reference's theta_i
  std::vector<M> theta_m_;                  // the same in M
  std::vector<cos_sin_pair<V>> minus_one_;  // the strategy's cos/sin at position -1
};

}  // namespace ropecheck::sweep::detail
