// ropecheck/config_json_scaling.hpp — the rope block of a config.json (v4 rope_scaling, v5
// rope_parameters): the rope type, its parameters, and M-RoPE sections. Every key the block holds
// must be one this rope type reads: anything else is an error naming it, never a silent default.
//
// Heavy header (nlohmann/json): include it only through config_json.hpp.
#pragma once

#include <algorithm>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "ropecheck/architectures.hpp"
#include "ropecheck/config.hpp"
#include "ropecheck/config_json_reader.hpp"
#include "ropecheck/schedule.hpp"

namespace ropecheck::detail::json_read {

inline constexpr const char* known_rope_types =
    "default, linear, dynamic, yarn, llama3, longrope (legacy: su -> longrope, mrope -> default with M-RoPE "
    "sections; ropecheck: ntk)";

// The keys each rope type reads (HF modeling_rope_utils.py _compute_*_parameters and its
// _validate_*_rope_parameters; "type" is the v4 spelling of rope_type; rope_theta and
// partial_rotary_factor sit in the v5 block; original_max_position_embeddings is a length every
// rule may carry in v5; mrope_section / mrope_interleaved are Qwen2-VL's and Qwen3-VL's).
inline std::vector<std::string> block_keys(scaling_kind k) {
  std::vector<std::string> keys{"rope_type", "type", "rope_theta", "partial_rotary_factor",
                                "original_max_position_embeddings", "mrope_section", "mrope_interleaved"};
  auto add = [&](std::initializer_list<const char*> more) { keys.insert(keys.end(), more.begin(), more.end()); };
  switch (k) {
    case scaling_kind::none: break;
    case scaling_kind::linear:
    case scaling_kind::ntk:
    case scaling_kind::dynamic_ntk: add({"factor"}); break;
    case scaling_kind::yarn:
      add({"factor", "beta_fast", "beta_slow", "mscale", "mscale_all_dim", "attention_factor", "truncate"});
      break;
    case scaling_kind::llama3: add({"factor", "low_freq_factor", "high_freq_factor"}); break;
    case scaling_kind::longrope: add({"factor", "short_factor", "long_factor", "attention_factor"}); break;
  }
  return keys;
}

// What the block's rope type, lengths and family fix; mpe/orig are the lengths already read.
struct rule_inputs {
  const json& b;                    // the block ({} when the config has none)
  const std::string& bp;            // its JSON path
  std::optional<std::int64_t> mpe;  // max_position_embeddings
  std::optional<std::int64_t> orig; // original_max_position_embeddings (top level or block)
  const architecture_facts* facts;  // nullptr: no facts for the model type
  std::string model_type;
};

// Reads the rope type and its parameters into c (rotary_dim already set: LongRoPE sizes its lists
// by it), then the M-RoPE sections.
inline void read_rule(const reader& r, const rule_inputs& in, rope_config& c, std::vector<std::string>& notes) {
  const json& b = in.b;
  const std::string& bp = in.bp;
  const auto mpe = in.mpe;
  const auto orig = in.orig;
  auto at = [&](const char* k) { return bp + "." + k; };
  // HF's Qwen2-VL config rewrites type "mrope" as rope_type "default", so saved files may hold both.
  auto rt1 = r.string(b, "rope_type", at("rope_type"));
  auto rt2 = r.string(b, "type", at("type"));
  if (rt1 && rt2 && ((*rt1 == "mrope" && *rt2 == "default") || (*rt1 == "default" && *rt2 == "mrope")))
    rt1 = rt2 = std::string("mrope");
  const auto rt = r.agree(rt1, at("rope_type"), rt2, at("type"));
  const std::string type_field = b.contains("rope_type") ? at("rope_type") : at("type");
  const std::string type = rt.value_or("default");
  if (type == "default") c.scaling = scaling_kind::none;
  else if (type == "mrope") c.scaling = scaling_kind::none;  // Qwen2-VL; sections read below
  else if (type == "linear") c.scaling = scaling_kind::linear;
  else if (type == "dynamic") c.scaling = scaling_kind::dynamic_ntk;
  else if (type == "ntk") c.scaling = scaling_kind::ntk;
  else if (type == "yarn") c.scaling = scaling_kind::yarn;
  else if (type == "llama3") c.scaling = scaling_kind::llama3;
  else if (type == "longrope" || type == "su") c.scaling = scaling_kind::longrope;
  else r.fail(type_field, "unknown rope type \"" + type + "\"; known: " + known_rope_types);

  const auto factor = r.number(b, "factor", at("factor"));
  if (factor && !(*factor > 0.0)) r.fail(at("factor"), "must be > 0, got " + fmt(*factor));
  auto need_factor = [&] {
    if (!factor) r.fail(at("factor"), "missing; rope type \"" + type + "\" requires a scaling factor");
    return *factor;
  };
  auto need_mpe = [&](const char* why) {
    if (!mpe) r.fail("max_position_embeddings", std::string("missing; ") + why);
  };
  auto attention = [&] {
    if (auto af = r.number(b, "attention_factor", at("attention_factor"))) {
      if (!(*af > 0.0)) r.fail(at("attention_factor"), "must be > 0, got " + fmt(*af));
      c.attention_factor = af;
    }
  };

  switch (c.scaling) {
    case scaling_kind::none:
      break;
    case scaling_kind::linear:
    case scaling_kind::ntk:
      c.factor = need_factor();
      break;
    case scaling_kind::dynamic_ntk:
      c.factor = need_factor();
      need_mpe("dynamic NTK rescales past max_position_embeddings");
      break;
    case scaling_kind::yarn: {
      if (factor) {
        c.factor = *factor;
        if (orig && mpe && *factor != static_cast<double>(*mpe) / static_cast<double>(*orig))
          notes.push_back("yarn factor " + fmt(*factor) + " differs from max_position_embeddings / "
                              "original_max_position_embeddings = " +
                              fmt(static_cast<double>(*mpe) / static_cast<double>(*orig)) +
                              "; using the explicit factor (transformers v5; 4.4x-4.5x used the ratio)");
      } else if (orig) {
        need_mpe("yarn without factor takes max_position_embeddings / original_max_position_embeddings");
        c.factor = static_cast<double>(*mpe) / static_cast<double>(*orig);
        notes.push_back("yarn factor not given; using max_position_embeddings / original_max_position_embeddings = " +
                            fmt(c.factor));
      } else {
        need_factor();
      }
      if (!orig) need_mpe("yarn without original_max_position_embeddings reads the training length from it");
      // HF: `rope_parameters.get("beta_fast") or 32`: absent, null or 0 mean the default.
      if (auto v = r.number(b, "beta_fast", at("beta_fast")); v && *v != 0.0) c.beta_fast = *v;
      if (auto v = r.number(b, "beta_slow", at("beta_slow")); v && *v != 0.0) c.beta_slow = *v;
      if (c.beta_fast < 0.0) r.fail(at("beta_fast"), "must be > 0, got " + fmt(c.beta_fast));
      if (c.beta_slow < 0.0) r.fail(at("beta_slow"), "must be > 0, got " + fmt(c.beta_slow));
      if (c.beta_fast < c.beta_slow)
        r.fail(at("beta_fast"), "must be >= beta_slow (" + fmt(c.beta_fast) + " < " + fmt(c.beta_slow) + ")");
      if (auto v = r.boolean(b, "truncate", at("truncate"))) c.truncate = *v;
      c.mscale = r.number(b, "mscale", at("mscale"));
      c.mscale_all_dim = r.number(b, "mscale_all_dim", at("mscale_all_dim"));
      attention();
      break;
    }
    case scaling_kind::llama3: {
      c.factor = need_factor();
      if (!orig) r.fail(at("original_max_position_embeddings"), "missing; llama3 needs the pre-training length");
      const auto lo = r.number(b, "low_freq_factor", at("low_freq_factor"));
      const auto hi = r.number(b, "high_freq_factor", at("high_freq_factor"));
      if (!lo) r.fail(at("low_freq_factor"), "missing; llama3 requires it");
      if (!hi) r.fail(at("high_freq_factor"), "missing; llama3 requires it");
      if (!(*lo > 0.0)) r.fail(at("low_freq_factor"), "must be > 0, got " + fmt(*lo));
      if (!(*hi >= *lo))
        r.fail(at("high_freq_factor"), "must be >= low_freq_factor (" + fmt(*hi) + " < " + fmt(*lo) + ")");
      c.low_freq_factor = *lo;
      c.high_freq_factor = *hi;
      break;
    }
    case scaling_kind::longrope: {
      auto sf = r.numbers(b, "short_factor", at("short_factor"));
      auto lf = r.numbers(b, "long_factor", at("long_factor"));
      if (!sf) r.fail(at("short_factor"), "missing; longrope requires short_factor and long_factor");
      if (!lf) r.fail(at("long_factor"), "missing; longrope requires short_factor and long_factor");
      const auto want = static_cast<std::size_t>(c.rotary_dim / 2);
      if (sf->size() != want)
        r.fail(at("short_factor"), "has " + std::to_string(sf->size()) + " entries; rotary_dim/2 = " +
                                       std::to_string(want) + " needed");
      if (lf->size() != want)
        r.fail(at("long_factor"), "has " + std::to_string(lf->size()) + " entries; rotary_dim/2 = " +
                                      std::to_string(want) + " needed");
      c.short_factor = std::move(*sf);
      c.long_factor = std::move(*lf);
      if (factor) {
        c.factor = *factor;
      } else if (orig) {
        need_mpe("longrope without factor takes max_position_embeddings / original_max_position_embeddings");
        c.factor = static_cast<double>(*mpe) / static_cast<double>(*orig);
      } else {
        need_mpe("longrope needs a training length");
        c.factor = 1.0;  // HF: ratio of max_position_embeddings to itself
      }
      attention();
      break;
    }
  }

  // --- unknown keys ------------------------------------------------------------------------------
  const auto allowed = block_keys(c.scaling);
  for (const auto& [k, v] : b.items()) {
    if (std::find(allowed.begin(), allowed.end(), k) != allowed.end()) continue;
    std::string list;
    for (const auto& a : allowed) list += (list.empty() ? "" : ", ") + a;
    r.fail(bp + "." + k, "not a key ropecheck reads for rope type \"" + type + "\" (it reads: " + list +
                             "); refusing to guess what it changes");
  }

  // --- M-RoPE ----------------------------------------------------------------------------------------
  const auto section = r.integers(b, "mrope_section", at("mrope_section"), 0, 1 << 20);
  const auto interleaved = r.boolean(b, "mrope_interleaved", at("mrope_interleaved"));
  if (type == "mrope" && !section) r.fail(at("mrope_section"), "missing; rope type \"mrope\" needs the sections");
  if (interleaved && !section) r.fail(at("mrope_interleaved"), "given without mrope_section");
  if (section) {
    c.mrope_section.assign(section->begin(), section->end());
    if (interleaved) {
      c.mrope = *interleaved ? mrope_kind::interleaved : mrope_kind::contiguous;
      if (in.facts && in.facts->mrope != mrope_kind::none && in.facts->mrope != c.mrope)
        notes.push_back(std::string("M-RoPE ") + std::string(to_string(c.mrope)) + ": from " + at("mrope_interleaved") +
                        ", which contradicts model_type \"" + in.model_type + "\" (" +
                        std::string(in.facts->mrope_source) + "); using the field");
    } else if (in.facts && in.facts->mrope != mrope_kind::none) {
      c.mrope = in.facts->mrope;
      notes.push_back(std::string("M-RoPE sections ") + std::string(to_string(c.mrope)) + ": from model_type \"" +
                      in.model_type + "\" (" + std::string(in.facts->mrope_source) + ")");
    } else {
      c.mrope = mrope_kind::contiguous;
      notes.push_back("M-RoPE sections contiguous: " + at("mrope_section") +
                      " without mrope_interleaved, read as Qwen2-VL's contiguous blocks "
                      "(transformers models/qwen2_vl/modeling_qwen2_vl.py apply_multimodal_rotary_pos_emb)");
    }
    try {
      validate_mrope(c);
    } catch (const std::invalid_argument& e) {
      r.fail(at("mrope_section"), e.what());
    }
  }
}

}  // namespace ropecheck::detail::json_read
