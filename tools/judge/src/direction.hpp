// tools/judge/src/direction.hpp — judging the direction of the rotation (rope_config::direction):
// see direction.cpp.
#pragma once

#include "ropecheck/judge/judge.hpp"

namespace ropecheck::audit::detail {

// d with the second coordinate of every pair of `claimed`'s pairing negated in x and y: F z for F =
// diag(1, -1) per pair. F R(-p) F = R(p), so y = R(-p) x exactly when F y = R(p) F x.
[[nodiscard]] dump conjugate_pairs(const dump& d, const rope_config& claimed);

// The verdict for claimed.direction == reversed (audit() calls it first): the conjugated dump judged
// under the forward claim; rotation_reversed when the dump turns forward instead.
[[nodiscard]] verdict audit_reversed(const dump& d, const rope_config& claimed, const audit_options& opt);

// A forward claim that failed: when the conjugated dump passes it, the implementation turns by R(-p)
// (sin's sign, the conjugate, nanochat's convention): rotation_reversed, first. True when found.
bool reversed_hypothesis(const dump& d, const rope_config& claimed, const audit_options& opt, verdict& v);

}  // namespace ropecheck::audit::detail
