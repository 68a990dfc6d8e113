// config/src/config_json_reader.hpp — the typed field reader of config_json.hpp: each value read
// with the JSON path it came from, so every refusal names the field (config_error). Covered by
// tests/config/config_json_test.cpp (BrokenConfig.IsRejectedWithAMessageNamingFileAndField,
// HfConfig.TruncateMustBeABoolean).
//
// Heavy header (nlohmann/json): include it only through config_json.hpp.
#pragma once

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "ropecheck/architectures.hpp"
#include "ropecheck/claim.hpp"
#include "ropecheck/config_json.hpp"

namespace ropecheck {

namespace detail::json_read {

using json = nlohmann::json;

// The facts of one convention, as they are read.
struct fact_log {
  std::vector<fact>& facts;
  void add(std::string field, std::string value, fact_origin origin, std::string source) const {
    for (auto& f : facts)
      if (f.field == field) {
        f = {std::move(field), std::move(value), origin, std::move(source)};
        return;
      }
    facts.push_back({std::move(field), std::move(value), origin, std::move(source)});
  }
};

// What the block's rope type, lengths and family fix; mpe/orig are the lengths already read.
struct rule_inputs {
  const json& b;                    // the block ({} when the config has none)
  const std::string& bp;            // its JSON path
  std::optional<std::int64_t> mpe;  // max_position_embeddings
  std::optional<std::int64_t> orig; // original_max_position_embeddings (top level or block)
  const architecture_facts* facts;  // nullptr: a declared family
  std::string model_type;
  fact_origin origin = fact_origin::file;  // class_default when the block is the family's default
  std::string family_key_note;      // extra keys the family reads in the block ("" none), for messages
  engine_reading engine = engine_reading::transformers;  // --engine
  std::optional<std::int64_t> max_model_len;              // --max-model-len
  bool mla = false;                 // the family's rope slice is MLA's (vLLM: DeepseekScalingRotaryEmbedding)
};

inline std::string describe(const json& v) {
  std::string s = v.dump();
  if (s.size() > 60) s = s.substr(0, 57) + "...";
  return std::string(v.type_name()) + " " + s;
}

// The shortest decimal that reads back as v (1.1, not 1.1000000000000001), as Python and JSON print it.
inline std::string fmt(double v) {
  if (std::isfinite(v) && v == std::floor(v) && std::fabs(v) < 1e15) {  // integers as integers: 1000000, not 1e+06
    std::ostringstream o;
    o.precision(0);
    o << std::fixed << v;
    return o.str();
  }
  char buf[32];
  const auto r = std::to_chars(buf, buf + sizeof buf, v);  // shortest round trip (C++17), never too short
  return std::string(buf, r.ptr);
}

// The JSON object of a config.json file; config_error naming the file when it cannot be opened or parsed.
inline json read_config_json(const std::filesystem::path& path) {
  const std::string name = path.string();
  std::ifstream in(path, std::ios::binary);
  if (!in) throw config_error(name, "", "cannot open file");
  try {
    return json::parse(in, nullptr, /*allow_exceptions=*/true, /*ignore_comments=*/false);
  } catch (const json::parse_error& e) {
    throw config_error(name, "", std::string("not valid JSON: ") + e.what());
  }
}

class reader {
 public:
  // prefix: the JSON path of the object read ("text_config." for a multimodal model's text model),
  // prepended to every field a message names.
  explicit reader(std::string source, std::string prefix = "") : source_(std::move(source)), prefix_(std::move(prefix)) {}

  [[noreturn]] void fail(const std::string& field, const std::string& problem) const {
    throw config_error(source_, field.empty() ? field : prefix_ + field, problem);
  }

  const std::string& prefix() const noexcept { return prefix_; }

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

  // A list of integers (mrope_section, no_rope_layers), each within [lo, hi].
  std::optional<std::vector<std::int64_t>> integers(const json& obj, const char* key, const std::string& path,
                                                    std::int64_t lo, std::int64_t hi) const {
    const auto it = obj.find(key);
    if (it == obj.end() || it->is_null()) return std::nullopt;
    if (!it->is_array()) fail(path, std::string("must be a list of integers, got ") + describe(*it));
    std::vector<std::int64_t> out;
    for (std::size_t i = 0; i < it->size(); ++i) {
      const std::string at = path + "[" + std::to_string(i) + "]";
      json one = json::object();
      one["v"] = (*it)[i];
      const auto v = integer(one, "v", at);
      if (!v) fail(at, "must be an integer, got null");
      if (*v < lo || *v > hi)
        fail(at, "must be in [" + std::to_string(lo) + ", " + std::to_string(hi) + "], got " + std::to_string(*v));
      out.push_back(*v);
    }
    return out;
  }

  // A list of strings (layer_types).
  std::optional<std::vector<std::string>> strings(const json& obj, const char* key, const std::string& path) const {
    const auto it = obj.find(key);
    if (it == obj.end() || it->is_null()) return std::nullopt;
    if (!it->is_array()) fail(path, std::string("must be a list of strings, got ") + describe(*it));
    std::vector<std::string> out;
    for (std::size_t i = 0; i < it->size(); ++i) {
      if (!(*it)[i].is_string())
        fail(path + "[" + std::to_string(i) + "]", "must be a string, got " + describe((*it)[i]));
      out.push_back((*it)[i].get<std::string>());
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
  std::string source_, prefix_;
};

inline bool looks_like_rope_block(const json& o) {
  for (const char* k : {"rope_type", "type", "rope_theta", "factor", "partial_rotary_factor"})
    if (o.contains(k)) return true;
  return false;
}

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

}  // namespace detail::json_read
}  // namespace ropecheck
