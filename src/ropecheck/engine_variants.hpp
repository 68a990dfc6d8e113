// ropecheck/engine_variants.hpp — every RoPE variant an inference engine ships, and what ropecheck does
// with it: claims it (as the family's transformers code reads config.json, or as the engine reads it
// under --engine), or refuses it by name with a sentence saying what it is.
//
// Read from vLLM's vllm/model_executor/layers/rotary_embedding/ (31 files; the commit each row was
// read at is in `file`): 24 conventions (M-RoPE's contiguous and interleaved sections counted apart,
// ROCm's aiter classes and Llama 4's vision RoPE included) and 3 kernels that take their frequencies from the caller. The config
// reader (config_json_scaling.hpp, config_json_vllm.hpp) looks rope types and keys up here, so a refusal
// quotes its row; `ropecheck explain --variants` prints the table and README.md carries it.
//
// Light header: no JSON.
#pragma once

#include <array>
#include <cstdint>
#include <string_view>

namespace ropecheck {

enum class variant_status : std::uint8_t {
  claimable,       // claimed from config.json under either reading (the engine computes what the file says)
  engine_reading,  // claimed as the engine computes it only with --engine vllm (transformers reads the file otherwise)
  refused,         // a config that selects it is refused (exit 2) with `reading` as the reason
  kernel,          // not a convention: a kernel whose frequencies come from its caller
};

[[nodiscard]] constexpr std::string_view to_string(variant_status s) noexcept {
  switch (s) {
    case variant_status::claimable: return "claimable";
    case variant_status::engine_reading: return "claimable with --engine vllm";
    case variant_status::refused: return "refused";
    case variant_status::kernel: return "kernel";
  }
  return "?";
}

struct rope_variant {
  std::string_view engine;       // "vllm"
  std::string_view name;         // the class or function
  std::string_view file;         // where it was read, with the commit
  std::string_view selected_by;  // what in config.json (or the model file) selects it
  variant_status status;
  std::string_view reading;      // claimable: how ropecheck claims it; refused: what it is, why not
  std::string_view rope_type = {};  // the rope_type value that selects it in config.json ("" none)
  std::string_view key = {};        // a config.json key that selects it ("" none)
};

inline constexpr std::array<rope_variant, 27> engine_variants{{
    {"vllm", "RotaryEmbedding", "rotary_embedding/base.py @072d10a0",
     "rope_type default or absent", variant_status::claimable,
     "the default rule; half-split or interleaved pairs as the model file's is_neox_style (the family's facts); the "
     "first rotary_dim coordinates; cos/sin cached in the model dtype (strategy cached)"},
    {"vllm", "LinearScalingRotaryEmbedding", "rotary_embedding/linear_scaling_rope.py @9ba5ac51",
     "rope_type linear", variant_status::claimable,
     "linear with factor s (vLLM divides the position by s in fp32 where transformers divides inv_freq; both within "
     "the fp32 error model)", "linear"},
    {"vllm", "NTKScalingRotaryEmbedding", "rotary_embedding/ntk_scaling_rope.py @91b4f8fb",
     "rope_type ntk, factor, optional mixed_b", variant_status::claimable,
     "fixed NTK: band i divided by s^((i+1)/(rotary_dim/2)) (base * s, then inv_freq / s^(2/rotary_dim)); mixed_b b: "
     "band i divided by exp(ln s * ((i+1)/(rotary_dim/2))^b); claimed as these per-band divisors (LongRoPE's "
     "factor lists, equal short and long, attention factor 1); transformers has no rope type ntk",
     "ntk"},
    {"vllm", "DynamicNTKScalingRotaryEmbedding", "rotary_embedding/dynamic_ntk_scaling_rope.py @50feac95",
     "rope_type dynamic with factor (no alpha)", variant_status::engine_reading,
     "not dynamic: one base for every position, base * (s^2 - s + 1)^(d/(d-2)) (max_len = L * s): claimed with "
     "--engine vllm as ntk with factor s^2 - s + 1; without it the file is read as transformers' dynamic NTK",
     "dynamic"},
    {"vllm", "DynamicNTKAlphaRotaryEmbedding", "rotary_embedding/dynamic_ntk_alpha_rope.py @a42938c2",
     "rope_type dynamic with alpha", variant_status::claimable,
     "static NTK-alpha, base * alpha^(d/(d-2)): ntk with factor alpha (transformers reads alpha only for Hunyuan; "
     "with --engine vllm for every family)"},
    {"vllm", "YaRNScalingRotaryEmbedding", "rotary_embedding/yarn_scaling_rope.py, common.py @c8a6e272",
     "rope_type yarn, no mrope_section", variant_status::engine_reading,
     "YaRN; with --engine vllm the attention factor is attn_factor * (0.1 ln s + 1) (attn_factor alone when "
     "apply_yarn_scaling is false) and transformers' attention_factor, mscale, mscale_all_dim are not read; "
     "truncate is read (false: the correction range is not rounded; vLLM pull request 28244); extrapolation_factor "
     "other than 1 is refused"},
    {"vllm", "DeepseekScalingRotaryEmbedding", "rotary_embedding/deepseek_scaling_rope.py @7bc8d408",
     "rope_type yarn in an MLA model file (set to deepseek_yarn there)", variant_status::engine_reading,
     "YaRN on the MLA rope slice; with --engine vllm the attention factor is get_mscale(s, mscale) / "
     "get_mscale(s, mscale_all_dim) * attn_factor (defaults 1 and 0: no truthiness rule) and the outputs stay in "
     "place (transformers permutes interleaved pairs to half-split order)"},
    {"vllm", "DeepseekV4ScalingRotaryEmbedding", "rotary_embedding/deepseek_scaling_rope.py (newer copy)",
     "DeepSeek-V4's model file (unverified branch of get_rope)", variant_status::refused,
     "DeepSeek-V4's RoPE rotates the last rotary_dim coordinates of the head and de-rotates the attention output "
     "(an inverse rotation), with an fp32 table: ropecheck's conventions rotate the first coordinates forward"},
    {"vllm", "Llama3RotaryEmbedding", "rotary_embedding/llama3_rope.py @045d7575",
     "rope_type llama3", variant_status::claimable, "llama3, as transformers", "llama3"},
    {"vllm", "Phi3LongRoPEScaledRotaryEmbedding", "rotary_embedding/phi3_long_rope_scaled_rope.py @63c2b7ab",
     "rope_type longrope", variant_status::engine_reading,
     "LongRoPE, short or long factors chosen once per engine (max_model_len > original_max_position_embeddings), "
     "short_mscale / long_mscale read for every family: claimed with --engine vllm --max-model-len N as that one "
     "list and its mscale; transformers switches per sequence length",
     "longrope"},
    {"vllm", "MRotaryEmbedding (contiguous)", "rotary_embedding/mrope.py @dba39a55",
     "mrope_section, mrope_interleaved false or absent", variant_status::engine_reading,
     "contiguous M-RoPE sections; with rope type yarn and --engine vllm the correction range is taken at "
     "4 * original_max_position_embeddings (the class enlarges max_position before YaRN's inv_freq)"},
    {"vllm", "MRotaryEmbedding (interleaved)", "rotary_embedding/mrope.py @dba39a55",
     "mrope_section with mrope_interleaved true", variant_status::claimable,
     "Qwen3-VL's interleaved M-RoPE (the same 4x YaRN correction range with --engine vllm)"},
    {"vllm", "MRotaryEmbeddingInterleaved", "rotary_embedding/mrope_interleaved.py @e7bcaef1",
     "rope_type openpangu with mrope_section and mrope_interleaved", variant_status::refused,
     "openPangu-VL's M-RoPE: a greedy balanced sequence assigns bands to the t/h/w rows, neither Qwen2-VL's "
     "contiguous blocks nor Qwen3-VL's interleave, which are the band maps ropecheck can claim",
     "openpangu"},
    {"vllm", "BailingMRotaryEmbedding", "rotary_embedding/bailing_mrope.py @9c5b7163",
     "Ling/Bailing-VL's model file", variant_status::refused,
     "Bailing's M-RoPE alternates height and width bands and puts time last, a band map ropecheck cannot claim"},
    {"vllm", "Ernie4_5_VLRotaryEmbedding", "rotary_embedding/ernie45_vl_rope.py @9e2c9148",
     "ERNIE-4.5-VL's model file", variant_status::refused,
     "ERNIE-4.5-VL's M-RoPE alternates height and width bands and puts time last (sections [h, w, t]), a band map "
     "ropecheck cannot claim (model type ernie4_5_vl_moe is refused with the same reason)"},
    {"vllm", "XDRotaryEmbedding", "rotary_embedding/xdrope.py @b91ee1b4",
     "rope_type xdrope, alpha, xdrope_section", variant_status::engine_reading,
     "XD-RoPE: contiguous M-RoPE over 4 position rows (xdrope_section) with the NTK-alpha base: claimed with "
     "--engine vllm as 4-row contiguous M-RoPE and ntk with factor alpha",
     "xdrope"},
    {"vllm", "DualChunkRotaryEmbedding", "rotary_embedding/dual_chunk_rope.py @b5e2318e",
     "dual_chunk_attention_config (Qwen2.5-1M)", variant_status::refused,
     "dual-chunk attention: keys rotated at position mod (chunk_size - local_size) and five remapped query "
     "rotations, one chosen per chunk pair; not one rotation per position (transformers ignores the key and "
     "applies plain RoPE, which is what a file read without --engine vllm claims)",
     {}, "dual_chunk_attention_config"},
    {"vllm", "FourierRotaryEmbedding", "rotary_embedding/fope.py @c215d1e6",
     "FoPE model files (unverified branch of get_rope)", variant_status::refused,
     "FoPE: cos and sin are learned linear mixtures of RoPE's cos and sin per kv head (weights from the "
     "checkpoint), not rotations by position times frequency"},
    {"vllm", "Gemma4RotaryEmbedding", "rotary_embedding/gemma4_rope.py @4750b9f7",
     "Gemma 4's full-attention layers (transformers rope type proportional)", variant_status::claimable,
     "proportional RoPE: pairs across the whole head, exponent over head_dim, the last bands frozen", "proportional"},
    {"vllm", "Grok1ScalingRotaryEmbedding", "rotary_embedding/grok1_scaling_rope.py @e443db5a",
     "Grok's model file (extra_method yarn_log by default)", variant_status::refused,
     "Grok's scaling: the YaRN ramp mixed geometrically (yarn_log) or a base raised to ln(L s / 2 pi) / ln(L / 2 pi) "
     "(theta_scale), without mscale: rules ropecheck has no reference for (a grok1 config's top-level rope keys "
     "are refused by name)"},
    {"vllm", "TeleChat3RoPEScaledRotaryEmbedding", "rotary_embedding/telechat3_scaling_rope.py @d5a17e05",
     "TeleChat3's rope type (telechat3-yarn in mlx-lm)", variant_status::refused,
     "TeleChat3's YaRN: vLLM multiplies cos/sin by (0.07 ln s + 1) * attn_factor, mlx-lm applies plain YaRN: the "
     "engines disagree, so declare the one audited with --scaling yarn and --attention-factor",
     "telechat3-yarn"},
    {"vllm", "Llama4VisionRotaryEmbedding", "rotary_embedding/llama4_vision_rope.py @3ff2de9c",
     "rope_type mllama4 (Llama 4's vision encoder)", variant_status::refused,
     "Llama 4's vision RoPE: 2-D patch positions (x + 1, y + 1) over the two halves of the bands and an unrotated "
     "CLS token, a vision encoder's convention, not a text model's",
     "mllama4"},
    {"vllm", "AiterRotaryEmbedding", "rotary_embedding/rocm_aiter_deepseek_scaling_rope.py @29d44d1f",
     "ROCm with VLLM_ROCM_USE_AITER (platform, not config)", variant_status::claimable,
     "the default rule, as RotaryEmbedding (with is_nope_first the last rotary_dim coordinates rotate, which "
     "ropecheck cannot claim)"},
    {"vllm", "AiterDeepseekScalingRotaryEmbedding", "rotary_embedding/rocm_aiter_deepseek_scaling_rope.py @29d44d1f",
     "ROCm aiter replacement of DeepseekScalingRotaryEmbedding", variant_status::claimable,
     "claimed as DeepseekScalingRotaryEmbedding: the version read recomputes cos/sin without the mscale, which the "
     "audit names attention_factor_wrong"},
    {"vllm", "packed_qk_rope_", "rotary_embedding/packed_qk_rope.py @3ad53870",
     "called by vision encoders with their own freqs_cis", variant_status::kernel,
     "interleaved rotation in fp32 of packed q and k; the frequencies are the caller's"},
    {"vllm", "apply_fused_qk_complex_rope", "rotary_embedding/vision.py @ed6a97d0",
     "fused vision attention (SM90+)", variant_status::kernel,
     "interleaved complex multiply in fp32; the frequencies are the caller's"},
    {"vllm", "vit_mrope_setup", "rotary_embedding/mrope_vit_setup.py @8037a431",
     "ViT M-RoPE cos/sin planes from image grids", variant_status::kernel,
     "builds vision-encoder M-RoPE positions from grid_thw; the frequencies are the caller's"},
}};

// The variant a config.json rope type names ("" or unknown: nullptr).
[[nodiscard]] constexpr const rope_variant* find_variant_by_rope_type(std::string_view type) noexcept {
  if (type.empty()) return nullptr;
  for (const auto& v : engine_variants)
    if (v.rope_type == type) return &v;
  return nullptr;
}

// The variant a config.json key selects (nullptr: none).
[[nodiscard]] constexpr const rope_variant* find_variant_by_key(std::string_view key) noexcept {
  for (const auto& v : engine_variants)
    if (!v.key.empty() && v.key == key) return &v;
  return nullptr;
}

// The variant named `name` (nullptr: none).
[[nodiscard]] constexpr const rope_variant* find_variant(std::string_view name) noexcept {
  for (const auto& v : engine_variants)
    if (v.name == name) return &v;
  return nullptr;
}

}  // namespace ropecheck
