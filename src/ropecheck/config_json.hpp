// ropecheck/config_json.hpp — a Hugging Face config.json read into a rope_config.
//
// Heavy header (nlohmann/json): include it only from tools and tests, never from other src/ headers.
// The field reader is config_json_reader.hpp, the rope block config_json_scaling.hpp, and what a
// model family's code does that its file does not say is architectures.hpp (json-free).
//
// What is read (HF v4 and v5 layouts, key names as HF spells them), from the text model: the top
// level, or `text_config` when the rope fields live there (Qwen3-VL, Llama 4, Gemma 3 multimodal):
//   head_dim                 else hidden_size / num_attention_heads (GPT-J: n_embd / n_head);
//                            DeepSeek MLA: qk_rope_head_dim (as HF's DeepseekV3Config sets head_dim);
//                            ChatGLM: kv_channels
//   rotary dimension         int(head_dim * partial_rotary_factor) (HF's truncation), or
//                            int(head_dim * rotary_pct) (GPT-NeoX), or rotary_dim (GPT-J); ChatGLM:
//                            kv_channels / 2; else head_dim
//   rope_theta               else rotary_emb_base (GPT-NeoX), else rope_parameters.rope_theta, else
//                            10000; ChatGLM: 10000 * rope_ratio
//   max_position_embeddings  else n_positions (GPT-J)
//   original_max_position_embeddings  top level (Phi-3) or inside the scaling block
//   rope_scaling (v4) / rope_parameters (v5): see config_json_scaling.hpp; M-RoPE mrope_section
//     (+ mrope_interleaved). A v5 block keyed by layer type ({"full_attention": {...},
//     "sliding_attention": {...}}) gives each layer type its convention; `config` is "full_attention"
//     (or the single entry).
//   layout                   from the model type (architectures.hpp), DeepSeek-V3's rope_interleave;
//                            non-HF key ropecheck_layout ("interleaved" | "half_split") wins, with a
//                            note when it contradicts the model type
//   per layer                layer_types / sliding_window_pattern, rope_local_base_freq (Gemma 3),
//                            no_rope_layers / no_rope_layer_interval (Llama 4)
//
// Unknown fields are errors: a key of the rope block its rope type does not read, and any top-level
// key whose name contains "rope" or "rotary" that ropecheck does not read (or does not read for
// this model type). A model type without facts is read as HF Llama (half-split), with a note.
// Every fact taken from the model type rather than from a field is a note (hf_config_parse::notes).
//
// Everything rejected throws config_error naming the file (when loaded from one), the JSON field
// and the problem.
#pragma once

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <limits>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "ropecheck/architectures.hpp"
#include "ropecheck/config.hpp"
#include "ropecheck/config_json_reader.hpp"
#include "ropecheck/config_json_scaling.hpp"
#include "ropecheck/schedule.hpp"

namespace ropecheck {

// One decoder layer's RoPE: its type (HF layer_types spelling) and convention; nullopt: the layer
// has no RoPE (Llama 4's NoPE layers).
struct layer_rope {
  int index = 0;
  std::string type;
  std::optional<rope_config> config;
};

// The parsed config and what the parser decided on the user's behalf (e.g. which layer type of a
// per-layer rope_parameters it read, a factor derived from lengths, facts of the model type).
struct hf_config_parse {
  rope_config config;  // the primary convention: full-attention layers (the RoPE layers of Llama 4)
  std::vector<std::string> notes;
  std::string model_type;          // "" when the file gives none
  int num_layers = 0;              // num_hidden_layers (0: not given)
  std::vector<layer_rope> layers;  // per layer when they differ or have types; empty: all use config
};

// The convention of decoder layer `layer`: throws std::out_of_range past the model's layers,
// std::invalid_argument naming the layer when it has no RoPE. `type` receives its layer type.
inline rope_config layer_convention(const hf_config_parse& p, int layer, std::string* type = nullptr) {
  const int n = p.layers.empty() ? p.num_layers : static_cast<int>(p.layers.size());
  if (layer < 0 || (n > 0 && layer >= n) || (n == 0 && layer != 0))
    throw std::out_of_range("layer " + std::to_string(layer) + " out of range: the config has " +
                            (n > 0 ? std::to_string(n) + " layers (0.." + std::to_string(n - 1) + ")"
                                   : std::string("no num_hidden_layers (only layer 0 can be named)")));
  if (p.layers.empty()) {
    if (type) *type = "full_attention";
    return p.config;
  }
  const layer_rope& l = p.layers[static_cast<std::size_t>(layer)];
  if (type) *type = l.type;
  if (!l.config)
    throw std::invalid_argument("layer " + std::to_string(layer) + " (" + l.type +
                                ") has no RoPE in this model (Llama 4 NoPE layer); nothing to check");
  return *l.config;
}

namespace detail::json_read {

// Head and rotary dimensions, base and lengths of the text model t (b: its rope block, {} if none).
struct lengths {
  std::optional<std::int64_t> mpe, orig;
};
inline lengths read_geometry(const reader& r, const json& t, const json& b, const std::string& bp, bool block,
                             bool chatglm, rope_config& c, std::vector<std::string>& notes) {
  auto at = [&](const char* k) { return bp + "." + k; };

  // --- head and rotary dimensions -----------------------------------------------------------------
  std::int64_t head_dim = 0;
  if (auto qk = r.positive_length(t, "qk_rope_head_dim", "qk_rope_head_dim")) {
    // DeepSeek MLA: RoPE acts on a separate qk_rope_head_dim slice; HF's DeepseekV3Config sets
    // head_dim = qk_rope_head_dim for the rotary embedding.
    head_dim = *qk;
    notes.push_back("MLA config: rotary head is qk_rope_head_dim = " + std::to_string(*qk));
  } else if (auto hd = r.positive_length(t, "head_dim", "head_dim")) {
    head_dim = *hd;
  } else if (auto kv = chatglm ? r.positive_length(t, "kv_channels", "kv_channels") : std::nullopt) {
    head_dim = *kv;  // ChatGLM: kv_channels per head
  } else {
    const auto hidden = r.agree(r.positive_length(t, "hidden_size", "hidden_size"), "hidden_size",
                                r.positive_length(t, "n_embd", "n_embd"), "n_embd");
    const auto heads = r.agree(r.positive_length(t, "num_attention_heads", "num_attention_heads"),
                               "num_attention_heads", r.positive_length(t, "n_head", "n_head"), "n_head");
    if (!hidden) r.fail("hidden_size", "missing (needed for head_dim = hidden_size / num_attention_heads)");
    if (!heads) r.fail("num_attention_heads", "missing (needed for head_dim = hidden_size / num_attention_heads)");
    if (*hidden % *heads != 0)
      r.fail("num_attention_heads", "does not divide hidden_size (" + std::to_string(*hidden) + " / " +
                                        std::to_string(*heads) + ")");
    head_dim = *hidden / *heads;
  }
  if (head_dim > 1 << 20) r.fail("head_dim", "implausibly large: " + std::to_string(head_dim));
  c.head_dim = static_cast<int>(head_dim);

  auto fraction = [&](const json& o, const char* key, const std::string& path) {
    auto v = r.number(o, key, path);
    if (v && !(*v > 0.0 && *v <= 1.0)) r.fail(path, "must be in (0, 1], got " + fmt(*v));
    return v;
  };
  auto prf = r.agree(fraction(t, "partial_rotary_factor", "partial_rotary_factor"), "partial_rotary_factor",
                     fraction(b, "partial_rotary_factor", at("partial_rotary_factor")), at("partial_rotary_factor"));
  prf = r.agree(prf, "partial_rotary_factor", fraction(t, "rotary_pct", "rotary_pct"), "rotary_pct");
  const auto rd = r.positive_length(t, "rotary_dim", "rotary_dim");
  std::int64_t rotary = head_dim;
  if (prf) {
    // HF: dim = int(head_dim * partial_rotary_factor), in Python double, truncating.
    const double prod = static_cast<double>(head_dim) * *prf;
    rotary = static_cast<std::int64_t>(prod);
    const std::string which = t.contains("rotary_pct") && !t.contains("partial_rotary_factor")
                                  ? std::string("rotary_pct")
                                  : std::string("partial_rotary_factor");
    if (rotary <= 0) r.fail(which, "gives rotary_dim = int(" + std::to_string(head_dim) + " * " + fmt(*prf) + ") = 0");
    if (rotary % 2 != 0)
      r.fail(which, "gives an odd rotary_dim = int(" + std::to_string(head_dim) + " * " + fmt(*prf) +
                        ") = " + std::to_string(rotary) + "; rotary coordinates come in pairs");
    if (rd && *rd != rotary)
      r.fail("rotary_dim", "contradicts " + which + " (" + std::to_string(*rd) + " vs " + std::to_string(rotary) + ")");
  } else if (rd) {
    rotary = *rd;
    if (rotary % 2 != 0) r.fail("rotary_dim", "must be even, got " + std::to_string(rotary));
    if (rotary > head_dim)
      r.fail("rotary_dim", std::to_string(rotary) + " exceeds head_dim " + std::to_string(head_dim));
  }
  if (chatglm) {
    // THUDM modeling_chatglm.py ChatGLMModel: RotaryEmbedding(kv_channels // 2), so half the head rotates.
    if (prf || rd) r.fail(prf ? "partial_rotary_factor" : "rotary_dim", "not read for ChatGLM (rotary_dim is kv_channels / 2)");
    rotary = head_dim / 2;
    if (rotary % 2 != 0) r.fail("kv_channels", "gives an odd rotary_dim = " + std::to_string(rotary));
    notes.push_back("rotary_dim " + std::to_string(rotary) + " = kv_channels / 2: from model_type \"chatglm\" "
                    "(THUDM modeling_chatglm.py ChatGLMModel: RotaryEmbedding(rotary_dim // 2))");
  }
  c.rotary_dim = static_cast<int>(rotary);

  // --- base ------------------------------------------------------------------------------------------
  auto theta = r.agree(r.number(t, "rope_theta", "rope_theta"), "rope_theta",
                       r.number(t, "rotary_emb_base", "rotary_emb_base"), "rotary_emb_base");
  theta = r.agree(theta, t.contains("rope_theta") ? "rope_theta" : "rotary_emb_base",
                  r.number(b, "rope_theta", at("rope_theta")), at("rope_theta"));
  c.base = theta.value_or(10000.0);
  if (chatglm) {
    // THUDM modeling_chatglm.py RotaryEmbedding.forward_impl: base = base * self.rope_ratio, base 10000.
    if (theta) r.fail(t.contains("rope_theta") ? "rope_theta" : "rotary_emb_base", "not read for ChatGLM (its base is 10000 * rope_ratio)");
    const auto ratio = r.number(t, "rope_ratio", "rope_ratio");
    if (ratio && !(*ratio > 0.0)) r.fail("rope_ratio", "must be > 0, got " + fmt(*ratio));
    c.base = 10000.0 * ratio.value_or(1.0);
    notes.push_back("base " + fmt(c.base) + " = 10000 * rope_ratio: from model_type \"chatglm\" "
                    "(THUDM modeling_chatglm.py RotaryEmbedding.forward_impl)");
    if (auto orig_rope = r.boolean(t, "original_rope", "original_rope"); orig_rope && !*orig_rope)
      r.fail("original_rope", "false selects ChatGLM-6B's 2-D position encoding, which ropecheck does not model");
  }
  if (!(c.base > 1.0)) {
    const std::string field = block && b.contains("rope_theta") ? at("rope_theta")
                              : t.contains("rotary_emb_base")  ? "rotary_emb_base"
                                                               : "rope_theta";
    r.fail(field, "must be > 1, got " + fmt(c.base));
  }

  // --- lengths ---------------------------------------------------------------------------------------
  const auto mpe = r.agree(r.positive_length(t, "max_position_embeddings", "max_position_embeddings"),
                           "max_position_embeddings", r.positive_length(t, "n_positions", "n_positions"),
                           "n_positions");
  if (mpe) c.max_position_embeddings = *mpe;
  const auto orig = r.agree(
      r.positive_length(t, "original_max_position_embeddings", "original_max_position_embeddings"),
      "original_max_position_embeddings",
      r.positive_length(b, "original_max_position_embeddings", at("original_max_position_embeddings")),
      at("original_max_position_embeddings"));
  if (orig) c.original_max_position_embeddings = *orig;

  return {mpe, orig};
}

// Top-level keys with "rope" or "rotary" in their name that ropecheck reads, and for which families.
inline void check_rope_keys(const reader& r, const json& t, const architecture_facts* facts,
                            const std::string& model_type) {
  static const char* const general[] = {"rope_theta",  "rope_scaling", "rope_parameters", "rotary_emb_base",
                                        "rotary_pct",  "rotary_dim",   "partial_rotary_factor",
                                        "qk_rope_head_dim", "ropecheck_layout", "rotary"};
  struct only_for {
    const char* key;
    bool (*reads)(const architecture_facts&);
    const char* families;
  };
  static const only_for special[] = {
      {"rope_local_base_freq", [](const architecture_facts& a) { return a.layers == layer_schedule::gemma3_local; }, "gemma3"},
      {"no_rope_layers", [](const architecture_facts& a) { return a.layers == layer_schedule::llama4_nope; }, "llama4"},
      {"no_rope_layer_interval", [](const architecture_facts& a) { return a.layers == layer_schedule::llama4_nope; }, "llama4"},
      {"rope_interleave", [](const architecture_facts& a) { return a.reads_rope_interleave; }, "deepseek_v3"},
      {"rope_ratio", [](const architecture_facts& a) { return a.chatglm_fields; }, "chatglm"},
      {"original_rope", [](const architecture_facts& a) { return a.chatglm_fields; }, "chatglm"},
  };
  for (const auto& [k, v] : t.items()) {
    std::string low = k;
    for (char& ch : low) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    if (low.find("rope") == std::string::npos && low.find("rotary") == std::string::npos) continue;
    if (std::find(std::begin(general), std::end(general), k) != std::end(general)) continue;
    bool known = false;
    for (const auto& s : special) {
      if (k != s.key) continue;
      known = true;
      if (!facts || !s.reads(*facts))
        r.fail(k, std::string("read only for model_type ") + s.families + "; this config is model_type \"" +
                      (model_type.empty() ? std::string("(none)") : model_type) +
                      "\", so ropecheck cannot tell what it changes");
    }
    if (known) continue;
    std::string list;
    for (const char* g : general) list += std::string(list.empty() ? "" : ", ") + g;
    for (const auto& s : special) list += std::string(", ") + s.key + " (" + s.families + ")";
    r.fail(k, "not a rope field ropecheck reads (it reads: " + list + "); refusing to guess what it changes");
  }
}

// The facts for a config: by model_type, else by the class named in architectures[0]
// ("Glm4ForCausalLM" -> glm4: the class name lower-cased without underscores and its suffix).
inline const architecture_facts* facts_for(const std::string& model_type, const json& j, std::string& via) {
  if (const auto* a = find_architecture(model_type)) {
    via = "model_type \"" + model_type + "\"";
    return a;
  }
  const auto arch = j.find("architectures");
  if (arch == j.end() || !arch->is_array() || arch->empty() || !(*arch)[0].is_string()) return nullptr;
  std::string cls = (*arch)[0].get<std::string>();
  for (const char* suffix : {"ForCausalLM", "ForConditionalGeneration", "Model", "LMHeadModel"})
    if (cls.size() > std::string(suffix).size() && cls.ends_with(suffix)) {
      cls.resize(cls.size() - std::string(suffix).size());
      break;
    }
  auto squash = [](std::string_view s) {
    std::string o;
    for (char ch : s)
      if (ch != '_') o += static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    return o;
  };
  for (const auto& a : known_architectures())
    if (squash(a.model_type) == squash(cls)) {
      via = "architectures \"" + (*arch)[0].get<std::string>() + "\"";
      return &a;
    }
  return nullptr;
}

// Layout and output order: from the family (with DeepSeek-V3's rope_interleave), then
// ropecheck_layout on top.
inline void read_layout(const reader& r, const json& t, const architecture_facts* facts, const std::string& via,
                        const std::string& model_type, rope_config& c, std::vector<std::string>& notes) {
  if (facts) {
    c.pair_layout = facts->pair_layout;
    c.outputs = facts->outputs;
    if (facts->reads_rope_interleave) {
      const auto ri = r.boolean(t, "rope_interleave", "rope_interleave");
      if (ri.value_or(true)) {
        notes.push_back("layout interleaved, outputs half_split: rope_interleave " +
                        std::string(ri ? "true" : "absent (DeepseekV3Config default true)") + " for " + via + " (" +
                        std::string(facts->layout_source) + ")");
      } else {
        c.pair_layout = layout::half_split;
        c.outputs = output_order::in_place;
        notes.push_back("layout half_split: rope_interleave false for " + via +
                        " (transformers models/deepseek_v3/modeling_deepseek_v3.py calls apply_rotary_pos_emb, "
                        "rotate_half)");
      }
    } else {
      notes.push_back("layout " + std::string(to_string(c.pair_layout)) + ": from " + via + " (" +
                      std::string(facts->layout_source) + ")");
    }
  } else {
    notes.push_back((model_type.empty() ? std::string("no model_type") : "model_type \"" + model_type + "\"") +
                    ": no architecture facts; layout half_split assumed as for HF Llama");
  }
  if (auto lay = r.string(t, "ropecheck_layout", "ropecheck_layout")) {
    layout want{};
    if (*lay == "interleaved") want = layout::interleaved;
    else if (*lay == "half_split") want = layout::half_split;
    else r.fail("ropecheck_layout", "must be \"interleaved\" or \"half_split\", got \"" + *lay + "\"");
    if (facts && want != c.pair_layout)
      notes.push_back("ropecheck_layout " + *lay + " contradicts " + via + " (" +
                      std::string(to_string(c.pair_layout)) + "); using ropecheck_layout, outputs in place");
    if (want != c.pair_layout) c.outputs = output_order::in_place;
    c.pair_layout = want;
  }
}

// Refuses what validate() refuses and schedules that overflow, naming the field.
inline void check_derived(const reader& r, const rope_config& c) {
  try {
    validate(c);
    // Parameters valid one by one can still overflow the schedule (a factor of 1e-320); the
    // schedule is computed once at the training length and once past it (dynamic NTK, LongRoPE's
    // long factors) so such a file is refused here, naming the field.
    if (c.bands() <= 4096) {
      (void)compute_frequencies<double>(c);
      const std::int64_t L = c.trained_length();
      (void)compute_frequencies<double>(c, L < std::numeric_limits<std::int64_t>::max() ? L + 1 : L);
    }
  } catch (const std::invalid_argument& e) {
    // validate's message starts with "rope_config.<field>:"; keep it whole.
    r.fail("(derived rope_config)", e.what());
  }
}

// One convention: the text model t with rope block b (at path bp; {} and "" when none).
inline rope_config read_convention(const reader& r, const json& t, const json& b, const std::string& bp, bool block,
                                   const architecture_facts* facts, const std::string& via,
                                   const std::string& model_type, std::vector<std::string>& notes) {
  rope_config c;
  const bool chatglm = facts && facts->chatglm_fields;
  // GPT-J's config.json says "rotary": true; false would mean no RoPE at all.
  if (auto rot = r.boolean(t, "rotary", "rotary"); rot && !*rot) r.fail("rotary", "false: this model has no RoPE to check");
  const lengths L = read_geometry(r, t, b, bp.empty() ? std::string("rope_scaling") : bp, block, chatglm, c, notes);
  read_layout(r, t, facts, via, model_type, c, notes);
  read_rule(r, rule_inputs{b, bp.empty() ? std::string("rope_scaling") : bp, L.mpe, L.orig, facts, model_type}, c,
            notes);
  check_derived(r, c);
  return c;
}

}  // namespace detail::json_read
}  // namespace ropecheck

#include "ropecheck/config_json_layers.hpp"
