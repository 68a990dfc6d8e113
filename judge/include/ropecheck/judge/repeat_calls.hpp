// ropecheck/judge/repeat_calls.hpp — the repeat-call check every door that drives an implementation
// makes (the plugin door's probe, the conformance suite's probe): the same calls made twice must give
// the same outputs, bit for bit (plugin.h and conformance.hpp require every call to be a pure function
// of its arguments). Covered by tests/judge/repeat_calls_test.cpp.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "ropecheck/judge/judge.hpp"

namespace ropecheck::judge {

// first, second: the outputs of the two runs, [tokens][heads][head_dim], each value widened exactly from
// the implementation's dtype (so equal bits in double are equal bits in the dtype). `calls` says what was
// repeated ("call": one call; "calls": a run of calls). A `nondeterministic` finding naming how many
// values differ and the first (token, position, head, coordinate, both values), or nothing when every
// value's bits agree (two NaNs agree whatever their payloads). Throws std::invalid_argument when the sizes disagree.
[[nodiscard]] std::optional<finding> repeat_call_finding(std::span<const double> first, std::span<const double> second,
                                                         std::span<const std::int64_t> positions, int heads,
                                                         int head_dim, std::string_view calls);

// Under a dynamic NTK claim, state carried between calls is that rule's known bug: transformers'
// _dynamic_frequency_update (modeling_rope_utils.py dynamic_rope_update) keeps the base a longer call grew unless its
// reset branch restores it, so the same calls give other outputs the second time. `repeat` (repeat_call_finding's
// nondeterministic finding) is then named dynamic_ntk_not_reset, carrying the first dynamic_ntk_not_reset sentence of
// `others` (the decode calls' verdict: the base it fits) when there is one. Any other claim, or another finding:
// `repeat` as it is.
[[nodiscard]] finding carried_state_finding(finding repeat, const rope_config& claimed, const std::vector<finding>& others);

}  // namespace ropecheck::judge
