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

// Where the two outputs of a pair are written.
//   in_place:   to the coordinates the pair was read from (every implementation but the next)
//   half_split: pair i to (i, i + rotary_dim/2) whatever its input coordinates. DeepSeek-V2/V3 with
//               rope_interleave (transformers models/deepseek_v3/modeling_deepseek_v3.py,
//               apply_rotary_pos_emb_interleave: q viewed as [d/2, 2], transposed, then rotate_half),
//               so interleaved pairs in, half-split order out. Attention scores are unchanged (q and
//               k are permuted alike); a dump's y is not in x's coordinate order.
enum class output_order : std::uint8_t { in_place, half_split };

// Which way a pair turns as the position grows.
//   forward:  y_a = x_a cos - x_b sin, y_b = x_a sin + x_b cos: R(p), every implementation but the next
//             (HF rotate_half = cat(-x2, x1), Meta's complex product, ggml)
//   reversed: R(-p), the transpose: nanochat's apply_rotary_emb (y1 = x1 cos + x2 sin,
//             y2 = -x1 sin + x2 cos; transformers models/nanochat/modeling_nanochat.py rotate_half =
//             cat(x2, -x1)). Scores still depend on m - n only, with the offset's sign reversed.
enum class rotation_direction : std::uint8_t { forward, reversed };

// Multimodal RoPE: positions are a [rows, tokens] array (Qwen2-VL: temporal, height, width) and
// each band is rotated by one row.
//   contiguous:  mrope_section = [s0, s1, ...] consecutive blocks of bands, block r by row r
//                (transformers models/qwen2_vl/modeling_qwen2_vl.py apply_multimodal_rotary_pos_emb:
//                cos/sin split by mrope_section * 2, chunk i taking row i % 3)
//   interleaved: Qwen3-VL (models/qwen3_vl/modeling_qwen3_vl.py apply_interleaved_mrope): band b is
//                row 1 when b % 3 == 1 and b < 3 s1, row 2 when b % 3 == 2 and b < 3 s2, else row 0
enum class mrope_kind : std::uint8_t { none, contiguous, interleaved };

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

[[nodiscard]] constexpr std::string_view to_string(output_order o) noexcept {
  return o == output_order::in_place ? "in_place" : "half_split";
}

[[nodiscard]] constexpr std::string_view to_string(rotation_direction d) noexcept {
  return d == rotation_direction::forward ? "forward" : "reversed";
}

[[nodiscard]] constexpr std::string_view to_string(mrope_kind k) noexcept {
  switch (k) {
    case mrope_kind::none: return "none";
    case mrope_kind::contiguous: return "contiguous";
    case mrope_kind::interleaved: return "interleaved";
  }
  return "?";
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
  output_order outputs = output_order::in_place;
  rotation_direction direction = rotation_direction::forward;
  // Proportional RoPE (Gemma 4; transformers modeling_rope_utils.py _compute_proportional_rope_parameters):
  // the pairs span all rotary_dim coordinates and the frequencies are base^(-2i/rotary_dim) as usual,
  // but the last frozen_bands bands have inv_freq exactly 0 (their pairs never turn). 0: every band turns.
  int frozen_bands = 0;

  // M-RoPE: bands per position row (their sum is bands()); empty and mrope_kind::none for 1-D RoPE.
  mrope_kind mrope = mrope_kind::none;
  std::vector<int> mrope_section;

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
  // vLLM's reading of LongRoPE (config/src/config_json_vllm.hpp) applies one list for every position, so
  // short_factor == long_factor; the list it does not take stays here for the judge's other-list hypothesis
  // (empty otherwise; never applied).
  std::vector<double> unused_factor;
  // LongRoPE with a magnitude per regime (Phi-3.5-MoE's short_mscale / long_mscale): the attention
  // factor of the short and of the long factors; both absent: the rule's one attention factor.
  std::optional<double> short_mscale;
  std::optional<double> long_mscale;

  [[nodiscard]] constexpr int bands() const noexcept { return rotary_dim / 2; }
  // Bands whose frequency is not 0 (all of them but proportional RoPE's frozen tail).
  [[nodiscard]] constexpr int turning_bands() const noexcept { return rotary_dim / 2 - frozen_bands; }

  // Rows of the position array: 1 for 1-D RoPE, mrope_section.size() for M-RoPE.
  [[nodiscard]] constexpr int position_rows() const noexcept {
    return mrope == mrope_kind::none ? 1 : static_cast<int>(mrope_section.size());
  }

  // The position row that rotates `band` (0 for 1-D RoPE). Meaningful for a validated config.
  [[nodiscard]] constexpr int position_row(int band) const noexcept {
    switch (mrope) {
      case mrope_kind::none: return 0;
      case mrope_kind::contiguous: {
        int end = 0;
        for (std::size_t r = 0; r < mrope_section.size(); ++r) {
          end += mrope_section[r];
          if (band < end) return static_cast<int>(r);
        }
        return static_cast<int>(mrope_section.size()) - 1;
      }
      case mrope_kind::interleaved:
        for (std::size_t r = mrope_section.size(); r-- > 1;)
          if (band % 3 == static_cast<int>(r) && band < 3 * mrope_section[r]) return static_cast<int>(r);
        return 0;
    }
    return 0;
  }

  // The training length used by the rules that need one.
  [[nodiscard]] constexpr std::int64_t trained_length() const noexcept {
    return original_max_position_embeddings > 0 ? original_max_position_embeddings
                                                : max_position_embeddings;
  }

  friend bool operator==(const rope_config&, const rope_config&) = default;
};

// c under the scaling rule k. The fields only LongRoPE reads (Phi-3.5-MoE's short_mscale / long_mscale,
// transformers models/phimoe/modeling_phimoe.py PhimoeRotaryEmbedding) go when k is not LongRoPE, so a judge's
// hypothesis, a report's unscaled reference or a --scaling override of such a claim is a valid convention
// (validate refuses the mscales under another rule).
[[nodiscard]] inline rope_config with_scaling(rope_config c, scaling_kind k) noexcept {
  c.scaling = k;
  if (k != scaling_kind::longrope) c.short_mscale.reset(), c.long_mscale.reset();
  return c;
}

}  // namespace ropecheck
