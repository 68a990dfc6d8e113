// config/src/config_json_scaling.hpp — the rope block of a config.json (v4 rope_scaling, v5
// rope_parameters): the rope type, its parameters, and M-RoPE sections. Every key the block holds must
// be one this rope type (or the family's code) reads: anything else is an error naming it. Covered by
// tests/config/config_json_test.cpp (HfConfig.*: each rope type's parameters, .UnknownRopeTypeListsTheKnownOnes;
// BrokenConfig.*) and tests/core/architectures_test.cpp (Architectures.AnUnknownKeyInTheRopeBlockIsAnErrorNamingIt,
// .MropeSectionsThatDoNotCoverTheBandsNameTheField).
//
// Heavy header (nlohmann/json): include it only through config_json.hpp.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "ropecheck/architectures.hpp"
#include "ropecheck/config.hpp"
#include "ropecheck/config_json.hpp"
#include "config_json_reader.hpp"
#include "config_json_vllm.hpp"
#include "ropecheck/engine_variants.hpp"
#include "ropecheck/schedule.hpp"

namespace ropecheck::detail::json_read {

inline constexpr const char* known_rope_types =
    "default, linear, dynamic, yarn, llama3, longrope, proportional (legacy: su -> longrope, mrope -> default with "
    "M-RoPE sections; vLLM's: ntk, xdrope)";

// The keys each rope type reads (HF modeling_rope_utils.py _compute_*_parameters and its
// _validate_*_rope_parameters; "type" is the v4 spelling of rope_type; rope_theta and
// partial_rotary_factor sit in the v5 block; original_max_position_embeddings is a length every rule
// may carry in v5; mrope_section / mrope_interleaved are Qwen2-VL's and Qwen3-VL's).
inline std::vector<std::string> block_keys(scaling_kind k, bool proportional) {
  std::vector<std::string> keys{"rope_type", "type", "rope_theta", "partial_rotary_factor",
                                "original_max_position_embeddings", "mrope_section", "mrope_interleaved"};
  auto add = [&](std::initializer_list<const char*> more) { keys.insert(keys.end(), more.begin(), more.end()); };
  if (proportional) {
    add({"factor"});
    return keys;
  }
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


namespace detail_scaling {

inline std::string via_family(const rule_inputs& in) {
  return in.facts ? "model_type \"" + in.model_type + "\" (" + std::string(in.facts->family) + ")" : std::string("the declared family");
}

// Proportional RoPE (Gemma 4; transformers modeling_rope_utils.py _compute_proportional_rope_parameters):
// the pairs span the whole head, rope_angles = int(partial_rotary_factor * head_dim // 2) bands turn with
// base^(-2i/head_dim), the rest have inv_freq 0; then inv_freq /= factor.
inline void proportional(const reader& r, const rule_inputs& in, rope_config& c, const fact_log& log) {
  auto at = [&](const char* k) { return in.bp + "." + k; };
  const auto prf = r.number(in.b, "partial_rotary_factor", at("partial_rotary_factor"));
  if (prf && !(*prf > 0.0 && *prf <= 1.0)) r.fail(at("partial_rotary_factor"), "must be in (0, 1], got " + fmt(*prf));
  const double f = prf.value_or(1.0);
  // Python: int(rope_proportion * head_dim // 2), floor division of a float.
  const auto angles = static_cast<int>(std::floor(f * static_cast<double>(c.head_dim) / 2.0));
  if (angles <= 0) r.fail(at("partial_rotary_factor"), "gives no turning band: int(" + fmt(f) + " * " + std::to_string(c.head_dim) + " // 2) = 0");
  c.rotary_dim = c.head_dim;
  c.frozen_bands = c.head_dim / 2 - angles;
  log.add("rotary_dim", std::to_string(c.rotary_dim), fact_origin::family_code,
          "proportional RoPE pairs (i, i + head_dim/2) over the whole head (transformers modeling_rope_utils.py "
          "_compute_proportional_rope_parameters)");
  log.add("frozen_bands", std::to_string(c.frozen_bands), prf ? fact_origin::file : fact_origin::derived,
          "head_dim/2 - int(" + (prf ? at("partial_rotary_factor") : std::string("1.0 (partial_rotary_factor absent)")) +
              " * head_dim // 2) bands have inv_freq 0");
}

}  // namespace detail_scaling

// Reads the rope type and its parameters into c (head_dim and rotary_dim already set: LongRoPE sizes
// its lists by it), then the M-RoPE sections. Returns the rope type read (rope_type or type, the name
// as the file spells it; "default" when the block names none).
inline std::string read_rule(const reader& r, const rule_inputs& in, rope_config& c, const fact_log& log) {
  const json& b = in.b;
  const std::string& bp = in.bp;
  const auto mpe = in.mpe;
  const auto orig = in.orig;
  const family_quirk quirk = in.facts ? in.facts->quirk : family_quirk::none;
  auto at = [&](const char* k) { return bp + "." + k; };
  // HF's Qwen2-VL config rewrites type "mrope" as rope_type "default", so saved files may hold both.
  auto rt1 = r.string(b, "rope_type", at("rope_type"));
  auto rt2 = r.string(b, "type", at("type"));
  if (rt1 && rt2 && ((*rt1 == "mrope" && *rt2 == "default") || (*rt1 == "default" && *rt2 == "mrope")))
    rt1 = rt2 = std::string("mrope");
  const auto rt = r.agree(rt1, at("rope_type"), rt2, at("type"));
  const std::string type_field = b.contains("rope_type") ? at("rope_type") : at("type");
  const std::string type = rt.value_or("default");
  bool is_proportional = false;
  std::vector<std::string> family_keys;  // block keys the family's code reads beyond the rope type's
  bool vllm_type = false;  // a rope type only vLLM defines (config_json_vllm.hpp), read whole there
  if (type == "default") c.scaling = scaling_kind::none;
  else if (type == "mrope") c.scaling = scaling_kind::none;  // Qwen2-VL; sections read below
  else if (type == "linear") c.scaling = scaling_kind::linear;
  else if (type == "dynamic") c.scaling = scaling_kind::dynamic_ntk;
  else if (type == "yarn") c.scaling = scaling_kind::yarn;
  else if (type == "llama3") c.scaling = scaling_kind::llama3;
  else if (type == "longrope" || type == "su") c.scaling = scaling_kind::longrope;
  else if (type == "proportional") is_proportional = true, c.scaling = scaling_kind::none;
  else if (vllm_rope_type(r, in, type, type_field, c, log, family_keys)) vllm_type = true;
  else if (const rope_variant* v = find_variant_by_rope_type(type); v && v->status == variant_status::refused)
    r.fail(type_field, "\"" + type + "\" selects " + std::string(v->engine) + "'s " + std::string(v->name) + " (" + std::string(v->file) +
                           "): " + std::string(v->reading) + "; ropecheck refuses it (ropecheck explain --variants lists every variant)");
  else r.fail(type_field, "unknown rope type \"" + type + "\"; known: " + known_rope_types);
  if (in.facts && !in.facts->rope_types.empty() && !has_word(in.facts->rope_types, type == "mrope" ? "default" : type))
    r.fail(type_field, "rope type \"" + type + "\" is not one " + detail_scaling::via_family(in) + "'s code accepts (it accepts: " +
                           std::string(in.facts->rope_types) + ")");
  const std::string type_source = rt ? type_field + " = \"" + type + "\"" : bp.empty() ? std::string("no rope block") : type_field + " absent";
  const fact_origin type_origin = rt ? in.origin : fact_origin::derived;

  const auto factor = r.number(b, "factor", at("factor"));
  if (factor && !(*factor > 0.0)) r.fail(at("factor"), "must be > 0, got " + fmt(*factor));
  auto need_factor = [&] {
    if (!factor)
      r.fail(at("factor"), "missing; rope type \"" + type + "\" requires a scaling factor" +
                               (b.contains("alpha") ? std::string(" (alpha, the NTK-alpha base, is read by Hunyuan's code and by vLLM: --engine vllm)") : ""));
    return *factor;
  };
  auto need_mpe = [&](const char* why) {
    if (!mpe) r.fail("max_position_embeddings", std::string("missing; ") + why);
  };
  auto attention = [&] {
    if (auto af = r.number(b, "attention_factor", at("attention_factor"))) {
      if (!(*af > 0.0)) r.fail(at("attention_factor"), "must be > 0, got " + fmt(*af));
      c.attention_factor = af;
      log.add("attention_factor", fmt(*af), in.origin, at("attention_factor"));
    }
  };

  // Hunyuan: {"type": "dynamic", "alpha": a} is a fixed NTK base change (NTK-alpha):
  // transformers models/hunyuan_v1_dense/modeling_hunyuan_v1_dense.py HunYuanDenseV1RotaryEmbedding.__init__
  // base = rope_theta * alpha ** (dim / (dim - 2)), dim = head_dim: ropecheck's ntk rule with factor alpha.
  bool alpha_rule = false;
  // vLLM reads alpha for every family (get_rope: rope_type dynamic with alpha -> DynamicNTKAlphaRotaryEmbedding).
  if ((quirk == family_quirk::hunyuan_alpha || in.engine == engine_reading::vllm) && b.contains("alpha") && !vllm_type) {
    family_keys.push_back("alpha");
    const auto alpha = r.number(b, "alpha", at("alpha"));
    if (alpha && *alpha != 0.0) {  // HF: `if ... and config.rope_scaling["alpha"]` (truthiness)
      if (c.scaling != scaling_kind::dynamic_ntk)
        r.fail(at("alpha"), "is read only with rope type \"dynamic\" (HunYuanDenseV1RotaryEmbedding; vLLM's get_rope), got \"" + type + "\"");
      if (!(*alpha > 0.0)) r.fail(at("alpha"), "must be > 0, got " + fmt(*alpha));
      alpha_rule = true;
      c.scaling = scaling_kind::ntk;
      c.factor = *alpha;
      family_keys.push_back("factor");
      log.add("scaling", "ntk (NTK-alpha)", in.origin,
              at("alpha") + " with rope type \"dynamic\": base * alpha^(d/(d-2)) (" +
                  (in.engine == engine_reading::vllm
                       ? detail_vllm::source("DynamicNTKAlphaRotaryEmbedding")
                       : std::string("transformers models/hunyuan_v1_dense/modeling_hunyuan_v1_dense.py HunYuanDenseV1RotaryEmbedding.__init__")) +
                  ")");
      log.add("factor", fmt(*alpha), in.origin, at("alpha"));
    }
  }

  if (is_proportional) {
    detail_scaling::proportional(r, in, c, log);
    if (factor && *factor != 1.0) {
      c.scaling = scaling_kind::linear;
      c.factor = *factor;
    }
    log.add("scaling", c.scaling == scaling_kind::linear ? "proportional, linear" : "proportional", type_origin, type_source);
    if (c.scaling == scaling_kind::linear) log.add("factor", fmt(c.factor), in.origin, at("factor"));
  } else if (!alpha_rule && !vllm_type) {
    log.add("scaling", type == "mrope" ? "default" : std::string(to_string(c.scaling)), type_origin, type_source);
  }

  switch (is_proportional || vllm_type ? scaling_kind::none : c.scaling) {
    case scaling_kind::none:
      break;
    case scaling_kind::linear:
    case scaling_kind::ntk:
      if (!alpha_rule) {
        c.factor = need_factor();
        log.add("factor", fmt(c.factor), in.origin, at("factor"));
      }
      break;
    case scaling_kind::dynamic_ntk:
      c.factor = need_factor();
      log.add("factor", fmt(c.factor), in.origin, at("factor"));
      need_mpe("dynamic NTK rescales past max_position_embeddings");
      break;
    case scaling_kind::yarn: {
      if (factor) {
        c.factor = *factor;
        const bool differs = orig && mpe && *factor != static_cast<double>(*mpe) / static_cast<double>(*orig);
        log.add("factor", fmt(c.factor), in.origin,
                differs ? at("factor") + " (differs from max_position_embeddings / original_max_position_embeddings = " +
                              fmt(static_cast<double>(*mpe) / static_cast<double>(*orig)) +
                              "; the explicit factor is used, as transformers v5 does; 4.4x-4.5x used the ratio)"
                        : at("factor"));
      } else if (orig) {
        need_mpe("yarn without factor takes max_position_embeddings / original_max_position_embeddings");
        c.factor = static_cast<double>(*mpe) / static_cast<double>(*orig);
        log.add("factor", fmt(c.factor), fact_origin::derived,
                "max_position_embeddings / original_max_position_embeddings (" + at("factor") + " absent)");
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
      log.add("beta_fast/beta_slow", fmt(c.beta_fast) + "/" + fmt(c.beta_slow),
              b.contains("beta_fast") || b.contains("beta_slow") ? in.origin : fact_origin::class_default,
              b.contains("beta_fast") || b.contains("beta_slow") ? at("beta_fast") + ", " + at("beta_slow")
                                                                 : std::string("HF _compute_yarn_parameters defaults 32 and 1"));
      if (auto v = r.boolean(b, "truncate", at("truncate"))) c.truncate = *v;
      c.mscale = r.number(b, "mscale", at("mscale"));
      c.mscale_all_dim = r.number(b, "mscale_all_dim", at("mscale_all_dim"));
      attention();
      break;
    }
    case scaling_kind::llama3: {
      c.factor = need_factor();
      log.add("factor", fmt(c.factor), in.origin, at("factor"));
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
      // Phi-3.5-MoE: transformers models/phimoe/modeling_phimoe.py PhimoeRotaryEmbedding.forward: mscale =
      // long_mscale if seq_len > original_max_position_embeddings else short_mscale, multiplying cos and
      // sin in place of the computed attention factor (PhimoeConfig: both required numbers).
      if (quirk == family_quirk::phimoe_mscale) {
        family_keys.insert(family_keys.end(), {"short_mscale", "long_mscale"});
        const auto sm = r.number(b, "short_mscale", at("short_mscale"));
        const auto lm = r.number(b, "long_mscale", at("long_mscale"));
        if (!sm) r.fail(at("short_mscale"), "missing; PhiMoE's LongRoPE needs short_mscale and long_mscale (PhimoeConfig)");
        if (!lm) r.fail(at("long_mscale"), "missing; PhiMoE's LongRoPE needs short_mscale and long_mscale (PhimoeConfig)");
        if (!(*sm > 0.0)) r.fail(at("short_mscale"), "must be > 0, got " + fmt(*sm));
        if (!(*lm > 0.0)) r.fail(at("long_mscale"), "must be > 0, got " + fmt(*lm));
        if (c.attention_factor) r.fail(at("attention_factor"), "PhiMoE takes short_mscale/long_mscale, not attention_factor");
        c.short_mscale = sm;
        c.long_mscale = lm;
        log.add("attention_factor", "short " + fmt(*sm) + ", long " + fmt(*lm), in.origin,
                at("short_mscale") + ", " + at("long_mscale") +
                    " (transformers models/phimoe/modeling_phimoe.py PhimoeRotaryEmbedding.forward)");
      }
      break;
    }
  }

  if (in.engine == engine_reading::vllm && !vllm_type && !is_proportional) {
    const auto more = vllm_block_keys(alpha_rule ? scaling_kind::dynamic_ntk : c.scaling);
    family_keys.insert(family_keys.end(), more.begin(), more.end());
    vllm_rule(r, in, c, log, alpha_rule);
  }

  // --- unknown keys ------------------------------------------------------------------------------
  auto allowed = vllm_type ? block_keys(scaling_kind::none, false)
                           : block_keys(alpha_rule ? scaling_kind::dynamic_ntk : c.scaling, is_proportional);
  allowed.insert(allowed.end(), family_keys.begin(), family_keys.end());
  for (const auto& [k, v] : b.items()) {
    if (std::find(allowed.begin(), allowed.end(), k) != allowed.end()) continue;
    if (in.facts && has_word(in.family_key_note, k)) {
      // A key the family's config carries that its rope code does not read (said, not silently passed).
      log.add(at(k.c_str()), describe(v), fact_origin::file, "in the file; not read by " + detail_scaling::via_family(in) + "'s rope code");
      continue;
    }
    std::string list;
    for (const auto& a : allowed) list += (list.empty() ? "" : ", ") + a;
    r.fail(bp + "." + k, "not a key ropecheck reads for rope type \"" + type + "\" of " + detail_scaling::via_family(in) +
                             " (it reads: " + list + "); refusing to guess what it changes");
  }

  // --- M-RoPE ----------------------------------------------------------------------------------------
  auto section = r.integers(b, "mrope_section", at("mrope_section"), 0, 1 << 20);
  const auto interleaved = r.boolean(b, "mrope_interleaved", at("mrope_interleaved"));
  fact_origin section_origin = in.origin;
  std::string section_source = at("mrope_section");
  if (!section && in.facts && in.facts->mrope != mrope_kind::none) {
    // An M-RoPE family: its class default sections, or none (its attention indexes mrope_section: KeyError).
    if (in.facts->mrope_default.empty())
      r.fail(at("mrope_section"), "missing; " + detail_scaling::via_family(in) + " applies M-RoPE and its code has no default sections (" +
                                      std::string(in.facts->mrope_source) + ")");
    std::vector<std::int64_t> def;
    for (std::size_t s0 = 0, e; s0 < in.facts->mrope_default.size(); s0 = e + 1) {
      e = in.facts->mrope_default.find(' ', s0);
      if (e == std::string_view::npos) e = in.facts->mrope_default.size();
      def.push_back(std::stoll(std::string(in.facts->mrope_default.substr(s0, e - s0))));
    }
    section = def;
    section_origin = fact_origin::class_default;
    section_source = at("mrope_section") + " absent: the class default of " + detail_scaling::via_family(in);
  }
  if (type == "mrope" && !section) r.fail(at("mrope_section"), "missing; rope type \"mrope\" needs the sections");
  if (interleaved && !section) r.fail(at("mrope_interleaved"), "given without mrope_section");
  if (section) {
    if (in.facts && in.facts->mrope == mrope_kind::none)
      r.fail(at("mrope_section"), detail_scaling::via_family(in) + " applies no M-RoPE (its code never reads mrope_section)");
    c.mrope_section.assign(section->begin(), section->end());
    if (in.facts) {
      c.mrope = in.facts->mrope;
      log.add("mrope", std::string(to_string(c.mrope)), fact_origin::family_code, std::string(in.facts->mrope_source));
      if (interleaved && (*interleaved ? mrope_kind::interleaved : mrope_kind::contiguous) != c.mrope)
        log.add("mrope_interleaved", *interleaved ? "true" : "false", fact_origin::file,
                at("mrope_interleaved") + ": not read by the family's code, which applies " +
                    std::string(to_string(c.mrope)) + " M-RoPE");
    } else if (interleaved) {
      c.mrope = *interleaved ? mrope_kind::interleaved : mrope_kind::contiguous;
      log.add("mrope", std::string(to_string(c.mrope)), fact_origin::file, at("mrope_interleaved"));
    } else {
      c.mrope = mrope_kind::contiguous;
      log.add("mrope", "contiguous", fact_origin::declared,
              at("mrope_section") + " without mrope_interleaved, read as Qwen2-VL's contiguous blocks "
                                    "(transformers models/qwen2_vl/modeling_qwen2_vl.py apply_multimodal_rotary_pos_emb)");
    }
    log.add("mrope_section", [&] {
      std::string s;
      for (int v : c.mrope_section) s += (s.empty() ? "" : ", ") + std::to_string(v);
      return "[" + s + "]";
    }(), section_origin, section_source);
    try {
      validate_mrope(c);
    } catch (const std::invalid_argument& e) {
      r.fail(at("mrope_section"), e.what());
    }
  }
  if (in.engine == engine_reading::vllm) vllm_mrope(in, c, log);
  return type;
}

}  // namespace ropecheck::detail::json_read
