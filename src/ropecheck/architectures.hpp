// ropecheck/architectures.hpp — what a model family's code does with RoPE that its config.json
// does not say: which coordinates pair up, where the outputs go, which layers rotate.
//
// Light header: no JSON. config_json.hpp reads the fields and takes the rest from here, each fact
// with a note naming its source, so a user sees which parts of the convention came from the
// model type rather than from the file.
//
// Every row was read from the family's modeling code in huggingface/transformers (paths under
// src/transformers/), or from the checkpoint's remote code where transformers has none (ChatGLM).
// A model_type that is not here is read as HF Llama reads it (half-split pairs), with a note.
#pragma once

#include <array>
#include <optional>
#include <string_view>

#include "ropecheck/config.hpp"

namespace ropecheck {

// Layers whose RoPE differs from the primary convention.
enum class layer_schedule : std::uint8_t {
  uniform,       // every layer rotates alike
  gemma3_local,  // sliding-window layers use rope_local_base_freq and no scaling (Gemma 3)
  llama4_nope,   // some layers have no RoPE at all (Llama 4's no_rope_layers)
};

struct architecture_facts {
  std::string_view model_type;  // HF config.json "model_type"
  std::string_view family;      // for messages
  layout pair_layout;
  output_order outputs = output_order::in_place;
  // Where the layout fact comes from (file and function), quoted in the provenance note.
  std::string_view layout_source;
  // The field (or rule) the rotary dimension comes from, for the README table and messages.
  std::string_view rotary_dim_source = "head_dim";
  // M-RoPE sections the family's code applies when the config gives mrope_section.
  mrope_kind mrope = mrope_kind::none;
  std::string_view mrope_source;
  layer_schedule layers = layer_schedule::uniform;
  // DeepSeek-V3: the config's rope_interleave (default true in DeepseekV3Config) selects the
  // interleaved path; false selects Llama's apply_rotary_pos_emb (half-split, in place).
  bool reads_rope_interleave = false;
  // ChatGLM remote code: rotary_dim = kv_channels / 2, base = 10000 * rope_ratio.
  bool chatglm_fields = false;
};

namespace detail::arch {

inline constexpr std::string_view llama_rotate_half =
    "transformers models/llama/modeling_llama.py rotate_half pairs (i, i + d/2)";

// Every field given, in declaration order; defaults as in architecture_facts.
constexpr architecture_facts row(std::string_view model_type, std::string_view family, layout l, output_order o,
                                 std::string_view layout_source, std::string_view rotary_dim_source = "head_dim",
                                 mrope_kind m = mrope_kind::none, std::string_view mrope_source = "",
                                 layer_schedule layers = layer_schedule::uniform, bool rope_interleave = false,
                                 bool chatglm = false) {
  return architecture_facts{model_type, family, l, o, layout_source, rotary_dim_source, m, mrope_source, layers,
                            rope_interleave, chatglm};
}

inline constexpr std::array<architecture_facts, 30> table{
    row("llama", "Llama", layout::half_split, output_order::in_place, llama_rotate_half),
    row("mistral", "Mistral", layout::half_split, output_order::in_place,
     "transformers models/mistral/modeling_mistral.py rotate_half pairs (i, i + d/2)"),
    row("mixtral", "Mixtral", layout::half_split, output_order::in_place,
     "transformers models/mixtral/modeling_mixtral.py rotate_half pairs (i, i + d/2)"),
    row("qwen2", "Qwen2/Qwen2.5", layout::half_split, output_order::in_place,
     "transformers models/qwen2/modeling_qwen2.py rotate_half pairs (i, i + d/2)"),
    row("qwen2_moe", "Qwen2-MoE", layout::half_split, output_order::in_place,
     "transformers models/qwen2_moe/modeling_qwen2_moe.py rotate_half pairs (i, i + d/2)"),
    row("qwen3", "Qwen3", layout::half_split, output_order::in_place,
     "transformers models/qwen3/modeling_qwen3.py rotate_half pairs (i, i + d/2)"),
    row("qwen3_moe", "Qwen3-MoE", layout::half_split, output_order::in_place,
     "transformers models/qwen3_moe/modeling_qwen3_moe.py rotate_half pairs (i, i + d/2)"),
    row("qwen2_vl", "Qwen2-VL", layout::half_split, output_order::in_place,
     "transformers models/qwen2_vl/modeling_qwen2_vl.py apply_multimodal_rotary_pos_emb: rotate_half",
     "head_dim", mrope_kind::contiguous,
     "transformers models/qwen2_vl/modeling_qwen2_vl.py apply_multimodal_rotary_pos_emb: cos/sin split by "
     "mrope_section, chunk i from position row i % 3"),
    row("qwen2_5_vl", "Qwen2.5-VL", layout::half_split, output_order::in_place,
     "transformers models/qwen2_5_vl/modeling_qwen2_5_vl.py apply_multimodal_rotary_pos_emb: rotate_half",
     "head_dim", mrope_kind::contiguous,
     "transformers models/qwen2_5_vl/modeling_qwen2_5_vl.py apply_multimodal_rotary_pos_emb: contiguous "
     "mrope_section blocks"),
    row("qwen3_vl", "Qwen3-VL", layout::half_split, output_order::in_place,
     "transformers models/qwen3_vl/modeling_qwen3_vl.py apply_rotary_pos_emb: rotate_half", "head_dim",
     mrope_kind::interleaved,
     "transformers models/qwen3_vl/modeling_qwen3_vl.py Qwen3VLTextRotaryEmbedding.apply_interleaved_mrope"),
    row("qwen3_vl_moe", "Qwen3-VL-MoE", layout::half_split, output_order::in_place,
     "transformers models/qwen3_vl_moe/modeling_qwen3_vl_moe.py apply_rotary_pos_emb: rotate_half", "head_dim",
     mrope_kind::interleaved,
     "transformers models/qwen3_vl_moe/modeling_qwen3_vl_moe.py apply_interleaved_mrope"),
    row("gemma", "Gemma", layout::half_split, output_order::in_place,
     "transformers models/gemma/modeling_gemma.py rotate_half pairs (i, i + d/2)"),
    row("gemma2", "Gemma 2", layout::half_split, output_order::in_place,
     "transformers models/gemma2/modeling_gemma2.py rotate_half pairs (i, i + d/2)"),
    row("gemma3", "Gemma 3", layout::half_split, output_order::in_place,
     "transformers models/gemma3/modeling_gemma3.py rotate_half pairs (i, i + d/2)", "head_dim", mrope_kind::none, "",
     layer_schedule::gemma3_local),
    row("gemma3_text", "Gemma 3", layout::half_split, output_order::in_place,
     "transformers models/gemma3/modeling_gemma3.py rotate_half pairs (i, i + d/2)", "head_dim", mrope_kind::none, "",
     layer_schedule::gemma3_local),
    row("phi", "Phi-2", layout::half_split, output_order::in_place,
     "transformers models/phi/modeling_phi.py rotate_half on the first rotary_dim coordinates",
     "int(head_dim * partial_rotary_factor)"),
    row("phi3", "Phi-3/3.5/4", layout::half_split, output_order::in_place,
     "transformers models/phi3/modeling_phi3.py apply_rotary_pos_emb: rotate_half on q[..., :rotary_dim]",
     "int(head_dim * partial_rotary_factor)"),
    row("gpt_neox", "GPT-NeoX/Pythia", layout::half_split, output_order::in_place,
     "transformers models/gpt_neox/modeling_gpt_neox.py apply_rotary_pos_emb: rotate_half on q[..., :rotary_ndims]",
     "int(head_dim * rotary_pct)"),
    row("falcon", "Falcon", layout::half_split, output_order::in_place,
     "transformers models/falcon/modeling_falcon.py rotate_half pairs (i, i + d/2)"),
    row("gpt_oss", "gpt-oss", layout::half_split, output_order::in_place,
     "transformers models/gpt_oss/modeling_gpt_oss.py _apply_rotary_emb: torch.chunk(x, 2) halves"),
    row("gptj", "GPT-J", layout::interleaved, output_order::in_place,
     "transformers models/gptj/modeling_gptj.py rotate_every_two pairs (2i, 2i+1)", "rotary_dim"),
    row("codegen", "CodeGen", layout::interleaved, output_order::in_place,
     "transformers models/codegen/modeling_codegen.py rotate_every_two pairs (2i, 2i+1)", "rotary_dim"),
    row("glm", "GLM", layout::interleaved, output_order::in_place,
     "transformers models/glm/modeling_glm.py apply_rotary_pos_emb: cos/sin repeat_interleave(2), rotate_half "
     "of x[..., 0::2], x[..., 1::2]",
     "int(head_dim * partial_rotary_factor)"),
    row("glm4", "GLM-4", layout::interleaved, output_order::in_place,
     "transformers models/glm4/modeling_glm4.py apply_rotary_pos_emb: cos/sin repeat_interleave(2), rotate_half "
     "of x[..., 0::2], x[..., 1::2]",
     "int(head_dim * partial_rotary_factor)"),
    row("chatglm", "ChatGLM", layout::interleaved, output_order::in_place,
     "THUDM remote code modeling_chatglm.py apply_rotary_pos_emb: x.reshape(..., rot_dim // 2, 2)",
     "kv_channels / 2", mrope_kind::none, "", layer_schedule::uniform, false, true),
    row("cohere", "Cohere/Command-R", layout::interleaved, output_order::in_place,
     "transformers models/cohere/modeling_cohere.py rotate_half of x[..., ::2], x[..., 1::2], "
     "CohereRotaryEmbedding repeat_interleave(freqs, 2)"),
    row("deepseek_v2", "DeepSeek-V2", layout::interleaved, output_order::in_place,
     "transformers models/deepseek_v2/modeling_deepseek_v2.py apply_rotary_emb: view_as_complex of "
     "(2i, 2i+1), written back in place",
     "qk_rope_head_dim"),
    row("deepseek_v3", "DeepSeek-V3", layout::interleaved, output_order::half_split,
     "transformers models/deepseek_v3/modeling_deepseek_v3.py apply_rotary_pos_emb_interleave: "
     "view(d/2, 2).transpose, then rotate_half",
     "qk_rope_head_dim", mrope_kind::none, "", layer_schedule::uniform, true),
    row("llama4", "Llama 4", layout::interleaved, output_order::in_place,
     "transformers models/llama4/modeling_llama4.py apply_rotary_emb: view_as_complex of (2i, 2i+1)", "head_dim",
     mrope_kind::none, "", layer_schedule::llama4_nope),
    row("llama4_text", "Llama 4", layout::interleaved, output_order::in_place,
     "transformers models/llama4/modeling_llama4.py apply_rotary_emb: view_as_complex of (2i, 2i+1)", "head_dim",
     mrope_kind::none, "", layer_schedule::llama4_nope),
};

}  // namespace detail::arch

// The facts for a model_type; nullptr when ropecheck has none.
[[nodiscard]] constexpr const architecture_facts* find_architecture(std::string_view model_type) noexcept {
  for (const auto& a : detail::arch::table)
    if (a.model_type == model_type) return &a;
  return nullptr;
}

[[nodiscard]] constexpr const auto& known_architectures() noexcept { return detail::arch::table; }

}  // namespace ropecheck
