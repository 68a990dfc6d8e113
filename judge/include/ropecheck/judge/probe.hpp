// ropecheck/judge/probe.hpp — the probe set: the inputs a careful dump carries, for the doors that drive
// an implementation themselves (the plugin audit, the report's verdict column, the conformance suite).
// What is judged on it is exactly what `ropecheck audit` judges on a file of the same outputs.
//
// Positions (sorted, distinct, all >= 0):
//   0..63 dense                        the line fits unwrap from here; fp32 angles exact to ~1e-5
//   +-8 around 256, 2048, 4096, 65504  bf16 / fp16 integer limits, a common training length, fp16 max
//   +-8 around 2^24                    fp32 integers run out (positions held in fp32 round)
//   8 per octave from 64 to 2 max_position_embeddings (at least to 2^17), and that end itself
// Inputs x: [tokens][heads][head_dim], each value k/128 for a random nonzero k in [-127, 127] (exactly
// representable in bf16, fp16, fp32 and fp64), drawn from a splitmix64 stream of `seed`: no
// zero, so the implied rotation of every (token, band, head) is measurable.
#pragma once

#include <cstdint>
#include <vector>

#include "ropecheck/config.hpp"

namespace ropecheck::judge {

struct probe_set {
  std::vector<std::int64_t> positions;  // one per token
  int heads = 4;
  int head_dim = 0;
  std::vector<double> x;  // tokens * heads * head_dim
  std::uint64_t seed = 0;
  [[nodiscard]] int tokens() const { return static_cast<int>(positions.size()); }
};

// The positions of the probe set for a convention (see above).
[[nodiscard]] std::vector<std::int64_t> probe_positions(const rope_config& c);

// The whole probe set: positions for c, `heads` heads of c.head_dim coordinates, inputs from seed.
[[nodiscard]] probe_set make_probe(const rope_config& c, std::uint64_t seed, int heads = 4);

}  // namespace ropecheck::judge
