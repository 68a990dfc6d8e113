// config/src/config_json_geometry.hpp — a family's head size, rotary dimension, base and lengths from a
// config.json, by the family's rules (architectures.hpp): which key each is read from, the class
// default when the key is absent, and what the family's code cannot honour (an error naming the field).
// Covered by tests/core/architectures_test.cpp (Architectures.*), tests/core/families_test.cpp
// (Family.DerivesWhatTheFamilysCodeDoesLayerByLayer) and tests/config/config_json_test.cpp
// (HfConfig.PythiaRotaryPctGivesARotaryDimOfAQuarterHead, .PartialRotaryFactorTruncatesAsHfDoes,
// .RotaryDimContradictingPartialRotaryFactorIsRejected).
//
// Heavy header (nlohmann/json): include it only through config_json.hpp.
#pragma once

#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ropecheck/architectures.hpp"
#include "ropecheck/config.hpp"
#include "ropecheck/config_json.hpp"
#include "config_json_reader.hpp"
#include "config_json_scaling.hpp"

namespace ropecheck::detail::json_read {

// The family as the parse sees it: its row (a copy, which a declaration may change) and how it was found.
struct family_view {
  architecture_facts row;
  std::string via;        // "model_type \"glm4\"", "architectures \"Glm4ForCausalLM\"", "--assume-llama", ...
  bool declared = false;  // no facts: the user declared the convention
  fact_origin origin() const { return declared ? fact_origin::declared : fact_origin::family_code; }
  std::string cite(std::string_view source) const {
    return declared ? via : via + (source.empty() ? std::string() : " (" + std::string(source) + ")");
  }
};

struct lengths {
  std::optional<std::int64_t> mpe, orig;
};

namespace geometry {

inline std::string int_str(std::int64_t v) { return std::to_string(v); }

// hidden_size / num_attention_heads under the names families use (GPT-J's n_embd/n_head, DBRX's d_model/n_heads).
inline std::int64_t head_ratio(const reader& r, const json& t, std::string& how) {
  auto hidden = r.agree(r.positive_length(t, "hidden_size", "hidden_size"), "hidden_size",
                        r.positive_length(t, "n_embd", "n_embd"), "n_embd");
  hidden = r.agree(hidden, "hidden_size", r.positive_length(t, "d_model", "d_model"), "d_model");
  hidden = r.agree(hidden, "hidden_size", r.positive_length(t, "hidden_dim", "hidden_dim"), "hidden_dim");
  auto heads = r.agree(r.positive_length(t, "num_attention_heads", "num_attention_heads"), "num_attention_heads",
                       r.positive_length(t, "n_head", "n_head"), "n_head");
  heads = r.agree(heads, "num_attention_heads", r.positive_length(t, "n_heads", "n_heads"), "n_heads");
  heads = r.agree(heads, "num_attention_heads", r.positive_length(t, "num_heads", "num_heads"), "num_heads");
  auto first_of = [&](std::initializer_list<const char*> keys) {
    for (const char* k : keys)
      if (t.contains(k)) return std::string(k);
    return std::string(*keys.begin());
  };
  const std::string hk = first_of({"hidden_size", "n_embd", "d_model", "hidden_dim"});
  const std::string nk = first_of({"num_attention_heads", "n_head", "n_heads", "num_heads"});
  if (!hidden) r.fail("hidden_size", "missing (needed for head_dim = hidden_size / num_attention_heads)");
  if (!heads) r.fail("num_attention_heads", "missing (needed for head_dim = hidden_size / num_attention_heads)");
  if (*hidden % *heads != 0)
    r.fail(nk, "does not divide " + hk + " (" + int_str(*hidden) + " / " + int_str(*heads) + ")");
  how = hk + " / " + nk + " = " + int_str(*hidden) + " / " + int_str(*heads);
  return *hidden / *heads;
}

}  // namespace geometry

// Head and rotary dimensions, base and lengths of the text model t (b: its rope block, {} if none).
inline lengths read_geometry(const reader& r, const json& t, const json& b, const std::string& bp, const family_view& fam,
                             const convention_declaration& decl, rope_config& c, const fact_log& log) {
  using namespace geometry;
  const architecture_facts& a = fam.row;
  auto at = [&](const char* k) { return bp + "." + k; };

  // --- head ------------------------------------------------------------------------------------------
  std::int64_t head_dim = 0;
  std::string how;
  switch (a.head) {
    case head_rule::mla: {
      // DeepSeek MLA: RoPE acts on a separate qk_rope_head_dim slice (q_pe, k_pe), judged as a head of its
      // own; HF's DeepseekV3Config sets head_dim = qk_rope_head_dim for the rotary embedding.
      const auto qk = r.positive_length(t, "qk_rope_head_dim", "qk_rope_head_dim");
      if (!qk && a.head_default <= 0) r.fail("qk_rope_head_dim", "missing; " + fam.via + " rotates a qk_rope_head_dim slice");
      head_dim = qk.value_or(a.head_default);
      log.add("head_dim", int_str(head_dim), qk ? fact_origin::file : fact_origin::class_default,
              qk ? std::string("qk_rope_head_dim (the rope slice of MLA, judged on its own)")
                 : "qk_rope_head_dim absent: class default " + int_str(a.head_default) + " (" + std::string(a.rotary_source) + ")");
      break;
    }
    case head_rule::kv_channels: {
      const auto kv = r.positive_length(t, "kv_channels", "kv_channels");
      if (!kv && a.head_default <= 0) r.fail("kv_channels", "missing; " + fam.via + " reads the head size from kv_channels");
      head_dim = kv.value_or(a.head_default);
      log.add("head_dim", int_str(head_dim), kv ? fact_origin::file : fact_origin::class_default,
              kv ? std::string("kv_channels") : "kv_channels absent: class default " + int_str(a.head_default));
      break;
    }
    case head_rule::dbrx:
    case head_rule::ratio: {
      head_dim = head_ratio(r, t, how);
      if (const auto hd = r.positive_length(t, "head_dim", "head_dim"); hd && *hd != head_dim)
        r.fail("head_dim", int_str(*hd) + " is not what " + fam.via + "'s code uses: it takes " + how + " = " +
                               int_str(head_dim) + " (" + std::string(a.layout_source) + ")");
      log.add("head_dim", int_str(head_dim), fact_origin::derived, how + " (" + fam.via + " reads no head_dim)");
      break;
    }
    case head_rule::head_dim_key: {
      const std::string hk(a.head_key);
      if (hk != "head_dim" && t.contains("head_dim") && !t["head_dim"].is_null())
        r.fail("head_dim", "not read by " + fam.via + ": its head size is " + hk);
      if (const auto hd = r.positive_length(t, hk.c_str(), hk)) {
        head_dim = *hd;
        log.add("head_dim", int_str(head_dim), fact_origin::file, hk);
      } else if (a.head_default > 0) {
        head_dim = a.head_default;
        log.add("head_dim", int_str(head_dim), fact_origin::class_default,
                "head_dim absent: the class default of " + fam.via + ", not hidden_size / num_attention_heads");
      } else {
        head_dim = head_ratio(r, t, how);
        log.add("head_dim", int_str(head_dim), fact_origin::derived, how + " (head_dim absent)");
      }
      break;
    }
  }
  if (head_dim > 1 << 20) r.fail("head_dim", "implausibly large: " + int_str(head_dim));
  c.head_dim = static_cast<int>(head_dim);

  // --- rotary dimension -----------------------------------------------------------------------------
  auto fraction = [&](const json& o, const char* key, const std::string& path) {
    auto v = r.number(o, key, path);
    if (v && !(*v > 0.0 && *v <= 1.0)) r.fail(path, "must be in (0, 1], got " + fmt(*v));
    return v;
  };
  const auto prf_top = fraction(t, "partial_rotary_factor", "partial_rotary_factor");
  // A proportional block's partial_rotary_factor is that rule's (config_json_scaling.hpp), not the head's.
  auto names = [&](const char* k) { return b.is_object() && b.contains(k) && b[k].is_string() && b[k].get<std::string>() == "proportional"; };
  const bool proportional_block = names("rope_type") || names("type");  // either spelling, as read_rule reads it
  const auto prf_block = proportional_block ? std::nullopt : fraction(b, "partial_rotary_factor", at("partial_rotary_factor"));
  const auto pct = fraction(t, "rotary_pct", "rotary_pct");
  const auto rd = r.positive_length(t, "rotary_dim", "rotary_dim");
  const bool rd_null = t.contains("rotary_dim") && t["rotary_dim"].is_null();
  // One fraction from wherever the family's code (or v5's standardisation into the block) reads it.
  std::optional<double> frac = r.agree(prf_top, "partial_rotary_factor", prf_block, at("partial_rotary_factor"));
  std::string frac_key = prf_block ? at("partial_rotary_factor") : "partial_rotary_factor";
  auto truncating = [&](double f, const std::string& key, fact_origin origin, const std::string& source) {
    // HF: dim = int(head_dim * partial_rotary_factor), in Python double, truncating.
    const auto rot = static_cast<std::int64_t>(static_cast<double>(head_dim) * f);
    if (rot <= 0) r.fail(key, "gives rotary_dim = int(" + int_str(head_dim) + " * " + fmt(f) + ") = 0");
    if (rot % 2 != 0)
      r.fail(key, "gives an odd rotary_dim = int(" + int_str(head_dim) + " * " + fmt(f) + ") = " + int_str(rot) +
                      "; rotary coordinates come in pairs");
    log.add("rotary_dim", int_str(rot), origin, source);
    return rot;
  };
  std::int64_t rotary = head_dim;
  switch (a.rotary) {
    case rotary_rule::whole_head_ignoring:
      if (frac)
        log.add("partial_rotary_factor", fmt(*frac), fact_origin::file,
                frac_key + ": not read by " + fam.via + "'s default rule, which rotates the whole head (" + std::string(a.rotary_source) + ")");
      log.add("rotary_dim", int_str(rotary), fam.origin(), fam.cite("the whole head"));
      break;
    case rotary_rule::whole_head:
      for (const auto& [v, key] : {std::pair{frac, frac_key}, std::pair{pct, std::string("rotary_pct")}})
        if (v && *v != 1.0)
          r.fail(key, fmt(*v) + " cannot be honoured by " + fam.via + ": its code rotates the whole head (" +
                          std::string(a.layout_source) + ")");
      if (rd && *rd != head_dim)
        r.fail("rotary_dim", int_str(*rd) + " cannot be honoured by " + fam.via + ": its code rotates the whole head");
      log.add("rotary_dim", int_str(rotary), fam.origin(), fam.cite("the whole head"));
      break;
    case rotary_rule::partial_factor:
    case rotary_rule::rotary_pct: {
      const bool pct_rule = a.rotary == rotary_rule::rotary_pct;
      if (pct_rule) {
        // transformers 4.4x's GPTNeoXConfig.__init__ (models/gpt_neox/configuration_gpt_neox.py) sets
        // self.partial_rotary_factor = rotary_pct, so a config it saved, or its to_dict(), holds both: an equal copy
        // is that; another value is read by one version and overwritten by another, so it stays an error.
        if (prf_top) {
          if (!pct) r.fail("partial_rotary_factor", "not read by " + fam.via + ": its fraction is rotary_pct");
          (void)r.agree(pct, "rotary_pct", prf_top, "partial_rotary_factor");
          log.add("partial_rotary_factor", fmt(*prf_top), fact_origin::file,
                  "equal to rotary_pct: the copy transformers' config class writes (GPTNeoXConfig.__init__ in 4.4x)");
        }
        frac = r.agree(pct, "rotary_pct", prf_block, at("partial_rotary_factor"));
        frac_key = pct ? "rotary_pct" : at("partial_rotary_factor");
      } else if (pct) {
        r.fail("rotary_pct", "not read by " + fam.via + ": its fraction is partial_rotary_factor");
      }
      if (rd && !frac && a.quirk == family_quirk::rotary_dim_fraction) {
        // The family's config class turns rotary_dim into the fraction itself (src/ropecheck/architectures.hpp
        // family_quirk::rotary_dim_fraction; the row's rotary_source cites where); with both keys the contradiction
        // check below holds them to one rotary_dim.
        if (*rd <= 0 || *rd > head_dim)
          r.fail("rotary_dim", int_str(*rd) + " is not within head_dim " + int_str(head_dim));
        rotary = *rd;
        log.add("rotary_dim", int_str(rotary), fact_origin::file,
                "rotary_dim (partial_rotary_factor = rotary_dim / head_dim: " + fam.cite(a.rotary_source) + ")");
        break;
      }
      if (rd && !frac)
        r.fail("rotary_dim", "not read by " + fam.via + ": rotary_dim = int(head_dim * " +
                                 (pct_rule ? "rotary_pct" : "partial_rotary_factor") + "); give that fraction");
      if (rd && frac && *rd != static_cast<std::int64_t>(static_cast<double>(head_dim) * *frac))
        r.fail("rotary_dim", "contradicts " + frac_key + " (" + int_str(*rd) + " vs int(" + int_str(head_dim) + " * " + fmt(*frac) + "))");
      if (frac) {
        rotary = truncating(*frac, frac_key, fact_origin::file, "int(head_dim * " + frac_key + ")");
      } else if (decl.rotary_fraction || decl.rotary_dim) {
        rotary = decl.rotary_dim ? *decl.rotary_dim : static_cast<std::int64_t>(static_cast<double>(head_dim) * *decl.rotary_fraction);
        log.add("rotary_dim", int_str(rotary), fact_origin::declared, decl.rotary_dim ? "--rotary-dim" : "--rotary-fraction");
      } else if (std::isnan(a.rotary_default)) {
        r.fail(pct_rule ? "rotary_pct" : "partial_rotary_factor",
               "missing, and " + fam.via + " has no single class default for it (" + std::string(a.rotary_source) + "): give it");
      } else {
        rotary = truncating(a.rotary_default, pct_rule ? "rotary_pct" : "partial_rotary_factor", a.rotary_default == 1.0 && fam.declared ? fact_origin::declared : fact_origin::class_default,
                            std::string(pct_rule ? "rotary_pct" : "partial_rotary_factor") + " absent: " +
                                (fam.declared ? std::string("1 (every coordinate)")
                                              : "class default " + fmt(a.rotary_default) + " of " + fam.via +
                                                    (a.rotary_source.empty() ? std::string() : " (" + std::string(a.rotary_source) + ")")));
      }
      break;
    }
    case rotary_rule::rotary_dim_key:
      if (frac || pct) r.fail(frac ? frac_key : "rotary_pct", "not read by " + fam.via + ": it rotates rotary_dim coordinates");
      if (rd_null)
        r.fail("rotary_dim", "null: " + fam.via + "'s code then builds a table of hidden_size coordinates that does not fit "
                             "a head (" + std::string(a.rotary_source) + "); give rotary_dim");
      rotary = rd ? *rd : static_cast<std::int64_t>(a.rotary_default);
      log.add("rotary_dim", int_str(rotary), rd ? fact_origin::file : fact_origin::class_default,
              rd ? std::string("rotary_dim") : "rotary_dim absent: class default " + int_str(rotary) + " of " + fam.via);
      break;
    case rotary_rule::half_kv:
      // THUDM modeling_chatglm.py ChatGLMModel: RotaryEmbedding(kv_channels // 2), so half the head rotates.
      if (frac || rd) r.fail(frac ? frac_key : "rotary_dim", "not read for ChatGLM (rotary_dim is kv_channels / 2)");
      rotary = head_dim / 2;
      log.add("rotary_dim", int_str(rotary), fact_origin::family_code, fam.cite(a.rotary_source));
      break;
    case rotary_rule::fixed_factor:
      if (frac && *frac != a.rotary_default)
        r.fail(frac_key, fmt(*frac) + " cannot be honoured by " + fam.via + ": its code works with " + fmt(a.rotary_default) +
                             " only (" + std::string(a.rotary_source) + ")");
      rotary = truncating(a.rotary_default, "partial_rotary_factor", frac ? fact_origin::file : fact_origin::class_default,
                          "int(head_dim * " + fmt(a.rotary_default) + "): " + fam.cite(a.rotary_source));
      break;
    case rotary_rule::overwritten_factor:
      if (prf_top && *prf_top != a.rotary_default)
        log.add("partial_rotary_factor", fmt(*prf_top), fact_origin::file,
                "partial_rotary_factor " + fmt(*prf_top) + " is overwritten by " + fam.via + "'s config class (" +
                    std::string(a.rotary_source) + ")");
      rotary = prf_block ? truncating(*prf_block, at("partial_rotary_factor"), fact_origin::file, "int(head_dim * " + at("partial_rotary_factor") + ")")
                         : truncating(a.rotary_default, "partial_rotary_factor", fact_origin::family_code,
                                      "int(head_dim * " + fmt(a.rotary_default) + "): " + fam.cite(a.rotary_source));
      break;
  }
  if (rotary % 2 != 0) r.fail("rotary_dim", "must be even, got " + int_str(rotary));
  if (rotary > head_dim) r.fail("rotary_dim", int_str(rotary) + " exceeds head_dim " + int_str(head_dim));
  c.rotary_dim = static_cast<int>(rotary);

  // --- base ------------------------------------------------------------------------------------------
  const std::string base_key(a.base_key);
  std::optional<double> theta;
  std::string theta_from;
  if (a.quirk == family_quirk::dbrx) {
    // DBRX: attn_config.rope_theta (transformers models/dbrx/configuration_dbrx.py DbrxAttentionConfig).
    const auto ac = t.find("attn_config");
    if (ac != t.end() && ac->is_object()) theta = r.number(*ac, "rope_theta", "attn_config.rope_theta");
    theta_from = "attn_config.rope_theta";
  } else if (!base_key.empty()) {
    theta = r.number(t, base_key.c_str(), base_key);
    theta_from = base_key;
    // LFM2 takes `theta` as an alias of rope_theta (transformers models/lfm2/configuration_lfm2.py Lfm2Config).
    if (has_word(a.extra_keys, "theta") && t.contains("theta")) {
      theta = r.agree(theta, base_key, r.number(t, "theta", "theta"), "theta");
      if (!t.contains(base_key)) theta_from = "theta";
    }
  }
  if (const auto bt = r.number(b, "rope_theta", at("rope_theta"))) {
    theta = r.agree(theta, theta_from, bt, at("rope_theta"));
    if (theta_from.empty() || !t.contains(theta_from)) theta_from = at("rope_theta");
  }
  if (base_key != "rope_theta" && t.contains("rope_theta") && !t["rope_theta"].is_null()) {
    // An equal copy of the family's base key is what transformers 4.4x's config classes write (GPTNeoXConfig.__init__:
    // self.rope_theta = rotary_emb_base); another value is an error, as is rope_theta where the base is fixed.
    const auto copy = base_key.empty() ? std::nullopt : r.number(t, "rope_theta", "rope_theta");
    if (!copy || !theta || !t.contains(base_key))
      r.fail("rope_theta", "not read by " + fam.via + ": its base is " + (base_key.empty() ? std::string("fixed at 10000") : base_key));
    (void)r.agree(theta, base_key, copy, "rope_theta");
    log.add("rope_theta", fmt(*copy), fact_origin::file,
            "equal to " + base_key + ": the copy transformers' config class writes (GPTNeoXConfig.__init__ in 4.4x)");
  }
  if (a.quirk == family_quirk::chatglm) {
    // THUDM modeling_chatglm.py RotaryEmbedding.forward_impl: base = 10000 * rope_ratio.
    if (theta) r.fail(theta_from, "not read for ChatGLM (its base is 10000 * rope_ratio)");
    const auto ratio = r.number(t, "rope_ratio", "rope_ratio");
    if (ratio && !(*ratio > 0.0)) r.fail("rope_ratio", "must be > 0, got " + fmt(*ratio));
    c.base = 10000.0 * ratio.value_or(1.0);
    log.add("base", fmt(c.base), ratio ? fact_origin::file : fact_origin::family_code,
            "10000 * rope_ratio" + std::string(ratio ? "" : " (rope_ratio absent: 1)") + ": " + fam.cite(a.base_source));
    if (auto orig_rope = r.boolean(t, "original_rope", "original_rope"); orig_rope && !*orig_rope)
      r.fail("original_rope", "false selects ChatGLM-6B's 2-D position encoding, which ropecheck does not model");
  } else if (theta) {
    c.base = *theta;
    log.add("base", fmt(c.base), fact_origin::file, theta_from);
  } else if (base_key.empty()) {
    c.base = a.base_default;
    log.add("base", fmt(c.base), fact_origin::family_code, "fixed: " + fam.cite(a.base_source));
  } else if (std::isnan(a.base_default)) {
    r.fail(base_key, "missing, and " + fam.via + " has no single class default for it (" + std::string(a.base_source) +
                         "): give " + base_key);
  } else {
    c.base = a.base_default;
    log.add("base", fmt(c.base), fam.declared ? fact_origin::declared : fact_origin::class_default,
            base_key + " absent: " + (fam.declared ? std::string("10000, HF's default (declared family)")
                                                   : "class default of " + fam.via +
                                                         (a.base_source.empty() ? std::string() : " (" + std::string(a.base_source) + ")")));
  }
  if (!(c.base > 1.0)) r.fail(theta ? theta_from : base_key, "must be > 1, got " + fmt(c.base));
  if (a.quirk == family_quirk::position_scale)
    if (const auto ps = r.number(t, "rope_position_scale", "rope_position_scale"); ps && *ps != 1.0)
      r.fail("rope_position_scale", fmt(*ps) + ": engines disagree on it (vLLM vllm/model_executor/models/phi3_small.py divides "
                                    "positions by it, mlx-lm mlx_lm/models/phi3small.py multiplies them): declare the convention "
                                    "with --scaling linear --factor");

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

}  // namespace ropecheck::detail::json_read
