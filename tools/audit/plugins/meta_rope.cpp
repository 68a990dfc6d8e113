// tools/audit/plugins/meta_rope.cpp — a Meta-llama-style fp32 RoPE kernel behind ropecheck/plugin.h.
//
// Follows meta-llama/llama's llama/model.py: precompute_freqs_cis (freqs = 1.0 / (theta **
// (torch.arange(0, dim, 2)[: (dim // 2)].float() / dim)); torch.outer(t, freqs).float(); torch.polar
// gives complex64 cos + i sin) and apply_rotary_emb (view_as_complex of x.float() reshaped into pairs
// (2i, 2i+1), times freqs_cis, view_as_real, type_as(x)): an interleaved complex multiply in fp32,
// (a + ib)(c + is) = (ac - bs) + i(as + bc). The inverse multiplies by the conjugate.
//
//   BUG_CONJUGATE   multiplies by conj(freqs_cis) in the forward call too (sin's sign flipped: R(-p)),
//                   as a port that builds freqs_cis with torch.polar(ones, -freqs) or writes
//                   (ac + bs) + i(bc - as) does; scores still depend on m - n (reversed), so relative-
//                   offset tests pass
#include <cmath>
#include <cstdint>
#include <vector>

#include "foreign_kernel.hpp"

namespace {

constexpr int dim = 128;
constexpr float theta = 10000.0f;

const std::vector<float>& freqs() {
  static const std::vector<float> f = [] {
    std::vector<float> v(dim / 2);
    for (int i = 0; i < dim / 2; ++i)
      v[static_cast<std::size_t>(i)] = 1.0f / std::pow(theta, static_cast<float>(2 * i) / static_cast<float>(dim));
    return v;
  }();
  return f;
}

}  // namespace

ROPECHECK_EXPORT int ropecheck_plugin_describe(ropecheck_convention* out) {
  if (!out) return 1;
  *out = foreign::hf_defaults();
  out->layout = ROPECHECK_LAYOUT_INTERLEAVED;
  return 0;
}

ROPECHECK_EXPORT int ropecheck_plugin_apply(const void* xv, void* yv, const int64_t* positions, int64_t tokens,
                                            int32_t heads, int32_t inverse) {
  if (!xv || !yv || !positions || tokens < 0 || heads <= 0) return 1;
  const auto* x = static_cast<const float*>(xv);
  auto* y = static_cast<float*>(yv);
  const auto& f = freqs();
  for (int64_t t = 0; t < tokens; ++t) {
    const float pos = static_cast<float>(positions[t]);
    for (int i = 0; i < dim / 2; ++i) {
      const float angle = pos * f[static_cast<std::size_t>(i)];  // torch.outer: one fp32 product
#ifdef BUG_CONJUGATE
      const bool conjugate = !inverse;
#else
      const bool conjugate = inverse != 0;
#endif
      const float c = std::cos(angle), s = conjugate ? -std::sin(angle) : std::sin(angle);  // torch.polar
      for (int h = 0; h < heads; ++h) {
        const std::size_t k =
            (static_cast<std::size_t>(t) * static_cast<std::size_t>(heads) + static_cast<std::size_t>(h)) * dim +
            2 * static_cast<std::size_t>(i);
        const float a = x[k], b = x[k + 1];
        y[k] = a * c - b * s;
        y[k + 1] = a * s + b * c;
      }
    }
  }
  return 0;
}

ROPECHECK_EXPORT const char* ropecheck_plugin_name(void) { return ROPECHECK_FOREIGN_NAME; }
