// reference/src/turn_phase.hpp — the fast path: exact phase in turns, then sin/cos in double-double.
//
// Private to the reference library. See turn_phase.cpp for the algorithm and its error budget.
#pragma once

#include <cstdint>

#include "ropecheck/reference/reference.hpp"

namespace ropecheck::reference::detail {

// A frequency in turns per token, f = inv_freq / (2 pi), as an unsigned 64.192 fixed-point number:
// f = integer + (frac[2] 2^-64 + frac[1] 2^-128 + frac[0] 2^-192), rounded to nearest from MPFR.
// Only the fraction matters for the phase (pos * integer is a whole number of turns); the integer
// part is kept (mod 2^64) for diagnostics.
struct turn_frequency {
  std::uint64_t integer = 0;
  std::uint64_t frac[3] = {0, 0, 0};
};

// The phase is rounded to one of M = 2^11 points per turn, so the residual angle left to the
// polynomial is |x| <= pi / M. The table stores the first quadrant only (M/4 = 512 entries, 16 KiB):
// the other three are the same values permuted and negated.
inline constexpr int turn_points_log2 = 11;
inline constexpr int turn_table_size = 1 << (turn_points_log2 - 2);

struct turn_table_entry {
  dd part[2];  // cos, sin
};

// cos and sin of 2 pi j / M, j = 0..M/4-1, in double-double (each within 2^-107 of the exact value,
// from MPFR at 320 bits), and 2 pi as a double-double (relative error <= 2^-107). Built once,
// thread-safely (function-local static), on first use.
struct turn_table {
  turn_table_entry point[turn_table_size];
  dd two_pi;
};
[[nodiscard]] const turn_table& shared_turn_table();

// cos and sin of 2 pi * frac(pos * f).
// Domain: any int64 pos (the phase is formed exactly for all of them). Error: <= 2^-100 absolute on
// each of cos and sin against the exact cos/sin of 2 pi pos f, where f is the fixed-point value;
// f itself is within 2^-193 of inv_freq/(2 pi), which moves the phase by <= 2^-130 turns for
// |pos| <= 2^63. Budget in turn_phase.cpp; checked against MPFR in tests/reference/.
[[nodiscard]] cos_sin_dd cos_sin_of_turns(const turn_table& table, const turn_frequency& f,
                                          std::int64_t pos) noexcept;

}  // namespace ropecheck::reference::detail
