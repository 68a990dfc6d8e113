// reference/src/dense_avx2.cpp — the dense path's step with AVX2 + FMA (4 bands per instruction).
//
// The only file of the library compiled with -mavx2 -mfma (reference/CMakeLists.txt), still with
// -ffp-contract=off: the one fused operation is the explicit _mm256_fmsub_pd computing a product's
// rounding error, which is exact, so the results are the bits of dense_step_generic. Called only when
// __builtin_cpu_supports says the CPU has both (dense.cpp). Include nothing else here (dense_step.hpp).
#include <immintrin.h>

#include "dense_kernel.hpp"

namespace ropecheck::reference::detail {

namespace {
// The same type as __m256d without its may_alias attribute (a template argument would drop it).
typedef double avx_vector __attribute__((vector_size(32)));
}  // namespace

void dense_step_avx2_fma(std::size_t lanes, const dense_rotor& w, const dense_lanes& z) noexcept {
  dense_step<avx_vector>(lanes, w, z, [](avx_vector a, avx_vector b) noexcept {
    const avx_vector p = a * b;
    return dense_pair<avx_vector>{p, _mm256_fmsub_pd(a, b, p)};  // a b - p, exact
  });
}

}  // namespace ropecheck::reference::detail
