// tools/certify/engine.hpp — the sweep behind `ropecheck certify`: every position of a slice and
// every band, for every implementation, against exact mathematics.
//
// For each (position p, band b) and implementation, with (c, s) its applied pair (implementations.hpp)
// and (C, S) = af (cos p theta_b, sin p theta_b) from the reference's dense path (error <= 2^-90):
//   angle   |the angle of (c + i s) conj(C + i S)|, i.e. the applied rotation's angle error reduced to
//           (-pi, pi] (tools/sweep/measure.hpp's angle_of: cross / dot, Taylor series for small errors,
//           atan2 beyond: measure_kernels.hpp); +inf for a non-finite or zero pair. In double for
//           implementations whose values have <= 24 significand bits (products of their values and
//           the reference's hi parts round at 2^-53: the figure is within ~2^-50 of the exact one,
//           relative), with compensated products and the reference's lo parts for double ones (an
//           error of a few ulps measured to ~2^-50 relative).
//   tokens  angle / theta_b (theta_b the reference's frequency)
//   pair    max(|c - C|, |s - S|) / af: the element error the judge measures for unit inputs
//   ratio   pair / judge::allowance::pair(p, b, p theta_b) for the implementation's dtype against the
//           exact reference (judge allowance.hpp: the one allowance of every door). > 1 fails.
//   equal   the pair at p is parallel to the pair at p + 1 (cross product exactly 0, dot > 0), for
//           p + 1 <= max_position (a slice evaluates its last position + 1 as a halo).
// Statistics per band (certify_data.hpp's band_stats) are order-free, so any thread count and any
// sharding give the same partial; time and progress are reported beside it, never in it.
// Memory: per thread, one block of positions (block_positions) x bands for the reference and each
// implementation: independent of max_position.
#pragma once

#include <cstdint>
#include <functional>

#include "certify_data.hpp"

namespace ropecheck::certify {

// 128 positions x 64 bands: the reference's four arrays and one implementation's two (384 KiB in all)
// stay in a core's L2 (1 MiB here); equal to the dense reference's anchor interval, so that every
// block starts on an anchor (engine.cpp checks it).
inline constexpr std::int64_t block_positions = 128;

using progress_callback = std::function<void(std::int64_t done, std::int64_t total)>;

struct certify_timing {
  int threads = 0;
  std::int64_t positions = 0;        // of this slice
  std::int64_t values = 0;           // positions x bands x implementations
  double seconds = 0;                // the sweep
  double values_per_second = 0;
  double reference_seconds = 0;      // thread-seconds spent in the reference's dense path
  double implementation_seconds = 0; // thread-seconds spent in the implementations' blocks
  double measure_seconds = 0;        // thread-seconds spent measuring
};

struct certify_run {
  partial_certificate partial;
  certify_timing timing;
};

// Defaults filled in and echoed in partial.inputs: max_position = max_position_embeddings - 1 (>= 1),
// seq_len = max_position + 1. Throws std::invalid_argument for a bad request (names the field):
// max_position outside [1, 2^31 - 1], shard index outside [1, count], an unknown implementation, a
// config the reference rejects. progress(done, total) counts values; called from the calling thread
// at least every 0.25 s and once at the end with done == total.
[[nodiscard]] certify_run run_certify(const certify_request& request, progress_callback progress = {});

// The inputs a request denotes (what run_certify echoes), without running anything.
[[nodiscard]] certificate_inputs resolve_inputs(const certify_request& request);

}  // namespace ropecheck::certify
