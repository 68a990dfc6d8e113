// judge/src/pass_magnitude.cpp — the implied attention factor: the median |g| over the chosen
// pairing's cells. Constant (MAD below a quarter of its distance from af) but off af by more than
// max(5e-3, 8 u_T) -> attention_factor_wrong: missing when ~1, applied twice when ~af^2.
#include <cmath>

#include "ropecheck/judge/classes.hpp"
#include "passes.hpp"

namespace ropecheck::judge::detail {

double pass_magnitude(const context& c, const explanation& e) {
  const double af = c.af;
  std::vector<double> mags;
  for (int t = 0; t < c.d.tokens; ++t)
    for (int i = 0; i < e.bands(); ++i)
      if (e.at(t, i).ok) mags.push_back(std::abs(e.at(t, i).g));
  const double m_med = mags.empty() ? af : median(mags);
  std::vector<double> dev;
  for (double m : mags) dev.push_back(std::fabs(m - m_med));
  const double m_mad = dev.empty() ? 0 : median(dev);
  if (std::fabs(m_med / af - 1) > std::max(5e-3, 8 * c.uT) && m_mad < std::fabs(m_med - af) / 4) {
    std::string what;
    if (std::fabs(m_med - 1) <= std::max(3 * m_mad, 2e-3)) what = "the factor is missing";
    else if (std::fabs(m_med - af * af) <= std::max(3 * m_mad, 2e-3 * af * af)) what = "the factor is applied twice";
    else what = fmt("outputs are scaled by %.6g instead", m_med);
    add(c.v, classes::attention_factor_wrong,
        fmt("output/input pair magnitude ratio is %.6g (median of %zu pairs, MAD %.2g) but the claimed attention "
            "factor is %.6g (squared %.6g): %s",
            m_med, mags.size(), m_mad, af, af * af, what.c_str()),
        0.9);
  }
  return m_med;
}

}  // namespace ropecheck::judge::detail
