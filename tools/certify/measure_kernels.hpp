// tools/certify/measure_kernels.hpp — the inner loops of the certify sweep over one position's bands
// (engine.hpp gives the contract of each figure). Plain arrays in, plain arrays out, in their own
// translation unit so that they vectorise, each built for AVX2 and for baseline x86-64
// (target_clones): the same IEEE operations without FMA either way, so the same bits.
//
// Gross errors (|cross| > dot / 128, i.e. an applied angle error beyond ~1/128 rad, which is most
// values of an fp32 strategy past ~2^25) would cost one atan2 each. Instead every value gets a monotone key of
// its error, the diamond angle k = |cross| / (|dot| + |cross|) (dot >= 0) or 2 - that (dot < 0),
// increasing with |psi| on [0, pi]; atan2 runs only where the key says the value could matter: a new
// maximum or a threshold not crossed yet. The key is exact to 2^-45 relative (|cross| >= |z| / 129 on the
// gross path, and near pi the key is 2 - small), so a margin of 2^-40 relative is safe: a value whose
// key is below (1 - 2^-40) times the maximum's key has a smaller error. The figures are therefore the
// same as atan2 on every value would give.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace ropecheck::certify {

// One position's figures per band.
struct row_figures {
  double *err, *key, *pair, *allow, *need;  // need: scratch of update_row
};

// For each band b: err[b] the applied angle error |angle((c + i s) conj(C + i S))| where
// |cross| <= dot / 128 (atan's Taylor series to x^11 / 11: truncation x^12 / 13 < 2^-87 relative; the
// quotient rounds at 2^-53), -1 elsewhere (update_row decides); key[b] the diamond key (+inf
// for a non-finite or zero pair); pair[b] = max(|c - C|, |s - S|) inv_af; allow[b] = fixed + p slope[b]
// (the allowance line; update_row forms pair / allow where it may be a new maximum). Returns true when
// some err[b] is -1.
bool measure_row_double(const double* c, const double* s, const double* C, const double* S, std::size_t nb, double inv_af,
                        double fixed, const double* slope, std::int64_t p, const row_figures& out);

// measure_row_double for double values (C + Cl, S + Sl the reference in double-double): the cross and
// dot products compensated (FMA-exact products), so an error of a few ulps is measured to ~2^-50.
bool measure_row_precise(const double* c, const double* s, const double* C, const double* Cl, const double* S,
                         const double* Sl, std::size_t nb, double inv_af, double fixed, const double* slope,
                         std::int64_t p, const row_figures& out);

// Running maxima (value, the key of the angle's, and the first position, strict >) and first positions
// over the thresholds (-1: none yet). Positions are held as doubles (exact below 2^53) so that every
// select of the loops is on doubles and they vectorise.
struct row_stats {
  double *angle, *angle_key, *pair, *ratio;
  double *angle_at, *pair_at, *ratio_at, *first_angle, *first_tokens;
};
struct row_inputs {
  const double *c, *s, *C, *S, *theta;  // the row's pairs, the reference's (af included), theta per band
};
struct thresholds {
  double angle = 0, tokens = 0;
  double key_angle = 0;                 // diamond_key(angle)
  const double* key_tokens = nullptr;   // per band: diamond_key(tokens theta_b)
};
// Raises the statistics by one row: maxima of pair and of the ratio pair / allow for every band; of the angle for every
// exact err and, through atan2, for the gross values whose key may beat the maximum; first crossings
// while `open` (the number of bands still without both) is not 0, atan2 for a gross value whose key
// may cross; `open` is recounted. Writes the exact errors it computes into f.err.
void update_row(const row_stats& a, const row_figures& f, const row_inputs& in, std::size_t nb, std::int64_t p,
                std::size_t& open, const thresholds& t);

// first_equal[b] = p (a position, as a double) where it is still -1 and the pair (c, s) is parallel to
// the next position's (cn, sn): cross product 0 and dot product > 0. Exact for values of <= 24
// significand bits (their products are exact in double); double values use parallel_exact.
void update_equal_next(double* first_equal, const double* c, const double* s, const double* cn, const double* sn,
                       std::size_t nb, std::int64_t p);
// The same test exactly for any doubles (each product's rounding error from an FMA).
[[nodiscard]] bool parallel_exact(double c1, double s1, double c2, double s2);

// The diamond key of an angle error psi >= 0 (2 for psi >= pi).
[[nodiscard]] double diamond_key(double psi);

}  // namespace ropecheck::certify
