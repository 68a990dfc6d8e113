// tools/certify/measure_kernels.hpp — the inner loops of the certify sweep over one position's bands
// (engine.hpp gives the contract of each figure). Plain arrays in, plain arrays out, in their own
// translation unit so that they vectorise, each built for AVX2 and for baseline x86-64
// (target_clones): the same IEEE operations without FMA either way, so the same bits.
#pragma once

#include <cstddef>
#include <cstdint>

namespace ropecheck::certify {

// For each band b: err[b] the applied angle error |angle((c + i s) conj(C + i S))|, pair[b] =
// max(|c - C|, |s - S|) inv_af, ratio[b] = pair[b] / (fixed + p slope[b]) (the allowance line).
// The angle by atan's Taylor series to x^17 / 17 where |cross| <= dot / 16 (truncation < 2^-76
// relative, as report/measure.hpp's angle_of), atan2 elsewhere; +inf for a non-finite or zero pair.
void measure_row_double(const double* c, const double* s, const double* C, const double* S, std::size_t nb, double inv_af,
                        double fixed, const double* slope, std::int64_t p, double* err, double* ratio, double* pair);

// Running maxima (value and first position, strict >) and first positions over the thresholds (-1:
// none yet). Positions are held as doubles (exact below 2^53) so that every select of the loop is on
// doubles and it vectorises.
struct row_stats {
  double *angle, *pair, *ratio;
  double *angle_at, *pair_at, *ratio_at, *first_angle, *first_tokens;
};
void update_row(const row_stats& a, const double* err, const double* ratio, const double* pair, const double* theta,
                std::size_t nb, std::int64_t p, double angle_threshold, double token_threshold);

}  // namespace ropecheck::certify
