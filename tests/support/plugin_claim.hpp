// tests/support/plugin_claim.hpp — a plugin's claim as `ropecheck audit` arguments, for tests that audit a dump of
// a plugin's outputs under the convention the plugin declares (tests/audit/plugin_door_test.cpp,
// tests/doors/plugin_doors_test.cpp): its config.json (plugin.h ABI 2's config_path, layer, part), or its flat
// convention field by field.
#pragma once

#include <cstdio>
#include <string>

#include "plugin_loader.hpp"

namespace ropecheck::test {

inline std::string exact_number(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

inline std::string plugin_claim_args(const plugin::loaded_plugin& p) {
  const ropecheck_convention& w = p.convention();
  if (w.abi >= 2 && w.config_path != nullptr && w.config_path[0] != '\0') {
    std::string s = " --config " + plugin::resolve_config_path(w.config_path, p.path()).string();
    if (w.layer >= 0) s += " --layer " + std::to_string(w.layer);
    if (w.part != nullptr && std::string(w.part) == "indexer") s += " --indexer";
    return s;
  }
  const rope_config c = p.declared();
  const auto num = exact_number;
  std::string s = " --head-dim " + std::to_string(c.head_dim) + " --rotary-dim " + std::to_string(c.rotary_dim) +
                  " --base " + num(c.base) + " --layout " + std::string(to_string(c.pair_layout)) + " --scaling " +
                  std::string(to_string(c.scaling)) + " --factor " + num(c.factor) + " --max-position-embeddings " +
                  std::to_string(c.max_position_embeddings) + " --beta-fast " + num(c.beta_fast) + " --beta-slow " +
                  num(c.beta_slow) + " --low-freq-factor " + num(c.low_freq_factor) + " --high-freq-factor " +
                  num(c.high_freq_factor);
  if (c.original_max_position_embeddings > 0)
    s += " --original-max-position-embeddings " + std::to_string(c.original_max_position_embeddings);
  if (c.attention_factor) s += " --attention-factor " + num(*c.attention_factor);
  return s;
}

}  // namespace ropecheck::test
