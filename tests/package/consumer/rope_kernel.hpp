// rope_kernel.hpp — the consumer project's own RoPE kernel, written the way an inference engine writes
// one (nothing of ropecheck's kernels is used): Hugging Face's convention (modeling_llama.py's
// LlamaRotaryEmbedding and rotate_half): inv_freq_i = 1 / theta^(2i/d) and the angle p * inv_freq_i
// formed in Compute, cos/sin in Compute, the half-split rotation in Compute, one rounding to T on
// store. The kernel takes a start offset (n_past) and a token count, as a KV-cache engine calls it.
//
// `bug` selects one of the bugs engines ship, for the buggy consumers:
//   bf16_positions  the position is held in bf16 before the multiply
//   fast_sincos     a parabola sin/cos (|error| ~1e-3) instead of libm's
//   hard_coded_base theta is 10000 whatever the model's rope_theta
//   decode_ahead    a decode step (one token) rotates at n_past + 1, the cache length after appending
#pragma once

#include <bit>
#include <cmath>
#include <cstdint>

namespace consumer {

enum class bug { none, bf16_positions, fast_sincos, hard_coded_base, decode_ahead };

inline float to_bf16(float v) {  // round to nearest even, as torch's .to(torch.bfloat16)
  std::uint32_t b = std::bit_cast<std::uint32_t>(v);
  b += 0x7fffu + ((b >> 16) & 1u);
  return std::bit_cast<float>(b & 0xffff0000u);
}

inline float parabola_sin(float x) {  // Bhaskara-style, after reduction to [-pi, pi]
  constexpr float pi = 3.14159265f;
  x = std::remainder(x, 2 * pi);
  const float y = 4 / pi * x - 4 / (pi * pi) * x * std::fabs(x);
  return 0.225f * (y * std::fabs(y) - y) + y;
}

// x, y: tokens x heads x head_dim, token-major; token t is at position n_past + t.
template <class T, class Compute, bug B = bug::none>
void rope(const T* x, T* y, std::int64_t n_past, int tokens, int heads, int head_dim, double theta) {
  const int half = head_dim / 2;
  if constexpr (B == bug::hard_coded_base) theta = 10000.0;
  for (int t = 0; t < tokens; ++t) {
    std::int64_t p = n_past + t;
    if constexpr (B == bug::decode_ahead) if (tokens == 1) p = n_past + 1;
    Compute pos = static_cast<Compute>(p);
    if constexpr (B == bug::bf16_positions) pos = static_cast<Compute>(to_bf16(static_cast<float>(pos)));
    for (int i = 0; i < half; ++i) {
      const Compute inv_freq =
          Compute(1) / static_cast<Compute>(std::pow(static_cast<Compute>(theta), static_cast<Compute>(2 * i) / static_cast<Compute>(head_dim)));
      const Compute angle = pos * inv_freq;
      Compute c, s;
      if constexpr (B == bug::fast_sincos) {
        s = static_cast<Compute>(parabola_sin(static_cast<float>(angle)));
        c = static_cast<Compute>(parabola_sin(static_cast<float>(angle) + 1.57079632679f));
      } else {
        c = std::cos(angle);
        s = std::sin(angle);
      }
      for (int h = 0; h < heads; ++h) {
        const std::int64_t base = (static_cast<std::int64_t>(t) * heads + h) * head_dim;
        const Compute a = static_cast<Compute>(x[base + i]), b = static_cast<Compute>(x[base + i + half]);
        y[base + i] = static_cast<T>(a * c - b * s);
        y[base + i + half] = static_cast<T>(b * c + a * s);
      }
    }
  }
}

}  // namespace consumer
