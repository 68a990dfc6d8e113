// tools/sweep/config_to_json.hpp — a rope_config as JSON, every field, in one order: the report's
// summary.json and certify's certificate.json write the convention the same way (nlohmann-json:
// include only from the writers' translation units).
#pragma once

#include <nlohmann/json.hpp>

#include <optional>
#include <string>

#include "ropecheck/config.hpp"

namespace ropecheck::sweep {

[[nodiscard]] inline nlohmann::ordered_json config_to_json(const rope_config& c) {
  using ojson = nlohmann::ordered_json;
  auto optional_number = [](const std::optional<double>& v) { return v ? ojson(*v) : ojson(nullptr); };
  ojson j;
  j["head_dim"] = c.head_dim;
  j["rotary_dim"] = c.rotary_dim;
  j["base"] = c.base;
  j["layout"] = std::string(to_string(c.pair_layout));
  j["scaling"] = std::string(to_string(c.scaling));
  j["factor"] = c.factor;
  j["max_position_embeddings"] = c.max_position_embeddings;
  j["original_max_position_embeddings"] = c.original_max_position_embeddings;
  j["beta_fast"] = c.beta_fast;
  j["beta_slow"] = c.beta_slow;
  j["truncate"] = c.truncate;
  j["attention_factor"] = optional_number(c.attention_factor);
  j["mscale"] = optional_number(c.mscale);
  j["mscale_all_dim"] = optional_number(c.mscale_all_dim);
  j["low_freq_factor"] = c.low_freq_factor;
  j["high_freq_factor"] = c.high_freq_factor;
  j["short_factor"] = c.short_factor;
  j["long_factor"] = c.long_factor;
  // Added after the first format: where the outputs go, M-RoPE.
  j["outputs"] = std::string(to_string(c.outputs));
  j["mrope"] = std::string(to_string(c.mrope));
  j["mrope_section"] = c.mrope_section;
  // Added with the family facts: written only when they differ from the default, so that the JSON (and a
  // certificate's inputs hash) of every convention that has none is what it was.
  if (c.direction != rotation_direction::forward) j["direction"] = std::string(to_string(c.direction));
  if (c.frozen_bands != 0) j["frozen_bands"] = c.frozen_bands;
  if (c.short_mscale) j["short_mscale"] = *c.short_mscale;
  if (c.long_mscale) j["long_mscale"] = *c.long_mscale;
  return j;
}

}  // namespace ropecheck::sweep
