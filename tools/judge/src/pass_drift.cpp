// tools/judge/src/pass_drift.cpp — angle error growing with position: the implied angle arg g against
// the exact angle, as a multiple of u_f32 |p theta| and in tokens (|error| / theta_i). angle_drift_fp32
// when the only excess is of that size (a warning on a pass, a failure for float64 dumps or in
// strict mode).
#include <cmath>

#include "passes.hpp"

namespace ropecheck::audit::detail {

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
  add(c.v, "angle_drift_fp32",
      fmt("warning: angle error grows with position, %.3g rad at position %lld band %d (%.3g u_f32 |p theta|, "
          "%.3g tokens of position error; %.3g rad at positions < 64): fp32 angle formation, within its allowance",
          s.max_err, static_cast<long long>(s.at_pos), s.at_band, s.max_k, s.max_tokens, s.small_p_max),
      0.4);
}

void drift_after_frequencies(const context& c, const explanation& e, const frequency_evidence& f) {
  const drift_stats s = drift_of(c, e.P, e.R);
  const bool drift_like = s.max_k <= 64 && s.small_p_max < 1e-4;
  add(c.v, "angle_drift_fp32",
      fmt("angle error grows linearly with position: relative frequency error up to %.3g (%.3g u_f32, band %d); "
          "%.3g rad at position %lld band %d (%.3g u_f32 |p theta|, %.3g tokens), %.3g rad at positions < 64",
          f.max_rel, f.max_rel / kU32, f.max_rel_band, s.max_err, static_cast<long long>(s.at_pos), s.at_band, s.max_k,
          s.max_tokens, s.small_p_max),
      drift_like ? 0.7 : 0.3);
}

void drift_after_cos_sin(const context& c, const explanation& e) {
  const drift_stats s = drift_of(c, e.P, e.R);
  add(c.v, "angle_drift_fp32",
      fmt("angle error grows with position: %.3g rad at position %lld band %d (%.3g u_f32 |p theta|, %.3g tokens), "
          "%.3g rad at positions < 64: angles formed in fp32%s",
          s.max_err, static_cast<long long>(s.at_pos), s.at_band, s.max_k, s.max_tokens, s.small_p_max,
          c.AL.fp32_angles() ? "" : ", beyond the exact-angle allowance"),
      s.max_k <= 64 ? 0.7 : 0.3);
}

}  // namespace ropecheck::audit::detail
