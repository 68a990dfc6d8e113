// config/src/config_json_layer_rules.hpp — which decoder layers of a family rotate, and with what: one
// function per layer_rule of architectures.hpp, each following the code it cites (the family's config class
// building layer_types when the file has none, and its attention deciding whether a layer type rotates).
// Covered by tests/core/families_test.cpp (Family.DerivesWhatTheFamilysCodeDoesLayerByLayer) and
// tests/core/architectures_test.cpp (Architectures.Llama4ReadsTextConfigIsInterleavedAndEveryFourthLayerHasNoRope,
// .Gemma3SlidingLayersUseTheLocalBaseWithoutScaling).
//
// Heavy header (nlohmann/json): include it only through config_json.hpp.
#pragma once

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "ropecheck/architectures.hpp"
#include "ropecheck/config_json.hpp"
#include "config_json_family.hpp"
#include "config_json_reader.hpp"

namespace ropecheck::detail::json_read {

// How a rotating layer's convention differs from its block's (the layer rules' variants).
struct variant {
  std::string type = {};        // the layer type; its v5 block when the file keys rope_parameters by type
  bool unscaled = false;        // the rule's scaling dropped (OLMo 3 sliding, Gemma 3 local)
  std::string base_key = {};    // the base read from this key instead (Gemma 3 rope_local_base_freq)
  double base_default = 0;      // its class default
  std::string head_key = {};    // the head size read from this key (Gemma 4 global_head_dim, MiMo swa_head_dim)
  int head_default = 0;
  std::string source = {};      // the code that says so
  std::string label = {};       // the layer type, for messages and explain (type may be cleared)
  friend bool operator<(const variant& a, const variant& b) {
    return std::tie(a.type, a.unscaled, a.base_key, a.head_key) < std::tie(b.type, b.unscaled, b.base_key, b.head_key);
  }
};

// One layer as a rule plans it.
struct planned_layer {
  std::string type;
  layer_kind kind = layer_kind::rope;
  variant v;        // kind == rope
  std::string why;  // kind != rope
};

// ---- the layer rules -----------------------------------------------------------------------------
namespace layer_rules {

inline std::string idx(int i) { return std::to_string(i); }

// layer_types as the file gives them (nullopt when absent), checked against the layer count.
inline std::optional<std::vector<std::string>> layer_types(const reader& r, const json& t, int n, const char* key = "layer_types") {
  auto lt = r.strings(t, key, key);
  if (lt && n > 0 && static_cast<int>(lt->size()) != n)
    r.fail(key, "has " + std::to_string(lt->size()) + " entries; num_hidden_layers is " + std::to_string(n));
  return lt;
}

// type[i] = a if (i + 1) % p != 0 else b: the period rule of Gemma 2/3, Cohere 2, OLMo 3, Qwen3-Next ...
inline std::vector<std::string> by_period(int n, std::int64_t p, const std::string& a, const std::string& b) {
  std::vector<std::string> out;
  for (int i = 0; i < n; ++i) out.push_back((i + 1) % p != 0 ? a : b);
  return out;
}

inline std::int64_t period(const reader& r, const json& t, const char* key, std::int64_t def) {
  const auto it = t.find(key);
  if (it != t.end() && it->is_string())
    r.fail(key, "is a string (\"" + it->get<std::string>() + "\"); the family's config class computes (i + 1) % " + key +
                    " and needs an integer (give layer_types instead)");
  return r.positive_length(t, key, key).value_or(def);
}

// Every layer type must be one of `known`; each maps to a kind.
inline void check_types(const reader& r, const std::vector<std::string>& types, std::initializer_list<const char*> known,
                        const family_view& fam, const char* key = "layer_types") {
  for (std::size_t i = 0; i < types.size(); ++i) {
    if (std::find_if(known.begin(), known.end(), [&](const char* k) { return types[i] == k; }) != known.end()) continue;
    std::string list;
    for (const char* k : known) list += (list.empty() ? "" : ", ") + std::string(k);
    r.fail(std::string(key) + "[" + std::to_string(i) + "]", "\"" + types[i] + "\" is not a layer type " + fam.via +
                                                                 "'s code has (it has: " + list + ")");
  }
}

inline planned_layer rope(const std::string& type, variant v = {}) {
  if (v.type.empty()) v.type = type;
  v.label = type;
  return {type, layer_kind::rope, std::move(v), ""};
}
inline planned_layer none(const std::string& type, layer_kind k, std::string why) { return {type, k, {}, std::move(why)}; }

}  // namespace layer_rules

// The plan of every layer (n > 0), by the family's rule.
inline std::vector<planned_layer> plan_layers(const reader& r, const json& t, int n, const family_view& fam,
                                              std::vector<std::string>& notes) {
  using namespace layer_rules;
  std::vector<planned_layer> out;
  const auto lt = layer_types(r, t, n);
  auto types_or = [&](std::vector<std::string> def, const std::string& how) {
    if (lt) return *lt;
    notes.push_back("layer types from " + how + " (" + std::string(fam.row.layers_source) + ")");
    return def;
  };
  const std::string src(fam.row.layers_source);
  switch (fam.row.layers) {
    case layer_rule::uniform:
      if (lt) check_types(r, *lt, {"full_attention", "sliding_attention", "chunked_attention", "attention"}, fam);
      for (int i = 0; i < n; ++i) out.push_back(rope(lt ? (*lt)[static_cast<std::size_t>(i)] : std::string()));
      break;
    case layer_rule::typed_blocks: {
      // Every layer reads the rope_parameters block of its layer type (Laguna, Mellum).
      if (!lt && fam.row.default_rope.empty())
        r.fail("layer_types", "missing; " + fam.via + " reads rope_parameters per layer type (" + src + ")");
      if (!lt) notes.push_back("layer_types absent: every layer full_attention (" + src + ")");
      for (int i = 0; i < n; ++i) out.push_back(rope(lt ? (*lt)[static_cast<std::size_t>(i)] : std::string("full_attention")));
      break;
    }
    case layer_rule::no_rope_flags: {
      // no_rope_layers[i] == 1 rotates; empty/absent: every no_rope_layer_interval-th layer (default 4) is NoPE
      // (transformers models/llama4/configuration_llama4.py Llama4TextConfig; models/smollm3/modular_smollm3.py).
      auto nrl = r.integers(t, "no_rope_layers", "no_rope_layers", 0, 1);
      const auto interval = r.positive_length(t, "no_rope_layer_interval", "no_rope_layer_interval").value_or(4);
      if (nrl && !nrl->empty() && static_cast<int>(nrl->size()) != n)
        r.fail("no_rope_layers", "has " + std::to_string(nrl->size()) + " entries; num_hidden_layers is " + std::to_string(n));
      int count = 0;
      std::string nope;
      for (int i = 0; i < n; ++i) {
        const bool rot = nrl && !nrl->empty() ? (*nrl)[static_cast<std::size_t>(i)] == 1 : (i + 1) % interval != 0;
        const std::string type = lt ? (*lt)[static_cast<std::size_t>(i)] : (rot ? "chunked_attention" : "full_attention");
        if (rot) out.push_back(rope(type, variant{}));
        else {
          out.push_back(none(type, layer_kind::nope, "NoPE layer: " + std::string(nrl && !nrl->empty() ? "no_rope_layers[" + idx(i) + "] = 0"
                                                                                                         : "no_rope_layer_interval = " + std::to_string(interval)) + " (" + src + ")"));
          if (count++ < 6) nope += (nope.empty() ? "" : ", ") + idx(i);
        }
      }
      if (count > 6) nope += ", ...";
      notes.push_back(std::to_string(count) + " of " + std::to_string(n) + " layers have no RoPE (" + nope + "): " +
                      (nrl && !nrl->empty() ? std::string("no_rope_layers") : "no_rope_layer_interval = " + std::to_string(interval)) +
                      " (" + src + ")");
      break;
    }
    case layer_rule::gemma3:
    case layer_rule::gemma3n: {
      const bool g3 = fam.row.layers == layer_rule::gemma3;
      const std::int64_t p = g3 ? period(r, t, "sliding_window_pattern", 6) : 5;
      const auto types = types_or(by_period(n, p, "sliding_attention", "full_attention"),
                                  g3 ? "sliding_window_pattern = " + std::to_string(p) : std::string("every 5th layer full"));
      check_types(r, types, {"sliding_attention", "full_attention"}, fam);
      for (const auto& ty : types)
        out.push_back(ty == "full_attention" ? rope(ty)
                                             : rope(ty, variant{ty, true, "rope_local_base_freq", 10000.0, "", 0, src}));
      break;
    }
    case layer_rule::gemma4: {
      // Gemma4TextConfig.__post_init__: layer_types absent -> period 6 (a constant), and the last layer is
      // forced to full_attention whether layer_types came from the file or not.
      auto types = lt ? *lt : by_period(n, 6, "sliding_attention", "full_attention");
      if (!lt) notes.push_back("layer types: 5 sliding then 1 full (" + src + ")");
      check_types(r, types, {"sliding_attention", "full_attention"}, fam);
      if (!types.empty() && types.back() != "full_attention") {
        types.back() = "full_attention";
        notes.push_back("layer " + idx(n - 1) + " forced to full_attention, as Gemma4TextConfig.__post_init__ does");
      }
      for (const auto& ty : types)
        out.push_back(ty == "full_attention" ? rope(ty, variant{ty, false, "", 0, "global_head_dim", 512, src}) : rope(ty));
      break;
    }
    case layer_rule::cohere2: {
      // Cohere2Attention.forward rotates only `if self.sliding_window is not None` (sliding layers, and only
      // when config.sliding_window is set).
      const std::int64_t p = period(r, t, "sliding_window_pattern", 4);
      const auto types = types_or(by_period(n, p, "sliding_attention", "full_attention"), "sliding_window_pattern = " + std::to_string(p));
      check_types(r, types, {"sliding_attention", "full_attention"}, fam);
      const bool window = t.contains("sliding_window") ? !t["sliding_window"].is_null() : true;
      for (const auto& ty : types)
        out.push_back(ty == "sliding_attention" && window ? rope(ty)
                      : ty == "sliding_attention"
                          ? none(ty, layer_kind::nope, "sliding_window is null, so Cohere2Attention.forward rotates no layer (" + src + ")")
                          : none(ty, layer_kind::nope, "full_attention layers have no RoPE (" + src + ")"));
      break;
    }
    case layer_rule::afmoe: {
      const std::int64_t p = period(r, t, "global_attn_every_n_layers", 4);
      const auto types = types_or(by_period(n, p, "sliding_attention", "full_attention"), "global_attn_every_n_layers = " + std::to_string(p));
      check_types(r, types, {"sliding_attention", "full_attention"}, fam);
      for (const auto& ty : types)
        out.push_back(ty == "sliding_attention" ? rope(ty) : none(ty, layer_kind::nope, "full_attention layers have no RoPE (" + src + ")"));
      break;
    }
    case layer_rule::exaone4: {
      // Exaone4Config.__post_init__ / Exaone4Attention.forward: RoPE iff sliding_window is None or the layer slides.
      const bool window = t.contains("sliding_window") ? !t["sliding_window"].is_null() : true;
      std::vector<std::string> types;
      if (lt) {
        types = *lt;
      } else {
        if (!window)
          r.fail("sliding_window", "null without layer_types: the config class then sets sliding_window_pattern = 0 and computes "
                                   "(i + 1) % 0 (ZeroDivisionError); give layer_types");
        const std::int64_t p = period(r, t, "sliding_window_pattern", 4);
        types = by_period(n, p, "sliding_attention", "full_attention");
        notes.push_back("layer types from sliding_window_pattern = " + std::to_string(p) + " (" + src + ")");
      }
      check_types(r, types, {"sliding_attention", "full_attention"}, fam);
      for (const auto& ty : types)
        out.push_back(ty == "sliding_attention" || !window
                          ? rope(ty, variant{})
                          : none(ty, layer_kind::nope, "global (full_attention) layers are NoPE while sliding_window is set (" + src + ")"));
      for (auto& l : out) l.v.type = "";  // one table for every rotating layer
      break;
    }
    case layer_rule::olmo3: {
      const auto types = types_or(by_period(n, 4, "sliding_attention", "full_attention"), "every 4th layer full");
      check_types(r, types, {"sliding_attention", "full_attention"}, fam);
      for (const auto& ty : types)
        out.push_back(ty == "full_attention" ? rope(ty) : rope(ty, variant{ty, true, "", 0, "", 0, src}));
      break;
    }
    case layer_rule::linear_hybrid:
    case layer_rule::minimax: {
      const bool mm = fam.row.layers == layer_rule::minimax;
      const std::int64_t p = mm ? 2 : period(r, t, "full_attention_interval", 4);
      const auto types = types_or(mm ? [&] {
        std::vector<std::string> v;
        for (int i = 0; i < n; ++i) v.push_back(i % 2 == 0 ? "full_attention" : "linear_attention");
        return v;
      }() : by_period(n, p, "linear_attention", "full_attention"),
                                  mm ? std::string("even layers full attention") : "full_attention_interval = " + std::to_string(p));
      check_types(r, types, {"linear_attention", "full_attention"}, fam);
      for (const auto& ty : types)
        out.push_back(ty == "full_attention" ? rope(ty, variant{}) : none(ty, layer_kind::linear_attention, "linear attention: no RoPE (" + src + ")"));
      break;
    }
    case layer_rule::lfm2: {
      std::vector<std::string> types;
      if (lt) types = *lt;
      else {
        const auto idxs = r.integers(t, "full_attn_idxs", "full_attn_idxs", 0, 1 << 20);
        for (int i = 0; i < n; ++i)
          types.push_back(!idxs || std::find(idxs->begin(), idxs->end(), i) != idxs->end() ? "full_attention" : "conv");
        notes.push_back(std::string("layer types from full_attn_idxs") + (idxs ? "" : " (absent: every layer attention)") + " (" + src + ")");
      }
      check_types(r, types, {"full_attention", "conv"}, fam);
      for (const auto& ty : types)
        out.push_back(ty == "full_attention" ? rope(ty, variant{}) : none(ty, layer_kind::conv, "short convolution: no RoPE (" + src + ")"));
      break;
    }
    case layer_rule::granite_hybrid:
    case layer_rule::bamba:
    case layer_rule::zamba2: {
      std::vector<std::string> types;
      const char* key = fam.row.layers == layer_rule::zamba2 ? "layers_block_type" : "layer_types";
      auto given = r.strings(t, "layers_block_type", "layers_block_type");
      if (given && lt && *given != *lt) r.fail("layers_block_type", "contradicts layer_types");
      if (!given) given = lt;
      if (given && n > 0 && static_cast<int>(given->size()) != n)
        r.fail(key, "has " + std::to_string(given->size()) + " entries; num_hidden_layers is " + std::to_string(n));
      if (fam.row.layers == layer_rule::bamba) {
        const auto idxs = r.integers(t, "attn_layer_indices", "attn_layer_indices", 0, 1 << 20);
        for (int i = 0; i < n; ++i)
          types.push_back(idxs && std::find(idxs->begin(), idxs->end(), i) != idxs->end() ? "attention" : "mamba");
        notes.push_back(std::string("layer types from attn_layer_indices") + (idxs ? "" : " (absent: every layer Mamba 2)") + " (" + src + ")");
      } else if (given) {
        types = *given;
      } else if (fam.row.layers == layer_rule::zamba2) {
        if (n != 54) r.fail("layers_block_type", "missing; Zamba2Config's default list is for 54 layers, this config has " + std::to_string(n));
        types.assign(54, "mamba");
        for (int i : {6, 12, 18, 24, 30, 36, 42, 47, 51}) types[static_cast<std::size_t>(i)] = "hybrid";
        notes.push_back("layer types: Zamba2Config's default layers_block_type (" + src + ")");
      } else {
        types.assign(static_cast<std::size_t>(n), "mamba");
        notes.push_back("layer_types absent: every layer Mamba 2 (" + src + ")");
      }
      const bool zamba = fam.row.layers == layer_rule::zamba2;
      if (zamba) check_types(r, types, {"mamba", "hybrid"}, fam, key);
      else check_types(r, types, {"mamba", "attention"}, fam);
      bool rotates = true;
      std::string cond;
      if (fam.row.layers == layer_rule::granite_hybrid) {
        const auto pe = r.string(t, "position_embedding_type", "position_embedding_type");
        rotates = pe && *pe == "rope";
        cond = "position_embedding_type " + (pe ? "\"" + *pe + "\"" : std::string("absent (class default None)"));
        if (pe && *pe != "rope" && *pe != "nope") r.fail("position_embedding_type", "must be \"rope\" or \"nope\", got \"" + *pe + "\"");
      } else if (zamba) {
        const auto mem = r.boolean(t, "use_mem_rope", "use_mem_rope");
        rotates = mem.value_or(false);
        cond = "use_mem_rope " + std::string(mem ? (*mem ? "true" : "false") : "absent (class default false)");
      }
      for (const auto& ty : types) {
        if (ty == "mamba") out.push_back(none(ty, layer_kind::mamba, "Mamba 2 mixer: no RoPE (" + src + ")"));
        else if (rotates) out.push_back(rope(ty, variant{}));
        else out.push_back(none(ty, layer_kind::nope, "attention without RoPE: " + cond + " (" + src + ")"));
      }
      break;
    }
    case layer_rule::recurrent: {
      auto bt = r.strings(t, "block_types", "block_types");
      if (bt && bt->empty()) r.fail("block_types", "is empty");
      const std::vector<std::string> cycle = bt ? *bt : std::vector<std::string>{"recurrent", "recurrent", "attention"};
      check_types(r, cycle, {"recurrent", "attention"}, fam, "block_types");
      for (int i = 0; i < n; ++i) {
        const std::string& ty = cycle[static_cast<std::size_t>(i) % cycle.size()];
        out.push_back(ty == "attention" ? rope(ty, variant{}) : none(ty, layer_kind::recurrent, "recurrent block (RG-LRU): no RoPE (" + src + ")"));
      }
      if (!bt) notes.push_back("block types: class default (recurrent, recurrent, attention) repeated (" + src + ")");
      break;
    }
    case layer_rule::modernbert: {
      const std::int64_t p = period(r, t, "global_attn_every_n_layers", 3);
      std::vector<std::string> def;
      for (int i = 0; i < n; ++i) def.push_back(i % p == 0 ? "full_attention" : "sliding_attention");
      const auto types = types_or(def, "global_attn_every_n_layers = " + std::to_string(p));
      check_types(r, types, {"sliding_attention", "full_attention"}, fam);
      // A v5 block keyed by layer type says each type's base itself (parse_as drops the base key then).
      for (const auto& ty : types) {
        if (ty == "full_attention") out.push_back(rope(ty, variant{"", false, "global_rope_theta", 160000.0, "", 0, src}));
        else out.push_back(rope(ty, variant{"", false, "local_rope_theta", 10000.0, "", 0, src}));
      }
      break;
    }
    case layer_rule::mllama: {
      const auto cross = r.integers(t, "cross_attention_layers", "cross_attention_layers", 0, 1 << 20)
                             .value_or(std::vector<std::int64_t>{3, 8, 13, 18, 23, 28, 33, 38});
      for (int i = 0; i < n; ++i)
        out.push_back(std::find(cross.begin(), cross.end(), i) != cross.end()
                          ? none("cross_attention", layer_kind::cross_attention, "cross-attention layer: no RoPE (" + src + ")")
                          : rope("self_attention", variant{}));
      break;
    }
    case layer_rule::mimo_v2: {
      const auto pat = r.integers(t, "hybrid_layer_pattern", "hybrid_layer_pattern", 0, 1);
      if (!pat) r.fail("hybrid_layer_pattern", "missing; MiMo-V2-Flash's code reads it for every layer (" + src + ")");
      if (static_cast<int>(pat->size()) != n)
        r.fail("hybrid_layer_pattern", "has " + std::to_string(pat->size()) + " entries; num_hidden_layers is " + std::to_string(n));
      for (int i = 0; i < n; ++i)
        out.push_back((*pat)[static_cast<std::size_t>(i)] == 1
                          ? rope("sliding_attention", variant{"", false, t.contains("swa_rope_theta") ? "swa_rope_theta" : "", 0, "swa_head_dim", 0, src})
                          : rope("full_attention", variant{}));
      break;
    }
    case layer_rule::plamo2: {
      const bool enabled = r.boolean(t, "mamba_enabled", "mamba_enabled").value_or(true);
      const std::int64_t step = r.positive_length(t, "mamba_step", "mamba_step").value_or(2);
      for (int i = 0; i < n; ++i) {
        const bool mamba = enabled && (n <= step / 2 ? i != n - 1 : i % step != step / 2);
        out.push_back(mamba ? none("mamba", layer_kind::mamba, "Mamba 2 mixer: no RoPE (" + src + ")") : rope("attention", variant{}));
      }
      break;
    }
  }
  return out;
}

}  // namespace ropecheck::detail::json_read
