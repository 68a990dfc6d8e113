// judge/src/pass_mrope_fit.cpp — the band-to-row split the implied angles of the multimodal
// tokens fit best (see pass_mrope.hpp). The implied angle of (token, band) is arg g (evidence.hpp);
// on the row r that really turned band i it sits within the dump's rounding of q_r(t) theta_i, on any
// other row it is off by (q_r' - q_r) theta_i, which for the fast bands is radians. Covered by
// tests/judge/pass_mrope_test.cpp (PassMrope.RowsSwappedAreNamed, .AnotherSectionSplitIsNamed).
#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <vector>

#include "evidence.hpp"
#include "pass_mrope.hpp"
#include "ropecheck/schedule.hpp"

namespace ropecheck::judge::detail {
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

// The contiguous split of nb bands into `rows` blocks (some possibly empty, at least two not) whose
// bands cost least, by dynamic programming over nondecreasing band-to-row maps (a contiguous split is
// exactly one): f[b][r][k] = least cost of bands 0..b with band b on row r and k + 1 distinct rows used
// so far (k capped at 1). Any number of rows (XD-RoPE's 4), O(nb rows^2).
std::vector<int> best_contiguous(const std::vector<std::vector<double>>& cost, int nb, int rows) {
  const double inf = std::numeric_limits<double>::infinity();
  const auto R = static_cast<std::size_t>(rows);
  std::vector<std::vector<std::array<double, 2>>> f(static_cast<std::size_t>(nb), std::vector<std::array<double, 2>>(R, {inf, inf}));
  std::vector<std::vector<std::array<int, 2>>> from(static_cast<std::size_t>(nb), std::vector<std::array<int, 2>>(R, {-1, -1}));
  for (std::size_t r = 0; r < R; ++r) f[0][r][0] = cost[0][r];
  for (std::size_t b = 1; b < static_cast<std::size_t>(nb); ++b)
    for (std::size_t r = 0; r < R; ++r)
      for (std::size_t p = 0; p <= r; ++p)
        for (int k = 0; k < 2; ++k) {
          if (!std::isfinite(f[b - 1][p][static_cast<std::size_t>(k)])) continue;
          const int k2 = std::min(1, k + (p != r ? 1 : 0));
          const double v = f[b - 1][p][static_cast<std::size_t>(k)] + cost[b][r];
          if (v < f[b][r][static_cast<std::size_t>(k2)]) {
            f[b][r][static_cast<std::size_t>(k2)] = v;
            from[b][r][static_cast<std::size_t>(k2)] = static_cast<int>(p) * 2 + k;
          }
        }
  std::size_t best_r = 0;
  for (std::size_t r = 1; r < R; ++r)
    if (f[static_cast<std::size_t>(nb) - 1][r][1] < f[static_cast<std::size_t>(nb) - 1][best_r][1]) best_r = r;
  if (!std::isfinite(f[static_cast<std::size_t>(nb) - 1][best_r][1])) return {};
  std::vector<int> sections(R, 0);
  std::size_t r = best_r;
  int k = 1;
  for (std::size_t b = static_cast<std::size_t>(nb); b-- > 0;) {
    ++sections[r];
    if (b == 0) break;
    const int prev = from[b][r][static_cast<std::size_t>(k)];
    r = static_cast<std::size_t>(prev / 2);
    k = prev % 2;
  }
  return sections;
}

}  // namespace

std::vector<rope_config> fitted_splits(const mrope_frame& f, const std::vector<int>& mm) {
  const rope_config& claim = f.jf.claimed;
  const dump& d = f.d;
  const int nb = claim.bands();
  const int rows = claim.position_rows();
  if (mm.empty() || rows < 2) return {};
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
  {
    rope_config c = claim;
    c.mrope = mrope_kind::contiguous;
    c.mrope_section = best_contiguous(cost, nb, rows);
    if (!c.mrope_section.empty() && valid_split(c)) out.push_back(c);
  }
  // Qwen3-VL's interleave is defined for 3 rows: every split of the bands, checked.
  if (rows == 3) {
    rope_config best;
    double best_cost = std::numeric_limits<double>::infinity();
    rope_config c = claim;
    c.mrope = mrope_kind::interleaved;
    for (int s0 = 0; s0 <= nb; ++s0)
      for (int s1 = 0; s0 + s1 <= nb; ++s1) {
        c.mrope_section = std::vector<int>{s0, s1, nb - s0 - s1};
        if (one_row_takes_all(c) || !valid_split(c)) continue;
        const double sc = split_cost(c, cost);
        if (sc < best_cost) best_cost = sc, best = c;
      }
    if (std::isfinite(best_cost)) out.push_back(best);
  }
  return out;
}

}  // namespace ropecheck::judge::detail
