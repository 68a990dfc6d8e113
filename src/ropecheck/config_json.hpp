// ropecheck/config_json.hpp — a Hugging Face config.json read into the RoPE convention of every layer.
//
// Declarations only (nlohmann/json_fwd.hpp): the reader is the compiled library ropecheck::config
// (config/src/), so that the heaviest code of the project is compiled once. Its pieces, internal to
// it: the field reader (config_json_reader.hpp), the rope block (config_json_scaling.hpp), a family's
// head, rotary dimension and base (config_json_geometry.hpp), which layers rotate and with what
// (config_json_layer_rules.hpp, config_json_layers.hpp), the text model and its family
// (config_json_family.hpp); the families' facts are here in src/ (architectures.hpp, families/*.hpp,
// json-free).
//
// The claim is never a guess. Everything comes from the file, from the family's class defaults for the
// keys the file leaves out, or from the family's code (architectures.hpp), and each fact of each layer's
// convention records which (hf_config_parse::conventions[].facts; `ropecheck explain` prints them). A
// model_type ropecheck has no facts for is refused (config_error naming model_type and saying how to
// declare the convention) unless the user declared it (convention_declaration: --layout, --rotary-dim,
// --assume-llama, or "ropecheck_layout" in the file): a declared assumption is kept as such
// (hf_config_parse::assumptions). So is a layer kind the family's code does not know.
//
// Unknown fields are errors: a key of the rope block its rope type (or family) does not read, and any
// key of the text model whose name contains "rope" or "rotary" that the family does not read. Fields
// that contradict the family (rope_interleave on a family without it, a partial_rotary_factor on a
// family that rotates the whole head, layer_types of the wrong length or with a type the family does
// not have) are errors naming the field and the family's rule. Everything rejected throws config_error
// naming the file (when loaded from one), the JSON field and the problem.
#pragma once

#include <filesystem>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "ropecheck/architectures.hpp"
#include "ropecheck/claim.hpp"
#include "ropecheck/config.hpp"

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


// One distinct convention of the model and how each of its facts was reached.
struct convention_facts {
  rope_config config;
  std::string type;         // the layer type it belongs to ("full_attention", "sliding_attention", "" uniform)
  std::vector<fact> facts;
};

// One decoder layer: its type (layer_types spelling, or the family's block name), what it is, and its
// convention (an index into hf_config_parse::conventions) when it rotates.
struct layer_rope {
  int index = 0;
  std::string type;
  layer_kind kind = layer_kind::rope;
  std::optional<rope_config> config;  // set iff kind == rope
  int convention = -1;
  std::string why;                    // for a layer without RoPE: the rule that says so, with its source
};

// The parsed config and what the parser decided on the user's behalf.
struct hf_config_parse {
  rope_config config;    // the primary convention: the first RoPE layer's
  int primary_layer = 0; // that layer (0 when the config names no layers; -1 when no layer rotates)
  std::string no_rope;   // primary_layer == -1: why no layer rotates
  std::vector<std::string> notes;        // decisions, each with its source
  std::vector<std::string> assumptions;  // declared by the user (never made by ropecheck itself)
  std::string model_type;                // the text model's model_type ("" when the file gives none)
  std::string family;                    // the family whose facts were used ("declared" for a declaration)
  std::string via;                       // how it was found: model_type "x", architectures "X", --assume-llama, ...
  std::string text_model;                // where the text model's fields were read ("" top level, "text_config")
  int num_layers = 0;                    // num_hidden_layers (0: not given)
  std::vector<layer_rope> layers;        // one per layer when num_layers is known (empty otherwise)
  std::vector<convention_facts> conventions;  // the distinct conventions, conventions[0] the primary's
  // MLA lightning indexer (DeepSeek-V3.2, GLM-5): its RoPE of its own, judged as its own tensor.
  std::optional<convention_facts> indexer;
};

// The convention of decoder layer `layer`: throws std::out_of_range past the model's layers and
// std::invalid_argument naming the layer and its kind when it has no RoPE. `type` receives its type.
rope_config layer_convention(const hf_config_parse& p, int layer, std::string* type = nullptr);

// Parses an HF config.json object (`source` names it in errors); errors name the JSON field and the problem.
hf_config_parse parse_hf_config_with_notes(const nlohmann::json& j, const std::string& source = "",
                                           const convention_declaration& decl = {});
rope_config parse_hf_config(const nlohmann::json& j, const convention_declaration& decl = {});

// The same from a file (config_error on a file that cannot be opened or is not JSON).
hf_config_parse load_hf_config_with_notes(const std::filesystem::path& path, const convention_declaration& decl = {});
rope_config load_hf_config(const std::filesystem::path& path, const convention_declaration& decl = {});

}  // namespace ropecheck
