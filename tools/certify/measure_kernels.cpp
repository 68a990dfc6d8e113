// tools/certify/measure_kernels.cpp — see measure_kernels.hpp.
#include "measure_kernels.hpp"

#include <cmath>
#include <limits>

#include "measure.hpp"

namespace ropecheck::certify {

// One position's bands in double (implementations with <= 24 significand bits): the applied angle
// error by angle_of's Taylor series where |cross| <= dot / 16 (branch-free, so the loop vectorises),
// angle_of itself elsewhere (gross errors), +inf for a non-finite or zero pair.
// Built for AVX2 and for baseline x86-64 (target_clones, chosen at load time): the same IEEE
// operations without FMA (the AVX2 target does not enable it), so the same bits.
__attribute__((target_clones("avx2", "default"))) void measure_row_double(
    const double* __restrict c, const double* __restrict s, const double* __restrict C, const double* __restrict S,
    std::size_t nb, double inv_af, double fixed, const double* __restrict slope, std::int64_t p, double* __restrict err,
    double* __restrict ratio, double* __restrict pair) {
  const double pd = static_cast<double>(p);
  double lowest = 0;
  for (std::size_t b = 0; b < nb; ++b) {
    const double cb = c[b], sb = s[b];
    const double cross = sb * C[b] - cb * S[b], dot = cb * C[b] + sb * S[b];
    const double x = cross / dot, x2 = x * x;
    double t = 1.0 / 15 - x2 * (1.0 / 17);
    t = 1.0 / 13 - x2 * t;
    t = 1.0 / 11 - x2 * t;
    t = 1.0 / 9 - x2 * t;
    t = 1.0 / 7 - x2 * t;
    t = 1.0 / 5 - x2 * t;
    t = 1.0 / 3 - x2 * t;
    const double e = std::fabs(x * (1.0 - x2 * t));
    const bool ok = (dot > 0) & (std::fabs(cross) <= 0x1p-4 * dot);  // false for NaN too; & keeps the loop branch-free
    err[b] = ok ? e : -1.0;
    lowest = ok ? lowest : -1.0;
    const double dc = std::fabs(cb - C[b]), ds = std::fabs(sb - S[b]);
    const double pe = (dc < ds ? ds : dc) * inv_af;
    pair[b] = pe;
    ratio[b] = pe / (fixed + pd * slope[b]);
  }
  if (lowest == 0) return;  // no -1: every band took the series
  constexpr double inf = std::numeric_limits<double>::infinity();
  for (std::size_t b = 0; b < nb; ++b) {
    if (err[b] >= 0) continue;
    const double cb = c[b], sb = s[b];
    if (!std::isfinite(cb) || !std::isfinite(sb) || (cb == 0 && sb == 0)) {
      err[b] = pair[b] = ratio[b] = inf;
      continue;
    }
    err[b] = std::fabs(report::detail::angle_of<double>(sb * C[b] - cb * S[b], cb * C[b] + sb * S[b]));
  }
}

// Raises the band arrays by one position's figures: strict >, so within a thread's increasing
// sweep the first position reaching a maximum keeps it (merge breaks ties across threads likewise).
__attribute__((target_clones("avx2", "default"))) void update_row(const row_stats& a, const double* __restrict err,
                                                                   const double* __restrict ratio, const double* __restrict pair,
                                                                   const double* __restrict theta, std::size_t nb, std::int64_t p,
                                                                   double angle_threshold, double token_threshold) {
  double* __restrict av = a.angle;
  double* __restrict pv = a.pair;
  double* __restrict rv = a.ratio;
  double* __restrict ap = a.angle_at;
  double* __restrict pp = a.pair_at;
  double* __restrict rp = a.ratio_at;
  double* __restrict fa = a.first_angle;
  double* __restrict ft = a.first_tokens;
  const double pd = static_cast<double>(p);
  for (std::size_t b = 0; b < nb; ++b) {
    const bool ua = err[b] > av[b], up = pair[b] > pv[b], ur = ratio[b] > rv[b];
    av[b] = ua ? err[b] : av[b];
    ap[b] = ua ? pd : ap[b];
    pv[b] = up ? pair[b] : pv[b];
    pp[b] = up ? pd : pp[b];
    rv[b] = ur ? ratio[b] : rv[b];
    rp[b] = ur ? pd : rp[b];
    fa[b] = ((fa[b] < 0) & (err[b] > angle_threshold)) ? pd : fa[b];
    ft[b] = ((ft[b] < 0) & (err[b] / theta[b] >= token_threshold)) ? pd : ft[b];
  }
}

}  // namespace ropecheck::certify
