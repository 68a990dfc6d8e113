// tools/audit/plugins/onnx_rope.cpp — an ONNX Runtime-style RoPE kernel behind ropecheck/plugin.h.
//
// Follows onnxruntime's contrib_ops/cpu/bert/rotary_embedding.cc (the com.microsoft RotaryEmbedding
// op): cos_cache / sin_cache of shape [max_seq, rotary_dim / 2] come with the model (the exporter
// builds them the HF way: fp32 inv_freq, fp32 position * inv_freq, fp32 cos/sin), the attribute
// `interleaved` picks the pairing (0: half-split, the default; 1: (2i, 2i+1)), and each output is one
// fused multiply-add per coordinate in fp32 (x_a cos - x_b sin with a single rounding of the sum);
// for fp16 tensors the inputs are widened to fp32 and the result rounded once to fp16.
//   (none)         fp32, half-split
//   ONNX_F16       fp16 q/k, fp32 compute, one rounding to fp16
//   ONNX_INTERLEAVED  interleaved = 1
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "foreign_kernel.hpp"

namespace {

constexpr int dim = 128;
constexpr float base = 10000.0f;

#ifdef ONNX_F16
using elem = std::uint16_t;  // IEEE binary16 bits
inline float load(elem v) {
  _Float16 h;
  std::memcpy(&h, &v, sizeof h);
  return static_cast<float>(h);
}
inline elem store(float v) {
  const _Float16 h = static_cast<_Float16>(v);  // round to nearest even, once
  elem b;
  std::memcpy(&b, &h, sizeof b);
  return b;
}
#else
using elem = float;
inline float load(elem v) { return v; }
inline elem store(float v) { return v; }
#endif

const std::vector<float>& inv_freq() {
  static const std::vector<float> f = [] {
    std::vector<float> v(dim / 2);
    for (int i = 0; i < dim / 2; ++i)
      v[static_cast<std::size_t>(i)] = 1.0f / std::pow(base, static_cast<float>(2 * i) / static_cast<float>(dim));
    return v;
  }();
  return f;
}

}  // namespace

ROPECHECK_EXPORT int ropecheck_plugin_describe(ropecheck_convention* out) {
  if (!out) return 1;
  *out = foreign::hf_defaults();
#ifdef ONNX_INTERLEAVED
  out->layout = ROPECHECK_LAYOUT_INTERLEAVED;
#endif
#ifdef ONNX_F16
  out->dtype = ROPECHECK_DTYPE_F16;
#endif
  return 0;
}

ROPECHECK_EXPORT int ropecheck_plugin_apply(const void* xv, void* yv, const int64_t* positions, int64_t tokens,
                                            int32_t heads, int32_t inverse) {
  if (!xv || !yv || !positions || tokens < 0 || heads <= 0) return 1;
  const auto* x = static_cast<const elem*>(xv);
  auto* y = static_cast<elem*>(yv);
  const auto& f = inv_freq();
  constexpr int half = dim / 2;
  for (int64_t t = 0; t < tokens; ++t) {
    const float pos = static_cast<float>(positions[t]);
    for (int i = 0; i < half; ++i) {
      const float angle = pos * f[static_cast<std::size_t>(i)];  // the exporter's fp32 cache row
      const float c = std::cos(angle), s = inverse ? -std::sin(angle) : std::sin(angle);
#ifdef ONNX_INTERLEAVED
      const std::size_t ia = 2 * static_cast<std::size_t>(i), ib = ia + 1;
#else
      const std::size_t ia = static_cast<std::size_t>(i), ib = ia + half;
#endif
      for (int h = 0; h < heads; ++h) {
        const std::size_t o =
            (static_cast<std::size_t>(t) * static_cast<std::size_t>(heads) + static_cast<std::size_t>(h)) * dim;
        const float a = load(x[o + ia]), b = load(x[o + ib]);
        y[o + ia] = store(std::fma(a, c, -(b * s)));
        y[o + ib] = store(std::fma(a, s, b * c));
      }
    }
  }
  return 0;
}

ROPECHECK_EXPORT const char* ropecheck_plugin_name(void) { return ROPECHECK_FOREIGN_NAME; }
