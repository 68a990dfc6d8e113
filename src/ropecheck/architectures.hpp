// ropecheck/architectures.hpp — what a model family's code does with RoPE that its config.json does not
// say: which coordinates pair up, which way they turn, where the outputs go, how many rotate and the
// class defaults of the keys a file may leave out, which layers rotate and with which parameters.
//
// Light header: no JSON. config_json.hpp reads the fields and takes the rest from here, each fact with
// its source, so a user sees which parts of the convention came from the file, which from the family's
// class defaults and which from its code (`ropecheck explain`).
//
// Every row was read from the family's code: transformers (src/transformers/models/<dir>/, cited as
// "transformers models/..."), or where transformers lacks the family, the engines that serve it
// (vLLM vllm/model_executor/models/, mlx-lm mlx_lm/models/) or the checkpoint's remote code. How the
// rows were enumerated, and what each source said, is in src/ropecheck/families/README.md.
// A model_type without a row is refused (config_json.hpp): ropecheck never assumes a family.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <limits>
#include <optional>
#include <span>
#include <string_view>

#include "ropecheck/config.hpp"

namespace ropecheck {

// Whether ropecheck can derive a convention for the family at all.
enum class family_support : std::uint8_t {
  rope,          // its attention rotates: the row's facts give the convention
  no_rope,       // no RoPE in any layer (ALiBi, learned or sinusoidal positions, NoPE): `why` says so
  not_modelled,  // RoPE ropecheck does not model (2-D patch RoPE, several stacks, per-layer lists): `why` says what
};

// Where the head size comes from.
enum class head_rule : std::uint8_t {
  head_dim_key,  // head_dim; absent: the class default head_default, else hidden_size / num_attention_heads
  ratio,         // hidden_size / num_attention_heads: the code never reads head_dim (a head_dim that differs is an error)
  mla,           // qk_rope_head_dim: the rope slice of multi-head latent attention, judged as a head of its own
  kv_channels,   // kv_channels (ChatGLM, JetMoE, Qwen v1)
  dbrx,          // d_model / n_heads (DBRX)
};

// How many coordinates of the head rotate (the first ones, as every family here slices q[..., :rotary_dim]).
enum class rotary_rule : std::uint8_t {
  whole_head,      // every coordinate; the code cannot honour partial_rotary_factor != 1 (an error naming the field)
  whole_head_ignoring,  // every coordinate; the code's default rule does not read partial_rotary_factor (Gemma 4)
  partial_factor,  // int(head_dim * partial_rotary_factor); absent: the class default rotary_default
  rotary_pct,      // int(head_dim * rotary_pct); absent: rotary_default (GPT-NeoX, Qwen v1)
  rotary_dim_key,  // rotary_dim; absent: rotary_default (GPT-J, CodeGen)
  half_kv,         // kv_channels / 2 (ChatGLM)
  fixed_factor,    // int(head_dim * rotary_default): the code works with no other factor (RecurrentGemma's torch.chunk)
  overwritten_factor,  // int(head_dim * rotary_default) whatever the top level says (Bamba overwrites the key)
};

// Which layers rotate, and with which parameters (implemented in config_json_layers.hpp, one function each;
// each names its source there).
enum class layer_rule : std::uint8_t {
  uniform,         // every decoder layer rotates alike (sliding/full layer types differ in the mask only)
  no_rope_flags,   // no_rope_layers[i] == 1 rotates; absent: every no_rope_layer_interval-th layer is NoPE (Llama 4, SmolLM3)
  gemma3,          // sliding_window_pattern (6): sliding layers use rope_local_base_freq, no scaling
  gemma3n,         // every 5th layer full; sliding layers use rope_local_base_freq, no scaling
  gemma4,          // 5 sliding : 1 full, the last forced full; per-type rope_parameters, full layers global_head_dim
  cohere2,         // sliding_window_pattern (4): only sliding layers rotate, and only when sliding_window is set
  afmoe,           // global_attn_every_n_layers (4): sliding layers rotate, full layers are NoPE
  exaone4,         // sliding_window_pattern (4): full layers are NoPE when sliding_window is set
  olmo3,           // every 4th layer full: scaling on full layers only
  linear_hybrid,   // full_attention_interval (4): full layers rotate, the others are linear attention (Gated DeltaNet)
  minimax,         // even layers full attention (rotate), odd layers linear (lightning) attention
  lfm2,            // full_attn_idxs: attention layers rotate, the others are short convolutions
  granite_hybrid,  // layer_types mamba/attention; attention rotates iff position_embedding_type == "rope"
  bamba,           // attn_layer_indices rotate (partial 0.5), the others are Mamba 2
  zamba2,          // hybrid layers (a shared attention block) rotate iff use_mem_rope; the others are Mamba 2
  recurrent,       // block_types cycled (recurrent, recurrent, attention): attention blocks rotate
  modernbert,      // every global_attn_every_n_layers-th layer (from 0) global: global_rope_theta / local_rope_theta
  mllama,          // cross_attention_layers do not rotate
  mimo_v2,         // hybrid_layer_pattern[i] == 1: sliding layers with swa_head_dim and swa_rope_theta
  plamo2,          // Mamba unless i % mamba_step == mamba_step / 2
  typed_blocks,    // layer_types with rope_parameters keyed by layer type (required), class-default blocks
};

// Family-specific keys and rules that the generic reading does not cover (config_json_geometry.hpp).
enum class family_quirk : std::uint8_t {
  none,
  rope_interleave,  // DeepSeek-V3 MLA: rope_interleave (default true) reads (2i, 2i+1) and writes half-split
  chatglm,          // ChatGLM remote code: rotary_dim = kv_channels / 2, base = 10000 * rope_ratio
  hunyuan_alpha,    // rope_scaling {"type": "dynamic", "alpha": a}: a fixed NTK base change by a (NTK-alpha)
  phimoe_mscale,    // LongRoPE with short_mscale / long_mscale
  falcon_alibi,     // alibi: true means no RoPE
  esm_rotary,       // position_embedding_type "rotary", else no RoPE
  dbrx,             // attn_config.rope_theta
  baichuan,         // Baichuan 2 13B uses ALiBi (architectures + hidden_size decide)
  text_config_only, // the text model's rope fields are read from text_config only (FuyuConfig forwards none)
  position_scale,   // rope_position_scale: engines disagree on its meaning (vLLM divides positions, mlx-lm multiplies)
  rotary_dim_fraction,  // partial_factor read from rotary_dim too: partial_rotary_factor = rotary_dim / head_dim (MiniMax-M2)
};

struct architecture_facts {
  std::string_view model_type = {};  // HF config.json "model_type"
  std::string_view aliases = {};     // other model_types with the same facts, space-separated ("gemma3_text")
  std::string_view family = {};      // for messages
  family_support support = family_support::rope;
  std::string_view why = {};         // no_rope / not_modelled: the sentence, with its source
  layout pair_layout = layout::half_split;
  output_order outputs = output_order::in_place;
  rotation_direction direction = rotation_direction::forward;
  std::string_view layout_source = {};  // file and function the layout (and direction) were read from
  head_rule head = head_rule::head_dim_key;
  std::string_view head_key = "head_dim";  // head_dim_key: the key (PLaMo 2's hidden_size_per_head)
  int head_default = 0;            // class default head_dim (0: hidden_size / num_attention_heads)
  rotary_rule rotary = rotary_rule::whole_head;
  double rotary_default = 1.0;     // class default fraction (or rotary_dim for rotary_dim_key); NaN: none (the key is required)
  std::string_view rotary_source = {};
  std::string_view base_key = "rope_theta";  // the key the base is read from
  // Class default of the base when the file has none; NaN: the default is not one value (it changed
  // between versions of the family's code, or the code has none): a file without the base is refused.
  double base_default = 10000.0;
  std::string_view base_source = {};
  std::string_view default_rope = {};   // JSON of the class's default rope block when the file has none ("": none)
  std::string_view block_keys = {};     // keys of the rope block the family's config carries but its rope code does not read
  std::string_view rope_types = {};     // the rope types the family's code accepts, space-separated ("": every HF type)
  mrope_kind mrope = mrope_kind::none;
  std::string_view mrope_source = {};
  std::string_view mrope_default = {};  // the class's mrope_section when the file has none ("11 11 10"; "": required)
  layer_rule layers = layer_rule::uniform;
  std::string_view layers_source = {};
  family_quirk quirk = family_quirk::none;
  // An MLA lightning indexer with a RoPE of its own (DeepSeek-V3.2, GLM-5): its layout when the file has
  // no indexer_rope_interleave; nullopt: the family has no indexer.
  std::optional<layout> indexer = {};
  std::string_view indexer_source = {};
  std::string_view extra_keys = {};     // keys with "rope"/"rotary" in their name the family reads beyond its layer rule's (layer_rule_keys), space-separated
};

inline constexpr double unknown_base = std::numeric_limits<double>::quiet_NaN();
inline constexpr double no_default = std::numeric_limits<double>::quiet_NaN();

// The keys with "rope" or "rotary" in their name that a layer rule itself reads
// (config/src/config_json_layer_rules.hpp), space-separated: a file of any family with that rule may
// hold them (the rows' extra_keys list only the family's other keys).
[[nodiscard]] constexpr std::string_view layer_rule_keys(layer_rule r) noexcept {
  switch (r) {
    case layer_rule::no_rope_flags: return "no_rope_layers no_rope_layer_interval";
    case layer_rule::gemma3:
    case layer_rule::gemma3n: return "rope_local_base_freq";
    case layer_rule::modernbert: return "global_rope_theta local_rope_theta";
    case layer_rule::mimo_v2: return "swa_rope_theta";
    case layer_rule::zamba2: return "use_mem_rope";
    default: return "";
  }
}

// Whether the space-separated list holds the word.
[[nodiscard]] constexpr bool has_word(std::string_view list, std::string_view word) noexcept {
  for (std::size_t s = 0; s <= list.size();) {
    std::size_t e = list.find(' ', s);
    if (e == std::string_view::npos) e = list.size();
    if (list.substr(s, e - s) == word) return true;
    s = e + 1;
  }
  return false;
}

// The families (src/ropecheck/families/*.hpp, grouped by lineage).
[[nodiscard]] inline std::span<const architecture_facts> known_architectures() noexcept;

// The facts for a model_type (its own row or an alias); nullptr when ropecheck has none.
[[nodiscard]] inline const architecture_facts* find_architecture(std::string_view model_type) noexcept;

// One line describing a layer rule, for explain and the README's family table.
[[nodiscard]] constexpr std::string_view describe(layer_rule r) noexcept {
  switch (r) {
    case layer_rule::uniform: return "-";
    case layer_rule::no_rope_flags: return "no_rope_layers / no_rope_layer_interval: NoPE layers";
    case layer_rule::gemma3: return "sliding_window_pattern: sliding layers rope_local_base_freq, no scaling";
    case layer_rule::gemma3n: return "every 5th layer full; sliding layers rope_local_base_freq, no scaling";
    case layer_rule::gemma4: return "5 sliding : 1 full (last full); per-type rope_parameters, full layers global_head_dim";
    case layer_rule::cohere2: return "sliding_window_pattern: only sliding layers rotate (full layers NoPE)";
    case layer_rule::afmoe: return "global_attn_every_n_layers: full layers NoPE";
    case layer_rule::exaone4: return "sliding_window_pattern: full layers NoPE when sliding_window is set";
    case layer_rule::olmo3: return "every 4th layer full; scaling on full layers only";
    case layer_rule::linear_hybrid: return "full_attention_interval: linear-attention layers have no RoPE";
    case layer_rule::minimax: return "odd layers linear attention (no RoPE)";
    case layer_rule::lfm2: return "full_attn_idxs: conv layers have no RoPE";
    case layer_rule::granite_hybrid: return "layer_types mamba/attention; position_embedding_type";
    case layer_rule::bamba: return "attn_layer_indices; the rest Mamba 2";
    case layer_rule::zamba2: return "hybrid layers rotate iff use_mem_rope; the rest Mamba 2";
    case layer_rule::recurrent: return "block_types: recurrent blocks have no RoPE";
    case layer_rule::modernbert: return "global_attn_every_n_layers: global_rope_theta / local_rope_theta";
    case layer_rule::mllama: return "cross_attention_layers do not rotate";
    case layer_rule::mimo_v2: return "hybrid_layer_pattern: sliding layers swa_head_dim, swa_rope_theta";
    case layer_rule::plamo2: return "mamba_step: Mamba layers have no RoPE";
    case layer_rule::typed_blocks: return "layer_types with rope_parameters per layer type";
  }
  return "?";
}

}  // namespace ropecheck

#include "ropecheck/families/gemma.hpp"
#include "ropecheck/families/hybrid.hpp"
#include "ropecheck/families/llama_like.hpp"
#include "ropecheck/families/mla_multimodal.hpp"
#include "ropecheck/families/not_modelled.hpp"
#include "ropecheck/families/partial_interleaved.hpp"

namespace ropecheck {
namespace detail::arch {

template <std::size_t... N>
constexpr auto concat(const architecture_facts (&... groups)[N]) {
  std::array<architecture_facts, (N + ...)> out{};
  std::size_t k = 0;
  ((std::copy(std::begin(groups), std::end(groups), out.begin() + static_cast<std::ptrdiff_t>(k)), k += N), ...);
  return out;
}

inline constexpr auto table = concat(families::llama_like, families::partial_interleaved, families::gemma,
                                     families::mla_multimodal, families::hybrid, families::not_modelled);

}  // namespace detail::arch

inline std::span<const architecture_facts> known_architectures() noexcept { return detail::arch::table; }

inline const architecture_facts* find_architecture(std::string_view model_type) noexcept {
  if (model_type.empty()) return nullptr;
  for (const auto& a : detail::arch::table)
    if (a.model_type == model_type || has_word(a.aliases, model_type)) return &a;
  return nullptr;
}

}  // namespace ropecheck
