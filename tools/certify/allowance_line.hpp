// tools/certify/allowance_line.hpp — the judge's allowance (ropecheck/judge/allowance.hpp) as a line
// in the position, for the sweep's inner loop.
#pragma once

#include <cstdint>
#include <limits>
#include <vector>

#include "ropecheck/judge/allowance.hpp"

namespace ropecheck::certify {

// The allowance of judge::allowance::pair as a line in p per band: fixed + p * slope, the slope one
// ulp of the angle type larger past 2^digits (k_pos, error_model.hpp section 3). Read off the
// allowance itself (angle_term at p = 1 and at the largest position), so that the figures are the
// judge's; tests/certify/allowance_line_test.cpp checks
// pair() against the line on both sides of the edge.
struct allowance_line {
  double fixed = 0;
  std::int64_t kpos_from = 0;  // p > kpos_from rounds the position in the angle type
  std::vector<double> slope_exact, slope_rounded;
  allowance_line(const judge::allowance& al, const std::vector<double>& theta) : fixed(al.fixed()) {
    kpos_from = al.fp32_angles() ? (std::int64_t{1} << 24) : std::numeric_limits<std::int64_t>::max();
    const std::int64_t far = std::int64_t{1} << 40;
    for (std::size_t b = 0; b < theta.size(); ++b) {
      slope_exact.push_back(al.angle_term(1, static_cast<int>(b), theta[b]));
      slope_rounded.push_back(al.angle_term(far, static_cast<int>(b), static_cast<double>(far) * theta[b]) / static_cast<double>(far));
    }
  }
};

// The allowance at (p, band): the line's value.
[[nodiscard]] inline double allowance_at(const allowance_line& l, std::int64_t p, std::size_t band) {
  return l.fixed + static_cast<double>(p) * (p > l.kpos_from ? l.slope_rounded[band] : l.slope_exact[band]);
}

}  // namespace ropecheck::certify
