// tools/certify/measure_kernels.cpp — see measure_kernels.hpp.
#include "measure_kernels.hpp"

#include <cmath>
#include <limits>
#include <numbers>

#include "sweep/measure.hpp"

namespace ropecheck::certify {
namespace {
constexpr double inf = std::numeric_limits<double>::infinity();
constexpr double key_margin = 1.0 - 0x1p-40;
constexpr double ratio_margin = 1.0 - 0x1p-45;

// The applied angle error from the cross and dot products (atan's series where |cross| <= dot / 128,
// else -1 and `lowest` set to -1) and its diamond key (+inf for a zero or non-finite pair: NaN).
// Inlined into both row loops, branch-free (& rather than &&), so that they vectorise.
[[gnu::always_inline]] inline void angle_and_key(double cross, double dot, double& err, double& key, double& lowest) {
  const double x = cross / dot, x2 = x * x;
  double t = 1.0 / 9 - x2 * (1.0 / 11);
  t = 1.0 / 7 - x2 * t;
  t = 1.0 / 5 - x2 * t;
  t = 1.0 / 3 - x2 * t;
  const double e = std::fabs(x * (1.0 - x2 * t));
  const double ac = std::fabs(cross), ad = std::fabs(dot);
  const bool ok = (dot > 0) & (ac <= 0x1p-7 * dot);  // false for NaN too
  err = ok ? e : -1.0;
  lowest = ok ? lowest : -1.0;
  const double kq = ac / (ad + ac);
  const double k = dot >= 0 ? kq : 2.0 - kq;
  key = k == k ? k : inf;
}
}  // namespace

__attribute__((target_clones("avx2", "default"))) bool measure_row_double(
    const double* __restrict c, const double* __restrict s, const double* __restrict C, const double* __restrict S,
    std::size_t nb, double inv_af, double fixed, const double* __restrict slope, std::int64_t p, const row_figures& out) {
  double* __restrict err = out.err;
  double* __restrict key = out.key;
  double* __restrict pair = out.pair;
  double* __restrict allow = out.allow;
  const double pd = static_cast<double>(p);
  double lowest = 0;
  for (std::size_t b = 0; b < nb; ++b) {
    const double cb = c[b], sb = s[b];
    const double cross = sb * C[b] - cb * S[b], dot = cb * C[b] + sb * S[b];
    angle_and_key(cross, dot, err[b], key[b], lowest);
    const double dc = std::fabs(cb - C[b]), ds = std::fabs(sb - S[b]);
    const double pm = (dc < ds ? ds : dc) * inv_af;
    const double pe = pm == pm ? pm : inf;  // a NaN component: an infinite error
    pair[b] = pe;
    allow[b] = fixed + pd * slope[b];
  }
  return lowest != 0;
}

// The same for double values: the reference's lo parts enter, and the products of the cross and dot
// products carry their rounding errors (FMA: exact, so the "fma" and the baseline clone, whose fma()
// is glibc's correctly rounded one, give the same bits); a cross product of a few ulps of |z| is then
// resolved to ~2^-100 |z|.
__attribute__((target_clones("fma", "default"))) bool measure_row_precise(
    const double* __restrict c, const double* __restrict s, const double* __restrict Ch, const double* __restrict Cl,
    const double* __restrict Sh, const double* __restrict Sl, std::size_t nb, double inv_af, double fixed,
    const double* __restrict slope, std::int64_t p, const row_figures& out) {
  double* __restrict err = out.err;
  double* __restrict key = out.key;
  double* __restrict pair = out.pair;
  double* __restrict allow = out.allow;
  const double pd = static_cast<double>(p);
  double lowest = 0;
  for (std::size_t b = 0; b < nb; ++b) {
    const double cb = c[b], sb = s[b];
    const double p1 = sb * Ch[b], p2 = cb * Sh[b], q1 = cb * Ch[b], q2 = sb * Sh[b];
    const double e1 = std::fma(sb, Ch[b], -p1), e2 = std::fma(cb, Sh[b], -p2);
    const double f1 = std::fma(cb, Ch[b], -q1), f2 = std::fma(sb, Sh[b], -q2);
    const double cross = (p1 - p2) + ((e1 - e2) + (sb * Cl[b] - cb * Sl[b]));
    const double dot = (q1 + q2) + ((f1 + f2) + (cb * Cl[b] + sb * Sl[b]));
    angle_and_key(cross, dot, err[b], key[b], lowest);
    const double dc = std::fabs((cb - Ch[b]) - Cl[b]), ds = std::fabs((sb - Sh[b]) - Sl[b]);
    const double pm = (dc < ds ? ds : dc) * inv_af;
    pair[b] = pm == pm ? pm : inf;
    allow[b] = fixed + pd * slope[b];
  }
  return lowest != 0;
}

namespace {
// Two loops of few arrays each, with the pointers as arguments: g++ 12 vectorises these, not one loop
// over every array of the two structs.
__attribute__((target_clones("avx2", "default"))) bool update_angles(
    double* __restrict av, double* __restrict ak, double* __restrict ap, double* __restrict need,
    const double* __restrict err, const double* __restrict key, std::size_t nb, double pd) {
  std::int64_t any = 0;  // an integer OR: g++ vectorises it beside the double selects
  for (std::size_t b = 0; b < nb; ++b) {
    const double e = err[b];
    const bool ua = e > av[b];
    av[b] = ua ? e : av[b];
    ak[b] = ua ? key[b] : ak[b];
    ap[b] = ua ? pd : ap[b];
    // A gross value (err -1) whose key may beat the maximum's (or there is none yet: key -1). Keys are
    // never NaN (measure_row_double), so >= is !(<).
    const bool n = (e < 0) & (key[b] >= ak[b] * key_margin);
    need[b] = n ? 1.0 : 0.0;
    any |= n ? std::int64_t{1} : std::int64_t{0};
  }
  return any != 0;
}
// The pair's maximum, and the candidates for the ratio's: the ratio pair / allowance is a division,
// so it is formed only where it may beat the maximum, pair >= (1 - 2^-45) max allow (a value below
// that has a quotient below the maximum even after both roundings): need[b] = 1 there.
__attribute__((target_clones("avx2", "default"))) bool update_pairs(double* __restrict pv, double* __restrict pp,
                                                                     const double* __restrict rv, double* __restrict need,
                                                                     const double* __restrict pair,
                                                                     const double* __restrict allow, std::size_t nb, double pd) {
  std::int64_t any = 0;
  for (std::size_t b = 0; b < nb; ++b) {
    const bool up = pair[b] > pv[b];
    pv[b] = up ? pair[b] : pv[b];
    pp[b] = up ? pd : pp[b];
    const bool n = pair[b] >= rv[b] * allow[b] * ratio_margin;  // rv -1 (none yet): always
    need[b] = n ? 1.0 : 0.0;
    any |= n ? std::int64_t{1} : std::int64_t{0};
  }
  return any != 0;
}

// First crossings of the exact errors; need[b] = 1 for a gross value (err -1) of a band still open whose
// key may cross (the caller forms its exact error).
__attribute__((target_clones("avx2", "default"))) bool update_crossings(
    double* __restrict fa, double* __restrict ft, double* __restrict need, const double* __restrict err,
    const double* __restrict key, const double* __restrict theta, const double* __restrict key_tokens, std::size_t nb,
    double pd, double angle_threshold, double token_threshold, double key_angle_margin) {
  std::int64_t any = 0;
  for (std::size_t b = 0; b < nb; ++b) {
    const double e = err[b];
    const bool fa_open = fa[b] < 0, ft_open = ft[b] < 0;
    fa[b] = (fa_open & (e > angle_threshold)) ? pd : fa[b];
    ft[b] = (ft_open & (e / theta[b] >= token_threshold)) ? pd : ft[b];  // e = -1: no crossing
    const bool n = (e < 0) & ((fa_open & (key[b] >= key_angle_margin)) | (ft_open & (key[b] >= key_tokens[b] * key_margin)));
    need[b] = n ? 1.0 : 0.0;
    any |= n ? std::int64_t{1} : std::int64_t{0};
  }
  return any != 0;
}

double exact_error(double cb, double sb, double C, double S) {
  if (!std::isfinite(cb) || !std::isfinite(sb) || (cb == 0 && sb == 0)) return inf;
  return std::fabs(sweep::detail::angle_of<double>(sb * C - cb * S, cb * C + sb * S));
}
}  // namespace

void update_row(const row_stats& a, const row_figures& f, const row_inputs& in, std::size_t nb, std::int64_t p,
                std::size_t& open, const thresholds& t) {
  const double pd = static_cast<double>(p);
  if (update_pairs(a.pair, a.pair_at, a.ratio, f.need, f.pair, f.allow, nb, pd))
    for (std::size_t b = 0; b < nb; ++b) {
      if (f.need[b] == 0) continue;
      const double r = f.pair[b] / f.allow[b];
      if (r > a.ratio[b] || a.ratio_at[b] < 0) a.ratio[b] = r, a.ratio_at[b] = pd;
    }
  if (update_angles(a.angle, a.angle_key, a.angle_at, f.need, f.err, f.key, nb, pd)) {
    for (std::size_t b = 0; b < nb; ++b) {
      if (f.need[b] == 0) continue;
      const double e = exact_error(in.c[b], in.s[b], in.C[b], in.S[b]);
      f.err[b] = e;
      if (e > a.angle[b]) a.angle[b] = e, a.angle_key[b] = f.key[b], a.angle_at[b] = pd;
    }
  }
  if (open == 0) return;
  // First crossings while some band has not crossed both thresholds (in a thread's increasing sweep
  // the first crossing found is the thread's first).
  if (update_crossings(a.first_angle, a.first_tokens, f.need, f.err, f.key, in.theta, t.key_tokens, nb, pd, t.angle,
                       t.tokens, t.key_angle * key_margin)) {
    for (std::size_t b = 0; b < nb; ++b) {
      if (f.need[b] == 0) continue;
      const double e = exact_error(in.c[b], in.s[b], in.C[b], in.S[b]);
      f.err[b] = e;
      if (a.first_angle[b] < 0 && e > t.angle) a.first_angle[b] = pd;
      if (a.first_tokens[b] < 0 && e / in.theta[b] >= t.tokens) a.first_tokens[b] = pd;
    }
  }
  open = 0;
  for (std::size_t b = 0; b < nb; ++b) open += (a.first_angle[b] < 0 || a.first_tokens[b] < 0) ? 1 : 0;
}

__attribute__((target_clones("avx2", "default"))) void update_equal_next(
    double* __restrict first_equal, const double* __restrict c, const double* __restrict s, const double* __restrict cn,
    const double* __restrict sn, std::size_t nb, std::int64_t p) {
  const double pd = static_cast<double>(p);
  for (std::size_t b = 0; b < nb; ++b) {
    const bool eq = (c[b] * sn[b] == s[b] * cn[b]) & (c[b] * cn[b] + s[b] * sn[b] > 0);
    first_equal[b] = ((first_equal[b] < 0) & eq) ? pd : first_equal[b];
  }
}

bool parallel_exact(double c1, double s1, double c2, double s2) {
  const double p = c1 * s2, q = s1 * c2;
  if (p != q) return false;
  if (std::fma(c1, s2, -p) != std::fma(s1, c2, -q)) return false;
  return c1 * c2 + s1 * s2 > 0;
}

double diamond_key(double psi) {
  if (!(psi < std::numbers::pi)) return 2.0;
  const double sn = std::sin(psi), cs = std::cos(psi);
  return cs >= 0 ? sn / (cs + sn) : 2.0 - sn / (sn - cs);
}

}  // namespace ropecheck::certify
