// judge/src/direction.hpp — judging the direction of the rotation (rope_config::direction):
// see direction.cpp. Covered by tests/judge/judge_test.cpp
// (Diagnose.ReversedRotationIsNamedWhenTheSubsetMissesTheLargestPosition).
#pragma once

#include "ropecheck/judge/judge.hpp"

#include "judging.hpp"

namespace ropecheck::judge::detail {

// d with the second coordinate of every pair of `claimed`'s pairing negated in x and y: F z for F =
// diag(1, -1) per pair. F R(-p) F = R(p), so y = R(-p) x exactly when F y = R(p) F x.
[[nodiscard]] dump conjugate_pairs(const dump& d, const rope_config& claimed);
// The same as a view: the second coordinate of every pair negated by the view's sign maps (no copy).
[[nodiscard]] dump_view conjugate_pairs(const dump_view& d, const rope_config& claimed);

// A forward claim that failed (f: its judging frame; f.claimed is forward): when the conjugated dump
// passes it, the implementation turns the other way than `stated` (the user's claim, which audit()
// mapped onto f.claimed when it was reversed): rotation_reversed. `subset`, when given, is tested first
// (a cheap necessary condition: same frame, fewer tokens). True when found.
bool reversed_hypothesis(const judging_frame& f, const dump* subset, const rope_config& stated, verdict& v);

}  // namespace ropecheck::judge::detail
