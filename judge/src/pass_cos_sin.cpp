// judge/src/pass_cos_sin.cpp — a cos/sin error independent of position, seen at small positions
// (p < 64, where fp32 angles are exact to ~1e-5), on the chosen pairing with every token's position
// explained. The relative error |g / (|g|_med e^{i p theta}) - 1| above max(1e-4, 16 u_T):
//   implied (cos, sin) on the bf16/fp16 grid in >= 70% of pairs -> cos_sin_low_precision
//   otherwise                                                    -> fast_sincos
// Both models are an error independent of position: when positions 1..7 and 32..63 are both present,
// the largest error at 1..7 must be at least a quarter of the largest at 32..63 (a frequency error,
// growing as p, gives at most 7/32 of it).
// Tokens past fp32's position resolution (pass_positions.cpp) are left out of every figure.
#include <algorithm>
#include <cmath>

#include "ropecheck/judge/classes.hpp"
#include "passes.hpp"

namespace ropecheck::judge::detail {

// Written as !(4 small < late), the comparison the pass always made (x4 is exact).
bool error_does_not_grow(double small_p_max, double late_p_max) { return !(small_p_max * 4 < late_p_max); }

bool pass_cos_sin(const context& c, const explanation& e, double m_med, const position_evidence& pos) {
  const dump& d = c.d;
  const judge::dtype_info T = c.AL.dtype();
  std::vector<double> e_small;
  double e_all = 0, e_lo = -1, e_hi = -1;
  std::int64_t e_all_pos = 0;
  int on_grid[2] = {0, 0}, grid_total = 0;
  for (int t = 0; t < d.tokens; ++t) {
    if (!pos.used(t)) continue;  // past fp32's position resolution the angle, not cos/sin, dominates
    const std::int64_t p = d.positions[static_cast<std::size_t>(t)];
    for (int i = 0; i < e.bands(); ++i) {
      const cell& cl = e.at(t, i);
      if (!cl.ok) continue;
      const auto cs = e.R.cos_sin(p, i);
      const cplx ex{static_cast<double>(cs.cos.value()), static_cast<double>(cs.sin.value())};
      const double err = std::abs(cl.g / (m_med * ex) - 1.0);
      if (std::llabs(p) < 64) e_small.push_back(err);
      if (std::llabs(p) >= 1 && std::llabs(p) < 8) e_lo = std::max(e_lo, err);
      if (std::llabs(p) >= 32 && std::llabs(p) < 64) e_hi = std::max(e_hi, err);
      if (err > e_all) e_all = err, e_all_pos = p;
      if (std::fabs(cl.g.real()) > 1e-3 && std::fabs(cl.g.imag()) > 1e-3) {
        ++grid_total;
        int k = 0;
        for (int digits : {8, 11}) {
          if (T.digits > digits + 4 && grid_distance(cl.g.real(), digits) < 0.05 && grid_distance(cl.g.imag(), digits) < 0.05)
            ++on_grid[k];
          ++k;
        }
      }
    }
  }
  const double es_max = e_small.empty() ? 0 : *std::max_element(e_small.begin(), e_small.end());
  const double es_med = e_small.empty() ? 0 : median(e_small);
  if (!(es_max > std::max(1e-4, 16 * c.uT))) return false;
  if (e_lo >= 0 && e_hi >= 0 && !error_does_not_grow(e_lo, e_hi)) return false;  // grows with position
  int g = -1;
  for (int k = 0; k < 2; ++k)
    if (grid_total > 0 && on_grid[k] * 10 >= grid_total * 7) {
      g = k;
      break;
    }
  if (g >= 0) {
    const int digits = g == 0 ? 8 : 11;
    add(c.v, classes::cos_sin_low_precision,
        fmt("cos/sin are stored in %s: %d of %d implied (cos, sin) pairs lie on the %s grid (within 5%% of an "
            "ulp); relative cos/sin error up to %.3g (2^-%d = %.3g) already at positions < 64, %.3g at position %lld",
            grid_name(digits), on_grid[g], grid_total, grid_name(digits), es_max, digits + 1,
            std::ldexp(1.0, -(digits + 1)), e_all, static_cast<long long>(e_all_pos)),
        0.85);
  } else {
    add(c.v, classes::fast_sincos,
        fmt("cos/sin are off by up to %.3g (median %.3g) already at positions < 64, where fp32 angles are good to "
            "1e-5, and not on a bf16/fp16 grid: a fixed absolute error like a fast-math sin/cos (largest %.3g, at "
            "position %lld)",
            es_max, es_med, e_all, static_cast<long long>(e_all_pos)),
        0.8);
  }
  return true;
}

}  // namespace ropecheck::judge::detail
