// config/src/config_json_family.hpp — which object of a config.json holds the text model, which family's
// facts read it (model_type, the architectures class, or the user's declaration: never a guess), the
// layout and direction, and the keys with "rope"/"rotary" in their name the family reads. Covered by
// tests/core/architectures_test.cpp (Architectures.*: each family from its model type, and
// .TheArchitecturesClassNameFindsTheFamilyWhenModelTypeIsUnknown, .AModelTypeAndAClassThatDisagreeAreRefused,
// .AModelTypeWithoutFactsIsRefusedSayingHowToDeclareIt, .ADeclaredConventionIsRecordedAsAnAssumption).
//
// Heavy header (nlohmann/json): include it only through config_json.hpp.
#pragma once

#include <algorithm>
#include <cctype>
#include <string>
#include <vector>

#include "ropecheck/architectures.hpp"
#include "ropecheck/config.hpp"
#include "ropecheck/config_json.hpp"
#include "config_json_geometry.hpp"
#include "config_json_reader.hpp"

namespace ropecheck::detail::json_read {

inline bool has_rope_fields(const json& o) {
  for (const char* k : {"rope_theta", "rope_scaling", "rope_parameters", "rotary_emb_base", "partial_rotary_factor",
                        "head_dim", "qk_rope_head_dim"})
    if (o.contains(k) && !o[k].is_null()) return true;
  return false;
}

// The text model: the top level, or the sub-config a multimodal family keeps it in.
struct text_model {
  const json* t = nullptr;
  std::string path;  // "" or "text_config." (prefix of every field a message names)
};

inline text_model find_text_model(const json& j) {
  // Qwen2.5-Omni / Qwen3-Omni keep it under thinker_config.text_config (transformers
  // models/qwen2_5_omni/configuration_qwen2_5_omni.py Qwen2_5OmniThinkerConfig).
  if (const auto th = j.find("thinker_config"); th != j.end() && th->is_object())
    if (const auto tc = th->find("text_config"); tc != th->end() && tc->is_object())
      return {&*tc, "thinker_config.text_config."};
  for (const char* k : {"text_config", "llm_config", "language_config"}) {
    const auto tc = j.find(k);
    if (tc != j.end() && tc->is_object() && (has_rope_fields(*tc) || !has_rope_fields(j) || tc->contains("model_type")))
      return {&*tc, std::string(k) + "."};
  }
  return {&j, ""};
}

// "Glm4ForCausalLM" -> the row whose model_type squashes to "glm4" (lower case, no underscores).
inline const architecture_facts* facts_by_class(const json& j, std::string& cls_out) {
  const auto arch = j.find("architectures");
  if (arch == j.end() || !arch->is_array() || arch->empty() || !(*arch)[0].is_string()) return nullptr;
  std::string cls = (*arch)[0].get<std::string>();
  cls_out = cls;
  // Grok1ModelForCausalLM, GPT2LMHeadModel, Glm4ForCausalLM: every model-class suffix comes off.
  for (bool cut = true; cut;) {
    cut = false;
    for (const char* suffix : {"ForCausalLM", "ForConditionalGeneration", "LMHeadModel", "Model"})
      if (cls.size() > std::string(suffix).size() && cls.ends_with(suffix)) {
        cls.resize(cls.size() - std::string(suffix).size());
        cut = true;
      }
  }
  auto squash = [](std::string_view s) {
    std::string o;
    for (char ch : s)
      if (ch != '_' && ch != '-') o += static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    return o;
  };
  for (const auto& a : known_architectures())
    if (squash(a.model_type) == squash(cls)) return &a;
  return nullptr;
}

// The family whose facts read the text model t of j. Refuses (config_error) a model type without facts
// unless the user declared the convention, and a family without RoPE, naming why.
inline family_view resolve_family(const reader& top, const reader& r, const json& j, const json& t,
                                  const convention_declaration& decl, std::string& model_type,
                                  const architecture_facts* forced = nullptr) {
  const std::string outer = top.string(j, "model_type", "model_type").value_or("");
  const std::string inner = &t != &j ? r.string(t, "model_type", "model_type").value_or("") : std::string();
  family_view fam;
  const architecture_facts* a = nullptr;
  if (forced) {
    std::string cls;
    (void)facts_by_class(j, cls);
    fam.row = *forced;
    fam.via = "architectures \"" + cls + "\"";
    model_type = !inner.empty() ? inner : outer;
    return fam;
  }
  if (!inner.empty() && (a = find_architecture(inner))) {
    fam.via = "model_type \"" + inner + "\"";
    model_type = inner;
  } else if (!outer.empty() && (a = find_architecture(outer))) {
    fam.via = "model_type \"" + outer + "\"";
    model_type = outer;
  } else {
    std::string cls;
    if ((a = facts_by_class(j, cls))) fam.via = "architectures \"" + cls + "\"";
    model_type = !inner.empty() ? inner : outer;
  }
  if (a && a->support != family_support::rope) {
    const std::string field = top.prefix().empty() && !inner.empty() ? r.prefix() + "model_type" : "model_type";
    throw config_error(r.source(), field,
                       (a->support == family_support::no_rope ? "model_type \"" + std::string(a->model_type) + "\" (" +
                                                                    std::string(a->family) + ") has no RoPE to check: "
                                                              : "model_type \"" + std::string(a->model_type) + "\" (" +
                                                                    std::string(a->family) + "): its RoPE is not one ropecheck models: ") +
                           std::string(a->why));
  }
  if (a) {
    fam.row = *a;
    return fam;
  }
  // No facts: only a declaration makes a convention.
  const auto file_layout = r.string(t, "ropecheck_layout", "ropecheck_layout");
  if (decl.assume_llama) {
    fam.row = *find_architecture("llama");
    fam.via = "--assume-llama";
    fam.declared = true;
    return fam;
  }
  if (decl.pair_layout || file_layout) {
    architecture_facts generic{};
    generic.model_type = "declared";
    generic.family = "declared";
    generic.rotary = rotary_rule::partial_factor;  // partial_rotary_factor when the file gives one, else every coordinate
    generic.layout_source = decl.pair_layout ? "--layout" : "ropecheck_layout";
    fam.row = generic;
    fam.via = decl.pair_layout ? "--layout" : r.prefix() + "ropecheck_layout";
    fam.declared = true;
    return fam;
  }
  const std::string named = model_type.empty() ? std::string("no model_type") : "model_type \"" + model_type + "\"";
  throw config_error(
      r.source(), model_type.empty() ? "model_type" : (inner.empty() ? std::string("model_type") : r.prefix() + "model_type"),
      named + ": ropecheck has no facts for this family (which coordinates its code pairs, how many it rotates, which "
              "layers rotate), and will not guess them. Declare the convention: --layout half_split|interleaved "
              "[--rotary-dim N | --rotary-fraction F] (or \"ropecheck_layout\" in config.json), or --assume-llama to "
              "read the file as HF Llama's code does; `ropecheck explain --families` lists the families it knows");
}

// Layout, output order and direction: from the family (DeepSeek-V3's rope_interleave), or declared;
// ropecheck_layout on top.
inline void read_layout(const reader& r, const json& t, const family_view& fam, const convention_declaration& decl,
                        rope_config& c, const fact_log& log, std::vector<std::string>& notes) {
  const architecture_facts& a = fam.row;
  c.pair_layout = a.pair_layout;
  c.outputs = a.outputs;
  c.direction = a.direction;
  if (fam.declared && fam.via != "--assume-llama") {
    if (decl.pair_layout) c.pair_layout = *decl.pair_layout;
  }
  if (a.quirk == family_quirk::rope_interleave) {
    const auto ri = r.boolean(t, "rope_interleave", "rope_interleave");
    if (ri.value_or(true)) {
      c.pair_layout = layout::interleaved;
      c.outputs = output_order::half_split;
      log.add("layout", "interleaved", ri ? fact_origin::file : fact_origin::class_default,
              std::string("rope_interleave ") + (ri ? "true" : "absent (class default true)") + ": " + fam.cite(a.layout_source));
      log.add("outputs", "half_split", fact_origin::family_code, fam.cite(a.layout_source));
    } else {
      c.pair_layout = layout::half_split;
      c.outputs = output_order::in_place;
      log.add("layout", "half_split", fact_origin::file,
              "rope_interleave false: Llama's apply_rotary_pos_emb, rotate_half (transformers "
              "models/deepseek_v3/modeling_deepseek_v3.py)");
      log.add("outputs", "in_place", fact_origin::file, "rope_interleave false");
    }
  } else {
    log.add("layout", std::string(to_string(c.pair_layout)), fam.origin(), fam.cite(a.layout_source));
    if (c.outputs != output_order::in_place) log.add("outputs", std::string(to_string(c.outputs)), fam.origin(), fam.cite(a.layout_source));
  }
  if (c.direction != rotation_direction::forward)
    log.add("direction", std::string(to_string(c.direction)), fam.origin(), fam.cite(a.layout_source));
  if (auto lay = r.string(t, "ropecheck_layout", "ropecheck_layout")) {
    layout want{};
    if (*lay == "interleaved") want = layout::interleaved;
    else if (*lay == "half_split") want = layout::half_split;
    else r.fail("ropecheck_layout", "must be \"interleaved\" or \"half_split\", got \"" + *lay + "\"");
    if (!fam.declared && want != c.pair_layout)
      notes.push_back("ropecheck_layout " + *lay + " contradicts " + fam.via + " (" + std::string(to_string(c.pair_layout)) +
                      "); using ropecheck_layout, outputs in place");
    if (want != c.pair_layout) c.outputs = output_order::in_place;
    c.pair_layout = want;
    log.add("layout", *lay, fact_origin::declared, r.prefix() + "ropecheck_layout (the file's declaration)");
  }
}

// Keys of t with "rope" or "rotary" in their name: each must be one the family reads.
inline void check_rope_keys(const reader& r, const json& t, const family_view& fam) {
  const architecture_facts& a = fam.row;
  std::vector<std::string> known{"rope_scaling", "rope_parameters", "ropecheck_layout", "partial_rotary_factor",
                                 "rotary_pct", "rotary_dim", "rotary"};
  if (!a.base_key.empty()) known.emplace_back(a.base_key);
  if (a.head == head_rule::mla) known.emplace_back("qk_rope_head_dim");
  if (a.base_key != "rope_theta") known.emplace_back("rope_theta");  // refused with its reason by read_geometry
  switch (a.quirk) {
    case family_quirk::rope_interleave: known.emplace_back("rope_interleave"); break;
    case family_quirk::chatglm: known.insert(known.end(), {"rope_ratio", "original_rope"}); break;
    default: break;
  }
  if (a.indexer) known.emplace_back("indexer_rope_interleave");
  // The row's own keys, and those its layer rule reads (listed once, with the rule: layer_rule_keys).
  for (const std::string_view words : {a.extra_keys, layer_rule_keys(a.layers)})
    for (std::size_t s = 0, e; s < words.size(); s = e + 1) {
      e = words.find(' ', s);
      if (e == std::string_view::npos) e = words.size();
      if (std::find(known.begin(), known.end(), words.substr(s, e - s)) == known.end()) known.emplace_back(words.substr(s, e - s));
    }
  for (const auto& [k, v] : t.items()) {
    std::string low = k;
    for (char& ch : low) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    if (low.find("rope") == std::string::npos && low.find("rotary") == std::string::npos) continue;
    if (std::find(known.begin(), known.end(), k) != known.end()) continue;
    std::string list;
    for (const auto& g : known) list += (list.empty() ? "" : ", ") + g;
    if (k == "rope_interleave" || k == "indexer_rope_interleave" || k == "rope_local_base_freq" || k == "no_rope_layers" ||
        k == "no_rope_layer_interval" || k == "rope_ratio")
      r.fail(k, "not read by " + fam.via + " (" + std::string(a.family) + "): its code has no such switch, so ropecheck "
                "cannot tell what it changes (it reads: " + list + ")");
    r.fail(k, "not a rope field " + fam.via + " reads (it reads: " + list + "); refusing to guess what it changes");
  }
}

}  // namespace ropecheck::detail::json_read
