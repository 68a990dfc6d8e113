// judge/src/layer_hypothesis.hpp — layer_convention_wrong (internal to ropecheck::judge): a failed dump
// of a per-layer config that passes under another layer type's convention of the same config
// (audit_options::other_layers). Covered by tests/judge/layer_hypothesis_test.cpp.
#pragma once

#include "ropecheck/judge/dump_view.hpp"
#include "ropecheck/judge/judge.hpp"

namespace ropecheck::judge::detail {

// On a failed v: the first of opt.other_layers (not the claim, not repeated, same head_dim) under which d
// passes is named first; nothing otherwise.
void other_layer_hypothesis(const dump_view& d, const rope_config& claimed, const audit_options& opt, verdict& v);

}  // namespace ropecheck::judge::detail
