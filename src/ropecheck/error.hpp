// ropecheck/error.hpp — the one place errors are measured (one exception, below).
//
// Every comparison of a computed value with a reference goes through these functions, so NaN,
// infinities, signed zero and subnormals are handled the same way everywhere:
//   * a NaN where the reference has none (or the reverse) is an infinite error;
//   * two NaNs, or two equal infinities, are no error; unequal infinities are an infinite error;
//   * +0 and -0 are equal here (numerically); use bitwise_equal() where exactness is claimed;
//   * the ulp of T at a value below T's smallest normal is T's subnormal spacing.
// References are passed as an unevaluated pair hi + lo (the reference's double-double), and the
// difference (computed - hi) - lo is formed in long double, so a long double result is measured
// without first rounding the reference to long double.
//
// One loop does not come here, on purpose: the judge's element loop (judge/src/judging.cpp) measures
// every value of a dump (10^8 and more) against the rotation af (x_a cos - x_b sin) formed from the
// exact cos/sin in double (long double for float64 dumps), never materialising a reference value per
// element. That rotation's own rounding, relative to af (|x_a| + |x_b|), is ~2^-52 in double, against
// allowances of several u_T >= 2^-24 for fp32 and narrower dumps, and ~2^-63 in long double against
// several 2^-53 for float64 dumps: at least 2^8 below any allowance. A non-finite output there is the
// non_finite finding (with where it is), not an infinite error.
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>

#include "ropecheck/scalar.hpp"

namespace ropecheck {

// Spacing of T's values at magnitude |r|: 2^(e - digits + 1) for 2^e <= |r| < 2^(e+1), never
// below the subnormal spacing. For r = 0, the smallest subnormal.
template <class T>
[[nodiscard]] inline long double ulp_of(long double r) {
  constexpr int digits = scalar_traits<T>::digits;
  const int min_exp = std::numeric_limits<T>::min_exponent - 1;  // exponent of the smallest normal
  const long double a = std::fabs(r);
  int e = min_exp;
  if (a != 0.0L && std::isfinite(a)) e = std::max(std::ilogb(a), min_exp);
  return std::ldexp(1.0L, e - digits + 1);
}

// computed - (hi + lo), with the special values above; +inf for a NaN on one side only.
[[nodiscard]] inline long double signed_difference(long double computed, double hi, double lo = 0.0) {
  const bool cn = std::isnan(computed), rn = std::isnan(hi);
  if (cn || rn) return cn && rn ? 0.0L : std::numeric_limits<long double>::infinity();
  if (std::isinf(computed) || std::isinf(hi)) {
    if (computed == hi) return 0.0L;
    return std::numeric_limits<long double>::infinity();
  }
  return (computed - static_cast<long double>(hi)) - static_cast<long double>(lo);
}

// |computed - reference| in ulps of T at the reference.
template <class T>
[[nodiscard]] inline long double ulp_error(T computed, double hi, double lo = 0.0) {
  const long double d = signed_difference(scalar_traits<T>::widen(computed), hi, lo);
  if (!std::isfinite(d)) return d == 0.0L ? 0.0L : std::numeric_limits<long double>::infinity();
  return std::fabs(d) / ulp_of<T>(static_cast<long double>(hi) + static_cast<long double>(lo));
}

// |computed - reference| / scale: errors measured against a natural magnitude (a pair's norm,
// u_T times |p theta|, ...) rather than against the value itself, which may cancel to ~0.
[[nodiscard]] inline long double scaled_error(long double computed, double hi, double lo, long double scale) {
  const long double d = signed_difference(computed, hi, lo);
  if (d == 0.0L) return 0.0L;
  if (!std::isfinite(d)) return std::numeric_limits<long double>::infinity();
  return std::fabs(d) / scale;
}

// Exactness claims compare bit patterns: +0 and -0 differ, NaN payloads differ.
template <class T>
[[nodiscard]] inline bool bitwise_equal(T a, T b) {
  return scalar_traits<T>::bits(a) == scalar_traits<T>::bits(b);
}

}  // namespace ropecheck
