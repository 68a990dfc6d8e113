// judge/src/evidence.hpp — what the diagnosis reasons from, computed once and shared by every
// pass (internal to ropecheck::judge).
//
// For a pairing (layout, rotary dim) and each (token, band) the complex gain
//   g = sum_h conj(z_x) z_y / sum_h |z_x|^2       (least squares over the heads)
// is af e^{i p theta} for a correct implementation: arg g is the implied angle, |g| the implied
// attention factor, and the residual sum_h |z_y - g z_x|^2 / sum_h |z_y|^2 says whether the pairs
// rotate rigidly (the same rotation for every head). Also here: the position that best explains a
// token's angles, the per-band line fit of angle against position, the diagnosis subset of a large
// dump, and the small numeric helpers (wrap, median, grids).
// Covered through the passes that reason from it (all Diagnose.*): tests/judge/pass_pairing_test.cpp
// (the rigid fit's residual), tests/judge/pass_magnitude_test.cpp (|g|), tests/judge/pass_positions_test.cpp
// (the best position), tests/judge/pass_frequencies_test.cpp (the line fit); the subset by
// tests/judge/judge_test.cpp (Diagnose.NonFiniteThreadsAndSubsets).
#pragma once

#include <complex>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <numbers>
#include <string>
#include <utility>
#include <vector>

#include "ropecheck/judge/judge.hpp"
#include "ropecheck/reference/reference.hpp"
#include "ropecheck/rope.hpp"
#include "ropecheck/judge/sentence.hpp"

namespace ropecheck::judge::detail {

using cplx = std::complex<double>;
inline constexpr double kPi = std::numbers::pi;
inline constexpr double kU32 = 0x1p-24;

// x reduced to (-pi, pi].
[[nodiscard]] double wrap(double x);
// The upper median (NaN for an empty sample).
[[nodiscard]] double median(std::vector<double> v);

using judge::fmt;  // ropecheck/judge/sentence.hpp: any length

// v rounded to a floating-point grid of `digits` significant bits (8 bf16, 11 fp16, 24 fp32; round
// to nearest even); other digit counts leave v unchanged.
[[nodiscard]] double round_to_digits(double v, int digits);
[[nodiscard]] const char* grid_name(int digits);
// |v - grid(v)| in ulps of the grid at v.
[[nodiscard]] double grid_distance(double v, int digits);

void add(verdict& v, std::string cls, std::string sentence, double conf);

struct cell {
  cplx g{0, 0};
  double resid = 0;  // relative squared residual of the rigid fit over heads
  bool ok = false;   // the pair has a non-negligible input
};

// Complex gain per (token, band) for a pairing; bands = rd / 2, row-major [token][band].
[[nodiscard]] std::vector<cell> gains(const dump& d, layout lay, int rd);

// One candidate pairing with its gains, computed once and shared by every pass.
struct pairing {
  layout lay = layout::half_split;
  int rd = 0;
  std::vector<cell> cells;
  double score = std::numeric_limits<double>::infinity();  // median relative rms residual, p != 0
  [[nodiscard]] int bands() const { return rd / 2; }
  [[nodiscard]] const cell& at(int t, int i) const {
    return cells[static_cast<std::size_t>(t) * static_cast<std::size_t>(bands()) + static_cast<std::size_t>(i)];
  }
};

// The exact frequencies theta_i of a reference, as double.
[[nodiscard]] std::vector<double> thetas(const reference::rope_reference& r);

struct implied {
  double p = 0;
  double resid = std::numeric_limits<double>::infinity();  // weighted rms angle residual (rad)
};

// The position that best explains the angles a_i of one token with frequencies theta_i (weights
// w_i; windings of the slowest band enumerated up to |p| <= pmax, refined band by band).
[[nodiscard]] implied implied_position(const std::vector<double>& a, const std::vector<double>& w,
                                       const std::vector<double>& th, double pmax);

struct line {
  double slope = 0, intercept = 0, rms = 0;
  bool ok = false;
};

// Angles of one band against position (sorted by position), unwrapped in increasing position around
// the running fit, starting from slope0.
[[nodiscard]] line fit_band(const std::vector<std::pair<double, double>>& pts_sorted, double slope0);

// The tokens the diagnosis looks at: all of them up to `limit`; otherwise the 64 smallest positions
// (the unwrapping and the small-position cos/sin tests start there) and an even spread of the rest.
// The diagnosis subset always holds this many of the smallest positions (audit_options::diagnosis_tokens
// may not be smaller: judge.cpp's check_dump).
inline constexpr int kDiagnosisSmallest = 64;
[[nodiscard]] std::vector<int> diagnosis_subset(const dump& d, int limit);

// Token indices in increasing position (stable).
[[nodiscard]] std::vector<int> by_position(const dump& d);

}  // namespace ropecheck::judge::detail
