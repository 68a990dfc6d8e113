// config/src/config_json.cpp — the public entry points of ropecheck/config_json.hpp, compiled once.
//
// The reader (config_json_*.hpp beside this file) is the heaviest code of the project to compile
// (nlohmann-json and every family's rules at -O2); built here once, the tools, the conformance
// suite and the tests link it instead of compiling it in each of their translation units.
#include "ropecheck/config_json.hpp"

#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>

#include <nlohmann/json.hpp>

#include "config_json_layers.hpp"

namespace ropecheck {

rope_config layer_convention(const hf_config_parse& p, int layer, std::string* type) {
  const int n = p.layers.empty() ? p.num_layers : static_cast<int>(p.layers.size());
  if (layer < 0 || (n > 0 && layer >= n) || (n == 0 && layer != 0))
    throw std::out_of_range("layer " + std::to_string(layer) + " out of range: the config has " +
                            (n > 0 ? std::to_string(n) + " layers (0.." + std::to_string(n - 1) + ")"
                                   : std::string("no num_hidden_layers (only layer 0 can be named)")));
  if (p.layers.empty()) {
    if (type) *type = "full_attention";
    return p.config;
  }
  const layer_rope& l = p.layers[static_cast<std::size_t>(layer)];
  if (type) *type = l.type;
  if (!l.config)
    throw std::invalid_argument("layer " + std::to_string(layer) + " (" + l.type + ") has no RoPE (" + std::string(to_string(l.kind)) +
                                "): " + l.why + "; nothing to check");
  return *l.config;
}

// Parses an HF config.json object; errors name the JSON field and the problem.
hf_config_parse parse_hf_config_with_notes(const nlohmann::json& j, const std::string& source,
                                                  const convention_declaration& decl) {
  return detail::json_read::parse(j, source, decl);
}

rope_config parse_hf_config(const nlohmann::json& j, const convention_declaration& decl) {
  return detail::json_read::parse(j, "", decl).config;
}

hf_config_parse load_hf_config_with_notes(const std::filesystem::path& path, const convention_declaration& decl) {
  return detail::json_read::parse(detail::json_read::read_config_json(path), path.string(), decl);
}

rope_config load_hf_config(const std::filesystem::path& path, const convention_declaration& decl) {
  return load_hf_config_with_notes(path, decl).config;
}

}  // namespace ropecheck
