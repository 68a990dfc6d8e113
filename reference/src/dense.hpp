// reference/src/dense.hpp — the dense path: cos/sin of every band over a range of positions.
//
// Private to the reference library; rope_reference::dense_cos_sin forwards here (reference.hpp has
// the contract, dense.cpp the algorithm and its error budget).
#pragma once

#include <cstdint>
#include <span>

#include "ropecheck/reference/reference.hpp"
#include "turn_phase.hpp"

namespace ropecheck::reference::detail {

// Positions that are multiples of this are taken straight from the exact phase (cos_sin_of_turns);
// the others are reached from the anchor below them by at most dense_interval - 1 rotation steps.
inline constexpr int dense_interval = 128;

void dense_cos_sin(const turn_table& table, std::span<const turn_frequency> freqs, std::int64_t first,
                   std::int64_t count, const rope_reference::dense_block& out, rope_reference::dense_isa isa);

[[nodiscard]] bool dense_avx2_fma_cpu() noexcept;

}  // namespace ropecheck::reference::detail
