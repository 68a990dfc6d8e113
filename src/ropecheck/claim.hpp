// ropecheck/claim.hpp — what a convention was claimed from, as plain data every door can carry and print:
// the facts of each derived convention with their origin (file, class default, family code, declared),
// the kinds of layers, and what the user declared. config_json.hpp fills them; `ropecheck explain`, the
// report, the audit and certify print them (tools/explain/claim_lines.hpp).
//
// Light header: no JSON.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ropecheck/config.hpp"

namespace ropecheck {

// What a layer is, as far as RoPE is concerned.
enum class layer_kind : std::uint8_t {
  rope,              // attention that rotates q and k
  nope,              // attention without positional encoding (NoPE)
  linear_attention,  // linear attention (Gated DeltaNet, lightning attention): no RoPE
  mamba,             // a Mamba / Mamba 2 mixer
  recurrent,         // a recurrent block (RG-LRU)
  conv,              // a short convolution (LFM2)
  cross_attention,   // attention over another stack's states, not rotated (Mllama)
};

[[nodiscard]] constexpr std::string_view to_string(layer_kind k) noexcept {
  switch (k) {
    case layer_kind::rope: return "rope";
    case layer_kind::nope: return "nope";
    case layer_kind::linear_attention: return "linear_attention";
    case layer_kind::mamba: return "mamba";
    case layer_kind::recurrent: return "recurrent";
    case layer_kind::conv: return "conv";
    case layer_kind::cross_attention: return "cross_attention";
  }
  return "?";
}

// Where one fact of a convention came from.
enum class fact_origin : std::uint8_t {
  file,           // a key of config.json (source names it)
  class_default,  // the family's configuration class, the key being absent (source cites it)
  family_code,    // the family's modeling code (source cites file and function)
  derived,        // computed from other facts (source says how)
  declared,       // the user declared it (a flag, or ropecheck_layout in the file)
};

[[nodiscard]] constexpr std::string_view to_string(fact_origin o) noexcept {
  switch (o) {
    case fact_origin::file: return "file";
    case fact_origin::class_default: return "class default";
    case fact_origin::family_code: return "family code";
    case fact_origin::derived: return "derived";
    case fact_origin::declared: return "declared";
  }
  return "?";
}

struct fact {
  std::string field;   // head_dim, rotary_dim, base, layout, direction, outputs, scaling, mrope, ...
  std::string value;   // as printed
  fact_origin origin = fact_origin::file;
  std::string source;  // the key read, or the class and file, or the code's file and function
  friend bool operator==(const fact&, const fact&) = default;
};

// Whose reading of config.json is claimed. A config.json is written for transformers, and the
// family's transformers (or remote) code is what it means; vLLM reads some of its keys differently
// (src/ropecheck/engine_variants.hpp lists where, from vllm/model_executor/layers/rotary_embedding/).
enum class engine_reading : std::uint8_t {
  transformers,  // the family's own code (default)
  vllm,          // --engine vllm: vLLM's get_rope and its rotary classes
};

[[nodiscard]] constexpr std::string_view to_string(engine_reading e) noexcept {
  return e == engine_reading::vllm ? "vllm" : "transformers";
}

// What the user declared about a family ropecheck has no facts for (or to override one).
struct convention_declaration {
  std::optional<layout> pair_layout;  // --layout
  std::optional<int> rotary_dim;      // --rotary-dim
  std::optional<double> rotary_fraction;  // --rotary-fraction
  bool assume_llama = false;          // --assume-llama: read the file as HF Llama's code reads it
  engine_reading engine = engine_reading::transformers;  // --engine
  std::optional<std::int64_t> max_model_len;              // --max-model-len (vLLM's engine-wide length)
};

// What a door checked against, and why: the family, the layer chosen and the facts of its convention.
struct claim {
  std::string source;                   // config.json path, preset name, or "flags"
  std::string family;                   // "" for a preset or flags
  std::string model_type;
  std::string via;                      // how the family was found ("model_type \"glm4\"", "--assume-llama")
  int layer = -1;                       // the decoder layer whose convention is checked (-1: the model's only one)
  std::string layer_type;
  int num_layers = 0;
  bool primary = true;                  // no --layer: the first RoPE layer's convention
  std::vector<fact> facts;              // of the convention checked
  std::vector<std::string> assumptions; // declared by the user
  std::vector<std::string> overrides;   // convention flags applied on top of the file
  engine_reading engine = engine_reading::transformers;  // whose reading of the file
};

}  // namespace ropecheck
