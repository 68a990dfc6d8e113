// judge/src/pass_drift.cpp — angle error growing with position: the implied angle arg g against
// the exact angle, as a multiple of u_f32 |p theta| and in tokens (|error| / theta_i).
//
// angle_drift_fp32 is named only inside its own error model: every (token, band) of the chosen
// pairing within  floor + K u_f32 |p theta|, with
//   K = 4 (k_max + 2)   k_max + 2 the fp32 allowance's largest angle coefficient for the claim
//                       (k_freq + k_pos + 1 of error_model.hpp section 3, ggml's chain included):
//                       what a careful fp32 angle formation can reach. The factor 4 leaves room for a
//                       less careful fp32 chain (a few extra fp32 roundings, each <= 2u against a
//                       k_max of ~10..200), and nothing else: positions or inv_freq in bf16 are off
//                       by 2^16 times more per step, a wrong position by |p' - p| theta / (u |p theta|)
//   floor = 2 fixed     the outputs' own rounding (cos/sin 3u + rotation 2u (+ store u) relative to
//                       af (|x_a| + |x_b|) <= sqrt(2) af |z|, so an angle error of up to sqrt(2)
//                       fixed hides in it), which bounds the noise of arg g at small |p theta|
// Beyond it the finding is `unexplained`, naming the tokens (position range) and the bands where
// the residual sits. Before either, pass_accumulated.cpp: an error that resets at anchors every P
// positions (angle or magnitude: a recurrence's |g| drifts while its angle may stay within fp32
// drift) is a cos/sin table grown by recurrence, neither drift nor unexplained. (A warning on a
// pass, within the allowance, needs no such test.)
#include <algorithm>
#include <cmath>
#include <limits>

#include "ropecheck/judge/classes.hpp"
#include "passes.hpp"

namespace ropecheck::judge::detail {
namespace {

struct drift_bound {
  double K = 0, floor = 0;
  [[nodiscard]] double at(double abs_angle) const { return floor + K * kU32 * abs_angle; }
};

drift_bound bound_of(const context& c) {
  const judge::allowance fp32(c.claimed, "float32", reference_kind::exact, false);
  return {4 * (fp32.k_max() + 2), 2 * c.AL.fixed()};
}

// Where the angle errors exceed the bound: tokens, bands, the worst cell.
struct residual {
  int tokens = 0, bands = 0;
  std::int64_t p_lo = std::numeric_limits<std::int64_t>::max(), p_hi = std::numeric_limits<std::int64_t>::min();
  int b_lo = std::numeric_limits<int>::max(), b_hi = -1;
  double worst_ratio = 0, worst_err = 0, worst_k = 0;
  std::int64_t worst_pos = 0;
  int worst_band = 0;
};

residual locate(const context& c, const explanation& e, const drift_bound& B) {
  residual r;
  const dump& d = c.d;
  std::vector<char> band_hit(static_cast<std::size_t>(e.bands()), 0);
  for (int t = 0; t < d.tokens; ++t) {
    const std::int64_t p = d.positions[static_cast<std::size_t>(t)];
    bool hit = false;
    for (int i = 0; i < e.bands(); ++i) {
      const cell& cl = e.at(t, i);
      if (!cl.ok) continue;
      const double err = std::fabs(e.R.angle_error(p, i, std::arg(cl.g)));
      const double phi = std::fabs(static_cast<double>(e.R.angle(p, i).value()));
      const double bound = B.at(phi);
      const double ratio = err / bound;
      if (ratio > r.worst_ratio)
        r.worst_ratio = ratio, r.worst_err = err, r.worst_pos = p, r.worst_band = i, r.worst_k = phi > 0 ? err / (kU32 * phi) : 0;
      if (within_fp32_drift(err, bound)) continue;
      hit = true;
      band_hit[static_cast<std::size_t>(i)] = 1;
      r.b_lo = std::min(r.b_lo, i), r.b_hi = std::max(r.b_hi, i);
    }
    if (hit) ++r.tokens, r.p_lo = std::min(r.p_lo, p), r.p_hi = std::max(r.p_hi, p);
  }
  r.bands = static_cast<int>(std::count(band_hit.begin(), band_hit.end(), 1));
  return r;
}

// No hypothesis fits and the residual is beyond fp32 drift: say where it sits.
void unexplained(const context& c, const drift_bound& B, const residual& r, const std::string& what) {
  add(c.v, classes::unexplained,
      fmt("no hypothesis explains the angles (%s): %d of %d tokens (positions %lld..%lld) are off in %d bands "
          "(bands %d..%d) by more than fp32 drift can be (%.3g + K u_f32 |p theta|, K = 4 (k_max + 2) = %.4g), up "
          "to %.3g rad (%.3g u_f32 |p theta|) at position %lld band %d; the other tokens and bands agree with the "
          "claim within that bound",
          what.c_str(), r.tokens, c.d.tokens, static_cast<long long>(r.p_lo), static_cast<long long>(r.p_hi), r.bands,
          r.b_lo, r.b_hi, B.floor, B.K, r.worst_err, r.worst_k, static_cast<long long>(r.worst_pos), r.worst_band),
      0.3);
}

}  // namespace

double fp32_drift_bound(const context& c, double abs_angle) { return bound_of(c).at(abs_angle); }

bool within_fp32_drift(double error, double bound) { return error / bound <= 1; }

drift_stats drift_of(const context& c, const pairing& P, const reference::rope_reference& R) {
  drift_stats s;
  const dump& d = c.d;
  const int nb = P.bands();
  for (int t = 0; t < d.tokens; ++t) {
    const std::int64_t p = d.positions[static_cast<std::size_t>(t)];
    for (int i = 0; i < nb; ++i) {
      const cell& cl = P.at(t, i);
      if (!cl.ok) continue;
      const double e = std::fabs(R.angle_error(p, i, std::arg(cl.g)));
      const double phi = std::fabs(static_cast<double>(R.angle(p, i).value()));
      if (std::llabs(p) < 64) s.small_p_max = std::max(s.small_p_max, e);
      if (e > s.max_err) {
        s.max_err = e, s.at_pos = p, s.at_band = i;
        s.max_tokens = e / static_cast<double>(R.inv_freq(i).value());
        s.max_k = phi > 0 ? e / (kU32 * phi) : 0;
      }
    }
  }
  return s;
}

void drift_warning(const context& c, const pairing& claimed_pairing) {
  const drift_stats s = drift_of(c, claimed_pairing, c.ref);
  add(c.v, classes::angle_drift_fp32,
      fmt("warning: angle error grows with position, %.3g rad at position %lld band %d (%.3g u_f32 |p theta|, "
          "%.3g tokens of position error; %.3g rad at positions < 64): fp32 angle formation, within its allowance",
          s.max_err, static_cast<long long>(s.at_pos), s.at_band, s.max_k, s.max_tokens, s.small_p_max),
      0.4);
}

void drift_after_frequencies(const context& c, const explanation& e, const frequency_evidence& f) {
  if (pass_accumulated(c, e)) return;  // the error resets at anchors (pass_accumulated.cpp): not drift
  const drift_bound B = bound_of(c);
  const residual r = locate(c, e, B);
  if (!within_fp32_drift(r.worst_ratio, 1)) {  // the largest error/bound, over a bound of 1
    unexplained(c, B, r,
                fmt("no position explains every token, and the fitted frequencies are within %.3g of the claim", f.max_rel));
    return;
  }
  const drift_stats s = drift_of(c, e.P, e.R);
  add(c.v, classes::angle_drift_fp32,
      fmt("angle error grows linearly with position: relative frequency error up to %.3g (%.3g u_f32, band %d); "
          "%.3g rad at position %lld band %d (%.3g u_f32 |p theta|, %.3g tokens), %.3g rad at positions < 64; within "
          "fp32 drift (%.3g + K u_f32 |p theta|, K = %.4g; largest error/bound %.3g)",
          f.max_rel, f.max_rel / kU32, f.max_rel_band, s.max_err, static_cast<long long>(s.at_pos), s.at_band, s.max_k,
          s.max_tokens, s.small_p_max, B.floor, B.K, r.worst_ratio),
      0.7);
}

void drift_after_cos_sin(const context& c, const explanation& e) {
  if (pass_accumulated(c, e)) return;  // the error resets at anchors (pass_accumulated.cpp): not drift
  const drift_bound B = bound_of(c);
  const residual r = locate(c, e, B);
  if (!within_fp32_drift(r.worst_ratio, 1)) {  // the largest error/bound, over a bound of 1
    unexplained(c, B, r, "every token's position fits to 0.1 rad, and no cos/sin class fits");
    return;
  }
  const drift_stats s = drift_of(c, e.P, e.R);
  add(c.v, classes::angle_drift_fp32,
      fmt("angle error grows with position: %.3g rad at position %lld band %d (%.3g u_f32 |p theta|, %.3g tokens), "
          "%.3g rad at positions < 64: angles formed in fp32%s (within %.3g + K u_f32 |p theta|, K = %.4g; largest "
          "error/bound %.3g)",
          s.max_err, static_cast<long long>(s.at_pos), s.at_band, s.max_k, s.max_tokens, s.small_p_max,
          c.AL.fp32_angles() ? "" : ", beyond the exact-angle allowance", B.floor, B.K, r.worst_ratio),
      0.7);
}

void residual_unexplained(const context& c, const explanation& e, const std::string& what) {
  const drift_bound B = bound_of(c);
  unexplained(c, B, locate(c, e, B), what);
}

}  // namespace ropecheck::judge::detail
