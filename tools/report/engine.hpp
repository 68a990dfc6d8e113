// tools/report/engine.hpp — the computation behind `ropecheck report`.
//
// run_report() fills a report_result (report_data.hpp) for one config: the band table, and for
// each implementation under test its error against exact mathematics (the MPFR reference's fast
// path) at every position of a sweep, where that error comes from, a band x position heat map and
// the verdicts. Writers (output.hpp) only format what this computes.
//
// The sweep (sweep_positions):
//   dense 0..1023; log-spaced beyond (32 per octave); +-32 windows around the regime edges 256
//   (bf16 integers), 2048 (fp16 integers), 65504 (fp16 max), 2^24 (fp32 integers), 2^31 (int32)
//   that are <= max_position; max_position itself. Every p + 1 <= max_position is evaluated as
//   well, so that "angle(p) == angle(p + 1)" is checked for every p of the grid (the extra
//   positions are reported as points too). With `exhaustive`, every position 0..max_position.
// Reduction of an exhaustive sweep (points): when max_position + 1 > 4096, positions 0..1023 are
// kept one by one and [1024, max_position] is max-pooled over 3072 log-spaced buckets: each such
// point carries the bucket's first position and, field by field, the maximum over the bucket
// (infinities kept). Verdicts and the heat map always use every position evaluated.
//
// Per (position, band) and implementation (maxima over bands reported per position):
//   angle_rad        the APPLIED angle's error: the angle of the (c, s) = (cos_final, sin_final)
//                    the implementation feeds its rotation (after every cast and cache) against
//                    p theta, taken as the angle of (c + i s) conj(af cos(p theta) + i af sin(p theta))
//                    (reduced to (-pi, pi] by construction; tools/sweep/measure.hpp's angle_of): products and
//                    the quotient round at 2^-53 in double, so within ~2^-50 rad of the MPFR
//                    angle_error of atan2(s, c) (checked in report_engine_test). A non-finite or
//                    zero pair counts as an infinite error. Measurements run in double for
//                    implementations whose values have <= 24 significand bits (their errors are
//                    >= 2^-24 relative), in long double for the double ones
//   magnitude_rel    |hypot(c, s) - af| / af
//   position_tokens  |applied angle error| / theta_i
//   sources.formed_angle_rad  (angle formed - p theta) reduced to (-pi, pi], formed from the
//                    reference's double-double p theta (relative 2^-102): within 2^-52 |error| +
//                    2^-70 of reference::angle_error (MPFR); reductions of gross errors (> pi) in
//                    long double. This was the report's angle error before it measured the rotation
//                    applied: a fast sin/cos or a bf16 cache forms hf_float's angles and applies others
//   cos_sin_abs/ulps against af cos(p theta), af sin(p theta); ulps of the implementation's dtype
//   rotated_relative |y - y*| / |y*|: rotate_heads with the implementation's own cos/sin on a head
//                    vector seeded from (seed, position), y* the exact rotation (reference cos/sin,
//                    long double); inputs are multiples of 1/128 in [-1, 1), exact in every dtype
//   score_violation  |<R(m)q, R(m-1)k> - af <q, R(-1)k>| / sum |q_j k_j|, all three rotations by
//                    the implementation (the relative-offset identity in its own terms)
//   verdicts         first_angle_over_threshold, first_position_error_over_threshold and
//                    first_adjacent_positions_equal (the pairs at p and p + 1 parallel: cross
//                    product 0, dot > 0) all from the applied angle; the heat map too
//   sources          from the strategy's trace(): see report_data.hpp; sin_cos compares cos_raw with
//                    af cos(angle formed), evaluated as af (cos phi cos d - sin phi sin d) with the
//                    reference's cos/sin of phi and d the angle error (|error| <= 2^-62)
// Verdict (report_request::judge, on by default): each implementation's judge_column
//                    (strategy_outputs.hpp: driven on judge::make_probe(config, seed), judged by
//                    ropecheck::audit::audit against exact mathematics); `passes` is then the
//                    judge's pass, and the threshold crossings are figures beside it. Without the
//                    judge, `passes` = no threshold crossed.
// Threads: segments of consecutive positions are handed out dynamically; each writes its own
// slots and merges run in segment order, so every field but `time` is identical for any thread
// count. progress(done, total) counts (position, band, implementation) values and is called from
// the calling thread at least every 0.25 s, and once at the end with done == total.
// Timing: values_per_second is measured over the sweep only; reference_values_per_second runs the
// reference's cos_sin on a sample of the same grid on the same number of threads; the MPFR
// estimate times cos_sin_mpfr (256 bits) on ~2000 values of the grid, also on that many threads,
// and scales to positions x bands (one reference value per (position, band), shared by all
// implementations, as the fast path is used here).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "data.hpp"

namespace ropecheck::report {

// done and total count (position, band, implementation) values.
using progress_callback = std::function<void(std::int64_t done, std::int64_t total)>;

struct implementation_info {
  std::string name;
  std::string description;
  std::string cos_sin_dtype;
  bool in_default_set = true;
};

// The registry, in report order. Names are stable (they appear in CSV/JSON and in CI scripts).
[[nodiscard]] std::vector<implementation_info> known_implementations();

// The positions of a non-exhaustive sweep up to max_position (before adding p + 1), sorted.
[[nodiscard]] std::vector<std::int64_t> sweep_positions(std::int64_t max_position);

// Edges of the heat map's ~48 log-spaced position buckets over [0, max_position]: bucket b covers
// [edges[b], edges[b + 1]); edges.front() == 0, edges.back() == max_position + 1.
[[nodiscard]] std::vector<std::int64_t> heat_bucket_edges(std::int64_t max_position);

// The storage floor of a dtype with `bits` significant bits (implicit bit included: bf16 8, fp16
// 11, fp32 24): 2^-bits rad. Derivation: a pair z = (a, b) = |z| (cos psi, sin psi) stored in that
// dtype has each component rounded to nearest, a' = a (1 + e_a), b' = b (1 + e_b) with |e| <= u =
// 2^-bits, so its angle moves, to first order in u, by
//     d psi = (a db - b da) / |z|^2 = (e_b - e_a) a b / |z|^2 = (e_b - e_a) sin(2 psi) / 2,
// |d psi| <= u |sin 2 psi| <= u. Floating-point rounding is relative, so |z| cancels: the u / |z|
// form (an absolute error u on components |a|, |b| <= 1, i.e. one ulp taken at magnitude 1, as in
// fixed point) overstates a small floating-point pair, whose small component carries a
// proportionally small error; for a cos/sin pair (|z| = af) the two agree. The constant is u itself,
// 2^-bits rad: the worst case over directions (psi at 45 degrees mod 90, e_a = -e_b = u), first
// order, subnormals ignored. A rotated q/k pair has an arbitrary direction, so it reaches u at any
// position; a cos/sin pair near an axis (small p theta_i) is bounded by u |sin 2 p theta_i| ~ 2 u p
// theta_i instead (a bf16 cache: up to ~1.5 * 2^-8 p tokens at small angles, engine test). Band i
// turns theta_i rad per token, so a pair stored in that dtype cannot tell positions apart finer than
// 2^-bits / theta_i tokens in band i, however exactly it was computed: band_row::floor_tokens_*.
[[nodiscard]] constexpr double storage_floor_rad(int bits) {
  double u = 1;
  for (int i = 0; i < bits; ++i) u /= 2;  // exact: a power of two
  return u;
}

// The floors of bfloat16, float16 and float32 over a band table (band_table fills the per-band ones).
[[nodiscard]] std::vector<storage_floor> storage_floors(const std::vector<band_row>& bands);

// The band table of `cfg` (seq_len as for the reference: dynamic NTK, LongRoPE).
[[nodiscard]] std::vector<band_row> band_table(const rope_config& cfg, std::int64_t seq_len,
                                               std::int64_t train_length, std::int64_t eval_length);

// Throws std::invalid_argument for an unknown implementation name (the message lists the known
// ones), a config the reference rejects, or max_position < 1. Defaults filled in and echoed in
// result.request: train_length = config.trained_length(), max_position = max_position_embeddings,
// eval_length = max_position, threads = hardware concurrency. Length-dependent rules (dynamic NTK,
// LongRoPE) are evaluated at seq_len = max_position + 1, the sequence that holds the last position.
[[nodiscard]] report_result run_report(const report_request& request, progress_callback progress = {});

}  // namespace ropecheck::report
