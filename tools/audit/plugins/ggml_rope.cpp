// tools/audit/plugins/ggml_rope.cpp — a llama.cpp-style fp32 RoPE kernel behind ropecheck/plugin.h.
//
// Follows ggml's CPU rope (ggml/src/ggml-cpu/ops.cpp: ggml_compute_forward_rope_flt,
// ggml_rope_cache_init and rope_yarn, here without YaRN: ext_factor 0, freq_scale 1, attn_factor 1):
// theta_scale = powf(freq_base, -2.0f/n_dims) once; theta = (float) p; for each band the cache holds
// cosf(theta) and sinf(theta) (sin negated for the backward pass), then theta *= theta_scale, band
// after band in fp32 — the error of band i's frequency grows with i. The rotation is
// x0*cos - x1*sin, x0*sin + x1*cos on pairs (i0, i0+1) (mode NORM) or (i, i + n_dims/2) (NEOX).
//
//   GGML_NEOX   mode NEOX (half-split pairs); without it, mode NORM (interleaved pairs)
#include <cmath>
#include <cstdint>
#include <vector>

#include "foreign_kernel.hpp"

namespace {

constexpr int n_dims = 128;
constexpr float freq_base = 10000.0f;

}  // namespace

ROPECHECK_EXPORT int ropecheck_plugin_describe(ropecheck_convention* out) {
  if (!out) return 1;
  *out = foreign::hf_defaults();
  out->head_dim = out->rotary_dim = n_dims;
  out->base = freq_base;
#ifdef GGML_NEOX
  out->layout = ROPECHECK_LAYOUT_HALF_SPLIT;
#else
  out->layout = ROPECHECK_LAYOUT_INTERLEAVED;
#endif
  return 0;
}

ROPECHECK_EXPORT int ropecheck_plugin_apply(const void* xv, void* yv, const int64_t* positions, int64_t tokens,
                                            int32_t heads, int32_t inverse) {
  if (!xv || !yv || !positions || tokens < 0 || heads <= 0) return 1;
  const auto* x = static_cast<const float*>(xv);
  auto* y = static_cast<float*>(yv);
  const float theta_scale = std::pow(freq_base, -2.0f / n_dims);
  const float sin_sign = inverse ? -1.0f : 1.0f;
  std::vector<float> cache(n_dims);
  for (int64_t t = 0; t < tokens; ++t) {
    // ggml_rope_cache_init: theta starts at the position and is multiplied band after band.
    float theta = static_cast<float>(positions[t]);
    for (int i0 = 0; i0 < n_dims; i0 += 2) {
      cache[static_cast<std::size_t>(i0)] = std::cos(theta);
      cache[static_cast<std::size_t>(i0) + 1] = std::sin(theta) * sin_sign;
      theta *= theta_scale;
    }
    for (int h = 0; h < heads; ++h) {
      const std::size_t off =
          (static_cast<std::size_t>(t) * static_cast<std::size_t>(heads) + static_cast<std::size_t>(h)) * n_dims;
      for (int i0 = 0; i0 < n_dims; i0 += 2) {
        const float c = cache[static_cast<std::size_t>(i0)], s = cache[static_cast<std::size_t>(i0) + 1];
#ifdef GGML_NEOX
        const std::size_t a = off + static_cast<std::size_t>(i0 / 2), b = a + n_dims / 2;
#else
        const std::size_t a = off + static_cast<std::size_t>(i0), b = a + 1;
#endif
        const float x0 = x[a], x1 = x[b];
        y[a] = x0 * c - x1 * s;
        y[b] = x0 * s + x1 * c;
      }
    }
  }
  return 0;
}

ROPECHECK_EXPORT const char* ropecheck_plugin_name(void) { return ROPECHECK_FOREIGN_NAME; }
