// ropecheck/judge/repeat_calls.hpp — the repeat-call check every door that drives an implementation
// makes (the plugin door's probe, the conformance suite's probe): the same calls made twice must give
// the same outputs, bit for bit (plugin.h and conformance.hpp require every call to be a pure function
// of its arguments). Covered by tests/judge/repeat_calls_test.cpp.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string_view>

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

}  // namespace ropecheck::judge
