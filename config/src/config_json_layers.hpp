// config/src/config_json_layers.hpp — the whole config.json: the text model, its family, the rope block
// each layer type reads, and which decoder layers rotate with which convention, by the family's layer
// rule (architectures.hpp layer_rule, one function each below, each citing the code it follows).
// Internal to ropecheck::config: included by config_json.cpp only, which defines the public entry points.
// Covered by tests/core/families_test.cpp (Family.DerivesWhatTheFamilysCodeDoesLayerByLayer),
// tests/core/architectures_test.cpp (Architectures.*) and tests/config/config_json_test.cpp
// (HfConfig.V5PerLayerRopeParametersGiveEachLayerItsTypesBlock, .UnscaledLayersKeepNoParameterOfTheRule).
#pragma once

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "ropecheck/config_json.hpp"
#include "config_json_family.hpp"
#include "config_json_layer_rules.hpp"
#include "config_json_geometry.hpp"
#include "config_json_scaling.hpp"

namespace ropecheck {
namespace detail::json_read {

// The rope block(s): layer type -> (block, path). A plain block maps "" to it.
struct blocks {
  std::map<std::string, std::pair<const json*, std::string>> by_type;
  fact_origin origin = fact_origin::file;  // class_default: the family's default block (the file has none)
};

inline blocks find_blocks(const reader& r, const json& t, const json& family_default) {
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
  const json* src = has_rp ? &*rp : has_rs ? &*rs : nullptr;
  std::string path = has_rp ? "rope_parameters" : "rope_scaling";
  if (!src && family_default.is_object()) {
    src = &family_default;
    path = "(class default rope block)";
    out.origin = fact_origin::class_default;
  }
  if (!src) {
    out.by_type[""] = {&empty, ""};
    return out;
  }
  if (!src->empty() && !looks_like_rope_block(*src)) {
    // v5 per-layer-type dict: {"full_attention": {...}, "sliding_attention": {...}}
    for (const auto& [k, v] : src->items()) {
      if (!v.is_object()) r.fail(path + "." + k, "must be an object in a per-layer-type rope_parameters");
      out.by_type[k] = {&v, path + "." + k};
    }
    return out;
  }
  out.by_type[""] = {src, path};
  return out;
}

// Refuses what validate() refuses and schedules that overflow, naming the field.
inline void check_derived(const reader& r, const rope_config& c) {
  try {
    validate(c);
    // Parameters valid one by one can still overflow the schedule (a factor of 1e-320); the schedule is
    // computed once at the training length and once past it (dynamic NTK, LongRoPE's long factors).
    if (c.bands() <= 4096) {
      (void)compute_frequencies<double>(c);
      const std::int64_t L = c.trained_length();
      (void)compute_frequencies<double>(c, L < std::numeric_limits<std::int64_t>::max() ? L + 1 : L);
    }
  } catch (const std::invalid_argument& e) {
    r.fail("(derived rope_config)", e.what());  // validate's message starts with "rope_config.<field>:"
  }
}

// The convention of one variant: geometry, layout, rule, then the variant's changes.
inline convention_facts read_convention(const reader& r, const json& t, const blocks& B, const family_view& fam,
                                        const convention_declaration& decl, const variant& v,
                                        std::vector<std::string>& notes) {
  convention_facts out;
  out.type = v.label;
  const fact_log log{out.facts};
  rope_config& c = out.config;
  const auto it = B.by_type.count(v.type) ? B.by_type.find(v.type) : B.by_type.find("");
  if (it == B.by_type.end()) {
    std::string keys;
    for (const auto& [k, b] : B.by_type) keys += (keys.empty() ? "" : ", ") + k;
    r.fail("rope_parameters", "is keyed by layer type (" + keys + ") but has no \"" + v.type + "\" entry for the layers of that type");
  }
  const json& b = *it->second.first;
  const std::string& bp = it->second.second;
  // GPT-J's config.json says "rotary": true; false would mean no RoPE at all.
  if (auto rot = r.boolean(t, "rotary", "rotary"); rot && !*rot) r.fail("rotary", "false: this model has no RoPE to check");
  family_view f = fam;
  json with_head;  // a per-type head size (Gemma 4 global_head_dim, MiMo swa_head_dim) read as head_dim
  if (!v.head_key.empty()) {
    with_head = t;
    const auto hk = r.positive_length(t, v.head_key.c_str(), v.head_key);
    if (!hk && v.head_default <= 0) r.fail(v.head_key, "missing; the " + v.label + " layers of " + fam.via + " read their head size from it");
    with_head["head_dim"] = hk.value_or(v.head_default);
    f.row.head = head_rule::head_dim_key;
  }
  const json& tt = v.head_key.empty() ? t : with_head;
  const std::string block_path = bp.empty() ? std::string("rope_scaling") : bp;
  const lengths L = read_geometry(r, tt, b, block_path, f, decl, c, log);
  if (!v.head_key.empty())
    log.add("head_dim", std::to_string(c.head_dim), t.contains(v.head_key) ? fact_origin::file : fact_origin::class_default,
            (t.contains(v.head_key) ? v.head_key : v.head_key + " absent: class default") + " (" + v.source + ")");
  read_layout(r, t, f, decl, c, log, notes);
  const std::string rope_type = read_rule(r, rule_inputs{b, block_path, L.mpe, L.orig, f.declared ? nullptr : &f.row, std::string(f.row.model_type), B.origin,
                           std::string(f.row.block_keys), decl.engine, decl.max_model_len, f.row.head == head_rule::mla},
            c, log);
  vllm_convention(r, t, f.row.head == head_rule::mla, decl, c, log);
  if (fam.row.quirk == family_quirk::hunyuan_alpha && c.scaling == scaling_kind::ntk && !t.contains("head_dim"))
    r.fail("head_dim", "missing; HunYuan's NTK-alpha base reads config.head_dim for its exponent d/(d-2), None without it "
                       "(transformers models/hunyuan_v1_dense/modeling_hunyuan_v1_dense.py HunYuanDenseV1RotaryEmbedding.__init__)");
  if (fam.row.layers == layer_rule::gemma4 && v.head_key == "global_head_dim" && rope_type != "proportional") {
    const auto hd = r.positive_length(t, "head_dim", "head_dim").value_or(fam.row.head_default);
    if (hd != c.head_dim)
      r.fail(block_path + ".rope_type", "not \"proportional\" on Gemma 4's full_attention layers: the code then builds a table of head_dim = " +
                                            std::to_string(hd) + " coordinates for a global_head_dim = " + std::to_string(c.head_dim) +
                                            " head, which the attention cannot apply (" + v.source + ")");
  }
  if (v.unscaled && c.scaling != scaling_kind::none) {
    // Every parameter of the rule back to its default (not only those the judge reads for
    // scaling none): the layer's convention equals a default one, facts and all.
    const rope_config plain;
    c.scaling = plain.scaling;
    c.factor = plain.factor;
    c.beta_fast = plain.beta_fast;
    c.beta_slow = plain.beta_slow;
    c.truncate = plain.truncate;
    c.attention_factor = plain.attention_factor;
    c.mscale = plain.mscale;
    c.mscale_all_dim = plain.mscale_all_dim;
    c.low_freq_factor = plain.low_freq_factor;
    c.high_freq_factor = plain.high_freq_factor;
    c.short_factor.clear();
    c.long_factor.clear();
    c.short_mscale = plain.short_mscale;
    c.long_mscale = plain.long_mscale;
    log.add("scaling", "default", fact_origin::family_code, "no scaling on " + v.label + " layers: " + v.source);
    std::erase_if(out.facts, [&](const fact& x) {
      return x.field == "factor" || x.field == "attention_factor" || x.field == "beta_fast/beta_slow" || x.field == "mixed_b" ||
             x.field.starts_with(block_path + ".");  // the rule's block, not read on these layers
    });
  }
  if (!v.base_key.empty()) {
    const auto lb = r.number(t, v.base_key.c_str(), v.base_key);
    c.base = lb.value_or(v.base_default);
    if (!(c.base > 1.0)) r.fail(v.base_key, "must be > 1, got " + fmt(c.base));
    log.add("base", fmt(c.base), lb ? fact_origin::file : fact_origin::class_default,
            (lb ? v.base_key : v.base_key + " absent: class default " + fmt(v.base_default)) + " (" + v.source + ")");
  }
  check_derived(r, c);
  return out;
}

// A convention in one line, for messages.
inline std::string judge_line(const rope_config& c) {
  return std::string(to_string(c.pair_layout)) + ", head_dim " + std::to_string(c.head_dim) + ", rotary_dim " +
         std::to_string(c.rotary_dim) + ", base " + fmt(c.base) + ", " + std::string(to_string(c.scaling));
}

// The lightning indexer's RoPE (DeepSeek-V3.2, GLM-5): the first qk_rope_head_dim of index_head_dim
// coordinates, the attention's table, its own layout (indexer_rope_interleave).
inline convention_facts indexer_convention(const reader& r, const json& t, const convention_facts& attn, const family_view& fam) {
  convention_facts out;
  out.type = "indexer";
  out.config = attn.config;
  const fact_log log{out.facts};
  rope_config& c = out.config;
  const auto ihd = r.positive_length(t, "index_head_dim", "index_head_dim");
  c.head_dim = static_cast<int>(ihd.value_or(128));
  log.add("head_dim", std::to_string(c.head_dim), ihd ? fact_origin::file : fact_origin::class_default,
          ihd ? std::string("index_head_dim") : "index_head_dim absent: class default 128");
  c.rotary_dim = attn.config.rotary_dim;
  log.add("rotary_dim", std::to_string(c.rotary_dim), fact_origin::family_code,
          "the first qk_rope_head_dim coordinates of the indexer head (" + std::string(fam.row.indexer_source) + ")");
  const auto ri = r.boolean(t, "indexer_rope_interleave", "indexer_rope_interleave");
  c.pair_layout = ri ? (*ri ? layout::interleaved : layout::half_split) : *fam.row.indexer;
  c.outputs = output_order::in_place;
  log.add("layout", std::string(to_string(c.pair_layout)), ri ? fact_origin::file : fact_origin::class_default,
          ri ? std::string("indexer_rope_interleave") : "indexer_rope_interleave absent: " + std::string(fam.row.indexer_source));
  for (const auto& f : attn.facts)
    if (f.field == "base" || f.field == "scaling" || f.field == "factor") log.add(f.field, f.value, f.origin, f.source + " (shared with the attention)");
  check_derived(r, c);
  return out;
}

inline hf_config_parse parse_as(const json& j, const std::string& source, const convention_declaration& decl,
                                const architecture_facts* forced) {
  const reader top(source);
  hf_config_parse out;
  if (nesting_depth(j) > max_nesting)
    top.fail("", "nests deeper than " + std::to_string(max_nesting) + " levels; not a config.json");
  if (!j.is_object()) top.fail("", "a config.json must be a JSON object, got " + describe(j));

  const text_model tm = find_text_model(j);
  const json& t = *tm.t;
  const reader r(source, tm.path);
  std::vector<std::string>& notes = out.notes;
  out.text_model = tm.path.empty() ? "" : tm.path.substr(0, tm.path.size() - 1);
  family_view fam = resolve_family(top, r, j, t, decl, out.model_type, forced);
  out.family = std::string(fam.row.family);
  out.via = fam.via;
  if (fam.declared) out.assumptions.push_back("no facts for " + (out.model_type.empty() ? std::string("this model") : "model_type \"" + out.model_type + "\"") +
                                              ": convention declared by " + fam.via);
  if (fam.row.quirk == family_quirk::text_config_only && tm.path.empty())
    throw config_error(source, "text_config", "missing: " + fam.via + " builds its text model from text_config and does not forward "
                                              "top-level rope fields to it (" + std::string(fam.row.base_source) + "); give text_config");
  if (fam.row.quirk == family_quirk::falcon_alibi && r.boolean(t, "alibi", "alibi").value_or(false))
    throw config_error(source, r.prefix() + "alibi", "true: Falcon then uses ALiBi, not RoPE (transformers models/falcon/modeling_falcon.py "
                                                     "FalconAttention: rotary = not alibi); no RoPE to check: its ALiBi is claimed by the bias "
                                                     "reader (parse_bias_config, `ropecheck explain --config` prints it)");
  if (fam.row.quirk == family_quirk::esm_rotary) {
    const auto pe = r.string(t, "position_embedding_type", "position_embedding_type").value_or("absolute");
    if (pe != "rotary")
      throw config_error(source, r.prefix() + "position_embedding_type",
                         "\"" + pe + "\": ESM rotates only with \"rotary\" (transformers models/esm/modeling_esm.py EsmSelfAttention)");
  }
  if (fam.row.quirk == family_quirk::baichuan) {
    // vLLM vllm/model_executor/models/baichuan.py: BaichuanForCausalLM uses RoPE only at hidden_size 4096
    // (Baichuan 2 7B); other sizes (13B) use ALiBi; BaiChuanForCausalLM (Baichuan-7B) always RoPE.
    std::string cls;
    (void)facts_by_class(j, cls);
    const auto hidden = r.positive_length(t, "hidden_size", "hidden_size");
    if (cls == "BaichuanForCausalLM" && hidden && *hidden != 4096)
      throw config_error(source, r.prefix() + "hidden_size", std::to_string(*hidden) + " with BaichuanForCausalLM: Baichuan 2 13B uses ALiBi, "
                                                             "not RoPE (vLLM vllm/model_executor/models/baichuan.py); nothing to check");
  }
  if (&t != &j)
    for (const char* k : {"rope_theta", "rope_scaling", "rope_parameters"})
      if (j.contains(k) && !j[k].is_null() && t.contains(k) && j[k] != t[k])
        r.fail(k, std::string("contradicts the top-level ") + k + "; give it once");
  if (!tm.path.empty()) {
    notes.push_back("rope fields read from " + out.text_model);
    check_rope_keys(top, j, fam);
  }
  check_rope_keys(r, t, fam);

  json family_default;
  if (!fam.row.default_rope.empty() && !fam.declared) family_default = json::parse(fam.row.default_rope);
  const blocks B = find_blocks(r, t, family_default);
  std::map<variant, int> index;  // variant -> conventions[]
  auto convention_of = [&](const variant& v) {
    if (const auto it = index.find(v); it != index.end()) return it->second;
    std::vector<std::string> more;
    convention_facts cf = read_convention(r, t, B, fam, decl, v, more);
    for (auto& m : more)
      if (std::find(notes.begin(), notes.end(), m) == notes.end()) notes.push_back(std::move(m));
    for (std::size_t i = 0; i < out.conventions.size(); ++i)
      if (out.conventions[i].config == cf.config && out.conventions[i].facts == cf.facts) return index[v] = static_cast<int>(i);
    out.conventions.push_back(std::move(cf));
    return index[v] = static_cast<int>(out.conventions.size()) - 1;
  };

  // --- per layer ---------------------------------------------------------------------------------
  std::optional<std::int64_t> layers_given;
  for (const char* k : {"num_hidden_layers", "num_layers", "n_layer", "n_layers", "num_transformer_layers"})
    layers_given = r.agree(layers_given, "num_hidden_layers", r.positive_length(t, k, k), k);
  // No count, but a layer_types list (v5 files): the list says how many layers there are.
  if (!layers_given && t.contains("layer_types") && t["layer_types"].is_array())
    layers_given = static_cast<std::int64_t>(t["layer_types"].size());
  const std::int64_t n = layers_given.value_or(0);
  if (n > 10000) r.fail("num_hidden_layers", "implausibly large: " + std::to_string(n));
  out.num_layers = static_cast<int>(n);
  const bool keyed = B.by_type.count("") == 0;
  if (n == 0) {
    // No layer count: one convention (the family's first rotating layer type when keyed by type).
    if (fam.row.layers != layer_rule::uniform && fam.row.layers != layer_rule::typed_blocks)
      r.fail("num_hidden_layers", "missing; " + fam.via + " decides per layer which layers rotate (" +
                                      std::string(describe(fam.row.layers)) + ")");
    variant v;
    if (keyed) v.type = v.label = B.by_type.count("full_attention") ? "full_attention" : B.by_type.begin()->first;
    out.config = out.conventions[static_cast<std::size_t>(convention_of(v))].config;
  } else {
    const std::vector<planned_layer> plan = plan_layers(r, t, out.num_layers, fam, notes);
    bool first = true;
    for (int i = 0; i < out.num_layers; ++i) {
      const planned_layer& p = plan[static_cast<std::size_t>(i)];
      layer_rope l;
      l.index = i;
      l.type = p.type.empty() ? "full_attention" : p.type;
      l.kind = p.kind;
      l.why = p.why;
      if (p.kind == layer_kind::rope) {
        variant v = p.v;
        if (!keyed) {
          v.type = "";
        } else if (B.by_type.count(v.type)) {
          // A block of its own for the layer type (v5): it says the base and the rule itself.
          v.base_key.clear();
          v.unscaled = false;
        }
        l.convention = convention_of(v);
        l.config = out.conventions[static_cast<std::size_t>(l.convention)].config;
        if (first) {
          first = false;
          out.primary_layer = i;
          out.config = *l.config;
        }
      }
      out.layers.push_back(std::move(l));
    }
    if (first) {
      // No layer rotates: explain shows the layers; a door has nothing to check (primary_convention refuses).
      out.primary_layer = -1;
      std::string kinds;
      for (const auto& l : out.layers)
        if (kinds.find(std::string(to_string(l.kind))) == std::string::npos) kinds += (kinds.empty() ? "" : ", ") + std::string(to_string(l.kind));
      out.no_rope = "no layer of this model rotates (" + kinds + ": " + out.layers.front().why + ")";
    } else if (out.layers[static_cast<std::size_t>(out.primary_layer)].convention != 0) {
      // conventions[0] is the primary's.
      const int p = out.layers[static_cast<std::size_t>(out.primary_layer)].convention;
      std::swap(out.conventions[0], out.conventions[static_cast<std::size_t>(p)]);
      for (auto& l : out.layers) l.convention = l.convention == 0 ? p : l.convention == p ? 0 : l.convention;
    }
  }
  if (fam.row.indexer && !out.conventions.empty()) out.indexer = indexer_convention(r, t, out.conventions.front(), fam);
  return out;
}

// model_type decides the family; when the architectures class names another family whose code (an engine
// loading by class, as vLLM does) would read the file differently, the file is ambiguous: refused, naming both.
inline hf_config_parse parse(const json& j, const std::string& source, const convention_declaration& decl) {
  hf_config_parse out = parse_as(j, source, decl, nullptr);
  if (out.family == "declared" || !j.is_object()) return out;
  std::string cls;
  const architecture_facts* by_class = facts_by_class(j, cls);
  const architecture_facts* by_type = find_architecture(out.model_type);
  // A multimodal wrapper's class names the wrapper (Glm46VForConditionalGeneration), whose text model decides.
  const auto mt = j.find("model_type");
  const architecture_facts* outer = mt != j.end() && mt->is_string() ? find_architecture(mt->get<std::string>()) : nullptr;
  if (!by_class || !by_type || by_class == by_type || by_class == outer || by_class->support != family_support::rope) return out;
  hf_config_parse alt;
  try {
    alt = parse_as(j, source, decl, by_class);
  } catch (const config_error& e) {
    out.notes.push_back("architectures \"" + cls + "\" names " + std::string(by_class->family) + ", whose facts cannot read this file (" +
                        e.problem() + "); read with model_type \"" + out.model_type + "\"'s");
    return out;
  }
  bool same = alt.layers.size() == out.layers.size() && alt.config == out.config;
  for (std::size_t i = 0; same && i < out.layers.size(); ++i) same = alt.layers[i].config == out.layers[i].config;
  if (same) return out;
  const std::string field = out.text_model.empty() ? "model_type" : out.text_model + ".model_type";
  throw config_error(source, field,
                     "\"" + out.model_type + "\" (" + out.family + ") and architectures \"" + cls + "\" (" + std::string(by_class->family) +
                         ") name families whose code reads this file differently (" + judge_line(out.config) + " vs " +
                         judge_line(alt.config) + "): an engine that loads by model_type and one that loads by class would "
                         "rotate differently; fix the file, or declare the convention with flags");
}

}  // namespace detail::json_read

}  // namespace ropecheck
