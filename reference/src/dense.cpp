// reference/src/dense.cpp — the dense path: cos/sin of p * inv_freq(b) for every band b over a run of
// consecutive positions p, by a double-double rotation recurrence re-anchored on the exact phase.
//
// Algorithm, per band b with f_b = inv_freq(b) / 2pi in 64.192 fixed point (turn_phase.hpp):
//  * w_b = e^{2 pi i f_b} = cos_sin_of_turns(f_b, 1) in double-double (the exact phase at pos 1);
//  * at every anchor a = k L (L = dense_interval = 128), z_a = cos_sin_of_turns(f_b, a): the exact
//    fixed-point phase, no recurrence;
//  * between anchors z_{p+1} = z_p * w_b (dense_kernel.hpp: a double-double complex multiply).
// A sweep starting at `first` starts its recurrence at the anchor floor(first / L) L and discards the
// steps before `first`: every value is the same function of (config, p, b) whatever the sweep, so a
// shard of a long sweep gives the bits of the long sweep. The bands are independent: the step runs
// across bands, 4 per AVX2 instruction (dense_avx2.cpp) or 2 per SSE2 instruction (generic, below),
// padded to a multiple of 4 bands with w = 1.
//
// Error budget (absolute, complex modulus; u = 2^-53):
//  * anchor z_a: <= 2^-103 per component (turn_phase.cpp's budget; its header states 2^-100):
//    E_0 <= 2^-102.5;
//  * w_b: likewise delta <= 2^-102.5 as a complex number (|w~| <= 1 + 2^-102);
//  * one step's rounding: <= 2^-100.9 per component (dense_kernel.hpp), eps <= 2^-100.4 complex;
//  * growth: z~_{j+1} = z~_j w~ + eps_j against z_{j+1} = z_j w gives
//    |E_{j+1}| <= |E_j| |w~| + |z_j| delta + eps, so |E_j| <= (1 + 2^-102)^j (E_0 + j (delta + eps)).
//  With j <= L - 1 = 127: 2^-102.5 + 127 (2^-102.5 + 2^-100.4) = 2^-102.5 + 2^-93.06 < 2^-93.0 per
//  component. With the header's looser 2^-100 for the anchors and w: 2^-99.5 + 127 (2^-99.5 + 2^-100.4)
//  < 2^-91.8. The fixed-point f itself is within 2^-193 of inv_freq / 2pi: <= 2^-128 rad at p <= 2^62.
//  Public contract 2^-90 (reference.hpp); a long sweep never accumulates more than one interval.
//  L = 128 costs one exact phase per 128 values (~0.15 ns a value of the ~18 ns of cos_sin_of_turns;
//  L = 16 cost ~1.2 ns, a quarter of certify's reference time), and is certify's block
//  (tools/certify/engine.hpp), so that no block starts between anchors.
#include "dense.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>
#include <vector>

#include "dense_kernel.hpp"
#include "dense_step.hpp"

namespace ropecheck::reference::detail {

namespace {
// Two doubles: the x86-64 baseline (SSE2) vector; on other targets GCC lowers it as it can. Same
// IEEE operations as any other width.
typedef double generic_vector __attribute__((vector_size(16)));

// a b = p + e exactly by Veltkamp's split (2^27 + 1) and Dekker's product, no FMA: exact for
// |a|, |b| < 2^996 when no partial product underflows (|a b| >= 2^-915 suffices). Here |a|, |b| <=
// 1 + 2^-100; w's sin and the anchors are 0 or >= ~2^-117 (the fast path cuts the phase at 2^-117
// turn, turn_phase.cpp step 3); a cos/sin between anchors below 2^-450 would need p theta within
// 2^-450 of a multiple of pi/2 for some p <= 2^62, far beyond any known approximation of pi.
[[gnu::always_inline]] inline dense_pair<generic_vector> split_two_prod(generic_vector a, generic_vector b) noexcept {
  constexpr double split = 134217729.0;
  const generic_vector ta = split * a, tb = split * b;
  const generic_vector ah = ta - (ta - a), bh = tb - (tb - b);
  const generic_vector al = a - ah, bl = b - bh;
  const generic_vector p = a * b;
  return {p, ((ah * bh - p) + ah * bl + al * bh) + al * bl};
}

[[noreturn]] void reject(const std::string& what) {
  throw std::invalid_argument("ropecheck::reference: dense_cos_sin: " + what);
}
}  // namespace

void dense_step_generic(std::size_t lanes, const dense_rotor& w, const dense_lanes& z) noexcept {
  dense_step<generic_vector>(lanes, w, z,
                             [](generic_vector a, generic_vector b) noexcept { return split_two_prod(a, b); });
}

bool dense_avx2_fma_cpu() noexcept {
#if defined(ROPECHECK_DENSE_AVX2)
  __builtin_cpu_init();  // idempotent; needed when called before main (static initialisers)
  return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
#else
  return false;
#endif
}

void dense_cos_sin(const turn_table& table, std::span<const turn_frequency> freqs, std::int64_t first,
                   std::int64_t count, const rope_reference::dense_block& out, rope_reference::dense_isa isa) {
  constexpr std::int64_t max_end = std::int64_t{1} << 62;
  if (first < 0) reject("first must be >= 0, got " + std::to_string(first));
  if (count < 0) reject("count must be >= 0, got " + std::to_string(count));
  if (first > max_end || count > max_end - first)
    reject("first + count must be <= 2^62, got " + std::to_string(first) + " + " + std::to_string(count));
  const std::size_t bands = freqs.size();
  const auto rows = static_cast<std::uint64_t>(count);
  for (const std::span<double>* s : {&out.cos_hi, &out.cos_lo, &out.sin_hi, &out.sin_lo})
    if (bands != 0 && rows > s->size() / bands)
      reject("every span must hold count * bands() = " + std::to_string(count) + " * " + std::to_string(bands) +
             " doubles, one holds " + std::to_string(s->size()));

  void (*step)(std::size_t, const dense_rotor&, const dense_lanes&) noexcept = dense_step_generic;
  const bool avx2 = dense_avx2_fma_cpu();
  if (isa == rope_reference::dense_isa::avx2_fma && !avx2)
    throw std::runtime_error("ropecheck::reference: dense_cos_sin: dense_isa::avx2_fma asked for, but this "
                             "CPU (or build) has no AVX2 + FMA");
#if defined(ROPECHECK_DENSE_AVX2)
  if (isa != rope_reference::dense_isa::generic && avx2) step = dense_step_avx2_fma;
#endif
  if (count == 0 || bands == 0) return;

  // w then z, structure of arrays, padded lanes hold 1 + 0i (w = 1 keeps them 1).
  const std::size_t lanes = (bands + 3) & ~std::size_t{3};
  std::vector<double> buffer(8 * lanes, 0.0);
  double* const part = buffer.data();
  std::fill_n(part, lanes, 1.0);
  std::fill_n(part + 4 * lanes, lanes, 1.0);
  const dense_rotor w{part, part + lanes, part + 2 * lanes, part + 3 * lanes};
  const dense_lanes z{part + 4 * lanes, part + 5 * lanes, part + 6 * lanes, part + 7 * lanes};
  for (std::size_t b = 0; b < bands; ++b) {
    const cos_sin_dd one = cos_sin_of_turns(table, freqs[b], 1);
    part[b] = one.cos.hi, part[lanes + b] = one.cos.lo;
    part[2 * lanes + b] = one.sin.hi, part[3 * lanes + b] = one.sin.lo;
  }

  const std::int64_t end = first + count;
  for (std::int64_t p = first - first % dense_interval; p < end; ++p) {
    if (p % dense_interval == 0) {
      for (std::size_t b = 0; b < bands; ++b) {
        const cos_sin_dd a = cos_sin_of_turns(table, freqs[b], p);
        z.cos_hi[b] = a.cos.hi, z.cos_lo[b] = a.cos.lo, z.sin_hi[b] = a.sin.hi, z.sin_lo[b] = a.sin.lo;
      }
    } else {
      step(lanes, w, z);
    }
    if (p < first) continue;
    const std::size_t row = static_cast<std::size_t>(p - first) * bands;
    std::copy_n(z.cos_hi, bands, out.cos_hi.data() + row);
    std::copy_n(z.cos_lo, bands, out.cos_lo.data() + row);
    std::copy_n(z.sin_hi, bands, out.sin_hi.data() + row);
    std::copy_n(z.sin_lo, bands, out.sin_lo.data() + row);
  }
}

}  // namespace ropecheck::reference::detail
