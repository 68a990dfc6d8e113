// reference/src/double_double.hpp — error-free transformations and double-double arithmetic.
//
// Private to the reference library (the reference never shares arithmetic with src/). Every
// routine below relies on IEEE binary64 round-to-nearest and on the compiler NOT contracting
// a*b+c into an FMA behind our back: the library is built with -ffp-contract=off -fno-fast-math.
// Error bounds use u = 2^-53.
#pragma once

#include "ropecheck/reference/reference.hpp"

namespace ropecheck::reference::detail {

// a + b = s + e exactly, any finite a, b (Knuth's TwoSum, 6 flops, no branch).
[[gnu::always_inline]] inline dd two_sum(double a, double b) noexcept {
  const double s = a + b;
  const double bb = s - a;
  const double e = (a - (s - bb)) + (b - bb);
  return {s, e};
}

// a + b = s + e exactly when a == 0 or |a| >= |b| (Dekker's FastTwoSum).
[[gnu::always_inline]] inline dd fast_two_sum(double a, double b) noexcept {
  const double s = a + b;
  const double e = b - (s - a);
  return {s, e};
}

// a * b = p + e exactly (no overflow/underflow): the FMA computes the rounding error of the product.
// In the FMA clone of the kernel this is one instruction; elsewhere it is glibc's (correct) fma().
[[gnu::always_inline]] inline dd two_prod(double a, double b) noexcept {
  const double p = a * b;
  return {p, __builtin_fma(a, b, -p)};
}

// (a.hi + a.lo) * (b.hi + b.lo), relative error <= 4u^2 (the a.lo*b.lo term, <= u^2, is dropped).
[[gnu::always_inline]] inline dd dd_mul(dd a, dd b) noexcept {
  dd p = two_prod(a.hi, b.hi);
  p.lo += a.hi * b.lo + a.lo * b.hi;
  return fast_two_sum(p.hi, p.lo);
}

// (a.hi + a.lo) * b for a double b, relative error <= 3u^2.
[[gnu::always_inline]] inline dd dd_mul(dd a, double b) noexcept {
  dd p = two_prod(a.hi, b);
  p.lo += a.lo * b;
  return fast_two_sum(p.hi, p.lo);
}

// a + b with ABSOLUTE error <= 2u^2 (|a| + |b|) (the "sloppy" sum: relative accuracy is lost under
// cancellation, but the reference only promises absolute errors for quantities bounded by the
// operands, which is what this gives).
[[gnu::always_inline]] inline dd dd_add(dd a, dd b) noexcept {
  dd s = two_sum(a.hi, b.hi);
  s.lo += a.lo + b.lo;
  return fast_two_sum(s.hi, s.lo);
}

[[gnu::always_inline]] inline dd dd_neg(dd a) noexcept { return {-a.hi, -a.lo}; }

}  // namespace ropecheck::reference::detail
