// judge/src/describe.cpp — see ropecheck/judge/describe.hpp. Covered by tests/audit/plugin_audit_test.cpp
// (PluginAudit.the_correct_example_plugin_passes_every_property: the plugin door's line, field by field).
#include "ropecheck/judge/describe.hpp"

#include <charconv>
#include <sstream>

namespace ropecheck::judge {
namespace {

std::string shortest(double v) {  // the shortest decimal that reads back as v
  char buf[64];
  const auto r = std::to_chars(buf, buf + sizeof buf, v);
  return std::string(buf, r.ptr);
}

}  // namespace

std::string convention_line(const rope_config& c) {
  std::ostringstream s;
  s << "head_dim " << c.head_dim << ", rotary_dim " << c.rotary_dim << ", base " << shortest(c.base) << ", scaling "
    << to_string(c.scaling) << ", factor " << shortest(c.factor) << ", layout " << to_string(c.pair_layout)
    << ", max_position_embeddings " << c.max_position_embeddings;
  if (c.original_max_position_embeddings > 0)
    s << ", original_max_position_embeddings " << c.original_max_position_embeddings;
  if (c.scaling == scaling_kind::yarn) s << ", beta_fast " << shortest(c.beta_fast) << ", beta_slow " << shortest(c.beta_slow);
  if (c.scaling == scaling_kind::llama3)
    s << ", low_freq_factor " << shortest(c.low_freq_factor) << ", high_freq_factor " << shortest(c.high_freq_factor);
  if (c.attention_factor) s << ", attention_factor " << shortest(*c.attention_factor);
  if (c.outputs != output_order::in_place) s << ", outputs " << to_string(c.outputs);
  if (c.direction != rotation_direction::forward) s << ", direction " << to_string(c.direction);
  if (c.frozen_bands != 0) s << ", frozen_bands " << c.frozen_bands;
  if (c.short_mscale) s << ", short_mscale " << shortest(*c.short_mscale) << ", long_mscale " << shortest(*c.long_mscale);
  if (c.mrope != mrope_kind::none) {
    s << ", mrope " << to_string(c.mrope) << " [";
    for (std::size_t r = 0; r < c.mrope_section.size(); ++r) s << (r ? ", " : "") << c.mrope_section[r];
    s << "]";
  }
  return s.str();
}

}  // namespace ropecheck::judge
