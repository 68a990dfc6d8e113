// tools/audit/plugins/llama3_rope.cpp — an HF-style fp32 Llama 3.1 RoPE kernel behind ropecheck/plugin.h.
//
// Follows transformers' src/transformers/modeling_rope_utils.py _compute_llama3_parameters:
// inv_freq = 1 / base ** (arange(0, dim, 2).float() / dim) (the default schedule, in fp32);
// low_freq_wavelen = old_context_len / low_freq_factor, high_freq_wavelen = old_context_len /
// high_freq_factor; wavelen = 2 pi / inv_freq; bands with wavelen > low_freq_wavelen are divided by
// factor, bands with wavelen < high_freq_wavelen kept; the medium band is smoothed:
// smooth_factor = (old_context_len / wavelen - low_freq_factor) / (high_freq_factor - low_freq_factor),
// smoothed = (1 - smooth_factor) * inv_freq / factor + smooth_factor * inv_freq. The attention factor
// is 1. The rotation is apply_rotary_pos_emb's (modeling_llama.py), half-split, in fp32.
// Llama-3.1-8B's parameters: base 5e5, factor 8, low 1, high 4, original 8192.
//
//   BUG_LLAMA3_SMOOTHING_INVERTED   the medium band's weights exchanged: smooth_factor * inv_freq /
//                                   factor + (1 - smooth_factor) * inv_freq
#include <cmath>
#include <cstdint>
#include <vector>

#include "foreign_kernel.hpp"

namespace {

constexpr int dim = 128;
constexpr double base = 500000.0;
constexpr double factor = 8.0;
constexpr double low_freq_factor = 1.0, high_freq_factor = 4.0;
constexpr std::int64_t original_max = 8192;

const std::vector<float>& inv_freq() {
  static const std::vector<float> f = [] {
    const double low_freq_wavelen = static_cast<double>(original_max) / low_freq_factor;
    const double high_freq_wavelen = static_cast<double>(original_max) / high_freq_factor;
    std::vector<float> v(dim / 2);
    for (int i = 0; i < dim / 2; ++i) {
      const float x = 1.0f / std::pow(static_cast<float>(base), static_cast<float>(2 * i) / static_cast<float>(dim));
      const float wavelen = 2.0f * 3.14159265358979323846f / x;
      float out = x;
      if (wavelen > low_freq_wavelen) {
        out = x / static_cast<float>(factor);
      } else if (wavelen >= high_freq_wavelen) {
        const auto smooth = static_cast<float>((static_cast<double>(original_max) / wavelen - low_freq_factor) /
                                               (high_freq_factor - low_freq_factor));
#ifdef BUG_LLAMA3_SMOOTHING_INVERTED
        out = smooth * x / static_cast<float>(factor) + (1.0f - smooth) * x;
#else
        out = (1.0f - smooth) * x / static_cast<float>(factor) + smooth * x;
#endif
      }
      v[static_cast<std::size_t>(i)] = out;
    }
    return v;
  }();
  return f;
}

}  // namespace

ROPECHECK_EXPORT int ropecheck_plugin_describe(ropecheck_convention* out) {
  if (!out) return 1;
  *out = foreign::hf_defaults();
  out->base = base;
  out->scaling = ROPECHECK_SCALING_LLAMA3;
  out->factor = factor;
  out->max_position_embeddings = 131072;
  out->original_max_position_embeddings = original_max;
  out->low_freq_factor = low_freq_factor;
  out->high_freq_factor = high_freq_factor;
  return 0;
}

ROPECHECK_EXPORT int ropecheck_plugin_apply(const void* xv, void* yv, const int64_t* positions, int64_t tokens,
                                            int32_t heads, int32_t inverse) {
  if (!xv || !yv || !positions || tokens < 0 || heads <= 0) return 1;
  const auto* x = static_cast<const float*>(xv);
  auto* y = static_cast<float*>(yv);
  const auto& f = inv_freq();
  const int half = dim / 2;
  for (int64_t t = 0; t < tokens; ++t) {
    const float p = static_cast<float>(positions[t]);
    for (int i = 0; i < half; ++i) {
      const float angle = f[static_cast<std::size_t>(i)] * p;
      const float c = std::cos(angle);
      const float s = std::sin(angle) * (inverse ? -1.0f : 1.0f);
      for (int h = 0; h < heads; ++h) {
        const std::size_t a =
            (static_cast<std::size_t>(t) * static_cast<std::size_t>(heads) + static_cast<std::size_t>(h)) * dim +
            static_cast<std::size_t>(i);
        const std::size_t b = a + half;
        const float xa = x[a], xb = x[b];
        y[a] = xa * c + (-xb) * s;
        y[b] = xb * c + xa * s;
      }
    }
  }
  return 0;
}

ROPECHECK_EXPORT const char* ropecheck_plugin_name(void) { return ROPECHECK_FOREIGN_NAME; }
