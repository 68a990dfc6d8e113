// judge/src/layer_hypothesis.cpp — see layer_hypothesis.hpp. The kernel applied the wrong layer type's
// RoPE (Gemma 3's local base on a global layer, ...), or the dump is not from the layer it was said to be:
// the whole dump re-judged under each other layer type's convention, with its own allowance.
#include "layer_hypothesis.hpp"

#include <algorithm>
#include <vector>

#include "ropecheck/judge/classes.hpp"
#include "ropecheck/judge/describe.hpp"
#include "ropecheck/judge/sentence.hpp"

namespace ropecheck::judge::detail {

void other_layer_hypothesis(const dump_view& d, const rope_config& claimed, const audit_options& opt, verdict& v) {
  if (v.pass || opt.other_layers.empty()) return;
  audit_options o = opt;
  o.progress = nullptr;
  o.other_layers.clear();
  std::vector<rope_config> tried{claimed};
  for (const auto& l : opt.other_layers) {
    if (std::find(tried.begin(), tried.end(), l.config) != tried.end()) continue;
    tried.push_back(l.config);
    if (l.config.head_dim != d.head_dim) continue;
    const verdict alt = audit(d, l.config, o);
    if (!alt.pass) continue;
    v.findings.insert(v.findings.begin(),
                      {classes::layer_convention_wrong,
                       "the outputs are another layer type's RoPE: they pass as a \"" + l.type + "\" layer (layer " +
                           std::to_string(l.index) + ": " + convention_line(l.config) + "; worst error/allowance " +
                           fmt("%.3g", alt.worst_ratio) + "), not as the convention checked (" +
                           convention_line(claimed) + ")",
                       0.97});
    return;
  }
}

}  // namespace ropecheck::judge::detail
