// tools/certify/bound.hpp — the error-model bound on each implementation's APPLIED angle error.
//
// Contract. For an implementation of the report (tools/sweep/strategies.hpp), a config and a last
// position N = max_position, applied_angle_bounds() gives per band b a number B_b (rad) such that at
// every position 0 <= p <= N the angle of the (cos, sin) pair the implementation feeds its rotation
// (after every cast and cache) is within B_b of p theta_b, reduced to (-pi, pi] (the report's
// angle_rad: tools/report/engine.hpp, tools/sweep/measure.hpp's angle_of). B_b is derived from the strategy's
// arithmetic below, never from a measurement; tests/certify/bound_test.cpp checks it against the
// report engine's exhaustive and long sweeps and prints worst/bound.
//
// Notation: theta the reference's frequency (ropecheck::reference::rope_reference::inv_freq),
// theta~ the frequency the strategy's own constants denote (its trace(N, b).inv_freq_used: for ggml
// the exact product of its fp32 chain factors), u_T = 2^-digits(T), hu_T(x) half an ulp of the
// largest binade <= x in T (subnormal spacing respected), af the attention factor, A the largest
// angle formed (N~ theta~, N~ the largest position the strategy holds).
//
// B = min(pi, F + P + R + S), +inf when a position <= N overflows its dtype or fast_sin's reduction
// leaves its range, where
//   F  frequency      N |theta~ - theta|: exact (p (theta~ - theta) is largest at p = N, which
//                     every sweep evaluates); error_model.hpp section 3's k_freq is not used.
//   P  position       (max over p <= N of |p~ - p|) theta~: 0 while N <= 2^digits(Tpos) (every integer
//                     is exact: N = 2^24 costs fp32 nothing, 2^24 + 1 a token); else the larger of
//                     min(hu(N), N - 2^e) (the top binade [2^e, N] is only partly reached) and the full
//                     binade below's quarter ulp. float16 positions >= 65520 round to inf (65505..65519
//                     round to 65504): +inf.
//   R  product        one rounding of p~ theta~ in the angle's dtype: hu_T(A) (section 3's "+1"); 0 when
//                     the significands of N~ and theta~ fit in T together (band 0's theta~ = 1).
//                     ggml: the chain theta_{j+1} = fl(theta_j * theta_scale) rounds at step j by
//                     hu(N~ c_j) (c_j its exact chain value, from ggml_angle of the unscaled config),
//                     propagated by theta~_b / c_j; each finishing step (freq_factor division,
//                     freq_scale product, YaRN's two products and sum) by u_f32 A (section 3's chain,
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
//   fast_sincos       S is fast_sin's instead (angle.hpp: |error| <= 1.1e-3 absolute on [-pi, pi]).
//                     The reduction r = x - fl(fl(2 pi) k), k = nearbyint(fl(x fl(1/2pi))), subtracts
//                     exactly (Sterbenz) and shifts the argument by k |fl(2 pi) - 2 pi| + hu(x + pi);
//                     cos first forms fl(x + fl(pi/2)) (+ its error and hu). Shifts a (cos), b (sin)
//                     turn the pair by b cos^2 x + a sin^2 x <= max(|a|, |b|) (+ a^2 + b^2, next order);
//                     the parabola's errors e by asin(|e|). A wrong k leaves |r| up to
//                     2 pi (hu(x / 2 pi) + x |fl(1/2pi) - 1/2pi|) + shift past pi; up to 0.1 past it
//                     the error grows by at most 0.15 per rad (fast' in [-1.13, -0.987] there), beyond
//                     that: +inf (the parabola grows like r^2; from 2^28 both reductions give 0 and the
//                     pair is (0, 0), an infinite error in the report). In bands whose angles stay below
//                     X <= 1/2 the parabola's Taylor bounds are tighter: with y = (4/pi^2) x (pi - x),
//                     fast = (1 - P) y + P y^2, |fast_sin x - sin x| <= k0 x + q x^2 + x^3/6
//                     (k0 = 1 - (1 - P) 4/pi = 0.01324, the slope defect; q = max(P 16/pi^2,
//                     (1 - P) 4/pi^2)) and |fast_cos x - cos x| <= c2 x^2 + (P 16/pi^4 + 1/24) x^4
//                     (c2 = |1/2 - (1+P) 4/pi^2|), i.e. relative errors E_s, E_c (+ 12 u_f32 for its
//                     fp32 operations), turning the pair by at most atan(rho tan X) - X: about k0 X,
//                     the 1.32% short angles.
//
// Where B may not be within 2x of the worst case, `why` says so a priori (the test prints the ratios).
// A term of >= 3/4 of B that the arithmetic realises (F is realised at p = N) keeps it within 2x;
// otherwise, in this order:
//   overflow     +inf: a position rounds to inf in its dtype;
//   fast_sin's reduction  +inf: the reduced argument may be far outside [-pi, pi];
//   saturated    F + P + R + S >= pi: the error is reduced to (-pi, pi] and a sweep need not meet pi;
//   ggml chain   R >= half of B: the chain's roundings have varying signs (a random walk);
//   fast_sin     1.1e-3 is its worst over [-pi, pi]; a band whose angles stay below pi/2 meets less;
//                past that, the reduction's roundings are charged in full and together;
//   libm         S >= half of B and no cast: glibc rounds cos/sin almost correctly (0.5 ulp of the
//                1-ulp allowance), and u relative only at the bottom of a binade;
//   slow band    S >= half of B with a cast and angles below pi/4: the turn 2 E X needs the largest
//                angles, formed by the last positions only, to be rounded by the full u;
//   unaligned    no term is half of B: the worst cases of the terms fall on different positions.

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
