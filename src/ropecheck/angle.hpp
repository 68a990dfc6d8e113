// ropecheck/angle.hpp — angle strategies: how an implementation turns (position, band) into cos/sin.
//
// This is where nearly all RoPE error comes from, so each way real code does it is a named policy.
// Every strategy models `angle_strategy`:
//   value_type                  the type its cos/sin come out in (the cache or op dtype)
//   cos_sin(pos, band)          cos and sin, each already multiplied by the attention factor
//                               (as HF multiplies the cache by attention_scaling)
//   angle(pos, band)            the angle it formed, before sin/cos, widened exactly to long double
//   bands()                     number of rotated pairs
//   name()                      a stable identifier used in reports and test names
// and every strategy here (not part of the concept, so that user strategies need not) also has
//   trace(pos, band)            an angle_trace: the intermediate values it really formed, so a
//                               report can say which step an error comes from
//   held_position(pos)          the position as it holds it (float(pos), position_as<T>(pos), ...):
//                               cos_sin(pos, band) depends on pos only through it, which lets
//                               ropecheck/angle_batch.hpp reuse a row for positions holding the same
//                               (cached<> has inner() instead)
//
// The strategies (the exact one, backed by the MPFR reference, is the judge's: ropecheck/judge/
// exact_strategy.hpp in judge, so that no kernel ever includes the reference it is checked against):
//   direct_angle<T>             inv_freq, position, product and sin/cos all in T
//   hf_angle<Model>             HF transformers: fp32 inv_freq as torch computes it, fp32 product of
//                               float(position) and inv_freq, fp32 cos/sin * attention factor, then
//                               cast to the model dtype
//   storage_positions<S, C>     positions held in S (the bf16-positions bug), the rest in C
//   ggml_angle                  ggml: theta_i formed by repeated fp32 multiplication by
//                               powf(base, -2/d), ggml's YaRN mix, cosf/sinf
//   cached<CacheT, Inner>       Inner's cos/sin stored in a CacheT table (the bf16-cache bug)
//   fast_sincos_angle           fp32 angle, then a low-accuracy sin/cos (the fast-math class)
#pragma once

#include <cmath>
#include <concepts>
#include <cstdint>
#include <limits>
#include <numbers>
#include <span>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "ropecheck/config.hpp"
#include "ropecheck/scalar.hpp"
#include "ropecheck/schedule.hpp"

namespace ropecheck {

template <class T>
struct cos_sin_pair {
  T cos;
  T sin;
};

// What a strategy formed for one (position, band), each value widened exactly to long double:
//   position_used   the position as the strategy held it (257 is 256 in bf16)
//   inv_freq_used   the frequency its constants denote (for ggml's chain of fp32 products, the
//                   exact product of its fp32 factors: the chain's roundings count as product error)
//   angle           the angle it formed (== angle(pos, band))
//   cos_raw/sin_raw cos/sin as first evaluated, attention factor included, before any cast or cache
//   cos_final/...   what cos_sin(pos, band) returns (after the cast to the model dtype or cache)
// So angle - pos theta = p (inv_freq_used - theta) + (position_used - p) inv_freq_used
//                        + (angle - position_used inv_freq_used), term by term.
// R is the type the values are handed out in: long double holds every strategy's values exactly;
// double holds those of strategies working in 24 bits or fewer exactly, and spares a sweep over
// millions of values the x87 conversions (tools/report's exhaustive mode asks for double there).
template <class R = long double>
struct basic_angle_trace {
  R position_used = 0;
  R inv_freq_used = 0;
  R angle = 0;
  R cos_raw = 0;
  R sin_raw = 0;
  R cos_final = 0;
  R sin_final = 0;
};
using angle_trace = basic_angle_trace<long double>;

namespace detail {
// A value of a supported scalar as R, without passing through long double when it need not.
template <class R, class T>
[[nodiscard]] constexpr R trace_value(const T& x) {
  if constexpr (std::is_floating_point_v<T>) return static_cast<R>(x);
  else if constexpr (is_16bit_float_v<T>) return static_cast<R>(static_cast<float>(x));
  else return static_cast<R>(scalar_traits<T>::widen(x));
}
}  // namespace detail

template <class S>
concept angle_strategy = requires(const S& s, std::int64_t pos, int band) {
  typename S::value_type;
  { s.cos_sin(pos, band) } -> std::same_as<cos_sin_pair<typename S::value_type>>;
  { s.angle(pos, band) } -> std::convertible_to<long double>;
  { s.bands() } -> std::convertible_to<int>;
  { s.name() } -> std::convertible_to<std::string>;
};

// Convert between two supported scalars with a single rounding (Eigen's own conversions of
// double to bf16/half round twice). Types without traits (exact rationals in proofs) fall back to
// their own conversion, so kernels stay usable in constant expressions.
template <class To, class From>
[[nodiscard]] constexpr To convert(const From& v) {
  if constexpr (std::is_same_v<To, From>) {
    return v;
  } else if constexpr (requires { scalar_traits<To>::narrow(scalar_traits<From>::widen(v)); }) {
    if (std::is_constant_evaluated()) return static_cast<To>(v);
    return scalar_traits<To>::narrow(scalar_traits<From>::widen(v));
  } else {
    return static_cast<To>(v);
  }
}

// A position as T, rounded once (int64 -> long double is exact for |pos| < 2^64).
template <class T>
[[nodiscard]] inline T position_as(std::int64_t pos) {
  return scalar_traits<T>::narrow(static_cast<long double>(pos));
}

// ---------------------------------------------------------------------------------------------
// direct_angle<T>: everything in T. For T = float this is the typical hand-written fp32 kernel
// (inv_freq by powf, angle = p * inv_freq, cosf/sinf); for T = bf16 it is eager bf16 throughout,
// positions included. Error: angle off by ~(k+2) u_T |p theta| where k u_T bounds inv_freq's
// relative error (see judge/include/ropecheck/judge/error_model.hpp).
template <class T>
class direct_angle {
 public:
  using value_type = T;
  explicit direct_angle(const rope_config& cfg, std::int64_t seq_len = 0)
      : freq_(compute_frequencies<T>(cfg, seq_len)) {}

  [[nodiscard]] T held_position(std::int64_t pos) const { return position_as<T>(pos); }
  [[nodiscard]] T angle_in_type(std::int64_t pos, int band) const {
    return T(held_position(pos) * freq_.inv_freq[static_cast<std::size_t>(band)]);
  }
  [[nodiscard]] long double angle(std::int64_t pos, int band) const {
    return scalar_traits<T>::widen(angle_in_type(pos, band));
  }
  [[nodiscard]] cos_sin_pair<T> cos_sin(std::int64_t pos, int band) const {
    const T a = angle_in_type(pos, band);
    return {T(cos_of(a) * freq_.attention_factor), T(sin_of(a) * freq_.attention_factor)};
  }
  template <class R = long double>
  [[nodiscard]] basic_angle_trace<R> trace(std::int64_t pos, int band) const {
    using detail::trace_value;
    const T p = position_as<T>(pos);
    const T f = freq_.inv_freq[static_cast<std::size_t>(band)];
    const T a = T(p * f);  // the same expression as angle_in_type
    const T c = T(cos_of(a) * freq_.attention_factor), s = T(sin_of(a) * freq_.attention_factor);
    return {trace_value<R>(p), trace_value<R>(f), trace_value<R>(a), trace_value<R>(c),
            trace_value<R>(s), trace_value<R>(c), trace_value<R>(s)};
  }
  [[nodiscard]] int bands() const { return static_cast<int>(freq_.inv_freq.size()); }
  [[nodiscard]] std::string name() const { return "direct_" + std::string(scalar_name<T>()); }
  [[nodiscard]] const frequency_schedule<T>& frequencies() const { return freq_; }

 private:
  frequency_schedule<T> freq_;
};

// ---------------------------------------------------------------------------------------------
// hf_angle<Model>: HF transformers' LlamaRotaryEmbedding.forward, step by step:
//   inv_freq                         fp32, computed as torch does (hf_frequencies_fp32)
//   freqs = inv_freq @ pos.float()   one fp32 product (position rounded to fp32 past 2^24)
//   cos = freqs.cos() * scaling      fp32 cos, fp32 multiply by attention_scaling
//   cos.to(x.dtype)                  one rounding to the model dtype
template <class Model>
class hf_angle {
 public:
  using value_type = Model;
  explicit hf_angle(const rope_config& cfg, std::int64_t seq_len = 0)
      : freq_(hf_frequencies_fp32(cfg, seq_len)) {}

  [[nodiscard]] float held_position(std::int64_t pos) const { return static_cast<float>(pos); }
  [[nodiscard]] float angle_fp32(std::int64_t pos, int band) const {
    return held_position(pos) * freq_.inv_freq[static_cast<std::size_t>(band)];
  }
  [[nodiscard]] long double angle(std::int64_t pos, int band) const { return angle_fp32(pos, band); }
  [[nodiscard]] cos_sin_pair<Model> cos_sin(std::int64_t pos, int band) const {
    const float a = angle_fp32(pos, band);
    const float c = std::cos(a) * freq_.attention_factor;
    const float s = std::sin(a) * freq_.attention_factor;
    return {convert<Model>(c), convert<Model>(s)};
  }
  template <class R = long double>
  [[nodiscard]] basic_angle_trace<R> trace(std::int64_t pos, int band) const {
    using detail::trace_value;
    const float p = static_cast<float>(pos);
    const float f = freq_.inv_freq[static_cast<std::size_t>(band)];
    const float a = p * f;  // angle_fp32
    const float c = std::cos(a) * freq_.attention_factor;
    const float s = std::sin(a) * freq_.attention_factor;
    return {p, f, a, c, s, trace_value<R>(convert<Model>(c)), trace_value<R>(convert<Model>(s))};
  }
  [[nodiscard]] int bands() const { return static_cast<int>(freq_.inv_freq.size()); }
  [[nodiscard]] std::string name() const { return "hf_" + std::string(scalar_name<Model>()); }
  [[nodiscard]] const frequency_schedule<float>& frequencies() const { return freq_; }

 private:
  frequency_schedule<float> freq_;
};

// ---------------------------------------------------------------------------------------------
// storage_positions<S, C>: the position ids were cast to the storage dtype before the product
// (e.g. position_ids.to(bf16) or a model.to(bf16) that converted a float position buffer).
// bf16 holds integers exactly only up to 256: position 257 becomes 256, 15962 becomes 15968.
template <class S, class C = float>
class storage_positions {
 public:
  using value_type = C;
  explicit storage_positions(const rope_config& cfg, std::int64_t seq_len = 0)
      : freq_(compute_frequencies<C>(cfg, seq_len)) {}

  [[nodiscard]] C held_position(std::int64_t pos) const { return convert<C>(position_as<S>(pos)); }
  [[nodiscard]] C angle_in_type(std::int64_t pos, int band) const {
    return C(held_position(pos) * freq_.inv_freq[static_cast<std::size_t>(band)]);
  }
  [[nodiscard]] long double angle(std::int64_t pos, int band) const {
    return scalar_traits<C>::widen(angle_in_type(pos, band));
  }
  [[nodiscard]] cos_sin_pair<C> cos_sin(std::int64_t pos, int band) const {
    const C a = angle_in_type(pos, band);
    return {C(cos_of(a) * freq_.attention_factor), C(sin_of(a) * freq_.attention_factor)};
  }
  [[nodiscard]] int bands() const { return static_cast<int>(freq_.inv_freq.size()); }
  template <class R = long double>
  [[nodiscard]] basic_angle_trace<R> trace(std::int64_t pos, int band) const {
    using detail::trace_value;
    const C p = convert<C>(position_as<S>(pos));
    const C f = freq_.inv_freq[static_cast<std::size_t>(band)];
    const C a = C(p * f);  // the same expression as angle_in_type
    const C c = C(cos_of(a) * freq_.attention_factor), s = C(sin_of(a) * freq_.attention_factor);
    return {trace_value<R>(p), trace_value<R>(f), trace_value<R>(a), trace_value<R>(c),
            trace_value<R>(s), trace_value<R>(c), trace_value<R>(s)};
  }
  [[nodiscard]] std::string name() const {
    return "positions_in_" + std::string(scalar_name<S>()) + "_" + std::string(scalar_name<C>());
  }
  [[nodiscard]] const frequency_schedule<C>& frequencies() const { return freq_; }

 private:
  frequency_schedule<C> freq_;
};

// ---------------------------------------------------------------------------------------------
// ggml_angle: ggml's rope (ggml-cpu ops.cpp, rope_yarn and its cache init), in fp32:
//   theta_scale = powf(freq_base, -2.0f / n_dims)
//   theta_0 = (float) p;  theta_{i+1} = theta_i * theta_scale     (repeated fp32 products)
//   theta_extrap = theta_i / freq_factor_i                         (llama3/longrope factors)
//   theta_interp = freq_scale * theta_extrap                       (freq_scale = 1/factor)
//   YaRN: ramp over i (ggml_rope_yarn_corr_dims, floor/ceil), mix interp/extrap
//   cos = cosf(theta) * mscale
// Differences from HF it inherits on purpose: the repeated product makes band i's frequency
// error grow like i ulps; freq_base for NTK-style rules is the scaled base the runtime passes.
// Deviation: the attention factor (mscale) is taken from the schedule as one fp32 number rather
// than rebuilt from ggml's attn_factor * (1 + 0.1 ln(1/freq_scale)); the two agree to an ulp.
class ggml_angle {
 public:
  using value_type = float;
  explicit ggml_angle(const rope_config& cfg, std::int64_t seq_len = 0) : bands_(cfg.bands()) {
    validate(cfg);
    const auto exact = compute_frequencies<double>(cfg, seq_len);
    double base = cfg.base;
    const rope_config plain = with_scaling(cfg, scaling_kind::none);
    const auto unscaled = compute_frequencies<double>(plain, seq_len);
    switch (cfg.scaling) {
      case scaling_kind::ntk:
      case scaling_kind::dynamic_ntk:
        // The runtime passes the NTK-scaled base: recover it from the slowest band exactly as
        // llama.cpp's caller would compute it, base' = inv_freq_last^(-d/(d-2)).
        base = std::pow(exact.inv_freq.back(), -static_cast<double>(cfg.rotary_dim) /
                                                   static_cast<double>(cfg.rotary_dim - 2));
        break;
      case scaling_kind::linear:
        freq_scale_ = static_cast<float>(1.0 / cfg.factor);
        break;
      case scaling_kind::llama3:
      case scaling_kind::longrope:
        // llama.cpp uploads these as a rope_freqs tensor of divisors, in fp32.
        freq_factor_.resize(static_cast<std::size_t>(bands_));
        for (int i = 0; i < bands_; ++i)
          freq_factor_[static_cast<std::size_t>(i)] =
              static_cast<float>(unscaled.inv_freq[static_cast<std::size_t>(i)] /
                                 exact.inv_freq[static_cast<std::size_t>(i)]);
        break;
      case scaling_kind::yarn: {
        freq_scale_ = static_cast<float>(1.0 / effective_yarn_factor(cfg));
        ext_factor_ = 1.0f;
        // ggml_rope_yarn_corr_dims: floor/ceil of the correction dims, clamped to [0, n_dims-1].
        const auto corr = [&](double rot) {
          return static_cast<float>(cfg.rotary_dim) *
                 std::log(static_cast<float>(cfg.trained_length()) /
                          (static_cast<float>(rot) * 2.0f * std::numbers::pi_v<float>)) /
                 (2.0f * std::log(static_cast<float>(cfg.base)));
        };
        corr_low_ = std::max(0.0f, std::floor(corr(cfg.beta_fast)));
        corr_high_ = std::min(static_cast<float>(cfg.rotary_dim - 1), std::ceil(corr(cfg.beta_slow)));
        break;
      }
      case scaling_kind::none:
        break;
    }
    if (cfg.frozen_bands > 0) {
      // Proportional RoPE's frozen bands: a rope_freqs divisor of infinity (theta / inf = 0 exactly),
      // the turning bands' divisors 1 (how llama.cpp would express it; no such runtime case was read).
      freq_factor_.assign(static_cast<std::size_t>(bands_), 1.0f);
      for (int i = cfg.turning_bands(); i < bands_; ++i)
        freq_factor_[static_cast<std::size_t>(i)] = std::numeric_limits<float>::infinity();
    }
    theta_scale_ = std::pow(static_cast<float>(base), -2.0f / static_cast<float>(cfg.rotary_dim));
    mscale_ = static_cast<float>(exact.attention_factor);
    // The frequency the fp32 constants denote, each band's chain theta_scale^i multiplied out in
    // long double (2^-64 per step), so that trace() charges the chain's fp32 roundings to the product.
    freq_used_.resize(static_cast<std::size_t>(bands_));
    long double chain = 1.0L;
    for (int i = 0; i < bands_; ++i) {
      long double theta = chain;
      if (!freq_factor_.empty()) theta /= freq_factor_[static_cast<std::size_t>(i)];
      const long double interp = static_cast<long double>(freq_scale_) * theta;
      if (ext_factor_ == 0.0f) {
        freq_used_[static_cast<std::size_t>(i)] = interp;
      } else {
        const float ramp_mix = ramp_mix_of(i);
        freq_used_[static_cast<std::size_t>(i)] =
            interp * static_cast<long double>(1.0f - ramp_mix) + theta * static_cast<long double>(ramp_mix);
      }
      chain *= static_cast<long double>(theta_scale_);
    }
  }

  [[nodiscard]] float held_position(std::int64_t pos) const { return static_cast<float>(pos); }
  [[nodiscard]] float angle_fp32(std::int64_t pos, int band) const {
    float theta = held_position(pos);
    for (int i = 0; i < band; ++i) theta *= theta_scale_;
    return finish_angle(theta, band);
  }
  // Every band's angle at `pos` (out.size() == bands()), the chain of products formed once for all
  // bands: O(bands) instead of O(bands^2), bit-identical to angle_fp32(pos, i) for each i (the same
  // fp32 operations in the same order).
  void fill_angles(std::int64_t pos, std::span<float> out) const {
    float theta = held_position(pos);
    for (int i = 0; i < bands_ && static_cast<std::size_t>(i) < out.size(); ++i) {
      if (i > 0) theta *= theta_scale_;
      out[static_cast<std::size_t>(i)] = finish_angle(theta, i);
    }
  }
  [[nodiscard]] long double angle(std::int64_t pos, int band) const { return angle_fp32(pos, band); }
  [[nodiscard]] cos_sin_pair<float> cos_sin(std::int64_t pos, int band) const {
    const float t = angle_fp32(pos, band);
    return {std::cos(t) * mscale_, std::sin(t) * mscale_};
  }
  template <class R = long double>
  [[nodiscard]] basic_angle_trace<R> trace(std::int64_t pos, int band) const {
    return trace_of<R>(pos, band, angle_fp32(pos, band));
  }
  // trace(pos, band) given the angle fill_angles formed for (pos, band): no chain re-formed.
  template <class R = long double>
  [[nodiscard]] basic_angle_trace<R> trace_at(std::int64_t pos, int band, float theta) const {
    return trace_of<R>(pos, band, theta);
  }
  // trace() of every band at once (out.size() == bands()), through fill_angles.
  void trace_bands(std::int64_t pos, std::span<angle_trace> out) const {
    float theta = static_cast<float>(pos);
    for (int i = 0; i < bands_ && static_cast<std::size_t>(i) < out.size(); ++i) {
      if (i > 0) theta *= theta_scale_;
      out[static_cast<std::size_t>(i)] = trace_of<long double>(pos, i, finish_angle(theta, i));
    }
  }
  [[nodiscard]] int bands() const { return bands_; }
  [[nodiscard]] std::string name() const { return "ggml_float"; }
  // The fp32 mscale cos_sin multiplies by.
  [[nodiscard]] float attention_factor() const { return mscale_; }

 private:
  // The steps after the chain theta = p * theta_scale^band (ggml's rope_yarn).
  [[nodiscard]] float ramp_mix_of(int band) const {
    // rope_yarn_ramp: y = (i0/2 - low) / max(0.001, high - low); ramp = 1 - clamp(y, 0, 1)
    const float y = (static_cast<float>(band) - corr_low_) / std::max(0.001f, corr_high_ - corr_low_);
    return (1.0f - std::min(1.0f, std::max(0.0f, y))) * ext_factor_;
  }
  [[nodiscard]] float finish_angle(float theta, int band) const {
    if (!freq_factor_.empty()) theta /= freq_factor_[static_cast<std::size_t>(band)];
    const float interp = freq_scale_ * theta;
    if (ext_factor_ == 0.0f) return interp;
    const float ramp_mix = ramp_mix_of(band);
    return interp * (1.0f - ramp_mix) + theta * ramp_mix;
  }
  // inv_freq_used is the exact product of the chain's fp32 constants (long double); handed out as
  // double it is rounded once (2^-53 relative, far below the fp32 errors it explains).
  template <class R = long double>
  [[nodiscard]] basic_angle_trace<R> trace_of(std::int64_t pos, int band, float t) const {
    const float c = std::cos(t) * mscale_, s = std::sin(t) * mscale_;  // as cos_sin
    return {static_cast<float>(pos), static_cast<R>(freq_used_[static_cast<std::size_t>(band)]), t, c, s, c, s};
  }

  // The YaRN factor as the schedule reads it (an explicit factor wins; see schedule.hpp), so that
  // ggml_angle differs from the schedule only in its arithmetic.
  static double effective_yarn_factor(const rope_config& cfg) { return detail::effective_factor_in<double>(cfg); }

  int bands_;
  float theta_scale_ = 1.0f;
  float freq_scale_ = 1.0f;
  float ext_factor_ = 0.0f;
  float corr_low_ = 0.0f, corr_high_ = 0.0f;
  float mscale_ = 1.0f;
  std::vector<float> freq_factor_;
  std::vector<long double> freq_used_;  // trace's inv_freq_used, per band
};

// ---------------------------------------------------------------------------------------------
// cached<CacheT, Inner>: Inner's cos/sin rounded once into a CacheT table, as engines that
// precompute a cos/sin cache in the model dtype do. In bf16 the cache alone moves cos and sin by
// up to 2^-9 relative, which breaks the relative-offset identity at every position.
template <class CacheT, angle_strategy Inner>
class cached {
 public:
  using value_type = CacheT;
  explicit cached(Inner inner) : inner_(std::move(inner)) {}

  [[nodiscard]] long double angle(std::int64_t pos, int band) const { return inner_.angle(pos, band); }
  [[nodiscard]] cos_sin_pair<CacheT> cos_sin(std::int64_t pos, int band) const {
    const auto cs = inner_.cos_sin(pos, band);
    return {convert<CacheT>(cs.cos), convert<CacheT>(cs.sin)};
  }
  // Inner's trace with the cached values as final; cos_raw stays Inner's first evaluation, so
  // cos_final - cos_raw covers Inner's own cast and the cache together.
  template <class R = long double>
  [[nodiscard]] basic_angle_trace<R> trace(std::int64_t pos, int band) const
    requires requires(const Inner& i, std::int64_t p, int b) { i.trace(p, b); }
  {
    using inner_value = typename Inner::value_type;
    basic_angle_trace<R> t = inner_.template trace<R>(pos, band);
    // Inner's final values are exact in its value_type (and in R): narrowing them back is exact.
    t.cos_final = detail::trace_value<R>(convert<CacheT>(scalar_traits<inner_value>::narrow(t.cos_final)));
    t.sin_final = detail::trace_value<R>(convert<CacheT>(scalar_traits<inner_value>::narrow(t.sin_final)));
    return t;
  }
  [[nodiscard]] int bands() const { return inner_.bands(); }
  [[nodiscard]] std::string name() const {
    return inner_.name() + "_cache_" + std::string(scalar_name<CacheT>());
  }
  [[nodiscard]] const Inner& inner() const { return inner_; }

 private:
  Inner inner_;
};

// ---------------------------------------------------------------------------------------------
// A fast low-accuracy sine, the kind fast-math builds and hand-vectorised kernels substitute.
// Contract: x reduced to [-pi, pi] with a single fp32 constant for 2 pi (so reduction error grows
// like |x| 2^-24 as well); then the parabola 4/pi x - 4/pi^2 x|x| with one correction step
// (P = 0.225). Absolute error <= 1.1e-3 on [-pi, pi] (measured in tests/core/angle_test.cpp).
[[nodiscard]] inline float fast_sin(float x) noexcept {
  constexpr float two_pi = 2.0f * std::numbers::pi_v<float>;
  constexpr float inv_two_pi = 1.0f / two_pi;
  x -= two_pi * std::nearbyint(x * inv_two_pi);
  constexpr float b = 4.0f / std::numbers::pi_v<float>;
  constexpr float c = -4.0f / (std::numbers::pi_v<float> * std::numbers::pi_v<float>);
  const float y = b * x + c * x * std::fabs(x);
  constexpr float p = 0.225f;
  return p * (y * std::fabs(y) - y) + y;
}
[[nodiscard]] inline float fast_cos(float x) noexcept {
  return fast_sin(x + std::numbers::pi_v<float> / 2.0f);
}

class fast_sincos_angle {
 public:
  using value_type = float;
  explicit fast_sincos_angle(const rope_config& cfg, std::int64_t seq_len = 0) : angle_(cfg, seq_len) {}

  [[nodiscard]] float held_position(std::int64_t pos) const { return angle_.held_position(pos); }
  [[nodiscard]] long double angle(std::int64_t pos, int band) const { return angle_.angle(pos, band); }
  // The fp32 angle it forms (and the frequencies and attention factor it uses).
  [[nodiscard]] const direct_angle<float>& formed_angle() const { return angle_; }
  [[nodiscard]] cos_sin_pair<float> cos_sin(std::int64_t pos, int band) const {
    const float a = angle_.angle_in_type(pos, band);
    const float af = angle_.frequencies().attention_factor;
    return {fast_cos(a) * af, fast_sin(a) * af};
  }
  template <class R = long double>
  [[nodiscard]] basic_angle_trace<R> trace(std::int64_t pos, int band) const {
    basic_angle_trace<R> t = angle_.template trace<R>(pos, band);
    const auto a = static_cast<float>(t.angle);  // exact: it is the fp32 angle, widened
    const float af = angle_.frequencies().attention_factor;
    t.cos_raw = t.cos_final = fast_cos(a) * af;
    t.sin_raw = t.sin_final = fast_sin(a) * af;
    return t;
  }
  [[nodiscard]] int bands() const { return angle_.bands(); }
  [[nodiscard]] std::string name() const { return "fast_sincos_float"; }

 private:
  direct_angle<float> angle_;
};

}  // namespace ropecheck
