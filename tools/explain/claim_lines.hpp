// tools/explain/claim_lines.hpp — the claim a door checks against, in words: which family's facts read
// the config.json, which layer's convention is checked, and where each of its facts came from (the file,
// the family's class default, its code, or the user's declaration). `ropecheck explain` prints every
// layer; report, audit and certify print these lines at their top and write them into their JSON.
//
// Light: no JSON (claim_json.hpp has the writer's half).
#pragma once

#include <string>
#include <vector>

#include "ropecheck/claim.hpp"

namespace ropecheck {
struct hf_config_parse;
}

namespace ropecheck::explain {

// The claim of layer `layer` of a parsed config.json (-1: the primary convention, the first RoPE layer's).
[[nodiscard]] claim claim_of(const hf_config_parse& parsed, int layer, const std::string& source);

// "claim: <source>: <family> (<via>), layer N (<type>) of M" and one indented line per fact, assumption
// and override.
[[nodiscard]] std::vector<std::string> claim_lines(const claim& c);

// One fact: "<field> <value>  [<origin>]  <source>", in columns (explain and the doors' claim lines).
[[nodiscard]] std::string fact_line(const fact& f);

// A convention in one line ("RoPE half_split, head_dim 128, rotary_dim 64, base 10000, default, ...").
[[nodiscard]] std::string convention_line(const rope_config& c);

}  // namespace ropecheck::explain
