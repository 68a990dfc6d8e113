// tools/audit/plugins/table_rope.cpp — a vLLM-style RoPE kernel with a cos/sin cache behind
// ropecheck/plugin.h, and two bugs a cache-based kernel has, one build definition each
// (tools/audit/plugin_audit.cmake).
//
// Follows vllm's vllm/model_executor/layers/rotary_embedding/base.py (RotaryEmbedding:
// _compute_inv_freq: inv_freq = 1.0 / (base ** (arange(0, rotary_dim, 2, dtype=float) / rotary_dim));
// _compute_cos_sin_cache: t = arange(max_position_embeddings, dtype=float), freqs = einsum("i,j -> ij",
// t, inv_freq), cache = cat(freqs.cos(), freqs.sin()), all fp32; forward_native: cos_sin =
// cos_sin_cache.index_select(0, positions), then apply_rotary_emb_torch, neox style: x1, x2 the two
// halves, o1 = x1 cos - x2 sin, o2 = x2 cos + x1 sin). The cache row of position p is computed when
// asked (the probe asks positions past any max_position_embeddings), exactly as its row would be.
//
// Correct:  (none)                 fp32, head_dim 128, base 10000, neox (half-split)
// Bugs (declared convention unchanged; the kernel does something else):
//           BUG_ACCUMULATED_TABLE  the cache's rows grown by the rotation recurrence in fp32,
//                                  c_{p+1} = c_p cos t - s_p sin t, s_{p+1} = s_p cos t + c_p sin t,
//                                  from an exact row every 4096 positions (the anchors)
//           BUG_FIRST_HEAD_ONLY    the query's loop over heads runs to num_kv_heads (1): heads 1.. keep
//                                  their input, as an in-place kernel leaves them
#include <cmath>
#include <cstdint>
#include <vector>

#include "foreign_kernel.hpp"

namespace {

constexpr int head_size = 128;
constexpr int rotary_dim = 128;
constexpr double base = 10000.0;
#ifdef BUG_ACCUMULATED_TABLE
constexpr std::int64_t anchor_every = 4096;
#endif
#ifdef BUG_FIRST_HEAD_ONLY
constexpr int num_kv_heads = 1;  // the bug: the key's head count bounds the query's loop
#endif

// _compute_inv_freq, in fp32 as torch computes it.
const std::vector<float>& inv_freq() {
  static const std::vector<float> f = [] {
    std::vector<float> v(rotary_dim / 2);
    for (int i = 0; i < rotary_dim / 2; ++i) {
      const float e = static_cast<float>(2 * i) / static_cast<float>(rotary_dim);
      v[static_cast<std::size_t>(i)] = 1.0f / std::pow(static_cast<float>(base), e);
    }
    return v;
  }();
  return f;
}

// One row of _compute_cos_sin_cache: freqs = float(p) * inv_freq (one fp32 product), cos and sin in fp32.
void exact_row(std::int64_t p, std::vector<float>& c, std::vector<float>& s) {
  const auto& f = inv_freq();
  const float t = static_cast<float>(p);
  for (std::size_t i = 0; i < f.size(); ++i) c[i] = std::cos(t * f[i]), s[i] = std::sin(t * f[i]);
}

// The cache row of position p (index_select(0, positions)).
void cache_row(std::int64_t p, std::vector<float>& c, std::vector<float>& s) {
#ifdef BUG_ACCUMULATED_TABLE
  const std::int64_t a = p - ((p % anchor_every) + anchor_every) % anchor_every;  // the anchor at or below p
  exact_row(a, c, s);
  const auto& f = inv_freq();
  for (std::size_t i = 0; i < f.size(); ++i) {
    const float ct = std::cos(f[i]), st = std::sin(f[i]);
    float cq = c[i], sq = s[i];
    for (std::int64_t q = a; q < p; ++q) {
      const float cn = cq * ct - sq * st, sn = sq * ct + cq * st;
      cq = cn, sq = sn;
    }
    c[i] = cq, s[i] = sq;
  }
#else
  exact_row(p, c, s);
#endif
}

}  // namespace

ROPECHECK_EXPORT int ropecheck_plugin_describe(ropecheck_convention* out) {
  if (!out) return 1;
  *out = foreign::hf_defaults();
  out->head_dim = head_size;
  out->rotary_dim = rotary_dim;
  out->base = base;
  return 0;
}

ROPECHECK_EXPORT int ropecheck_plugin_apply(const void* xv, void* yv, const int64_t* positions, int64_t tokens,
                                            int32_t heads, int32_t inverse) {
  if (!xv || !yv || !positions || tokens < 0 || heads <= 0) return 1;
  const auto* x = static_cast<const float*>(xv);
  auto* y = static_cast<float*>(yv);
  const auto n = static_cast<std::size_t>(tokens) * static_cast<std::size_t>(heads) * head_size;
  for (std::size_t j = 0; j < n; ++j) y[j] = x[j];  // in place: what is not rotated keeps its input
  const int half = rotary_dim / 2;
  std::vector<float> cos_r(static_cast<std::size_t>(half)), sin_r(static_cast<std::size_t>(half));
#ifdef BUG_FIRST_HEAD_ONLY
  const int rotated_heads = heads < num_kv_heads ? heads : num_kv_heads;
#else
  const int rotated_heads = heads;
#endif
  for (int64_t t = 0; t < tokens; ++t) {
    cache_row(positions[t], cos_r, sin_r);
    for (int h = 0; h < rotated_heads; ++h) {
      const std::size_t off =
          (static_cast<std::size_t>(t) * static_cast<std::size_t>(heads) + static_cast<std::size_t>(h)) * head_size;
      for (int i = 0; i < half; ++i) {
        const std::size_t a = off + static_cast<std::size_t>(i), b = a + static_cast<std::size_t>(half);
        const float c = cos_r[static_cast<std::size_t>(i)], s = sin_r[static_cast<std::size_t>(i)] * (inverse ? -1.0f : 1.0f);
        const float x1 = x[a], x2 = x[b];
        y[a] = x1 * c - x2 * s;  // o1 = x1 * cos - x2 * sin
        y[b] = x2 * c + x1 * s;  // o2 = x2 * cos + x1 * sin
      }
    }
  }
  return 0;
}

ROPECHECK_EXPORT const char* ropecheck_plugin_name(void) { return ROPECHECK_FOREIGN_NAME; }
