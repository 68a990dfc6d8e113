// ropecheck/config_json.hpp — a Hugging Face config.json read into a rope_config.
//
// Heavy header (nlohmann/json): include it only from tools and tests, never from other src/ headers.
//
// What is read (HF v4 and v5 layouts, key names as HF spells them):
//   head_dim                 else hidden_size / num_attention_heads (GPT-J: n_embd / n_head);
//                            DeepSeek MLA: qk_rope_head_dim (as HF's DeepseekV3Config sets head_dim)
//   rotary dimension         int(head_dim * partial_rotary_factor) (HF's truncation), or
//                            int(head_dim * rotary_pct) (GPT-NeoX), or rotary_dim (GPT-J); else head_dim
//   rope_theta               else rotary_emb_base (GPT-NeoX), else rope_parameters.rope_theta, else 10000
//   max_position_embeddings  else n_positions (GPT-J)
//   original_max_position_embeddings  top level (Phi-3) or inside the scaling block
//   rope_scaling (v4) / rope_parameters (v5): rope_type or type, factor, beta_fast, beta_slow,
//     truncate, attention_factor, mscale, mscale_all_dim, low_freq_factor, high_freq_factor,
//     short_factor, long_factor, original_max_position_embeddings, rope_theta (v5),
//     partial_rotary_factor (v5). A v5 block keyed by layer type ({"full_attention": {...},
//     "sliding_attention": {...}}) is read from "full_attention", or its single entry; the choice
//     is reported in hf_config_parse::notes.
//   ropecheck_layout         non-HF key: "interleaved" | "half_split" (HF models are half_split)
// rope types: default, linear, dynamic, yarn, llama3, longrope; legacy "su" -> longrope,
// "mrope" -> default (Qwen2-VL, as HF maps it); "ntk" is ropecheck's static NTK-aware rule.
//
// Factor: an explicit `factor` wins (transformers v5). YaRN/LongRoPE without one take
// max_position_embeddings / original_max_position_embeddings (Phi-3 gives none).
//
// Everything rejected throws config_error naming the file (when loaded from one), the JSON field
// and the problem: unknown rope type, missing factor where required, contradictory fields,
// non-numeric values, negative or zero lengths, and whatever validate() rejects.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <limits>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "ropecheck/config.hpp"
#include "ropecheck/schedule.hpp"

namespace ropecheck {

struct config_error : std::runtime_error {
  config_error(std::string file, std::string field, std::string problem)
      : std::runtime_error(compose(file, field, problem)),
        file_(std::move(file)),
        field_(std::move(field)),
        problem_(std::move(problem)) {}

  [[nodiscard]] const std::string& file() const noexcept { return file_; }    // "" when parsed from memory
  [[nodiscard]] const std::string& field() const noexcept { return field_; }  // JSON path, e.g. rope_scaling.factor
  [[nodiscard]] const std::string& problem() const noexcept { return problem_; }

 private:
  static std::string compose(const std::string& file, const std::string& field, const std::string& problem) {
    std::string m;
    if (!file.empty()) m += file + ": ";
    if (!field.empty()) m += field + ": ";
    return m + problem;
  }
  std::string file_, field_, problem_;
};

// The parsed config and what the parser decided on the user's behalf (e.g. which layer type of a
// per-layer rope_parameters it read, a factor derived from lengths).
struct hf_config_parse {
  rope_config config;
  std::vector<std::string> notes;
};

namespace detail::json_read {

using json = nlohmann::json;

inline std::string describe(const json& v) {
  std::string s = v.dump();
  if (s.size() > 60) s = s.substr(0, 57) + "...";
  return std::string(v.type_name()) + " " + s;
}

inline std::string fmt(double v) {
  std::ostringstream o;
  o.precision(17);
  o << v;
  return o.str();
}

class reader {
 public:
  explicit reader(std::string source) : source_(std::move(source)) {}

  [[noreturn]] void fail(const std::string& field, const std::string& problem) const {
    throw config_error(source_, field, problem);
  }

  // A number, or nullopt when the key is absent or null (HF writes "rope_scaling": null etc.).
  std::optional<double> number(const json& obj, const char* key, const std::string& path) const {
    const auto it = obj.find(key);
    if (it == obj.end() || it->is_null()) return std::nullopt;
    if (!it->is_number()) fail(path, std::string("must be a number, got ") + describe(*it));
    const double v = it->get<double>();
    if (!std::isfinite(v)) fail(path, "must be finite");
    return v;
  }

  // An integer (an integral-valued float such as 4096.0 is accepted).
  std::optional<std::int64_t> integer(const json& obj, const char* key, const std::string& path) const {
    const auto it = obj.find(key);
    if (it == obj.end() || it->is_null()) return std::nullopt;
    if (it->is_number_integer()) return it->get<std::int64_t>();
    if (it->is_number_float()) {
      const double v = it->get<double>();
      if (std::isfinite(v) && v == std::floor(v) && std::fabs(v) < 9.0e15) return static_cast<std::int64_t>(v);
      fail(path, "must be an integer, got " + describe(*it));
    }
    fail(path, std::string("must be an integer, got ") + describe(*it));
  }

  std::optional<std::int64_t> positive_length(const json& obj, const char* key, const std::string& path) const {
    const auto v = integer(obj, key, path);
    if (v && *v <= 0) fail(path, "must be a positive length, got " + std::to_string(*v));
    return v;
  }

  std::optional<std::string> string(const json& obj, const char* key, const std::string& path) const {
    const auto it = obj.find(key);
    if (it == obj.end() || it->is_null()) return std::nullopt;
    if (!it->is_string()) fail(path, std::string("must be a string, got ") + describe(*it));
    return it->get<std::string>();
  }

  std::optional<bool> boolean(const json& obj, const char* key, const std::string& path) const {
    const auto it = obj.find(key);
    if (it == obj.end() || it->is_null()) return std::nullopt;
    if (!it->is_boolean()) fail(path, std::string("must be true or false, got ") + describe(*it));
    return it->get<bool>();
  }

  std::optional<std::vector<double>> numbers(const json& obj, const char* key, const std::string& path) const {
    const auto it = obj.find(key);
    if (it == obj.end() || it->is_null()) return std::nullopt;
    if (!it->is_array()) fail(path, std::string("must be a list of numbers, got ") + describe(*it));
    std::vector<double> out;
    out.reserve(it->size());
    for (std::size_t i = 0; i < it->size(); ++i) {
      const json& e = (*it)[i];
      if (!e.is_number()) fail(path + "[" + std::to_string(i) + "]", "must be a number, got " + describe(e));
      const double v = e.get<double>();
      if (!std::isfinite(v) || !(v > 0.0))
        fail(path + "[" + std::to_string(i) + "]", "must be finite and > 0, got " + fmt(v));
      out.push_back(v);
    }
    return out;
  }

  // One value given in two places must agree.
  template <class V>
  std::optional<V> agree(std::optional<V> a, const std::string& path_a, std::optional<V> b,
                         const std::string& path_b) const {
    if (a && b && !(*a == *b)) fail(path_b, "contradicts " + path_a + " (" + show(*a) + " vs " + show(*b) + ")");
    return a ? a : b;
  }

  const std::string& source() const noexcept { return source_; }

 private:
  static std::string show(double v) { return fmt(v); }
  static std::string show(std::int64_t v) { return std::to_string(v); }
  static std::string show(const std::string& v) { return "\"" + v + "\""; }
  std::string source_;
};

inline bool looks_like_rope_block(const json& o) {
  for (const char* k : {"rope_type", "type", "rope_theta", "factor", "partial_rotary_factor"})
    if (o.contains(k)) return true;
  return false;
}

inline constexpr const char* known_rope_types =
    "default, linear, dynamic, yarn, llama3, longrope (legacy: su -> longrope, mrope -> default; "
    "ropecheck: ntk)";

// A config.json nests a few levels; json::dump() and operator== (used in messages and in the
// rope_scaling/rope_parameters comparison) recurse once per level, so a file of 10^5 nested
// brackets would overflow the stack (found by fuzz/fuzz_config_json). Depth measured without
// recursion, before anything else looks at the document.
inline constexpr std::size_t max_nesting = 64;
inline std::size_t nesting_depth(const json& root) {
  std::size_t deepest = 0;
  std::vector<std::pair<const json*, std::size_t>> todo{{&root, 1}};
  while (!todo.empty() && deepest <= max_nesting) {
    const auto [v, depth] = todo.back();
    todo.pop_back();
    deepest = std::max(deepest, depth);
    if (v->is_structured())
      for (const json& e : *v) todo.emplace_back(&e, depth + 1);
  }
  return deepest;
}

inline hf_config_parse parse(const json& j, const std::string& source) {
  const reader r(source);
  hf_config_parse out;
  rope_config& c = out.config;
  if (nesting_depth(j) > max_nesting)
    r.fail("", "nests deeper than " + std::to_string(max_nesting) + " levels; not a config.json");
  if (!j.is_object()) r.fail("", "a config.json must be a JSON object, got " + describe(j));

  // --- the scaling block: rope_scaling (v4) and/or rope_parameters (v5) ---------------------------
  const json* block = nullptr;
  std::string bp;  // JSON path prefix of the block
  const auto rs = j.find("rope_scaling");
  const auto rp = j.find("rope_parameters");
  const bool has_rs = rs != j.end() && !rs->is_null();
  const bool has_rp = rp != j.end() && !rp->is_null();
  if (has_rs && !rs->is_object()) r.fail("rope_scaling", "must be an object or null, got " + describe(*rs));
  if (has_rp && !rp->is_object()) r.fail("rope_parameters", "must be an object or null, got " + describe(*rp));
  if (has_rs && has_rp && *rs != *rp)
    r.fail("rope_parameters", "contradicts rope_scaling: give one of them (v4 rope_scaling or v5 rope_parameters)");
  if (has_rp) {
    block = &*rp;
    bp = "rope_parameters";
    if (!rp->empty() && !looks_like_rope_block(*rp)) {
      // v5 per-layer-type dict: {"full_attention": {...}, "sliding_attention": {...}}
      for (const auto& [k, v] : rp->items())
        if (!v.is_object()) r.fail("rope_parameters." + k, "must be an object in a per-layer-type rope_parameters");
      std::string chosen;
      if (rp->contains("full_attention")) {
        chosen = "full_attention";
      } else if (rp->size() == 1) {
        chosen = rp->begin().key();
      } else {
        std::string keys;
        for (const auto& [k, v] : rp->items()) keys += (keys.empty() ? "" : ", ") + k;
        r.fail("rope_parameters", "is keyed by layer type (" + keys +
                                      ") but has no \"full_attention\" entry; cannot tell which to check");
      }
      block = &(*rp)[chosen];
      bp = "rope_parameters." + chosen;
      std::string others;
      for (const auto& [k, v] : rp->items())
        if (k != chosen) others += (others.empty() ? "" : ", ") + k;
      out.notes.push_back("rope_parameters is keyed by layer type; read \"" + chosen + "\"" +
                          (others.empty() ? std::string() : " (ignored: " + others + ")"));
    }
  } else if (has_rs) {
    block = &*rs;
    bp = "rope_scaling";
  }
  static const json empty = json::object();
  const json& b = block ? *block : empty;
  auto at = [&](const char* k) { return bp + "." + k; };

  // --- head and rotary dimensions -----------------------------------------------------------------
  std::int64_t head_dim = 0;
  if (auto qk = r.positive_length(j, "qk_rope_head_dim", "qk_rope_head_dim")) {
    // DeepSeek MLA: RoPE acts on a separate qk_rope_head_dim slice; HF's DeepseekV3Config sets
    // head_dim = qk_rope_head_dim for the rotary embedding.
    head_dim = *qk;
    out.notes.push_back("MLA config: rotary head is qk_rope_head_dim = " + std::to_string(*qk));
  } else if (auto hd = r.positive_length(j, "head_dim", "head_dim")) {
    head_dim = *hd;
  } else {
    const auto hidden = r.agree(r.positive_length(j, "hidden_size", "hidden_size"), "hidden_size",
                                r.positive_length(j, "n_embd", "n_embd"), "n_embd");
    const auto heads = r.agree(r.positive_length(j, "num_attention_heads", "num_attention_heads"),
                               "num_attention_heads", r.positive_length(j, "n_head", "n_head"), "n_head");
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
  auto prf = r.agree(fraction(j, "partial_rotary_factor", "partial_rotary_factor"), "partial_rotary_factor",
                     fraction(b, "partial_rotary_factor", at("partial_rotary_factor")), at("partial_rotary_factor"));
  prf = r.agree(prf, "partial_rotary_factor", fraction(j, "rotary_pct", "rotary_pct"), "rotary_pct");
  const auto rd = r.positive_length(j, "rotary_dim", "rotary_dim");
  std::int64_t rotary = head_dim;
  if (prf) {
    // HF: dim = int(head_dim * partial_rotary_factor), in Python double, truncating.
    const double prod = static_cast<double>(head_dim) * *prf;
    rotary = static_cast<std::int64_t>(prod);
    const std::string which = j.contains("rotary_pct") && !j.contains("partial_rotary_factor")
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
  c.rotary_dim = static_cast<int>(rotary);

  // --- base ------------------------------------------------------------------------------------------
  auto theta = r.agree(r.number(j, "rope_theta", "rope_theta"), "rope_theta",
                       r.number(j, "rotary_emb_base", "rotary_emb_base"), "rotary_emb_base");
  theta = r.agree(theta, j.contains("rope_theta") ? "rope_theta" : "rotary_emb_base",
                  r.number(b, "rope_theta", at("rope_theta")), at("rope_theta"));
  c.base = theta.value_or(10000.0);
  if (!(c.base > 1.0)) {
    const std::string field = block && b.contains("rope_theta") ? at("rope_theta")
                              : j.contains("rotary_emb_base")  ? "rotary_emb_base"
                                                               : "rope_theta";
    r.fail(field, "must be > 1, got " + fmt(c.base));
  }

  // --- lengths ---------------------------------------------------------------------------------------
  const auto mpe = r.agree(r.positive_length(j, "max_position_embeddings", "max_position_embeddings"),
                           "max_position_embeddings", r.positive_length(j, "n_positions", "n_positions"),
                           "n_positions");
  if (mpe) c.max_position_embeddings = *mpe;
  const auto orig = r.agree(
      r.positive_length(j, "original_max_position_embeddings", "original_max_position_embeddings"),
      "original_max_position_embeddings",
      r.positive_length(b, "original_max_position_embeddings", at("original_max_position_embeddings")),
      at("original_max_position_embeddings"));
  if (orig) c.original_max_position_embeddings = *orig;

  // --- layout (non-HF key) ---------------------------------------------------------------------------
  if (auto lay = r.string(j, "ropecheck_layout", "ropecheck_layout")) {
    if (*lay == "interleaved") c.pair_layout = layout::interleaved;
    else if (*lay == "half_split") c.pair_layout = layout::half_split;
    else r.fail("ropecheck_layout", "must be \"interleaved\" or \"half_split\", got \"" + *lay + "\"");
  }

  // --- rule --------------------------------------------------------------------------------------------
  const auto rt = r.agree(r.string(b, "rope_type", at("rope_type")), at("rope_type"), r.string(b, "type", at("type")),
                          at("type"));
  const std::string type_field = b.contains("rope_type") ? at("rope_type") : at("type");
  const std::string type = rt.value_or("default");
  if (type == "default") c.scaling = scaling_kind::none;
  else if (type == "mrope") {
    c.scaling = scaling_kind::none;
    out.notes.push_back("rope type \"mrope\" read as \"default\" (as HF does); multimodal sections are not checked");
  } else if (type == "linear") c.scaling = scaling_kind::linear;
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
          out.notes.push_back("yarn factor " + fmt(*factor) + " differs from max_position_embeddings / "
                              "original_max_position_embeddings = " +
                              fmt(static_cast<double>(*mpe) / static_cast<double>(*orig)) +
                              "; using the explicit factor (transformers v5; 4.4x-4.5x used the ratio)");
      } else if (orig) {
        need_mpe("yarn without factor takes max_position_embeddings / original_max_position_embeddings");
        c.factor = static_cast<double>(*mpe) / static_cast<double>(*orig);
        out.notes.push_back("yarn factor not given; using max_position_embeddings / original_max_position_embeddings = " +
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
      if (!(*hi > *lo))
        r.fail(at("high_freq_factor"), "must be > low_freq_factor (" + fmt(*hi) + " <= " + fmt(*lo) + ")");
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
