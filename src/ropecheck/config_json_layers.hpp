// ropecheck/config_json_layers.hpp — the whole config.json: which object holds the text model's
// rope fields (top level or text_config), which rope block each layer type reads, and the per-layer
// conventions (Gemma 3 local layers, Llama 4 NoPE layers, v5 rope_parameters keyed by layer type).
// Included at the end of config_json.hpp, its only user; the public entry points are here.
#pragma once

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "ropecheck/config_json.hpp"

namespace ropecheck {
namespace detail::json_read {

inline bool has_rope_fields(const json& o) {
  for (const char* k : {"rope_theta", "rope_scaling", "rope_parameters", "rotary_emb_base", "partial_rotary_factor",
                        "head_dim", "qk_rope_head_dim"})
    if (o.contains(k) && !o[k].is_null()) return true;
  return false;
}

// The rope block(s): nullptr-free map layer type -> (block, path). A plain block maps "" to it.
struct blocks {
  std::map<std::string, std::pair<const json*, std::string>> by_type;
  std::string primary;  // the key of the primary convention
};

inline blocks find_blocks(const reader& r, const json& t, std::vector<std::string>& notes) {
  static const json empty = json::object();
  blocks out;
  const auto rs = t.find("rope_scaling");
  const auto rp = t.find("rope_parameters");
  const bool has_rs = rs != t.end() && !rs->is_null();
  const bool has_rp = rp != t.end() && !rp->is_null();
  if (has_rs && !rs->is_object()) r.fail("rope_scaling", "must be an object or null, got " + describe(*rs));
  if (has_rp && !rp->is_object()) r.fail("rope_parameters", "must be an object or null, got " + describe(*rp));
  if (has_rs && has_rp && *rs != *rp)
    r.fail("rope_parameters", "contradicts rope_scaling: give one of them (v4 rope_scaling or v5 rope_parameters)");
  if (has_rp && !rp->empty() && !looks_like_rope_block(*rp)) {
    // v5 per-layer-type dict: {"full_attention": {...}, "sliding_attention": {...}}
    for (const auto& [k, v] : rp->items()) {
      if (!v.is_object()) r.fail("rope_parameters." + k, "must be an object in a per-layer-type rope_parameters");
      out.by_type[k] = {&v, "rope_parameters." + k};
    }
    if (rp->contains("full_attention")) {
      out.primary = "full_attention";
    } else if (rp->size() == 1) {
      out.primary = rp->begin().key();
    } else {
      std::string keys;
      for (const auto& [k, v] : rp->items()) keys += (keys.empty() ? "" : ", ") + k;
      r.fail("rope_parameters", "is keyed by layer type (" + keys +
                                    ") but has no \"full_attention\" entry; cannot tell which to check");
    }
    std::string others;
    for (const auto& [k, v] : rp->items())
      if (k != out.primary) others += (others.empty() ? "" : ", ") + k;
    notes.push_back("rope_parameters is keyed by layer type; the primary convention is \"" + out.primary + "\"" +
                    (others.empty() ? std::string() : " (per layer: " + others + ")"));
    return out;
  }
  if (has_rp) out.by_type[""] = {&*rp, "rope_parameters"};
  else if (has_rs) out.by_type[""] = {&*rs, "rope_scaling"};
  else out.by_type[""] = {&empty, ""};
  return out;
}

// The layer types, one per layer: layer_types, else Gemma 3's sliding_window_pattern, else Llama 4's
// no_rope_layers; empty when the config says nothing per layer.
struct layer_plan {
  std::vector<std::string> types;
  std::vector<bool> rotates;  // false: NoPE layer
};

inline layer_plan plan_layers(const reader& r, const json& t, int n, const architecture_facts* facts,
                              std::vector<std::string>& notes) {
  layer_plan p;
  if (auto lt = r.strings(t, "layer_types", "layer_types")) {
    if (n > 0 && static_cast<int>(lt->size()) != n)
      r.fail("layer_types", "has " + std::to_string(lt->size()) + " entries; num_hidden_layers is " + std::to_string(n));
    p.types = std::move(*lt);
  }
  const auto sched = facts ? facts->layers : layer_schedule::uniform;
  if (sched == layer_schedule::gemma3_local && p.types.empty() && n > 0) {
    // transformers models/gemma3/configuration_gemma3.py: layer_types from sliding_window_pattern
    // (default 6): "sliding_attention" if (i + 1) % pattern else "full_attention".
    const auto pat = r.positive_length(t, "sliding_window_pattern", "sliding_window_pattern").value_or(6);
    for (int i = 0; i < n; ++i) p.types.push_back((i + 1) % pat ? "sliding_attention" : "full_attention");
    notes.push_back("layer types from sliding_window_pattern = " + std::to_string(pat) +
                    " (transformers models/gemma3/configuration_gemma3.py Gemma3TextConfig)");
  }
  if (sched == layer_schedule::llama4_nope && n > 0) {
    // transformers models/llama4/configuration_llama4.py Llama4TextConfig: no_rope_layers[i] == 1 means
    // layer i uses RoPE; when empty, every no_rope_layer_interval-th layer (default 4) is NoPE;
    // modeling_llama4.py Llama4TextAttention: use_rope = config.no_rope_layers[layer_idx].
    auto nrl = r.integers(t, "no_rope_layers", "no_rope_layers", 0, 1);
    const auto interval = r.positive_length(t, "no_rope_layer_interval", "no_rope_layer_interval").value_or(4);
    if (nrl && !nrl->empty()) {
      if (static_cast<int>(nrl->size()) < n)
        r.fail("no_rope_layers", "has " + std::to_string(nrl->size()) + " entries; num_hidden_layers is " +
                                     std::to_string(n));
      for (int i = 0; i < n; ++i) p.rotates.push_back((*nrl)[static_cast<std::size_t>(i)] == 1);
    } else {
      for (int i = 0; i < n; ++i) p.rotates.push_back((i + 1) % interval != 0);
    }
    std::string nope;
    int count = 0;
    for (int i = 0; i < n; ++i)
      if (!p.rotates[static_cast<std::size_t>(i)]) {
        if (count++ < 6) nope += (nope.empty() ? "" : ", ") + std::to_string(i);
      }
    if (count > 6) nope += ", ...";
    notes.push_back(std::to_string(count) + " of " + std::to_string(n) + " layers have no RoPE (" + nope + "): " +
                    (nrl && !nrl->empty() ? std::string("no_rope_layers")
                                          : "no_rope_layer_interval = " + std::to_string(interval)) +
                    " (transformers models/llama4/modeling_llama4.py Llama4TextAttention.use_rope)");
    if (p.types.empty())
      for (int i = 0; i < n; ++i)
        p.types.push_back(p.rotates[static_cast<std::size_t>(i)] ? "chunked_attention" : "full_attention");
  }
  return p;
}

inline hf_config_parse parse(const json& j, const std::string& source) {
  const reader top(source);
  hf_config_parse out;
  if (nesting_depth(j) > max_nesting)
    top.fail("", "nests deeper than " + std::to_string(max_nesting) + " levels; not a config.json");
  if (!j.is_object()) top.fail("", "a config.json must be a JSON object, got " + describe(j));

  // The text model: text_config when it holds the rope fields (or the top level holds none).
  const json* tp = &j;
  const auto tc = j.find("text_config");
  if (tc != j.end() && tc->is_object() && (has_rope_fields(*tc) || !has_rope_fields(j))) tp = &*tc;
  const json& t = *tp;
  const reader r(source, tp == &j ? "" : "text_config.");
  std::vector<std::string>& notes = out.notes;

  std::string model_type = top.string(j, "model_type", "model_type").value_or("");
  std::string via;
  const architecture_facts* facts = facts_for(model_type, j, via);
  if (tp != &j) {
    const std::string inner = r.string(t, "model_type", "model_type").value_or("");
    if (!facts && !inner.empty()) facts = facts_for(inner, t, via);
    if (model_type.empty()) model_type = inner;
    notes.push_back("rope fields read from text_config" + (inner.empty() ? std::string() : " (\"" + inner + "\")"));
    for (const char* k : {"rope_theta", "rope_scaling", "rope_parameters"})
      if (j.contains(k) && !j[k].is_null() && t.contains(k) && j[k] != t[k])
        r.fail(k, std::string("contradicts the top-level ") + k + "; give it once");
    check_rope_keys(top, j, facts, model_type);
  }
  out.model_type = model_type;
  check_rope_keys(r, t, facts, model_type);

  const blocks B = find_blocks(r, t, notes);
  auto convention = [&](const std::string& key, std::vector<std::string>& into) {
    const auto& [b, bp] = B.by_type.at(key);
    return read_convention(r, t, *b, bp, !bp.empty(), facts, via, model_type, into);
  };
  out.config = convention(B.by_type.count("") ? std::string() : B.primary, notes);

  // --- per layer ---------------------------------------------------------------------------------
  const auto n = r.positive_length(t, "num_hidden_layers", "num_hidden_layers")
                     .value_or(r.positive_length(t, "num_layers", "num_layers")
                                   .value_or(r.positive_length(t, "n_layer", "n_layer").value_or(0)));
  if (n > 10000) r.fail("num_hidden_layers", "implausibly large: " + std::to_string(n));
  out.num_layers = static_cast<int>(n);
  const layer_plan P = plan_layers(r, t, out.num_layers, facts, notes);
  if (P.types.empty()) return out;

  std::map<std::string, rope_config> per_type;
  std::vector<std::string> more;  // notes of the other conventions (duplicates dropped below)
  for (const auto& [k, v] : B.by_type)
    if (!k.empty() && k != B.primary) per_type[k] = convention(k, more);
  const bool local = facts && facts->layers == layer_schedule::gemma3_local;
  if (local && !per_type.count("sliding_attention")) {
    // transformers models/gemma3/modeling_gemma3.py Gemma3TextModel: rotary_emb_local is built from a
    // copy of the config with rope_theta = rope_local_base_freq and rope_scaling = default.
    const auto lb = r.number(t, "rope_local_base_freq", "rope_local_base_freq");
    rope_config s = out.config;
    const rope_config plain;
    s.scaling = scaling_kind::none;
    s.factor = 1.0;
    s.attention_factor = plain.attention_factor;
    s.mscale = plain.mscale;
    s.mscale_all_dim = plain.mscale_all_dim;
    s.short_factor.clear();
    s.long_factor.clear();
    s.base = lb.value_or(10000.0);
    if (!(s.base > 1.0)) r.fail("rope_local_base_freq", "must be > 1, got " + fmt(s.base));
    check_derived(r, s);
    per_type["sliding_attention"] = s;
    notes.push_back("sliding_attention layers: base " + fmt(s.base) + " (rope_local_base_freq" +
                    (lb ? "" : ", absent: Gemma3TextConfig default 10000") +
                    "), no scaling: from model_type \"" + model_type +
                    "\" (transformers models/gemma3/modeling_gemma3.py Gemma3TextModel.rotary_emb_local)");
  }
  for (int i = 0; i < out.num_layers || (out.num_layers == 0 && i < static_cast<int>(P.types.size())); ++i) {
    layer_rope l;
    l.index = i;
    l.type = P.types[static_cast<std::size_t>(i)];
    const bool rotates = P.rotates.empty() || P.rotates[static_cast<std::size_t>(i)];
    if (rotates) l.config = per_type.count(l.type) ? per_type.at(l.type) : out.config;
    out.layers.push_back(std::move(l));
  }
  for (auto& m : more)
    if (std::find(notes.begin(), notes.end(), m) == notes.end()) notes.push_back(std::move(m));
  return out;
}

}  // namespace detail::json_read

// Parses an HF config.json object; errors name the JSON field and the problem.
inline hf_config_parse parse_hf_config_with_notes(const nlohmann::json& j, const std::string& source = "") {
  return detail::json_read::parse(j, source);
}

inline rope_config parse_hf_config(const nlohmann::json& j) { return detail::json_read::parse(j, "").config; }

inline hf_config_parse load_hf_config_with_notes(const std::filesystem::path& path) {
  const std::string name = path.string();
  std::ifstream in(path, std::ios::binary);
  if (!in) throw config_error(name, "", "cannot open file");
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/true, /*ignore_comments=*/false);
  } catch (const nlohmann::json::parse_error& e) {
    throw config_error(name, "", std::string("not valid JSON: ") + e.what());
  }
  return detail::json_read::parse(j, name);
}

inline rope_config load_hf_config(const std::filesystem::path& path) { return load_hf_config_with_notes(path).config; }

}  // namespace ropecheck
