// tools/audit/plugins/yarn_rope.cpp — an HF-style fp32 YaRN RoPE kernel behind ropecheck/plugin.h.
//
// Follows transformers' src/transformers/modeling_rope_utils.py _compute_yarn_parameters:
// pos_freqs = base ** (arange(0, dim, 2).float() / dim); inv_freq_extrapolation = 1 / pos_freqs,
// inv_freq_interpolation = 1 / (factor * pos_freqs); find_correction_range(beta_fast, beta_slow,
// dim, base, original_max_position_embeddings) in Python floats (math.log), floor/ceil (truncate),
// clamped to [0, dim - 1]; linear_ramp_factor (max += 0.001 when equal), clamp(0, 1);
// inv_freq_extrapolation_factor = 1 - ramp; inv_freq = interpolation * (1 - extrapolation_factor) +
// extrapolation * extrapolation_factor; attention_factor = get_mscale(factor) = 0.1 ln(factor) + 1,
// which LlamaRotaryEmbedding.forward multiplies into cos and sin (modeling_llama.py). The rotation
// is apply_rotary_pos_emb's, half-split, in fp32.
//
//   BUG_NO_ATTENTION_FACTOR   cos and sin are not multiplied by the attention factor
//   BUG_YARN_ORIGINAL_SHORT   the correction range is computed with an original length of 1024, a
//                             quarter of the 4096 it declares (the ramp moves to faster bands)
//   BUG_YARN_FACTOR_INVERTED  ggml's freq_scale passed as the factor instead of 1/factor
//                             (ggml/src/ggml-cpu/ops.cpp rope_yarn: theta_interp = freq_scale *
//                             theta_extrap, mscale *= 1 + 0.1 logf(1/freq_scale)): the interpolated
//                             bands are multiplied by 4, the magnitude is 1 + 0.1 ln(1/4)
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "foreign_kernel.hpp"

namespace {

constexpr int dim = 128;
constexpr double base = 10000.0;
constexpr double factor = 4.0;
constexpr std::int64_t original_max = 4096;
constexpr double beta_fast = 32.0, beta_slow = 1.0;

#ifdef BUG_YARN_ORIGINAL_SHORT
constexpr std::int64_t ramp_original_max = original_max / 4;
#else
constexpr std::int64_t ramp_original_max = original_max;
#endif
#ifdef BUG_YARN_FACTOR_INVERTED
constexpr double used_factor = 1 / factor;
#else
constexpr double used_factor = factor;
#endif

double correction_dim(double rotations) {
  return (dim * std::log(static_cast<double>(ramp_original_max) / (rotations * 2 * 3.14159265358979323846))) /
         (2 * std::log(base));
}

const std::vector<float>& inv_freq() {
  static const std::vector<float> f = [] {
    double low = std::max(std::floor(correction_dim(beta_fast)), 0.0);
    double high = std::min(std::ceil(correction_dim(beta_slow)), static_cast<double>(dim - 1));
    if (low == high) high += 0.001;
    std::vector<float> v(dim / 2);
    for (int i = 0; i < dim / 2; ++i) {
      const float pos_freq = std::pow(static_cast<float>(base), static_cast<float>(2 * i) / static_cast<float>(dim));
      const float extrapolation = 1.0f / pos_freq;
      const float interpolation = 1.0f / (static_cast<float>(used_factor) * pos_freq);
      const float ramp = std::clamp((static_cast<float>(i) - static_cast<float>(low)) / static_cast<float>(high - low),
                                    0.0f, 1.0f);
      const float extrapolation_factor = 1.0f - ramp;
      v[static_cast<std::size_t>(i)] =
          interpolation * (1.0f - extrapolation_factor) + extrapolation * extrapolation_factor;
    }
    return v;
  }();
  return f;
}

#ifdef BUG_NO_ATTENTION_FACTOR
constexpr float attention_scaling = 1.0f;
#else
const float attention_scaling = static_cast<float>(0.1 * std::log(used_factor) + 1.0);
#endif

}  // namespace

ROPECHECK_EXPORT int ropecheck_plugin_describe(ropecheck_convention* out) {
  if (!out) return 1;
  *out = foreign::hf_defaults();
  out->scaling = ROPECHECK_SCALING_YARN;
  out->factor = factor;
  out->max_position_embeddings = static_cast<std::int64_t>(factor * original_max);  // 16384, exact
  out->original_max_position_embeddings = original_max;
  out->beta_fast = beta_fast;
  out->beta_slow = beta_slow;
  out->attention_factor = 0.0;  // the rule's default: 0.1 ln(factor) + 1
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
      const float c = std::cos(angle) * attention_scaling;
      const float s = std::sin(angle) * attention_scaling * (inverse ? -1.0f : 1.0f);
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
