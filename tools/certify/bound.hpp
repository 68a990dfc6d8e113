// tools/certify/bound.hpp — the error-model bound on each implementation's APPLIED angle error.
//
// Contract. For an implementation of the report (tools/report/strategies.hpp), a config and a last
// position N = max_position, applied_angle_bounds() gives per band b a number B_b (rad) such that at
// every position 0 <= p <= N the angle of the (cos, sin) pair the implementation feeds its rotation
// (after every cast and cache) is within B_b of p theta_b, reduced to (-pi, pi] (the report's
// angle_rad: tools/report/engine.hpp, measure.hpp's angle_of). B_b is derived from the strategy's
// arithmetic below, never from a measurement; tests/certify/bound_test.cpp checks it against the
// report engine's exhaustive and long sweeps and prints worst/bound.
//
// Notation: theta the reference's frequency (ropecheck::reference::rope_reference::inv_freq),
// theta~ the frequency the strategy's own constants denote (its trace(N, b).inv_freq_used: for ggml
// the exact product of its fp32 chain factors), u_T = 2^-digits(T), hu_T(x) half an ulp of the
// largest binade <= x in T (subnormal spacing respected), af the attention factor, A the largest
// angle formed (N~ theta~, N~ the largest position the strategy holds).
//
// B = min(pi, F + P + R + S), +inf when a position <= N overflows its dtype, where
//   F  frequency      N |theta~ - theta|: exact (p (theta~ - theta) is largest at p = N, which
//                     every sweep evaluates); error_model.hpp section 3's k_freq is not used.
//   P  position       hu_Tpos(N) theta~ when N > 2^digits(Tpos), else 0: every integer up to
//                     2^digits is exact (so N = 2^24 costs fp32 nothing, 2^24 + 1 a token);
//                     float16 positions >= 65520 round to inf (65505..65519 round to 65504): +inf.
//   R  product        one rounding of p~ theta~ in the angle's dtype: hu_T(A) (section 3's "+1").
//                     ggml: the chain theta_{i+1} = fl(theta_i * theta_scale) rounds once per band
//                     step, then once per finishing operation (freq_factor division, freq_scale
//                     product, YaRN's two products and sum), each within u_f32 of a value whose
//                     propagated size is at most A: (b + finishing) u_f32 A (section 3's ggml chain,
//                     here with the chain's constants' error already in F).
//   S  sin/cos and every cast after them, as the angle they turn the pair by. glibc cosf/sinf and
//                     cos/sin are < 1 ulp (section 2): <= 2 u relative; the multiply by af (when af
//                     != 1) u; each later rounding (HF's cast to the model dtype, the bf16 cache,
//                     the 16-bit types' own rounding of cos_of and of the af product) u_T. All are
//                     relative errors of each component, together E = prod(1 + e_k) - 1. Components
//                     a (1 + e_a), b (1 + e_b) with |e| <= E turn the pair by
//                     atan(rho tan psi) - psi, rho = (1 + E) / (1 - E) at most: asin(E) over all
//                     directions (at tan psi = rho^-1/2; engine.hpp's storage_floor_rad is its first
//                     order, E |sin 2 psi|), and only atan(rho tan X) - X when every angle formed is
//                     within X < pi/4 (slow bands, small N: about 2 E X). Subnormal results carry an
//                     absolute error eta_T (half the subnormal spacing: 2^-25 in float16) instead:
//                     + asin(sqrt(2) sum eta / (af (1 - E))).
//   fast_sincos       S is fast_sin's instead (angle.hpp: |error| <= 1.1e-3 absolute on [-pi, pi]):
//                     the arguments are first moved by the reduction with fp32 2 pi
//                     (k |fl(2 pi) - 2 pi| + hu(A + pi), k <= A / 2 pi + 1) and, for cos, by
//                     fl(x + fl(pi / 2)); components within af (1.1e-3 + shift) turn the pair by
//                     asin(|d| / af). In bands whose angles stay below X <= 1/2 the parabola's own
//                     Taylor bounds are tighter: with y = (4/pi^2) x (pi - x), fast = (1 - P) y + P y^2,
//                     |fast_sin x - sin x| <= k0 x + q x^2 + x^3/6 (k0 = 1 - (1 - P) 4/pi = 0.01324,
//                     the slope defect; q = max(P 16/pi^2, (1 - P) 4/pi^2)) and
//                     |fast_cos x - cos x| <= c2 x^2 + (P 16/pi^4 + 1/24) x^4 (c2 = |1/2 - (1+P) 4/pi^2|),
//                     i.e. relative errors E_s, E_c (+ 12 u_f32 for its fp32 operations), turning
//                     the pair by at most atan(rho tan X) - X: about k0 X, the 1.32% short angles.
//
// Where B cannot be within 2x of the worst case, `why` says so a priori (the test prints the ratios):
//   saturated    F + P + R + S >= pi: the error is reduced to (-pi, pi] and a sweep need not meet pi;
//   overflow     +inf: a position rounds to inf in its dtype;
//   ggml chain   b >= 8 roundings charged in full: they add like a random walk (~sqrt(b) u A);
//   unaligned    the worst-case terms of different steps (frequency at p = N, the product's rounding
//                and sin/cos's at other p) do not meet at one position, and no term dominates.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "ropecheck/config.hpp"

namespace ropecheck::certify {

struct band_bound {
  double angle_rad = 0;  // bound on |applied angle error| at every position 0..max_position (may be +inf)
  std::string why;       // empty, or the a-priori reason it may not be within 2x of the worst case
};

// One entry per band. Throws std::invalid_argument for an unknown implementation name.
// seq_len as the report passes it to the strategies (max_position + 1).
[[nodiscard]] std::vector<band_bound> applied_angle_bounds(std::string_view implementation, const rope_config& cfg,
                                                           std::int64_t seq_len, std::int64_t max_position);

// The terms of one band's bound (rad), for tests and for the certificate's explanation.
struct bound_terms {
  double frequency = 0;  // F
  double position = 0;   // P (+inf on overflow)
  double product = 0;    // R
  double sin_cos = 0;    // S
  double total = 0;      // min(pi, F + P + R + S), or +inf
  double largest_angle = 0;  // every angle formed up to max_position is in [0, largest_angle]
};
[[nodiscard]] std::vector<bound_terms> applied_angle_terms(std::string_view implementation, const rope_config& cfg,
                                                           std::int64_t seq_len, std::int64_t max_position);

// Half an ulp of the largest binade <= x (x >= 0) in a format with `digits` significand bits and
// smallest normal exponent `emin` (float: 24, -126); 0 for x == 0. The rounding error of any value
// in [0, x] is at most this.
[[nodiscard]] double half_ulp_below(double x, int digits, int emin);

// The position term's factor: 0 when every integer 0..n is exact with `digits` bits (n <= 2^digits),
// else half_ulp_below(n, digits, emin) (tokens).
[[nodiscard]] double position_rounding_tokens(std::int64_t n, int digits, int emin);

// The largest angle by which relative errors <= e on both components turn a pair whose angle is
// within [0, x] (x >= pi/4: every direction, asin(e)).
[[nodiscard]] double relative_rounding_turn(double e, double x);

}  // namespace ropecheck::certify
