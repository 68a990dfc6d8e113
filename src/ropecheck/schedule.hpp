// ropecheck/schedule.hpp — RoPE frequency schedules (inv_freq and attention factor) for every
// scaling rule, evaluated in a chosen floating type, plus an exact emulation of what HF
// transformers computes in float32.
//
// Sources the formulas were checked against (read through the code index, not from memory):
//   * huggingface/transformers src/transformers/modeling_rope_utils.py, v5 layout with
//     `rope_parameters`, `truncate`, `mscale_all_dim`, "proportional" rope type:
//     fork 8b-is/transformers @ 07dc0bab60a71fa935af8891ddda73e44293e18e.
//     Compared with the v4.5x layout (`rope_scaling`, e.g. huggingface/transformers
//     @ ef46806472a64b0013ed413781e3afed82bfa047 and the `rope_parameters` transition version).
//   * ggml rope_yarn / rope_yarn_ramp / ggml_rope_yarn_corr_dims (ggml-cpu ops.cpp and every
//     backend copy of it: CUDA, Metal, SYCL share the same code).
//
// Where HF and ggml differ (comments repeat this at the step concerned):
//   * inv_freq: HF forms base ** (2i/d) in fp32 per band, then 1/x. ggml forms
//     theta_scale = powf(base, -2/d) once and multiplies `theta *= theta_scale` band after band:
//     the error grows with the band index (not emulated here: it is an implementation under test).
//   * YaRN correction range: HF in Python double (math.log), floor/ceil only when `truncate`
//     (default true); ggml in float (logf) and always floor/ceil. Both clamp to [0, dim-1].
//   * YaRN ramp: HF `if low == high: high += 0.001`; ggml divides by max(0.001f, high-low).
//     ggml's rope_yarn_ramp returns the *extrapolation* weight (1 - clamp(y)), as HF's
//     `inv_freq_extrapolation_factor`.
//   * YaRN magnitude: HF returns attention_factor (explicit, or mscale/mscale_all_dim ratio, or
//     0.1 ln s + 1) and multiplies cos and sin by it; ggml computes
//     mscale = attn_factor * (1 + 0.1 logf(1/freq_scale)) inside the kernel, only when
//     ext_factor != 0, so llama.cpp must pass attn_factor pre-divided for DeepSeek's ratio.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <numbers>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "ropecheck/config.hpp"

namespace ropecheck {

template <class T>
struct frequency_schedule {
  std::vector<T> inv_freq;  // rotary_dim/2 entries: effective angular frequency (rad/token), scaling folded in
  T attention_factor = static_cast<T>(1.0f);  // multiplies cos and sin; 1 for rules without one
};

namespace detail {

[[noreturn]] inline void invalid_config(const std::string& field, const std::string& problem) {
  throw std::invalid_argument("rope_config." + field + ": " + problem);
}

inline std::string num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

constexpr bool rule_uses_factor(scaling_kind k) noexcept { return k != scaling_kind::none; }

}  // namespace detail

// Contract: returns normally iff every rule step is defined for `cfg`; otherwise throws
// std::invalid_argument whose message starts with "rope_config.<field>:".
// M-RoPE: a section per position row, every band in exactly one, and the interleaved rule giving each
// row as many bands as its section says.
constexpr void validate_mrope(const rope_config& cfg) {
  using detail::invalid_config;
  if (cfg.mrope == mrope_kind::none) {
    if (!cfg.mrope_section.empty()) invalid_config("mrope_section", "given, but the convention is not M-RoPE");
    return;
  }
  if (cfg.mrope_section.size() < 2)
    invalid_config("mrope_section", "M-RoPE needs at least 2 sections, got " + std::to_string(cfg.mrope_section.size()));
  if (cfg.mrope_section.size() > 8)
    invalid_config("mrope_section", "more than 8 sections (" + std::to_string(cfg.mrope_section.size()) + ")");
  int sum = 0;
  for (std::size_t r = 0; r < cfg.mrope_section.size(); ++r) {
    if (cfg.mrope_section[r] < 0)
      invalid_config("mrope_section", "entry " + std::to_string(r) + " is negative: " + std::to_string(cfg.mrope_section[r]));
    if (cfg.mrope_section[r] > cfg.bands())
      invalid_config("mrope_section", "entry " + std::to_string(r) + " exceeds the " + std::to_string(cfg.bands()) + " bands");
    sum += cfg.mrope_section[r];
  }
  if (sum != cfg.bands())
    invalid_config("mrope_section", "sums to " + std::to_string(sum) + " bands; rotary_dim/2 = " +
                                        std::to_string(cfg.bands()) + " needed");
  if (cfg.mrope == mrope_kind::interleaved) {
    if (cfg.mrope_section.size() != 3)
      invalid_config("mrope_section", "interleaved M-RoPE has 3 rows (t, h, w), got " + std::to_string(cfg.mrope_section.size()));
    std::vector<int> count(cfg.mrope_section.size(), 0);
    for (int b = 0; b < cfg.bands(); ++b) ++count[static_cast<std::size_t>(cfg.position_row(b))];
    for (std::size_t r = 0; r < count.size(); ++r)
      if (count[r] != cfg.mrope_section[r])
        invalid_config("mrope_section", "interleaved rule gives row " + std::to_string(r) + " " +
                                            std::to_string(count[r]) + " bands, its section says " +
                                            std::to_string(cfg.mrope_section[r]));
  }
}

constexpr void validate(const rope_config& cfg) {
  using detail::invalid_config;
  using detail::num;
  if (cfg.head_dim <= 0) invalid_config("head_dim", "must be positive, got " + std::to_string(cfg.head_dim));
  if (cfg.rotary_dim <= 0)
    invalid_config("rotary_dim", "must be positive, got " + std::to_string(cfg.rotary_dim));
  if (cfg.rotary_dim % 2 != 0)
    invalid_config("rotary_dim", "must be even (coordinates rotate in pairs), got " + std::to_string(cfg.rotary_dim));
  if (cfg.rotary_dim > cfg.head_dim)
    invalid_config("rotary_dim", std::to_string(cfg.rotary_dim) + " exceeds head_dim " + std::to_string(cfg.head_dim));
  if (!std::isfinite(cfg.base) || !(cfg.base > 1.0))
    invalid_config("base", "rope_theta must be finite and > 1, got " + num(cfg.base));
  if (cfg.max_position_embeddings <= 0)
    invalid_config("max_position_embeddings", "must be positive, got " + std::to_string(cfg.max_position_embeddings));
  if (cfg.original_max_position_embeddings < 0)
    invalid_config("original_max_position_embeddings",
                   "must be >= 0 (0 = not given), got " + std::to_string(cfg.original_max_position_embeddings));
  if (detail::rule_uses_factor(cfg.scaling) && (!std::isfinite(cfg.factor) || !(cfg.factor > 0.0)))
    invalid_config("factor", "must be finite and > 0 for rope_type '" + std::string(to_string(cfg.scaling)) +
                                 "', got " + num(cfg.factor));
  if (cfg.attention_factor && (!std::isfinite(*cfg.attention_factor) || !(*cfg.attention_factor > 0.0)))
    invalid_config("attention_factor", "must be finite and > 0, got " + num(*cfg.attention_factor));
  if (cfg.outputs == output_order::half_split && cfg.pair_layout != layout::interleaved)
    invalid_config("outputs", "half_split output order de-interleaves interleaved pairs; it needs layout interleaved");
  validate_mrope(cfg);
  if (cfg.frozen_bands != 0) {
    // Proportional RoPE (transformers modeling_rope_utils.py _compute_proportional_rope_parameters) is
    // the default schedule, optionally divided by `factor`, with a zero tail.
    if (cfg.frozen_bands < 0 || cfg.frozen_bands >= cfg.bands())
      invalid_config("frozen_bands", "must be in [0, rotary_dim/2 = " + std::to_string(cfg.bands()) +
                                         "): at least one band turns, got " + std::to_string(cfg.frozen_bands));
    if (cfg.scaling != scaling_kind::none && cfg.scaling != scaling_kind::linear)
      invalid_config("frozen_bands", "proportional RoPE is defined with the default or linear schedule, not '" +
                                         std::string(to_string(cfg.scaling)) + "'");
    if (cfg.mrope != mrope_kind::none) invalid_config("frozen_bands", "proportional RoPE with M-RoPE is not defined");
  }
  if ((cfg.short_mscale || cfg.long_mscale) && cfg.scaling != scaling_kind::longrope)
    invalid_config("short_mscale", "short_mscale / long_mscale belong to LongRoPE, not '" +
                                       std::string(to_string(cfg.scaling)) + "'");
  if (cfg.short_mscale.has_value() != cfg.long_mscale.has_value())
    invalid_config(cfg.short_mscale ? "long_mscale" : "short_mscale", "give short_mscale and long_mscale together");
  for (const auto& m : {cfg.short_mscale, cfg.long_mscale})
    if (m && (!std::isfinite(*m) || !(*m > 0.0)))
      invalid_config("short_mscale", "short_mscale and long_mscale must be finite and > 0, got " + num(*m));
  if (cfg.short_mscale && cfg.attention_factor)
    invalid_config("attention_factor", "give attention_factor or short_mscale/long_mscale, not both");

  switch (cfg.scaling) {
    case scaling_kind::none:
    case scaling_kind::linear:
      break;
    case scaling_kind::ntk:
    case scaling_kind::dynamic_ntk:
      // base' = base * (...)^(d/(d-2)) is undefined for d = 2.
      if (cfg.rotary_dim <= 2)
        invalid_config("rotary_dim", "NTK rules need rotary_dim > 2 (exponent d/(d-2)), got " +
                                         std::to_string(cfg.rotary_dim));
      break;
    case scaling_kind::yarn:
      if (!std::isfinite(cfg.beta_fast) || !(cfg.beta_fast > 0.0))
        invalid_config("beta_fast", "must be finite and > 0, got " + num(cfg.beta_fast));
      if (!std::isfinite(cfg.beta_slow) || !(cfg.beta_slow > 0.0))
        invalid_config("beta_slow", "must be finite and > 0, got " + num(cfg.beta_slow));
      if (cfg.beta_fast < cfg.beta_slow)
        invalid_config("beta_fast", "must be >= beta_slow (" + num(cfg.beta_slow) + "), got " + num(cfg.beta_fast));
      if (cfg.mscale && !std::isfinite(*cfg.mscale)) invalid_config("mscale", "must be finite");
      if (cfg.mscale_all_dim && !std::isfinite(*cfg.mscale_all_dim)) invalid_config("mscale_all_dim", "must be finite");
      break;
    case scaling_kind::llama3:
      if (cfg.original_max_position_embeddings <= 0)
        invalid_config("original_max_position_embeddings", "llama3 needs the pre-training length (got none)");
      if (!std::isfinite(cfg.low_freq_factor) || !(cfg.low_freq_factor > 0.0))
        invalid_config("low_freq_factor", "must be finite and > 0, got " + num(cfg.low_freq_factor));
      // Equal factors leave no smooth band (Llama 4 Scout ships low = high = 1; HF's
      // _compute_llama3_parameters accepts it: its medium-band mask is then empty).
      if (!std::isfinite(cfg.high_freq_factor) || !(cfg.high_freq_factor >= cfg.low_freq_factor))
        invalid_config("high_freq_factor", "must be finite and >= low_freq_factor (" + num(cfg.low_freq_factor) +
                                               "), got " + num(cfg.high_freq_factor));
      break;
    case scaling_kind::longrope: {
      const auto want = static_cast<std::size_t>(cfg.bands());
      if (cfg.short_factor.size() != want)
        invalid_config("short_factor", "needs rotary_dim/2 = " + std::to_string(want) + " entries, got " +
                                           std::to_string(cfg.short_factor.size()));
      if (cfg.long_factor.size() != want)
        invalid_config("long_factor", "needs rotary_dim/2 = " + std::to_string(want) + " entries, got " +
                                          std::to_string(cfg.long_factor.size()));
      for (double v : cfg.short_factor)
        if (!std::isfinite(v) || !(v > 0.0)) invalid_config("short_factor", "entries must be finite and > 0");
      for (double v : cfg.long_factor)
        if (!std::isfinite(v) || !(v > 0.0)) invalid_config("long_factor", "entries must be finite and > 0");
      // sqrt(1 + ln s / ln L) divides by ln L (HF: ZeroDivisionError at L = 1; found by fuzzing).
      if (!cfg.attention_factor && cfg.trained_length() <= 1)
        invalid_config("original_max_position_embeddings",
                       "must be > 1 for LongRoPE's attention factor sqrt(1 + ln s / ln L), got " +
                           std::to_string(cfg.trained_length()));
      break;
    }
  }
}

namespace detail {

// get_mscale(s, m) = s <= 1 ? 1 : 0.1 * m * ln(s) + 1   (YaRN paper's sqrt(1/t); HF evaluates
// `0.1 * mscale * math.log(scale) + 1.0` left to right, so (0.1*m)*ln(s)).
template <class T>
constexpr T yarn_get_mscale(T s, T m) {
  using std::log;
  if (s <= T(1)) return T(1);
  // 0.1 correctly rounded in T (T(0.1) would be the double 0.1, 2^-54 off, in long double).
  return (T(1) / T(10)) * m * log(s) + T(1);
}

// The factor YaRN and LongRoPE use, in T. transformers v5 uses an explicit `factor` and falls back
// to max_position_embeddings / original_max_position_embeddings only when `factor` is absent
// (`if factor is None`). rope_config cannot say "absent": factor == 1.0 together with a given
// original length is read as absent (Phi-3 gives no factor) — the same convention as the reference.
// transformers 4.4x-4.5x used the ratio whenever the original length was given.
template <class T>
constexpr T effective_factor_in(const rope_config& cfg) {
  if ((cfg.scaling == scaling_kind::yarn || cfg.scaling == scaling_kind::longrope) &&
      cfg.original_max_position_embeddings > 0 && cfg.factor == 1.0)
    return static_cast<T>(cfg.max_position_embeddings) / static_cast<T>(cfg.original_max_position_embeddings);
  return static_cast<T>(cfg.factor);
}

// The attention factor of YaRN and LongRoPE, 1 for every other rule, evaluated in T. seq_len: LongRoPE
// with short/long mscales (Phi-3.5-MoE; transformers models/phimoe/modeling_phimoe.py
// PhimoeRotaryEmbedding.forward: long_mscale if seq_len > original_max_position_embeddings else
// short_mscale, in place of the computed factor).
template <class T>
constexpr T attention_factor_in(const rope_config& cfg, std::int64_t seq_len = 0) {
  using std::log;
  using std::sqrt;
  if (cfg.scaling == scaling_kind::longrope && cfg.short_mscale && cfg.long_mscale)
    return static_cast<T>(seq_len > cfg.trained_length() ? *cfg.long_mscale : *cfg.short_mscale);
  if (cfg.attention_factor && (cfg.scaling == scaling_kind::yarn || cfg.scaling == scaling_kind::longrope))
    return static_cast<T>(*cfg.attention_factor);
  const T s = effective_factor_in<T>(cfg);
  if (cfg.scaling == scaling_kind::yarn) {
    // HF: `if mscale and mscale_all_dim` is Python truthiness: 0.0 counts as absent.
    if (cfg.mscale && cfg.mscale_all_dim && *cfg.mscale != 0.0 && *cfg.mscale_all_dim != 0.0)
      return yarn_get_mscale(s, static_cast<T>(*cfg.mscale)) / yarn_get_mscale(s, static_cast<T>(*cfg.mscale_all_dim));
    return yarn_get_mscale(s, T(1));
  }
  if (cfg.scaling == scaling_kind::longrope) {
    if (s <= T(1)) return T(1);
    return sqrt(T(1) + log(s) / log(static_cast<T>(cfg.trained_length())));
  }
  return T(1);
}

// NTK-aware base for the static rule (seq_len ignored) or dynamic NTK at seq_len, in T.
// dynamic: seq = max(seq_len, L), L = max_position_embeddings (HF ignores
// original_max_position_embeddings here: "TODO (joao)"); at seq == L the base is returned unchanged.
template <class T>
constexpr T ntk_base_in(const rope_config& cfg, std::int64_t seq_len) {
  using std::pow;
  const T b = static_cast<T>(cfg.base);
  const T s = static_cast<T>(cfg.factor);
  const T d = static_cast<T>(cfg.rotary_dim);
  const T k = d / (d - T(2));
  if (cfg.scaling == scaling_kind::ntk) return b * pow(s, k);
  const std::int64_t L = cfg.max_position_embeddings;
  const std::int64_t seq = seq_len > L ? seq_len : L;
  if (seq == L) return b;  // (s*L/L - (s-1))^k = 1 exactly
  const T ratio = s * static_cast<T>(seq) / static_cast<T>(L) - (s - T(1));
  return b * pow(ratio, k);
}

// Every step in T (T = float, double, long double), std:: functions on T.
template <class T>
constexpr frequency_schedule<T> compute_native(const rope_config& cfg, std::int64_t seq_len) {
  using std::ceil;
  using std::floor;
  using std::log;
  using std::pow;
  static_assert(std::is_floating_point_v<T>);
  const int n = cfg.bands();
  const T d = static_cast<T>(cfg.rotary_dim);
  const T b = static_cast<T>(cfg.base);
  const T s = effective_factor_in<T>(cfg);
  // e_i = 2i/d, rounded once in T (exact when d is a power of two).
  auto e = [&](int i) { return static_cast<T>(2 * i) / d; };

  frequency_schedule<T> out;
  out.inv_freq.resize(static_cast<std::size_t>(n));
  out.attention_factor = attention_factor_in<T>(cfg, seq_len);
  auto& f = out.inv_freq;

  switch (cfg.scaling) {
    case scaling_kind::none:
      for (int i = 0; i < n; ++i) f[static_cast<std::size_t>(i)] = pow(b, -e(i));
      break;
    case scaling_kind::linear:
      for (int i = 0; i < n; ++i) f[static_cast<std::size_t>(i)] = pow(b, -e(i)) / s;
      break;
    case scaling_kind::ntk:
    case scaling_kind::dynamic_ntk: {
      const T bp = ntk_base_in<T>(cfg, seq_len);
      for (int i = 0; i < n; ++i) f[static_cast<std::size_t>(i)] = pow(bp, -e(i));
      break;
    }
    case scaling_kind::yarn: {
      // Correction range in band units: cd(r) = d ln(L0 / (2 pi r)) / (2 ln base), the band whose
      // wavelength makes r turns over the pre-training length L0.
      const T L0 = static_cast<T>(cfg.trained_length());
      const T pi = std::numbers::pi_v<T>;
      auto cd = [&](double r) { return (d * log(L0 / (static_cast<T>(r) * T(2) * pi))) / (T(2) * log(b)); };
      T low = cd(cfg.beta_fast);
      T high = cd(cfg.beta_slow);
      if (cfg.truncate) {
        low = floor(low);
        high = ceil(high);
      }
      low = std::max(low, T(0));
      high = std::min(high, d - T(1));  // HF and ggml clamp to dim-1 (not bands-1)
      if (low == high) high += T(0.001);  // HF's singularity guard (ggml: max(0.001, high-low))
      const T width = high - low;
      for (int i = 0; i < n; ++i) {
        const T x = pow(b, -e(i));  // extrapolation frequency (unscaled)
        const T ti = static_cast<T>(i);
        // ramp = clamp((i-low)/(high-low)) is the interpolation weight; the extrapolation weight
        // 1 - ramp is formed as clamp((high-i)/(high-low)) so neither weight suffers cancellation.
        const T w_interp = std::clamp((ti - low) / width, T(0), T(1));
        const T w_extrap = std::clamp((high - ti) / width, T(0), T(1));
        f[static_cast<std::size_t>(i)] = (x / s) * w_interp + x * w_extrap;
      }
      break;
    }
    case scaling_kind::llama3: {
      const T L0 = static_cast<T>(cfg.original_max_position_embeddings);
      const T lo = static_cast<T>(cfg.low_freq_factor);
      const T hi = static_cast<T>(cfg.high_freq_factor);
      const T low_wavelen = L0 / lo;
      const T high_wavelen = L0 / hi;
      const T two_pi = T(2) * std::numbers::pi_v<T>;
      for (int i = 0; i < n; ++i) {
        const T x = pow(b, -e(i));
        const T wavelen = two_pi / x;
        if (wavelen < high_wavelen) {
          f[static_cast<std::size_t>(i)] = x;  // high-frequency band: unchanged
        } else if (wavelen > low_wavelen) {
          f[static_cast<std::size_t>(i)] = x / s;  // low-frequency band: interpolated like linear
        } else {
          // lo == hi: only wavelen == L0 / lo lands here; no smooth band, the band is kept.
          const T smooth = hi == lo ? T(1) : (L0 / wavelen - lo) / (hi - lo);
          f[static_cast<std::size_t>(i)] = (T(1) - smooth) * x / s + smooth * x;
        }
      }
      break;
    }
    case scaling_kind::longrope: {
      // Long factors once the sequence exceeds the pre-training length (HF: `seq_len and seq_len >
      // original_max_position_embeddings`); seq_len = 0 means not given: short factors.
      const bool use_long = seq_len > cfg.trained_length();
      const auto& ext = use_long ? cfg.long_factor : cfg.short_factor;
      for (int i = 0; i < n; ++i) {
        const auto k = static_cast<std::size_t>(i);
        f[k] = T(1) / (static_cast<T>(ext[k]) * pow(b, e(i)));
      }
      break;
    }
  }
  // Proportional RoPE: the last frozen_bands frequencies are exactly 0.
  for (int i = cfg.turning_bands(); i < n; ++i) f[static_cast<std::size_t>(i)] = T(0);
  return out;
}

}  // namespace detail

// The schedule of `cfg` evaluated in the arithmetic of T.
//   T = float, double, long double: every step in T with std::pow/std::log/... on T.
//     Error: see tests/core/schedule_test.cpp's tolerance table (a few ulps for the plain rules; YaRN
//     and Llama-3 amplify the pow error by at most their factor).
//   T = anything else constructible from float (Eigen::bfloat16, Eigen::half, _Float16): computed
//     in float then rounded to T per band — "inv_freq held in bf16", a known bug class.
// The scaling factor is cfg.factor for every rule (transformers v5 semantics: an explicit factor
// wins), except that YaRN/LongRoPE read factor == 1 with an original length as "absent" and use
// max_position_embeddings / original_max_position_embeddings (see effective_factor_in).
// Throws std::invalid_argument (validate) for configs no rule can evaluate.
namespace detail {
// Parameters each valid on their own can still overflow a schedule (factor 1e-320 divides
// inv_freq into infinity; a subnormal LongRoPE factor likewise: found by fuzz/fuzz_config_json).
// v - v is 0 only for finite v (constexpr, unlike std::isfinite in C++20).
template <class W>
constexpr void require_finite(const frequency_schedule<W>& s) {
  for (const W& v : s.inv_freq)
    if (!(v - v == W(0))) invalid_config("factor", "the frequency schedule overflows (a band's inv_freq is not finite)");
  if (!(s.attention_factor - s.attention_factor == W(0)))
    invalid_config("attention_factor", "the attention factor of this schedule is not finite");
}
}  // namespace detail

template <class T>
constexpr frequency_schedule<T> compute_frequencies(const rope_config& cfg, std::int64_t seq_len = 0) {
  validate(cfg);
  if constexpr (std::is_floating_point_v<T>) {
    auto out = detail::compute_native<T>(cfg, seq_len);
    detail::require_finite(out);
    return out;
  } else {
    const frequency_schedule<float> wide = detail::compute_native<float>(cfg, seq_len);
    detail::require_finite(wide);
    frequency_schedule<T> out;
    out.inv_freq.reserve(wide.inv_freq.size());
    for (float v : wide.inv_freq) out.inv_freq.push_back(static_cast<T>(v));
    out.attention_factor = static_cast<T>(wide.attention_factor);
    return out;
  }
}

// The NTK-aware base' in T: static rule base*s^(d/(d-2)); dynamic rule at seq_len (base itself
// for seq_len <= max_position_embeddings). Throws std::invalid_argument for other rules.
template <class T>
constexpr T ntk_scaled_base(const rope_config& cfg, std::int64_t seq_len = 0) {
  validate(cfg);
  if (cfg.scaling != scaling_kind::ntk && cfg.scaling != scaling_kind::dynamic_ntk)
    detail::invalid_config("scaling", "ntk_scaled_base needs rope_type 'ntk' or 'dynamic'");
  return detail::ntk_base_in<T>(cfg, seq_len);
}

namespace detail {

// torch: `base ** (torch.arange(0, dim, 2, dtype=torch.int64).float() / dim)`.
//   arange(...).float() / dim  -> fp32 division by float(dim) (CPU true division)
//   python_float ** tensor     -> pow(Scalar, Tensor): the Python base is cast to fp32 first.
// torch's vectorised CPU path evaluates powf with Sleef_powf*_u10 (<= 1 ulp), glibc's powf is
// < 1 ulp too; the two can differ in the last bit for a rare band: a dump's own inv_freq is the
// authority when bit-exactness matters.
inline std::vector<float> hf_pos_freqs_fp32(float base_f, int dim) {
  std::vector<float> p(static_cast<std::size_t>(dim / 2));
  for (int i = 0; i < dim / 2; ++i) {
    const float e = static_cast<float>(2 * i) / static_cast<float>(dim);
    p[static_cast<std::size_t>(i)] = std::pow(base_f, e);  // std::pow(float, float) = powf
  }
  return p;
}

// `1.0 / tensor` is Tensor.__rtruediv__ = self.reciprocal() * 1.0: one fp32 rounding of 1/x.
inline std::vector<float> hf_reciprocal_fp32(std::vector<float> x) {
  for (float& v : x) v = 1.0f / v;
  return x;
}

// Python-double attention factor of HF for YaRN / LongRoPE (1.0 otherwise).
inline double hf_attention_factor(const rope_config& cfg, std::int64_t seq_len = 0) { return attention_factor_in<double>(cfg, seq_len); }

}  // namespace detail

// Exactly what HF transformers (torch, float32, CPU) computes, step by step, for `cfg`:
// the v5 modeling_rope_utils functions (8b-is/transformers @ 07dc0bab), with the factor as in
// compute_frequencies (effective_factor_in). transformers 4.4x-4.5x instead replaced the YaRN
// factor by max/original whenever rope_scaling had original_max_position_embeddings, and the LongRoPE factor whenever the config
// had a top-level original_max_position_embeddings: to emulate those, set cfg.factor accordingly.
// seq_len: dynamic NTK's runtime update (> max_position_embeddings) and LongRoPE's long factors.
// The attention factor is the Python double HF returns, rounded to float.
inline frequency_schedule<float> hf_frequencies_fp32(const rope_config& cfg, std::int64_t seq_len = 0) {
  validate(cfg);
  const int dim = cfg.rotary_dim;
  const std::size_t n = static_cast<std::size_t>(dim / 2);
  const float base_f = static_cast<float>(cfg.base);      // Python float cast to fp32 by torch
  // Likewise for `x / factor`, `factor * x`; YaRN's fallback ratio is a Python double, then cast.
  const float factor_f = static_cast<float>(detail::effective_factor_in<double>(cfg));

  frequency_schedule<float> out;
  out.attention_factor = static_cast<float>(detail::hf_attention_factor(cfg, seq_len));

  switch (cfg.scaling) {
    case scaling_kind::none:
      // inv_freq = 1.0 / (base ** (torch.arange(0, dim, 2, dtype=torch.int64).float() / dim))
      out.inv_freq = detail::hf_reciprocal_fp32(detail::hf_pos_freqs_fp32(base_f, dim));
      break;

    case scaling_kind::linear:
      // inv_freq = 1.0 / (base ** (...)); inv_freq /= factor   (fp32 true division on CPU; CUDA
      // would multiply by the fp32 reciprocal of a CPU scalar instead)
      out.inv_freq = detail::hf_reciprocal_fp32(detail::hf_pos_freqs_fp32(base_f, dim));
      for (float& v : out.inv_freq) v = v / factor_f;
      break;

    case scaling_kind::ntk: {
      // Not an HF rope_type; emulated the way HF's own NTK code forms a base: Python double
      // base = base * factor ** (dim / (dim - 2)), then the default fp32 path.
      const double bp = cfg.base * std::pow(cfg.factor, static_cast<double>(dim) / static_cast<double>(dim - 2));
      out.inv_freq = detail::hf_reciprocal_fp32(detail::hf_pos_freqs_fp32(static_cast<float>(bp), dim));
      break;
    }

    case scaling_kind::dynamic_ntk: {
      const std::int64_t L = cfg.max_position_embeddings;
      float bp_f;
      if (seq_len > L) {
        // Run time: seq_len = torch.max(position_ids) + 1 is a 0-d int64 tensor, so every step is
        // an fp32 tensor op:
        const float seq = static_cast<float>(seq_len);                 // int64 -> fp32 by promotion
        float r = factor_f * seq;                                      // factor * seq_len
        r = r / static_cast<float>(L);                                 // / config.max_position_embeddings
        r = r - static_cast<float>(cfg.factor - 1.0);                  // - (factor - 1)  (Python double, cast)
        const double k = static_cast<double>(dim) / static_cast<double>(dim - 2);  // dim / (dim - 2)
        const float p = std::pow(r, static_cast<float>(k));            // ** k: pow_tensor_scalar, exponent as fp32
        bp_f = base_f * p;                                             // base * (...)
      } else {
        // Init (seq_len None -> max_position_embeddings): Python double arithmetic.
        const double r = (cfg.factor * static_cast<double>(L) / static_cast<double>(L)) - (cfg.factor - 1.0);
        const double bp = cfg.base * std::pow(r, static_cast<double>(dim) / static_cast<double>(dim - 2));
        bp_f = static_cast<float>(bp);  // base ** tensor casts the Python float to fp32
      }
      // inv_freq = 1.0 / (base ** (torch.arange(0, dim, 2).float() / dim))
      out.inv_freq = detail::hf_reciprocal_fp32(detail::hf_pos_freqs_fp32(bp_f, dim));
      break;
    }

    case scaling_kind::yarn: {
      // pos_freqs = base ** (torch.arange(0, dim, 2).float() / dim)
      const std::vector<float> pos = detail::hf_pos_freqs_fp32(base_f, dim);
      // find_correction_dim / find_correction_range: Python double with math.log, math.pi
      //   (ggml: the same formula in float with logf, and always floor/ceil)
      const double L0 = static_cast<double>(cfg.trained_length());
      auto cd = [&](double r) {
        return (static_cast<double>(dim) * std::log(L0 / (r * 2 * std::numbers::pi))) / (2 * std::log(cfg.base));
      };
      double low = cd(cfg.beta_fast);
      double high = cd(cfg.beta_slow);
      if (cfg.truncate) {  // low = math.floor(low); high = math.ceil(high)
        low = std::floor(low);
        high = std::ceil(high);
      }
      low = std::max(low, 0.0);                                 // max(low, 0)
      high = std::min(high, static_cast<double>(dim - 1));      // min(high, dim - 1)
      if (low == high) high += 0.001;                           // linear_ramp_factor: max += 0.001
      const float low_f = static_cast<float>(low);              // tensor - min: min cast to fp32
      const float width_f = static_cast<float>(high - low);     // (max - min) in Python, then cast
      out.inv_freq.resize(n);
      for (std::size_t i = 0; i < n; ++i) {
        const float extrap = 1.0f / pos[i];                     // inv_freq_extrapolation = 1.0 / pos_freqs
        const float interp = 1.0f / (factor_f * pos[i]);        // inv_freq_interpolation = 1.0 / (factor * pos_freqs)
        float ramp = (static_cast<float>(i) - low_f) / width_f; // (torch.arange(dim//2, float32) - min) / (max - min)
        ramp = std::clamp(ramp, 0.0f, 1.0f);                    // torch.clamp(linear_func, 0, 1)
        const float ext_factor = 1.0f - ramp;                   // inv_freq_extrapolation_factor = 1 - ramp
        const float w_interp = 1.0f - ext_factor;               // (1 - inv_freq_extrapolation_factor)
        const float a = interp * w_interp;                      // inv_freq_interpolation * (...)
        const float c = extrap * ext_factor;                    // inv_freq_extrapolation * (...)
        out.inv_freq[i] = a + c;                                // +
      }
      break;
    }

    case scaling_kind::llama3: {
      // inv_freq = 1.0 / (base ** (arange(0, dim, 2).float() / dim))
      const std::vector<float> inv = detail::hf_reciprocal_fp32(detail::hf_pos_freqs_fp32(base_f, dim));
      const double L0 = static_cast<double>(cfg.original_max_position_embeddings);  // old_context_len
      const double low_wavelen = L0 / cfg.low_freq_factor;    // Python double
      const double high_wavelen = L0 / cfg.high_freq_factor;  // Python double
      // Comparisons of an fp32 tensor with a Python float cast the scalar to fp32.
      const float low_wl_f = static_cast<float>(low_wavelen);
      const float high_wl_f = static_cast<float>(high_wavelen);
      const float two_pi_f = static_cast<float>(2 * std::numbers::pi);  // 2 * math.pi, cast
      const float L0_f = static_cast<float>(L0);
      const float lo_f = static_cast<float>(cfg.low_freq_factor);
      const float span_f = static_cast<float>(cfg.high_freq_factor - cfg.low_freq_factor);  // Python, cast
      out.inv_freq.resize(n);
      for (std::size_t i = 0; i < n; ++i) {
        // wavelen = 2 * math.pi / inv_freq: Tensor.__rtruediv__ = reciprocal(inv_freq) * 2pi
        const float wavelen = (1.0f / inv[i]) * two_pi_f;
        // inv_freq_llama = torch.where(wavelen > low_freq_wavelen, inv_freq / factor, inv_freq)
        const float llama = wavelen > low_wl_f ? inv[i] / factor_f : inv[i];
        // smooth_factor = (old_context_len / wavelen - low_freq_factor) / (high_freq_factor - low_freq_factor)
        //   old_context_len / wavelen is again reciprocal(wavelen) * old_context_len
        const float ctx_over_wl = (1.0f / wavelen) * L0_f;
        const float smooth = (ctx_over_wl - lo_f) / span_f;
        // smoothed_inv_freq = (1 - smooth_factor) * inv_freq_llama / factor + smooth_factor * inv_freq_llama
        const float t1 = ((1.0f - smooth) * llama) / factor_f;
        const float t2 = smooth * llama;
        const float smoothed = t1 + t2;
        // is_medium_freq = ~(wavelen < high_freq_wavelen) * ~(wavelen > low_freq_wavelen)
        const bool medium = !(wavelen < high_wl_f) && !(wavelen > low_wl_f);
        out.inv_freq[i] = medium ? smoothed : llama;
      }
      break;
    }

    case scaling_kind::longrope: {
      // ext_factors = torch.tensor(long_factor if seq_len > original else short_factor, dtype=torch.float32)
      const bool use_long = seq_len > cfg.trained_length();
      const auto& ext = use_long ? cfg.long_factor : cfg.short_factor;
      // inv_freq_shape = arange(0, dim, 2).float() / dim; inv_freq = 1.0 / (ext_factors * base**inv_freq_shape)
      const std::vector<float> pos = detail::hf_pos_freqs_fp32(base_f, dim);
      out.inv_freq.resize(n);
      for (std::size_t i = 0; i < n; ++i) {
        const float prod = static_cast<float>(ext[i]) * pos[i];
        out.inv_freq[i] = 1.0f / prod;
      }
      break;
    }
  }
  // Proportional RoPE (_compute_proportional_rope_parameters): inv_freq_rotated = 1.0 / (base **
  // (arange(0, 2 * rope_angles, 2).float() / head_dim)), the same fp32 steps as the default rule for
  // the turning bands, then torch.zeros for the rest, then `inv_freq /= factor`.
  for (std::size_t i = static_cast<std::size_t>(cfg.turning_bands()); i < n; ++i) out.inv_freq[i] = 0.0f;
  return out;
}

// The run-time frequency updates HF's @dynamic_rope_update applies, evaluated in double:
//   dynamic: frequencies grow with the longest sequence seen (recomputed when seq_len exceeds the
//     cached length, which starts at max_position_embeddings) and reset to the original ones when
//     a sequence *strictly* shorter than max_position_embeddings arrives after a longer one
//     (HF's original_max_seq_len is config.max_position_embeddings).
//   longrope: long factors while seq_len > original_max_position_embeddings, short ones otherwise.
//   other rules: never change.
class dynamic_ntk_state {
 public:
  explicit dynamic_ntk_state(rope_config cfg)
      : cfg_(std::move(cfg)),
        original_(compute_frequencies<double>(cfg_, 0)),
        current_(original_),
        original_len_(cfg_.max_position_embeddings),
        cached_len_(cfg_.max_position_embeddings) {}

  // Feeds the length of the next sequence (max position + 1); returns whether frequencies changed.
  bool update(std::int64_t seq_len) {
    if (cfg_.scaling == scaling_kind::dynamic_ntk) {
      bool changed = false;
      if (seq_len > cached_len_) {  // growth
        current_ = compute_frequencies<double>(cfg_, seq_len);
        cached_len_ = seq_len;
        changed = true;
      }
      if (seq_len < original_len_ && cached_len_ > original_len_) {  // reset
        current_ = original_;
        cached_len_ = original_len_;
        changed = true;
      }
      return changed;
    }
    if (cfg_.scaling == scaling_kind::longrope) {
      const bool want_long = seq_len > cfg_.trained_length();
      if (want_long == long_active_) return false;
      long_active_ = want_long;
      current_ = want_long ? compute_frequencies<double>(cfg_, cfg_.trained_length() + 1) : original_;
      return true;
    }
    return false;
  }

  [[nodiscard]] const frequency_schedule<double>& current() const noexcept { return current_; }
  [[nodiscard]] const frequency_schedule<double>& original() const noexcept { return original_; }
  [[nodiscard]] std::int64_t max_seq_len_cached() const noexcept { return cached_len_; }
  [[nodiscard]] const rope_config& config() const noexcept { return cfg_; }

 private:
  rope_config cfg_;
  frequency_schedule<double> original_;
  frequency_schedule<double> current_;
  std::int64_t original_len_;
  std::int64_t cached_len_;
  bool long_active_ = false;
};

}  // namespace ropecheck
