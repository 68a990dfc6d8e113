// judge/src/pass_accumulated.cpp — a cos/sin table grown by the rotation recurrence,
//   c_{p+1} = c_p cos t - s_p sin t,  s_{p+1} = s_p cos t + c_p sin t,
// restarted from an anchor (cos/sin of a evaluated directly) at every multiple a of a period P. Its
// error is a sum of per-step roundings, so it depends on the distance n = p mod P from the last anchor,
// not on p: it RESETS at the anchors. Every other error the judge knows grows smoothly with p (fp32
// angle formation, pass_drift.cpp; a frequency error, pass_frequencies.cpp; fp32 positions) or sits at
// every position alike (a cos/sin approximation, pass_cos_sin.cpp): as large just past a multiple of P
// as just before it.
//
// The decision reads one number per position: r(p), the largest |g / af - e^{i phi}| / allowance over
// the bands and the tokens at p (phi the exact angle, the allowance judge::allowance::pair of the dump's
// dtype: r <= 1 is an element inside the allowance). Angle and magnitude together: a recurrence does not
// keep |(c, s)| = 1 (in the slow bands, where fl32(cos t) = 1, c's decrements round away and the norm
// grows), and on ropecheck's fp32 recurrence the magnitude is 10x the angle's share.
//   reset at m  the token at m - 1 is outside the allowance, every token in m .. m + kResetWindow inside
//               and the largest r in m - kResetWindow .. m - 1 at least kResetRatio times the largest in
//               m .. m + kResetWindow (the probe set straddles 256, 2048, 4096, 65504 and 2^24 with +-8,
//               ropecheck/judge/probe.hpp, so a power-of-two P resets at the straddled multiples).
//   P_hi        the largest power of two dividing every reset point (each reset sits at an anchor).
//   P_lo        the smallest power of two >= kMinPeriod (and <= P_hi) such that every token with p mod P
//               <= kResetWindow is inside the allowance: the finest grid of anchor-precise positions.
//               A smaller period would put an anchor next to a token that is off.
//   P_up        the largest power of two dividing every probed multiple of P_lo (a multiple m > 0 with a
//               token in m .. m + kResetWindow): any period P_lo .. P_up leaves each of them an anchor.
// Named when a reset shows and P_lo exists; "anchors every P positions" when P_lo == P_up (the probe
// set holds 32 and every power of two from 128 to 2 max_position_embeddings: a period among them is
// identified), else the range the probed positions cannot split (64: its probed multiples 128, 256, ...
// are all multiples of 128).
// Without anchors (a table grown from position 0 only) nothing resets: that stays `unexplained`
// (pass_drift.cpp). No signature separating it from other residuals has been made reliable yet.
// Measured (tests/judge/pass_accumulated_test.cpp's fp32 kernel, base 5e5, 128 dims, the probe set):
// r reaches 120 at 4095 for anchors every 4096 and 0.69 at 8 steps from an anchor (inside the window);
// in bf16 dumps the recurrence hides in bf16's rounding and the dump passes.
#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

#include "ropecheck/judge/classes.hpp"
#include "passes.hpp"

namespace ropecheck::judge::detail {
namespace {

// r(p): per position, the largest |g / af - e^{i phi}| / allowance over the bands and the tokens at p.
std::map<std::int64_t, double> ratio_by_position(const context& c, const explanation& e) {
  std::map<std::int64_t, double> r;
  for (int t = 0; t < c.d.tokens; ++t) {
    const std::int64_t p = c.d.positions[static_cast<std::size_t>(t)];
    double& w = r[p];
    for (int i = 0; i < e.bands(); ++i) {
      const cell& cl = e.at(t, i);
      if (!cl.ok) continue;
      const double A = c.AL.pair(p, i, std::fabs(static_cast<double>(e.R.angle(p, i).value())));
      const cplx dev = std::polar(std::abs(cl.g) / c.af, e.R.angle_error(p, i, std::arg(cl.g))) - 1.0;
      w = std::max(w, std::abs(dev) / A);
    }
  }
  return r;
}

double max_in(const std::map<std::int64_t, double>& r, std::int64_t lo, std::int64_t hi) {
  double m = 0;
  for (auto it = r.lower_bound(lo); it != r.end() && it->first <= hi; ++it) m = std::max(m, it->second);
  return m;
}

std::int64_t mod(std::int64_t p, std::int64_t P) { return ((p % P) + P) % P; }

}  // namespace

bool within_allowance(double ratio) { return ratio <= 1; }

bool is_reset(double before, double after) {
  return !within_allowance(before) && within_allowance(after) && before >= kResetRatio * after;
}

accumulated_evidence accumulated_of(const std::map<std::int64_t, double>& r) {
  accumulated_evidence a;
  for (const auto& [p, w] : r) {
    if (within_allowance(w) || !r.contains(p + 1)) continue;
    const std::int64_t m = p + 1;
    const double before = max_in(r, m - kResetWindow, m - 1), after = max_in(r, m, m + kResetWindow);
    if (!is_reset(before, after)) continue;
    a.resets.push_back(m);
    a.before = std::max(a.before, before);
    a.reset_ratio = std::max(a.reset_ratio, before / std::max(after, std::numeric_limits<double>::min()));
  }
  for (const auto& [p, w] : r)
    if (w > a.worst) a.worst = w, a.worst_pos = p;
  if (a.resets.empty()) return a;
  const auto two_adic = [](std::int64_t m) { return m & -m; };  // the largest power of two dividing m > 0
  a.p_hi = std::int64_t{1} << 62;
  for (const std::int64_t m : a.resets) a.p_hi = std::min(a.p_hi, two_adic(m));
  for (std::int64_t P = kMinPeriod; P <= a.p_hi && a.p_lo == 0; P *= 2)
    if (std::all_of(r.begin(), r.end(),
                    [&](const auto& x) { return mod(x.first, P) > kResetWindow || within_allowance(x.second); }))
      a.p_lo = P;
  if (a.p_lo == 0) return a;
  // The anchors probed: the multiples m > 0 of P_lo with a token in m .. m + kResetWindow; a period up to
  // the largest power of two dividing all of them leaves each of them an anchor.
  a.p_up = a.p_hi;
  for (const auto& [p, w] : r)
    if (p >= a.p_lo && mod(p, a.p_lo) <= kResetWindow) a.p_up = std::min(a.p_up, two_adic(p - mod(p, a.p_lo)));
  return a;
}

bool accumulated_named(const accumulated_evidence& a) {
  return !a.resets.empty() && a.p_lo > 0 && a.p_lo <= a.p_hi;
}

bool pass_accumulated(const context& c, const explanation& e) {
  const auto r = ratio_by_position(c, e);
  const accumulated_evidence a = accumulated_of(r);
  if (!accumulated_named(a)) return false;
  std::string at;
  for (const std::int64_t m : a.resets) at += (at.empty() ? "" : ", ") + std::to_string(m);
  const std::string period =
      a.p_lo == a.p_up
          ? fmt("anchors every %lld positions", static_cast<long long>(a.p_lo))
          : fmt("anchors every P positions, P a power of two from %lld to %lld (the probed positions cannot tell "
                "which: every probed multiple of %lld is one of %lld)",
                static_cast<long long>(a.p_lo), static_cast<long long>(a.p_up), static_cast<long long>(a.p_lo),
                static_cast<long long>(a.p_up));
  add(c.v, classes::cos_sin_accumulated,
      fmt("a cos/sin table grown by recurrence from %s: the error resets there (at %s the tokens just before are up "
          "to %.3g times the allowance, those from the anchor on inside it, %.3g times less), every token within %lld "
          "past a multiple of %lld is inside the allowance, and the error grows with the distance from the last "
          "anchor (worst %.3g times the allowance at position %lld, %lld past an anchor)",
          period.c_str(), at.c_str(), a.before, a.reset_ratio, static_cast<long long>(kResetWindow),
          static_cast<long long>(a.p_lo), a.worst, static_cast<long long>(a.worst_pos),
          static_cast<long long>(mod(a.worst_pos, a.p_lo))),
      kAccumulatedConfidence);
  return true;
}

}  // namespace ropecheck::judge::detail
