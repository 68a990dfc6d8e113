// tools/report/engine.cpp — see engine.hpp for the contract of every figure computed here.
#include "engine.hpp"

#include <algorithm>
#include <atomic>
#include <bit>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstddef>
#include <exception>
#include <limits>
#include <memory>
#include <mutex>
#include <numbers>
#include <span>
#include <stdexcept>
#include <string>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

#include "ropecheck/angle.hpp"
#include "ropecheck/error.hpp"
#include "ropecheck/reference/reference.hpp"
#include "ropecheck/rope.hpp"
#include "ropecheck/scalar.hpp"

#ifndef ROPECHECK_VERSION
#define ROPECHECK_VERSION "unknown"
#endif

namespace ropecheck::report {
namespace {

using reference::dd;
using reference::rope_reference;
using clock_type = std::chrono::steady_clock;

constexpr long double infinity = std::numeric_limits<long double>::infinity();
constexpr long double pi_ld = std::numbers::pi_v<long double>;
constexpr long double two_pi_ld = 2.0L * std::numbers::pi_v<long double>;
constexpr int reference_bits = 256;

// |x|, with NaN read as an infinite error: every maximum below is then an ordinary maximum, the
// same in any order.
[[nodiscard]] long double magnitude(long double x) { return std::isnan(x) ? infinity : std::fabs(x); }

[[nodiscard]] double seconds_since(clock_type::time_point t0) {
  return std::chrono::duration<double>(clock_type::now() - t0).count();
}

// ---------------------------------------------------------------------------------------------
// The reference at one position, shared by every implementation.
struct reference_band {
  dd angle;  // p theta
  dd cos;    // af cos(p theta)
  dd sin;    // af sin(p theta)
};

[[nodiscard]] dd split(long double v) {
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

// A head vector seeded from (seed, position) only, so that no result depends on who computes it.
// Entries are int8 / 128: exact in bf16, fp16 and everything wider.
void seeded_head_vectors(std::uint64_t seed, std::int64_t pos, std::span<double> q, std::span<double> k) {
  std::uint64_t state = seed ^ (static_cast<std::uint64_t>(pos) * 0xd1b54a32d192ed03ULL);
  auto next = [&state] {  // splitmix64
    std::uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  };
  auto fill = [&](std::span<double> v) {
    std::uint64_t bits = 0;
    for (std::size_t j = 0; j < v.size(); ++j) {
      if (j % 8 == 0) bits = next();
      v[j] = static_cast<double>(static_cast<std::int8_t>(bits & 0xffu)) / 128.0;
      bits >>= 8;
    }
  };
  fill(q);
  fill(k);
}

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

// ---------------------------------------------------------------------------------------------
// One implementation under test, type-erased.
struct step_output {
  position_errors errors;
  bool equal_to_previous = false;  // angle(p - 1) == angle(p) in some band
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
  // band_max[b] to this position's angle error in band b.
  virtual void step(const position_context& ctx, segment_state& state, step_output& out,
                    std::span<double> band_max) const = 0;
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
      : s_(std::move(strategy)), g_(rope_geometry::of(ref.config())), bands_(ref.bands()),
        af_(ref.attention_factor().value()) {
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
          prev(static_cast<std::size_t>(bands)), prev_angle(static_cast<std::size_t>(bands)),
          qs(static_cast<std::size_t>(head_dim)), ks(qs.size()), yq(qs.size()), yk(qs.size()), ykr(qs.size()) {}
    std::vector<float> formed;  // fill_angles, for strategies that form all bands together
    std::vector<cos_sin_pair<V>> cur, prev;
    std::vector<M> prev_angle;
    bool has_prev = false;
    std::vector<Storage> qs, ks, yq, yk, ykr;
  };

  [[nodiscard]] std::unique_ptr<segment_state> new_state() const override {
    return std::make_unique<state>(bands_, g_.head_dim);
  }
  [[nodiscard]] bool measures_in_long_double() const override { return std::is_same_v<M, long double>; }

  // Maxima over bands at one position.
  struct band_maxima {
    M angle = 0, tokens = 0, cs_abs = 0, cs_ulps = 0;
    M freq = 0, pos = 0, prod = 0, sincos = 0, cache = 0;
  };

  // Trace and measure band by band in one pass (the trace inlined, so that the compiler keeps a
  // float strategy's values in registers instead of round-tripping them through long double memory).
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
      const auto angle = static_cast<M>(t.angle);
      if (sv.has_prev && angle == sv.prev_angle[b]) equal = true;
      sv.prev_angle[b] = angle;
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
    const M ad = mag(d);
    band_max[b] = std::max(band_max[b], static_cast<double>(ad));
    mx.angle = std::max(mx.angle, ad);
    mx.tokens = std::max(mx.tokens, ad / theta_m_[b]);
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
      const M rc = M(r.cos.hi) + M(r.cos.lo), rs = M(r.sin.hi) + M(r.sin.lo);
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
    e.rotated_relative = static_cast<double>(mag(ref2 > 0 ? std::sqrt(err2 / ref2) : std::sqrt(err2)));
    e.score_violation = static_cast<double>(mag(qk > 0 ? (lhs - af * rhs) / qk : lhs - af * rhs));
    e.sources.frequency_rad = static_cast<double>(mx.freq);
    e.sources.position_rad = static_cast<double>(mx.pos);
    e.sources.product_rad = static_cast<double>(mx.prod);
    e.sources.sin_cos = static_cast<double>(mx.sincos);
    e.sources.cache = static_cast<double>(mx.cache);
    e.sources.rotation = static_cast<double>(mag(qn > 0 ? std::sqrt(arith2) / qn : std::sqrt(arith2)));
  }

  S s_;
  rope_geometry g_;
  int bands_;
  long double af_;
  std::vector<dd> theta_;                   // the reference's theta_i
  std::vector<M> theta_m_;                  // the same in M
  std::vector<cos_sin_pair<V>> minus_one_;  // the strategy's cos/sin at position -1
};

// ---------------------------------------------------------------------------------------------
// The registry.
struct registry_entry {
  implementation_info info;
  std::unique_ptr<runner> (*make)(const rope_config&, std::int64_t seq_len, const rope_reference&);
};

template <class Compute, class Storage, class S>
std::unique_ptr<runner> make_runner(S s, const rope_reference& ref) {
  return std::make_unique<typed_runner<S, Compute, Storage>>(std::move(s), ref);
}

const std::vector<registry_entry>& registry() {
  static const std::vector<registry_entry> entries = [] {
    std::vector<registry_entry> r;
    auto add = [&r](std::string name, std::string description, std::string dtype, bool dflt, auto make) {
      r.push_back({{std::move(name), std::move(description), std::move(dtype), dflt}, make});
    };
    add("hf_float", "HF transformers in fp32: torch's fp32 inv_freq, float(position) * inv_freq, cos/sin, fp32 rotation",
        "float", true, [](const rope_config& c, std::int64_t n, const rope_reference& ref) {
          return make_runner<float, float>(hf_angle<float>(c, n), ref);
        });
    add("hf_bf16", "HF transformers, bf16 model: fp32 angle and cos/sin cast to bf16, eager bf16 rotation",
        "bfloat16", true, [](const rope_config& c, std::int64_t n, const rope_reference& ref) {
          return make_runner<bfloat16, bfloat16>(hf_angle<bfloat16>(c, n), ref);
        });
    add("fused_bf16", "fused kernel: bf16 q/k in memory, HF fp32 angle and cos/sin, fp32 rotation",
        "float", true, [](const rope_config& c, std::int64_t n, const rope_reference& ref) {
          return make_runner<float, bfloat16>(hf_angle<float>(c, n), ref);
        });
    add("direct_float16", "everything in fp16: inv_freq, position, angle, cos/sin and rotation",
        "float16", true, [](const rope_config& c, std::int64_t n, const rope_reference& ref) {
          return make_runner<float16, float16>(direct_angle<float16>(c, n), ref);
        });
    add("direct_float", "hand-written fp32 kernel: fp32 inv_freq, fp32 position * inv_freq, cosf/sinf, fp32 rotation",
        "float", true, [](const rope_config& c, std::int64_t n, const rope_reference& ref) {
          return make_runner<float, float>(direct_angle<float>(c, n), ref);
        });
    add("direct_double", "everything in double", "double", true,
        [](const rope_config& c, std::int64_t n, const rope_reference& ref) {
          return make_runner<double, double>(direct_angle<double>(c, n), ref);
        });
    add("ggml_float", "ggml/llama.cpp: theta by repeated fp32 products theta *= powf(base, -2/d), cosf/sinf, fp32 rotation",
        "float", true, [](const rope_config& c, std::int64_t n, const rope_reference& ref) {
          return make_runner<float, float>(ggml_angle(c, n), ref);
        });
    add("bf16_positions", "position ids held in bf16 before an fp32 angle (the bf16-positions bug), fp32 rotation",
        "float", true, [](const rope_config& c, std::int64_t n, const rope_reference& ref) {
          return make_runner<float, float>(storage_positions<bfloat16, float>(c, n), ref);
        });
    add("cos_sin_cache_bf16", "HF fp32 cos/sin stored in a bf16 cache, fp32 rotation (the bf16-cache bug)",
        "bfloat16", true, [](const rope_config& c, std::int64_t n, const rope_reference& ref) {
          return make_runner<float, float>(cached<bfloat16, hf_angle<float>>(hf_angle<float>(c, n)), ref);
        });
    add("fast_sincos", "fp32 angle, fast parabola sin/cos with |error| <= 1.1e-3 (the fast-math class), fp32 rotation",
        "float", true, [](const rope_config& c, std::int64_t n, const rope_reference& ref) {
          return make_runner<float, float>(fast_sincos_angle(c, n), ref);
        });
    add("eager_bf16", "eager bf16 throughout: bf16 inv_freq, positions, angle, cos/sin and rotation",
        "bfloat16", true, [](const rope_config& c, std::int64_t n, const rope_reference& ref) {
          return make_runner<bfloat16, bfloat16>(direct_angle<bfloat16>(c, n), ref);
        });
    add("hf_float16", "HF transformers, fp16 model: fp32 angle and cos/sin cast to fp16, eager fp16 rotation",
        "float16", false, [](const rope_config& c, std::int64_t n, const rope_reference& ref) {
          return make_runner<float16, float16>(hf_angle<float16>(c, n), ref);
        });
    return r;
  }();
  return entries;
}

std::vector<const registry_entry*> select_implementations(const std::vector<std::string>& names) {
  std::vector<const registry_entry*> out;
  if (names.empty()) {
    for (const auto& e : registry())
      if (e.info.in_default_set) out.push_back(&e);
    return out;
  }
  for (const auto& n : names) {
    const auto it = std::find_if(registry().begin(), registry().end(), [&](const auto& e) { return e.info.name == n; });
    if (it == registry().end()) {
      std::string known;
      for (const auto& e : registry()) known += (known.empty() ? "" : ", ") + e.info.name;
      throw std::invalid_argument("report: unknown implementation '" + n + "' (known: " + known + ")");
    }
    if (std::find(out.begin(), out.end(), &*it) == out.end()) out.push_back(&*it);
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// The work: segments of consecutive positions.
struct segment {
  std::int64_t first = 0, last = 0;  // inclusive
  std::size_t heat_bucket = 0;
  // Output slots: without pooling, slot_first + (pos - first); with pooling, the pool bucket of pos.
  bool pooled = false;
  std::size_t slot_first = 0;
};

struct impl_partial {
  std::vector<position_errors> points;  // in slot order
  std::vector<std::size_t> slots;
  std::vector<double> band_max;
  std::int64_t first_angle = -1, first_tokens = -1, first_equal = -1;
};


struct sweep_plan {
  std::vector<segment> segments;
  std::vector<std::int64_t> heat_edges;
  std::vector<std::int64_t> slot_positions;  // position carried by each output point
  std::vector<std::int64_t> pool_edges;      // pooled slots: slot s covers [pool_edges[s - pool_base], ...)
  std::size_t pool_base = 0;                 // first pooled slot
  std::int64_t positions = 0;                // non-halo positions evaluated
};

constexpr std::int64_t max_segment = 256;
constexpr std::int64_t exact_points_below = 1024;
constexpr std::size_t max_points = 4096;

std::size_t bucket_of(const std::vector<std::int64_t>& edges, std::int64_t pos) {
  return static_cast<std::size_t>(std::upper_bound(edges.begin(), edges.end(), pos) - edges.begin() - 1);
}

// Splits the sorted positions into segments of consecutive positions that stay inside one heat
// bucket and hold at most max_segment positions.
void add_segments(sweep_plan& plan, std::int64_t first, std::int64_t last, bool pooled, std::size_t slot_first) {
  std::int64_t a = first;
  while (a <= last) {
    const std::size_t hb = bucket_of(plan.heat_edges, a);
    const std::int64_t b = std::min({last, a + max_segment - 1, plan.heat_edges[hb + 1] - 1});
    plan.segments.push_back({a, b, hb, pooled, pooled ? 0 : slot_first + static_cast<std::size_t>(a - first)});
    a = b + 1;
  }
}

sweep_plan plan_sweep(std::int64_t max_position, bool exhaustive) {
  sweep_plan plan;
  plan.heat_edges = heat_bucket_edges(max_position);
  if (!exhaustive) {
    std::vector<std::int64_t> pos = sweep_positions(max_position);
    const std::size_t n = pos.size();
    for (std::size_t i = 0; i < n; ++i)
      if (pos[i] + 1 <= max_position) pos.push_back(pos[i] + 1);
    std::sort(pos.begin(), pos.end());
    pos.erase(std::unique(pos.begin(), pos.end()), pos.end());
    plan.slot_positions = pos;
    plan.positions = static_cast<std::int64_t>(pos.size());
    std::size_t i = 0;
    while (i < pos.size()) {
      std::size_t j = i;
      while (j + 1 < pos.size() && pos[j + 1] == pos[j] + 1) ++j;
      add_segments(plan, pos[i], pos[j], false, i);
      i = j + 1;
    }
    return plan;
  }
  plan.positions = max_position + 1;
  if (static_cast<std::size_t>(max_position + 1) <= max_points) {
    for (std::int64_t p = 0; p <= max_position; ++p) plan.slot_positions.push_back(p);
    add_segments(plan, 0, max_position, false, 0);
    return plan;
  }
  for (std::int64_t p = 0; p < exact_points_below; ++p) plan.slot_positions.push_back(p);
  add_segments(plan, 0, exact_points_below - 1, false, 0);
  // Log-spaced pool buckets over [1024, max_position + 1).
  const double lo = static_cast<double>(exact_points_below), hi = static_cast<double>(max_position + 1);
  const std::size_t n = max_points - static_cast<std::size_t>(exact_points_below);
  plan.pool_edges.push_back(exact_points_below);
  for (std::size_t i = 1; i < n; ++i) {
    const auto e = static_cast<std::int64_t>(std::ceil(lo * std::pow(hi / lo, static_cast<double>(i) / static_cast<double>(n))));
    if (e > plan.pool_edges.back() && e < max_position + 1) plan.pool_edges.push_back(e);
  }
  plan.pool_base = plan.slot_positions.size();
  for (const auto e : plan.pool_edges) plan.slot_positions.push_back(e);
  plan.pool_edges.push_back(max_position + 1);
  add_segments(plan, exact_points_below, max_position, true, 0);
  return plan;
}

// Everything the workers share.
struct sweep {
  const rope_reference* ref = nullptr;
  std::vector<const runner*> runners;
  const sweep_plan* plan = nullptr;
  std::uint64_t seed = 0;
  double angle_threshold = 0, position_threshold = 0;
};

std::vector<impl_partial> run_segment(const sweep& w, const segment& seg) {
  const rope_reference& ref = *w.ref;
  const int bands = ref.bands();
  const auto nb = static_cast<std::size_t>(bands);
  const rope_config& cfg = ref.config();
  const auto hd = static_cast<std::size_t>(cfg.head_dim);
  const long double af = ref.attention_factor().value();
  const rope_geometry g = rope_geometry::of(cfg);

  std::vector<std::unique_ptr<segment_state>> states;
  std::vector<impl_partial> out(w.runners.size());
  for (std::size_t i = 0; i < w.runners.size(); ++i) {
    states.push_back(w.runners[i]->new_state());
    out[i].band_max.assign(nb, 0.0);
  }
  std::vector<reference_band> row(nb);
  std::vector<reference::dd> angles(nb);
  std::vector<reference::cos_sin_dd> cos_sins(nb);
  std::vector<double> q(hd), k(hd);
  std::vector<long double> y_exact(hd);
  std::vector<double> y_exact_d(hd);
  const bool af_is_one = ref.attention_factor().hi == 1.0 && ref.attention_factor().lo == 0.0;
  const bool need_long_double = std::any_of(w.runners.begin(), w.runners.end(),
                                            [](const runner* r) { return r->measures_in_long_double(); });
  std::size_t pool_slot = seg.pooled ? w.plan->pool_base + bucket_of(w.plan->pool_edges, seg.first) : 0;

  for (std::int64_t pos = seg.first - 1; pos <= seg.last; ++pos) {
    position_context ctx;
    ctx.pos = pos;
    ctx.halo = pos < seg.first;
    if (!ctx.halo) {
      ref.all_bands(pos, angles, cos_sins);
      for (int b = 0; b < bands; ++b) {
        auto& r = row[static_cast<std::size_t>(b)];
        r.angle = angles[static_cast<std::size_t>(b)];
        const auto& cs = cos_sins[static_cast<std::size_t>(b)];
        if (af_is_one) {
          r.cos = cs.cos;
          r.sin = cs.sin;
        } else {  // af cos rounded to long double (2^-64), then held as double-double
          r.cos = split(af * cs.cos.value());
          r.sin = split(af * cs.sin.value());
        }
      }
      seeded_head_vectors(w.seed, pos, q, k);
      double qn = 0, qk = 0;  // exact: 128 products of multiples of 2^-7, summed below 2^8
      for (std::size_t j = 0; j < hd; ++j) {
        y_exact[j] = q[j];  // pass-through beyond rotary_dim
        qn += q[j] * q[j];
        qk += std::fabs(q[j] * k[j]);
      }
      // The exact rotation (af included in the reference's cos/sin): in long double for the
      // implementations measured in it, in double (relative 2^-52) for the others.
      for (std::size_t j = 0; j < hd; ++j) y_exact_d[j] = q[j];
      for (int b = 0; b < bands; ++b) {
        const auto [ia, ib] = g.pair_of(b);
        const auto& r = row[static_cast<std::size_t>(b)];
        const double xa = q[static_cast<std::size_t>(ia)], xb = q[static_cast<std::size_t>(ib)];
        y_exact_d[static_cast<std::size_t>(ia)] = xa * r.cos.hi - xb * r.sin.hi;
        y_exact_d[static_cast<std::size_t>(ib)] = xa * r.sin.hi + xb * r.cos.hi;
        if (need_long_double) {
          const long double c = r.cos.value(), s = r.sin.value();
          y_exact[static_cast<std::size_t>(ia)] = xa * c - xb * s;
          y_exact[static_cast<std::size_t>(ib)] = xa * s + xb * c;
        }
      }
      ctx.ref = row.data();
      ctx.q = q.data();
      ctx.k = k.data();
      ctx.y_exact = y_exact.data();
      ctx.y_exact_d = y_exact_d.data();
      ctx.q_norm = std::sqrt(qn);
      ctx.qk_abs = qk;
      if (seg.pooled) {
        while (pos >= w.plan->pool_edges[pool_slot - w.plan->pool_base + 1]) ++pool_slot;
      }
    }
    for (std::size_t i = 0; i < w.runners.size(); ++i) {
      step_output so;
      w.runners[i]->step(ctx, *states[i], so, out[i].band_max);
      if (ctx.halo) continue;
      impl_partial& part = out[i];
      const std::size_t slot = seg.pooled ? pool_slot : seg.slot_first + static_cast<std::size_t>(pos - seg.first);
      if (seg.pooled && !part.slots.empty() && part.slots.back() == slot) {
        raise_to(part.points.back(), so.errors);
      } else {
        so.errors.position = w.plan->slot_positions[slot];
        part.points.push_back(so.errors);
        part.slots.push_back(slot);
      }
      if (part.first_angle < 0 && so.errors.angle_rad > w.angle_threshold) part.first_angle = pos;
      if (part.first_tokens < 0 && so.errors.position_tokens >= w.position_threshold) part.first_tokens = pos;
      if (part.first_equal < 0 && so.equal_to_previous && pos - 1 >= 0)
        part.first_equal = pos - 1;
    }
  }
  return out;
}

// Runs f(i) for i in [0, n) on `threads` workers, reporting progress from the calling thread.
template <class F>
void parallel_for(std::size_t n, int threads, const std::vector<std::int64_t>& weight, std::int64_t total,
                  const progress_callback& progress, F f) {
  std::atomic<std::size_t> next{0};
  std::atomic<std::int64_t> done{0};
  std::mutex m;
  std::condition_variable cv;
  int running = threads;
  std::exception_ptr error;
  {
    std::vector<std::jthread> pool;
    for (int t = 0; t < threads; ++t)
      pool.emplace_back([&] {
        for (std::size_t i; (i = next.fetch_add(1)) < n;) {
          try {
            f(i);
          } catch (...) {
            const std::lock_guard lock(m);
            if (!error) error = std::current_exception();
            next.store(n);
          }
          done.fetch_add(weight[i]);
        }
        const std::lock_guard lock(m);
        if (--running == 0) cv.notify_all();
      });
    std::unique_lock lock(m);
    while (!cv.wait_for(lock, std::chrono::milliseconds(250), [&] { return running == 0; })) {
      lock.unlock();
      if (progress) progress(done.load(), total);
      lock.lock();
    }
  }
  if (error) std::rethrow_exception(error);
  if (progress) progress(total, total);
}

// The reference's own cos_sin throughput, and MPFR's time per value, on the same threads.
struct reference_speed {
  double fast_values_per_second = 0;
  double mpfr_seconds_per_value = 0;
};

reference_speed measure_reference(const rope_reference& ref, std::int64_t max_position, int threads) {
  const int bands = ref.bands();
  // Fast path: 16 runs of 1024 consecutive positions spread over the sweep (as the sweep reads them).
  constexpr std::int64_t runs = 16, run_length = 1024;
  std::vector<std::int64_t> starts;
  for (std::int64_t r = 0; r < runs; ++r)
    starts.push_back(std::max<std::int64_t>(0, (max_position - run_length) / (runs - 1) * r));
  std::atomic<double> sink{0};
  auto t0 = clock_type::now();
  {
    std::vector<std::jthread> pool;
    for (int t = 0; t < threads; ++t)
      pool.emplace_back([&, t] {
        double acc = 0;
        for (std::int64_t r = t; r < runs; r += threads)
          for (std::int64_t p = starts[static_cast<std::size_t>(r)]; p < starts[static_cast<std::size_t>(r)] + run_length; ++p)
            for (int b = 0; b < bands; ++b) acc += ref.cos_sin(p, b).cos.hi;
        sink.fetch_add(acc);
      });
  }
  const double fast_seconds = seconds_since(t0);
  reference_speed out;
  out.fast_values_per_second = static_cast<double>(runs * run_length * bands) / fast_seconds;
  // MPFR: 2048 values, positions spread over the sweep, bands in turn.
  constexpr std::int64_t samples = 2048;
  t0 = clock_type::now();
  {
    std::vector<std::jthread> pool;
    for (int t = 0; t < threads; ++t)
      pool.emplace_back([&, t] {
        double acc = 0;
        for (std::int64_t i = t; i < samples; i += threads)
          acc += ref.cos_sin_mpfr(max_position / samples * i + i % 7, static_cast<int>(i % bands)).cos.hi;
        sink.fetch_add(acc);
      });
  }
  out.mpfr_seconds_per_value = seconds_since(t0) / static_cast<double>(samples);
  return out;
}

}  // namespace

// ---------------------------------------------------------------------------------------------

std::vector<implementation_info> known_implementations() {
  std::vector<implementation_info> out;
  for (const auto& e : registry()) out.push_back(e.info);
  return out;
}

std::vector<std::int64_t> sweep_positions(std::int64_t max_position) {
  std::vector<std::int64_t> p;
  for (std::int64_t i = 0; i <= std::min<std::int64_t>(1023, max_position); ++i) p.push_back(i);
  for (int k = 1;; ++k) {  // 32 per octave beyond 1024
    const auto x = static_cast<std::int64_t>(std::floor(1024.0 * std::exp2(k / 32.0)));
    if (x > max_position) break;
    p.push_back(x);
  }
  for (const std::int64_t edge : {std::int64_t{256}, std::int64_t{2048}, std::int64_t{65504}, std::int64_t{1} << 24,
                                  std::int64_t{1} << 31}) {
    if (edge > max_position) continue;
    for (std::int64_t x = std::max<std::int64_t>(0, edge - 32); x <= std::min(max_position, edge + 32); ++x)
      p.push_back(x);
  }
  p.push_back(max_position);
  std::sort(p.begin(), p.end());
  p.erase(std::unique(p.begin(), p.end()), p.end());
  return p;
}

std::vector<std::int64_t> heat_bucket_edges(std::int64_t max_position) {
  constexpr int buckets = 48;
  const double end = static_cast<double>(max_position + 1);
  std::vector<std::int64_t> e{0};
  for (int i = 1; i < buckets; ++i) {
    const auto x = static_cast<std::int64_t>(std::ceil(std::pow(end, static_cast<double>(i) / buckets)));
    if (x > e.back() && x < max_position + 1) e.push_back(x);
  }
  e.push_back(max_position + 1);
  return e;
}

std::vector<band_row> band_table(const rope_config& cfg, std::int64_t seq_len, std::int64_t train_length,
                                 std::int64_t eval_length) {
  const rope_reference scaled(cfg, seq_len, reference_bits);
  rope_config plain = cfg;
  plain.scaling = scaling_kind::none;
  const rope_reference unscaled(plain, 0, reference_bits);
  const long double two_pi = two_pi_ld;
  const auto L_train = static_cast<long double>(train_length), L_eval = static_cast<long double>(eval_length);
  // Share of the arc [0, min(L_eval theta_eval, 2 pi)) past what training saw, [0, min(L_train theta_train, 2 pi)).
  auto unseen = [&](long double theta_eval, long double theta_train) -> double {
    const long double arc = std::min(L_eval * theta_eval, two_pi);
    const long double seen = std::min(L_train * theta_train, two_pi);
    return arc <= 0 || seen >= arc ? 0.0 : static_cast<double>(1.0L - seen / arc);
  };
  std::vector<band_row> rows;
  for (int b = 0; b < scaled.bands(); ++b) {
    const long double th = scaled.inv_freq(b).value(), thu = unscaled.inv_freq(b).value();
    band_row r;
    r.band = b;
    r.inv_freq = static_cast<double>(th);
    r.inv_freq_unscaled = static_cast<double>(thu);
    r.wavelength = static_cast<double>(two_pi / th);
    r.wavelength_unscaled = static_cast<double>(two_pi / thu);
    r.turns_in_training = static_cast<double>(L_train * thu / two_pi);
    r.unseen_fraction_unscaled = unseen(thu, thu);
    r.unseen_fraction_scaled = unseen(th, thu);
    rows.push_back(r);
  }
  return rows;
}

report_result run_report(const report_request& request, progress_callback progress) {
  const auto t_start = clock_type::now();
  report_result result;
  result.request = request;
  report_request& req = result.request;
  if (req.max_position == 0) req.max_position = req.config.max_position_embeddings;
  if (req.max_position < 1) throw std::invalid_argument("report: max_position must be >= 1");
  if (req.train_length == 0) req.train_length = req.config.trained_length();
  if (req.eval_length == 0) req.eval_length = req.max_position;
  if (req.threads <= 0) req.threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  const auto selected = select_implementations(req.implementations);
  req.implementations.clear();  // echo the names actually run, defaults included
  for (const auto* e : selected) req.implementations.push_back(e->info.name);

  const std::int64_t seq_len = req.max_position + 1;
  const rope_reference ref(req.config, seq_len, reference_bits);
  result.attention_factor = static_cast<double>(ref.attention_factor().value());
  result.bands = band_table(req.config, seq_len, req.train_length, req.eval_length);
  result.ropecheck_version = ROPECHECK_VERSION;
  result.reference_precision = "MPFR " + std::to_string(ref.precision_bits()) +
                               " bits (fast path: 64.192 fixed point + double-double)";

  std::vector<std::unique_ptr<runner>> runners;
  for (const auto* e : selected) runners.push_back(e->make(req.config, seq_len, ref));

  const sweep_plan plan = plan_sweep(req.max_position, req.exhaustive);
  sweep w;
  w.ref = &ref;
  for (const auto& r : runners) w.runners.push_back(r.get());
  w.plan = &plan;
  w.seed = req.seed;
  w.angle_threshold = req.angle_threshold_rad;
  w.position_threshold = req.position_threshold_tokens;

  const int bands = ref.bands();
  const auto per_position = static_cast<std::int64_t>(bands) * static_cast<std::int64_t>(runners.size());
  std::vector<std::int64_t> weight;
  for (const auto& s : plan.segments) weight.push_back((s.last - s.first + 1) * per_position);
  const std::int64_t total = plan.positions * per_position;

  std::vector<std::vector<impl_partial>> partials(plan.segments.size());
  const auto t_sweep = clock_type::now();
  parallel_for(plan.segments.size(), req.threads, weight, total, progress,
               [&](std::size_t i) { partials[i] = run_segment(w, plan.segments[i]); });
  const double sweep_seconds = seconds_since(t_sweep);

  // Merge in segment order.
  for (std::size_t i = 0; i < selected.size(); ++i) {
    implementation_series s;
    s.name = selected[i]->info.name;
    s.description = selected[i]->info.description;
    s.cos_sin_dtype = selected[i]->info.cos_sin_dtype;
    s.points.resize(plan.slot_positions.size());
    for (std::size_t j = 0; j < s.points.size(); ++j) s.points[j].position = plan.slot_positions[j];
    s.heat_bucket_edges = plan.heat_edges;
    const std::size_t nbuckets = plan.heat_edges.size() - 1;
    s.band_position_heat.assign(static_cast<std::size_t>(bands), std::vector<double>(nbuckets, 0.0));
    auto first_of = [](std::int64_t& acc, std::int64_t v) {
      if (v >= 0 && (acc < 0 || v < acc)) acc = v;
    };
    for (std::size_t g = 0; g < plan.segments.size(); ++g) {
      const impl_partial& part = partials[g][i];
      for (std::size_t j = 0; j < part.points.size(); ++j) {
        position_errors& dst = s.points[part.slots[j]];
        if (plan.segments[g].pooled) {
          raise_to(dst, part.points[j]);
        } else {
          dst = part.points[j];
        }
      }
      for (int b = 0; b < bands; ++b) {
        double& h = s.band_position_heat[static_cast<std::size_t>(b)][plan.segments[g].heat_bucket];
        h = std::max(h, part.band_max[static_cast<std::size_t>(b)]);
      }
      first_of(s.first_angle_over_threshold, part.first_angle);
      first_of(s.first_position_error_over_threshold, part.first_tokens);
      first_of(s.first_adjacent_positions_equal, part.first_equal);
    }
    double worst = 0;
    for (int b = 0; b < bands; ++b)
      for (const double h : s.band_position_heat[static_cast<std::size_t>(b)])
        if (h > worst) {
          worst = h;
          s.worst_band = b;
        }
    s.passes = s.first_angle_over_threshold < 0 && s.first_position_error_over_threshold < 0 &&
               s.first_adjacent_positions_equal < 0;
    result.series.push_back(std::move(s));
  }
  partials.clear();

  const reference_speed speed = measure_reference(ref, req.max_position, req.threads);
  timing& t = result.time;
  t.threads = req.threads;
  t.positions = plan.positions;
  t.values = total;
  t.values_per_second = static_cast<double>(total) / sweep_seconds;
  t.reference_values_per_second = speed.fast_values_per_second;
  t.mpfr_seconds_estimate = speed.mpfr_seconds_per_value * static_cast<double>(plan.positions) * bands;
  t.seconds_total = seconds_since(t_start);
  return result;
}

}  // namespace ropecheck::report
