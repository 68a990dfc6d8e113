// tools/judge/src/pass_mrope_fit.cpp — the band-to-row split the implied angles of the multimodal
// tokens fit best (see pass_mrope.hpp). The implied angle of (token, band) is arg g (evidence.hpp);
// on the row r that really turned band i it sits within the dump's rounding of q_r(t) theta_i, on any
// other row it is off by (q_r' - q_r) theta_i, which for the fast bands is radians.
#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <vector>

#include "evidence.hpp"
#include "pass_mrope.hpp"
#include "ropecheck/schedule.hpp"

namespace ropecheck::audit::detail {
namespace {

bool valid_split(const rope_config& c) {
  try {
    validate_mrope(c);
    return true;
  } catch (const std::invalid_argument&) {
    return false;
  }
}

bool one_row_takes_all(const rope_config& c) {
  return std::any_of(c.mrope_section.begin(), c.mrope_section.end(), [&](int s) { return s == c.bands(); });
}

double split_cost(const rope_config& c, const std::vector<std::vector<double>>& cost) {
  double sum = 0;
  for (int b = 0; b < c.bands(); ++b)
    sum += cost[static_cast<std::size_t>(b)][static_cast<std::size_t>(c.position_row(b))];
  return sum;
}

}  // namespace

std::vector<rope_config> fitted_splits(const mrope_frame& f, const std::vector<int>& mm) {
  const rope_config& claim = f.jf.claimed;
  const dump& d = f.d;
  const int nb = claim.bands();
  const int rows = claim.position_rows();
  if (mm.empty() || (rows != 2 && rows != 3)) return {};
  const std::vector<cell> cells = gains(d, claim.pair_layout, claim.rotary_dim);
  const std::vector<double> th = thetas(f.jf.ref);
  const auto tokens = static_cast<std::size_t>(d.tokens);
  std::vector<std::vector<double>> cost(static_cast<std::size_t>(nb), std::vector<double>(static_cast<std::size_t>(rows), 0.0));
  for (int t : mm)
    for (int b = 0; b < nb; ++b) {
      const cell& g = cells[static_cast<std::size_t>(t) * static_cast<std::size_t>(nb) + static_cast<std::size_t>(b)];
      if (!g.ok) continue;
      const double phi = std::arg(g.g);
      for (int r = 0; r < rows; ++r) {
        const double q = static_cast<double>(d.position_rows[static_cast<std::size_t>(r) * tokens + static_cast<std::size_t>(t)]);
        const double e = wrap(phi - q * th[static_cast<std::size_t>(b)]);
        cost[static_cast<std::size_t>(b)][static_cast<std::size_t>(r)] += e * e;
      }
    }
  std::vector<rope_config> out;
  for (mrope_kind k : {mrope_kind::contiguous, mrope_kind::interleaved}) {
    if (k == mrope_kind::interleaved && rows != 3) continue;
    rope_config best;
    double best_cost = std::numeric_limits<double>::infinity();
    rope_config c = claim;
    c.mrope = k;
    for (int s0 = 0; s0 <= nb; ++s0)
      for (int s1 = 0; s0 + s1 <= nb; ++s1) {
        if (rows == 2 && s1 > 0) break;
        c.mrope_section = rows == 2 ? std::vector<int>{s0, nb - s0} : std::vector<int>{s0, s1, nb - s0 - s1};
        if (one_row_takes_all(c) || !valid_split(c)) continue;
        const double sc = split_cost(c, cost);
        if (sc < best_cost) best_cost = sc, best = c;
      }
    if (std::isfinite(best_cost)) out.push_back(best);
  }
  return out;
}

}  // namespace ropecheck::audit::detail
