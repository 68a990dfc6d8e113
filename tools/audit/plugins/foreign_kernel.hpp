// tools/audit/plugins/foreign_kernel.hpp — what every example plugin of this folder shares: the C
// export, a bf16 that rounds as torch does, and the convention record with HF's defaults.
//
// These kernels are written as the foreign kernels they imitate are (the file each follows is
// cited at its top): plain loops over float, no ropecheck header but the C ABI. They are what the
// plugin audit is tested on, so they must not share code with the judge or the reference.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>

#include "ropecheck/plugin.h"

#define ROPECHECK_EXPORT extern "C" __attribute__((visibility("default")))

namespace foreign {

// bfloat16 from float, round to nearest even (torch's c10::BFloat16 round_to_nearest_even).
inline std::uint16_t to_bf16(float f) {
  std::uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  if (std::isnan(f)) return 0x7fc0;
  u += 0x7fffu + ((u >> 16) & 1u);
  return static_cast<std::uint16_t>(u >> 16);
}
inline float from_bf16(std::uint16_t b) {
  const std::uint32_t u = static_cast<std::uint32_t>(b) << 16;
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}
// One eager bf16 operation: computed in fp32, rounded to bf16 (torch's CPU bf16 kernels).
inline float round_bf16(float f) { return from_bf16(to_bf16(f)); }

// HF's defaults for the fields a rule does not use (plugin.h). The ABI 1 claim: the kernels of this
// folder that need none of ABI 2 declare ABI 1 (built against the current header, as an old plugin is).
inline ropecheck_convention hf_defaults() {
  ropecheck_convention c{};
  c.abi = 1;
  c.head_dim = 128;
  c.rotary_dim = 128;
  c.base = 10000.0;
  c.layout = ROPECHECK_LAYOUT_HALF_SPLIT;
  c.scaling = ROPECHECK_SCALING_NONE;
  c.factor = 1.0;
  c.max_position_embeddings = 4096;
  c.original_max_position_embeddings = 0;
  c.beta_fast = 32.0;
  c.beta_slow = 1.0;
  c.low_freq_factor = 1.0;
  c.high_freq_factor = 4.0;
  c.attention_factor = 0.0;
  c.dtype = ROPECHECK_DTYPE_F32;
  return c;
}

}  // namespace foreign
