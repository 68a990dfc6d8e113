// reference/src/dense_step.hpp — one step of the dense path's rotation recurrence, per instruction set.
//
// Private to the reference library. Deliberately includes nothing but <cstddef>: dense_avx2.cpp is
// compiled with -mavx2 -mfma, and any inline function it pulled in from a shared header (the standard
// library's included) could be emitted there as a weak symbol and picked by the linker for the whole
// program, running AVX2 code on a CPU without it.
#pragma once

#include <cstddef>

namespace ropecheck::reference::detail {

// Structure-of-arrays double-double complex numbers, `lanes` of them (a multiple of 4).
struct dense_lanes {
  double* cos_hi;
  double* cos_lo;
  double* sin_hi;
  double* sin_lo;
};
struct dense_rotor {
  const double* cos_hi;
  const double* cos_lo;
  const double* sin_hi;
  const double* sin_lo;
};

// z[i] <- z[i] * w[i] for i < lanes, every lane by the same sequence of IEEE operations
// (dense_kernel.hpp): both give the same bits.
void dense_step_generic(std::size_t lanes, const dense_rotor& w, const dense_lanes& z) noexcept;
#if defined(ROPECHECK_DENSE_AVX2)
void dense_step_avx2_fma(std::size_t lanes, const dense_rotor& w, const dense_lanes& z) noexcept;
#endif

}  // namespace ropecheck::reference::detail
