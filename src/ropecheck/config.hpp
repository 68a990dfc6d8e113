// ropecheck/config.hpp — the declared convention of a RoPE implementation, as plain data.
//
// Everything a RoPE kernel needs to know to be checked: which coordinates pair up, how many are
// rotated, the base, the scaling rule and its parameters. Parameters are held as the doubles a
// JSON parser (and Python) would read from a config.json: the reference treats each of them as the
// exact rational it denotes, so "500000.0" and 1e4 are exact, 0.1 is the double nearest 0.1.
//
// Light header: no JSON, no MPFR, no Eigen. Parsing lives in config_json.hpp.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

namespace ropecheck {

// Which coordinates form a rotated pair.
//   interleaved: (2i, 2i+1)          GPT-J, Meta's complex view, ggml NORM
//   half_split:  (i, i + rotary_dim/2)  GPT-NeoX, HF rotate_half, ggml NEOX
enum class layout : std::uint8_t { interleaved, half_split };

// The frequency-scaling rule, named as HF's rope_type where one exists.
enum class scaling_kind : std::uint8_t {
  none,         // "default": inv_freq_i = base^(-2i/d)
  linear,       // position interpolation: inv_freq_i / factor
  ntk,          // static NTK-aware: base' = base * factor^(d/(d-2))
  dynamic_ntk,  // "dynamic": NTK base recomputed from the current sequence length
  yarn,         // per-band ramp between interpolation and extrapolation, plus attention factor
  llama3,       // three bands split by wavelength, smooth in the middle
  longrope,     // per-band short/long rescale factors, plus attention factor
};

[[nodiscard]] constexpr std::string_view to_string(layout l) noexcept {
  return l == layout::interleaved ? "interleaved" : "half_split";
}

[[nodiscard]] constexpr std::string_view to_string(scaling_kind k) noexcept {
  switch (k) {
    case scaling_kind::none: return "default";
    case scaling_kind::linear: return "linear";
    case scaling_kind::ntk: return "ntk";
    case scaling_kind::dynamic_ntk: return "dynamic";
    case scaling_kind::yarn: return "yarn";
    case scaling_kind::llama3: return "llama3";
    case scaling_kind::longrope: return "longrope";
  }
  return "?";
}

struct rope_config {
  int head_dim = 128;    // coordinates per head
  int rotary_dim = 128;  // rotated coordinates (even, <= head_dim); head_dim * partial_rotary_factor
  double base = 10000.0; // rope_theta
  layout pair_layout = layout::half_split;

  scaling_kind scaling = scaling_kind::none;
  double factor = 1.0;  // scaling factor s (linear, ntk, dynamic, yarn, llama3, longrope)

  // max_position_embeddings of the config; for dynamic NTK this is HF's threshold, for YaRN and
  // LongRoPE the extended length whose ratio to the original may define the factor.
  std::int64_t max_position_embeddings = 4096;
  // Length the model was pre-trained at (rope_scaling.original_max_position_embeddings or the
  // top-level field of Phi-3). 0 when the config does not give one.
  std::int64_t original_max_position_embeddings = 0;

  // YaRN
  double beta_fast = 32.0;
  double beta_slow = 1.0;
  bool truncate = true;  // floor/ceil the correction range (HF default true)
  std::optional<double> attention_factor;  // explicit override (YaRN, LongRoPE)
  std::optional<double> mscale;            // DeepSeek-style YaRN mscale
  std::optional<double> mscale_all_dim;

  // Llama-3
  double low_freq_factor = 1.0;
  double high_freq_factor = 4.0;

  // LongRoPE: one factor per band (rotary_dim / 2 entries each)
  std::vector<double> short_factor;
  std::vector<double> long_factor;

  [[nodiscard]] constexpr int bands() const noexcept { return rotary_dim / 2; }

  // The training length used by the rules that need one.
  [[nodiscard]] constexpr std::int64_t trained_length() const noexcept {
    return original_max_position_embeddings > 0 ? original_max_position_embeddings
                                                : max_position_embeddings;
  }

  friend bool operator==(const rope_config&, const rope_config&) = default;
};

}  // namespace ropecheck
