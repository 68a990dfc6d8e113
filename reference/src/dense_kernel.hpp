// reference/src/dense_kernel.hpp — the double-double complex multiply of the dense path, written once
// for any vector type V (GCC vector extensions: + - * element-wise) and an exact product TwoProd.
//
// Private to the reference library; included by dense.cpp (V = 2 doubles, SSE2/baseline, TwoProd by
// Veltkamp/Dekker splitting) and dense_avx2.cpp (V = __m256d, TwoProd by FMA). Everything here is in an
// unnamed namespace ON PURPOSE: each translation unit gets its own copy compiled with its own target
// flags, so the linker can never merge the AVX2 instantiation into the generic path (see
// dense_step.hpp). Both files build with -ffp-contract=off: no operation below is fused, so the two
// instantiations perform the same IEEE binary64 operations in the same order and give the same bits
// (TwoProd's error term is exact either way).
#pragma once

#include <cstddef>

#include "dense_step.hpp"

namespace ropecheck::reference::detail {
namespace {

template <class V>
struct dense_pair {
  V hi, lo;
};

// a + b = s + e exactly (Knuth's TwoSum).
template <class V>
[[gnu::always_inline]] inline dense_pair<V> dense_two_sum(V a, V b) noexcept {
  const V s = a + b;
  const V bb = s - a;
  return {s, (a - (s - bb)) + (b - bb)};
}

// One lane group: (ch + cl, sh + sl) <- (ch + cl, sh + sl) * (wch + wcl, wsh + wsl).
//   cos' = c wc - s ws, sin' = s wc + c ws; the hi*hi products exact (TwoProd), the hi*lo cross
//   terms in double, lo*lo dropped; each result renormalised by an exact TwoSum.
// Error (per component, |c|, |s|, |wc|, |ws| <= 1 + 2^-100, every |lo| <= 2^-53), units 2^-105:
//   dropped lo*lo 2 (2 terms <= 2^-106); e1 -+ e2 (< 2^-52) 1; the four cross products (< 2^-53)
//   4 x 1/2; their two pair sums (< 2^-52) 2 x 1; the difference/sum of the pairs (< 2^-51) 2;
//   adding e1 -+ e2 (< 2^-50) 4; adding r.lo (< 2^-49.8) 4. Total <= 17 x 2^-105 < 2^-100.9.
template <class V, class TwoProd>
[[gnu::always_inline]] inline void dense_rotate(V& ch, V& cl, V& sh, V& sl, V wch, V wcl, V wsh, V wsl,
                                                TwoProd two_prod) noexcept {
  const dense_pair<V> a1 = two_prod(ch, wch);
  const dense_pair<V> a2 = two_prod(sh, wsh);
  const dense_pair<V> b1 = two_prod(sh, wch);
  const dense_pair<V> b2 = two_prod(ch, wsh);
  const dense_pair<V> rc = dense_two_sum(a1.hi, -a2.hi);
  const dense_pair<V> rs = dense_two_sum(b1.hi, b2.hi);
  const V lc = (a1.lo - a2.lo) + ((ch * wcl + cl * wch) - (sh * wsl + sl * wsh));
  const V ls = (b1.lo + b2.lo) + ((sh * wcl + sl * wch) + (ch * wsl + cl * wsh));
  const dense_pair<V> c = dense_two_sum(rc.hi, rc.lo + lc);
  const dense_pair<V> s = dense_two_sum(rs.hi, rs.lo + ls);
  ch = c.hi, cl = c.lo, sh = s.hi, sl = s.lo;
}

template <class V>
[[gnu::always_inline]] inline V dense_load(const double* p) noexcept {
  V v;
  __builtin_memcpy(&v, p, sizeof v);
  return v;
}
template <class V>
[[gnu::always_inline]] inline void dense_store(double* p, V v) noexcept {
  __builtin_memcpy(p, &v, sizeof v);
}

// z <- z * w over all lanes, sizeof(V) / sizeof(double) at a time (lanes is a multiple of 4).
template <class V, class TwoProd>
[[gnu::always_inline]] inline void dense_step(std::size_t lanes, const dense_rotor& w, const dense_lanes& z,
                                              TwoProd two_prod) noexcept {
  constexpr std::size_t width = sizeof(V) / sizeof(double);
  for (std::size_t i = 0; i < lanes; i += width) {
    V ch = dense_load<V>(z.cos_hi + i), cl = dense_load<V>(z.cos_lo + i);
    V sh = dense_load<V>(z.sin_hi + i), sl = dense_load<V>(z.sin_lo + i);
    dense_rotate(ch, cl, sh, sl, dense_load<V>(w.cos_hi + i), dense_load<V>(w.cos_lo + i),
                 dense_load<V>(w.sin_hi + i), dense_load<V>(w.sin_lo + i), two_prod);
    dense_store(z.cos_hi + i, ch), dense_store(z.cos_lo + i, cl);
    dense_store(z.sin_hi + i, sh), dense_store(z.sin_lo + i, sl);
  }
}

}  // namespace
}  // namespace ropecheck::reference::detail
