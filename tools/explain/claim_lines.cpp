// tools/explain/claim_lines.cpp — see claim_lines.hpp and claim_json.hpp.
#include "claim_lines.hpp"

#include <cstdio>

#include "claim_json.hpp"
#include "ropecheck/config_json.hpp"

namespace ropecheck::explain {

std::string convention_line(const rope_config& c) {
  char base[32];
  std::snprintf(base, sizeof base, "%.17g", c.base);
  std::string s = "RoPE " + std::string(to_string(c.pair_layout)) + ", head_dim " + std::to_string(c.head_dim) + ", rotary_dim " +
                  std::to_string(c.rotary_dim) + ", base " + base + ", " + std::string(to_string(c.scaling));
  if (c.scaling != scaling_kind::none) {
    char f[32];
    std::snprintf(f, sizeof f, "%.17g", c.factor);
    s += std::string(" x") + f;
    if (c.scaling == scaling_kind::longrope && c.short_factor == c.long_factor) s += " (one factor list)";
    if (c.attention_factor) {
      std::snprintf(f, sizeof f, "%.10g", *c.attention_factor);
      s += std::string(", attention factor ") + f;
    }
  }
  if (c.frozen_bands > 0) s += ", proportional (" + std::to_string(c.frozen_bands) + " frozen bands)";
  if (c.mrope != mrope_kind::none) s += ", M-RoPE " + std::string(to_string(c.mrope));
  if (c.direction != rotation_direction::forward) s += ", direction " + std::string(to_string(c.direction));
  if (c.outputs != output_order::in_place) s += ", outputs " + std::string(to_string(c.outputs));
  return s;
}

claim claim_of(const hf_config_parse& p, int layer, const std::string& source) {
  claim c;
  c.source = source;
  c.family = p.family;
  c.model_type = p.model_type;
  c.via = p.via;
  c.num_layers = static_cast<int>(p.layers.size());
  c.primary = layer < 0;
  c.layer = layer < 0 ? (p.layers.empty() ? -1 : p.primary_layer) : layer;
  c.assumptions = p.assumptions;
  int conv = 0;
  if (c.layer >= 0 && c.layer < static_cast<int>(p.layers.size())) {
    const layer_rope& l = p.layers[static_cast<std::size_t>(c.layer)];
    c.layer_type = l.type;
    conv = l.convention;
  }
  if (conv >= 0 && conv < static_cast<int>(p.conventions.size())) c.facts = p.conventions[static_cast<std::size_t>(conv)].facts;
  return c;
}

std::string fact_line(const fact& f) {
  auto padded = [](std::string t, std::size_t w) { return t.size() < w ? t + std::string(w - t.size(), ' ') : t; };
  return padded(f.field + " " + f.value, 26) + " " + padded("[" + std::string(to_string(f.origin)) + "]", 15) + " " + f.source;
}

std::vector<std::string> claim_lines(const claim& c) {
  std::vector<std::string> out;
  std::string head = "claim: " + c.source;
  if (!c.family.empty()) head += ": " + c.family + " (" + c.via + ")";
  if (c.layer >= 0)
    head += std::string(c.primary ? ", the first RoPE layer: " : ", ") + "layer " + std::to_string(c.layer) + " (" + c.layer_type +
            ") of " + std::to_string(c.num_layers);
  out.push_back(head);
  for (const fact& f : c.facts) out.push_back("  " + fact_line(f));
  for (const auto& a : c.assumptions) out.push_back("  assumption: " + a);
  for (const auto& o : c.overrides) out.push_back("  override: " + o);
  return out;
}

nlohmann::json fact_json(const fact& f) {
  return {{"field", f.field}, {"value", f.value}, {"from", std::string(to_string(f.origin))}, {"source", f.source}};
}

nlohmann::json claim_json(const claim& c) {
  nlohmann::json j;
  j["source"] = c.source;
  j["family"] = c.family;
  j["model_type"] = c.model_type;
  j["via"] = c.via;
  j["layer"] = c.layer;
  j["layer_type"] = c.layer_type;
  j["num_layers"] = c.num_layers;
  j["primary"] = c.primary;
  j["facts"] = nlohmann::json::array();
  for (const fact& f : c.facts) j["facts"].push_back(fact_json(f));
  j["assumptions"] = c.assumptions;
  j["overrides"] = c.overrides;
  j["engine"] = std::string(to_string(c.engine));
  return j;
}

}  // namespace ropecheck::explain
