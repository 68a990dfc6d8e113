// tools/report/score_offsets.hpp — the report's score-level figure (internal to ropecheck_report_engine): each
// implementation's positional score error against the offset m - n.
//
// Pairs: query positions q_pos = score_query_positions(max_position) (48 log-spaced positions of the sweep,
// 0 and max_position included); for each query at m, a key at every n of q_pos (so m < n, m = n, m > n, and
// both far apart) and at m -+ 1, 3, 16, 255 within [0, max_position] (small offsets at large positions, where
// fp32 angles drift). One head vector q and one k (seeded, entries int8 / 128, exact in every dtype).
// Error of a pair: |<R~_m q, R~_n k> - af^2 <q, R(n - m) k>| / (af^2 |q| |k|) over the rotary coordinates, the
// judge's normalisation (ropecheck/judge/scores.hpp measure_score_identity): R~ the implementation's rotation
// (runner::rotate_at, its own types), R the MPFR reference's rotation (rope_reference::rotate, double-double,
// attention factor included: one af), the dot products in long double (2^-64, far below any figure shown).
// Buckets of d = m - n: d = 0, and +-[2^k, 2^(k+1) - 1] for k >= 0, most negative first; empty buckets are left
// out. Cost: ~2000 pairs per implementation, ~400 rotations by it and one reference rotation per distinct
// offset (shared by all implementations).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "data.hpp"
#include "ropecheck/reference/reference.hpp"

namespace ropecheck::sweep::detail {
class runner;
}

namespace ropecheck::report {

[[nodiscard]] std::vector<std::int64_t> score_query_positions(std::int64_t max_position);

// The exact scores af^2 <q, R(n - m) k> (as af <q, R(n - m) k> with the reference's R carrying af), by
// offset n - m, and the pairs they are read at: computed once for all implementations.
struct score_pairs {
  std::vector<std::pair<std::int64_t, std::int64_t>> pairs;  // (m, n)
  std::vector<long double> exact;                            // per pair
  long double norm = 0;                                      // af^2 |q| |k| over the rotary coordinates
};
[[nodiscard]] score_pairs exact_score_pairs(const reference::rope_reference& ref, std::int64_t max_position,
                                            std::span<const double> q, std::span<const double> k);

// One implementation's rows (score_offset_row, report_data.hpp).
[[nodiscard]] std::vector<score_offset_row> score_by_offset(const sweep::detail::runner& impl, const score_pairs& sp,
                                                            const rope_config& cfg, std::span<const double> q,
                                                            std::span<const double> k);

}  // namespace ropecheck::report
