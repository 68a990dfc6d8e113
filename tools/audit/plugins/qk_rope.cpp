// tools/audit/plugins/qk_rope.cpp — an HF-style fused qk RoPE kernel behind ropecheck/plugin.h ABI 3: apply()
// rotates one tensor (the x form and the properties), apply_qk() rotates queries q [T, Hq, D] and keys
// k [T, Hk, D] of their own head counts in one call, as a fused kernel does; one build definition per bug
// (tools/audit/plugin_audit.cmake).
//
// The claim is Llama-3-like by the flat fields: head_dim 128, rope_theta 500000, half-split pairs, no scaling,
// fp32 buffers. The rotation follows transformers' src/transformers/models/llama/modeling_llama.py
// (LlamaRotaryEmbedding.forward: freqs = inv_freq.float() @ position_ids.float(), cos/sin in fp32;
// apply_rotary_pos_emb(q, k, cos, sin): q * cos + rotate_half(q) * sin and the same for k, one cos/sin for
// both, broadcast over each tensor's heads) and modeling_rope_utils.py (_compute_default_rope_parameters:
// inv_freq = 1.0 / (base ** (torch.arange(0, dim, 2).float() / dim))). Every step in fp32.
//
// Correct:  (none)                 apply() and apply_qk() both right
// Bugs of apply_qk() only (apply() stays right: the x form and the properties pass, only the pair shows them):
//   BUG_QK_CROSSED         hpcaitech/ColossalAI colossalai/kernel/triton/fused_rotary_embedding.py,
//                          fused_rotary_emb at 35382a7f (issue 6428): `out_q1 = k_0 * sin + k_1 * cos` and
//                          `out_k0 = q_0 * cos - q_1 * sin`: q_out's second half is computed from k's input,
//                          k_out's first half from q's; the other halves right. That kernel indexes q and k
//                          with one head index (its launcher sets K_HEAD_NUM to q's head count); with
//                          Hk < Hq query head h reads key head h / (Hq / Hk) here and key head g query head
//                          g, as tests/python/toys/qk_kernels.py's crossed_halves does
//   BUG_KEYS_ONE_AHEAD     k rotated at position + 1, q at the position (a cache slot off by one)
//   BUG_KEYS_BASE_10000    k rotated with rope_theta 10000, q with the claim's 500000
// Faults:
//   FAULT_QK_SEGV          apply_qk() crashes (a null write) at positions past 4096; apply() is right
#include <cmath>
#include <cstdint>
#include <vector>

#include "foreign_kernel.hpp"

namespace {

constexpr int head_dim = 128;
constexpr int half = head_dim / 2;
constexpr double claimed_base = 500000.0;
#ifdef BUG_KEYS_BASE_10000
constexpr double key_base = 10000.0;
#else
constexpr double key_base = claimed_base;
#endif
#ifdef BUG_KEYS_ONE_AHEAD
constexpr int64_t key_shift = 1;
#else
constexpr int64_t key_shift = 0;
#endif

// inv_freq = 1.0 / (base ** (arange(0, dim, 2).float() / dim)), in fp32 as torch computes it.
std::vector<float> inv_freq(double base) {
  std::vector<float> f(half);
  for (int i = 0; i < half; ++i) {
    const float e = static_cast<float>(2 * i) / static_cast<float>(head_dim);
    f[static_cast<std::size_t>(i)] = 1.0f / std::pow(static_cast<float>(base), e);
  }
  return f;
}

// cos and sin of one position, band by band, in fp32 (inv_freq @ position_ids: one fp32 product).
struct cos_sin {
  float c[half], s[half];
};
cos_sin at(const std::vector<float>& f, int64_t p) {
  cos_sin r{};
  for (int i = 0; i < half; ++i) {
    const float a = f[static_cast<std::size_t>(i)] * static_cast<float>(p);
    r.c[i] = std::cos(a);
    r.s[i] = std::sin(a);
  }
  return r;
}

// The first and second coordinate of band i's rotated pair (q * cos + rotate_half(q) * sin, pairs (i, i + half)).
float first(const float* x, const cos_sin& t, int i) { return x[i] * t.c[i] - x[i + half] * t.s[i]; }
float second(const float* x, const cos_sin& t, int i) { return x[i] * t.s[i] + x[i + half] * t.c[i]; }

// Every head of one token rotated by t (sign -1: the inverse).
void rotate_heads(const float* x, float* y, int heads, cos_sin t, float sign) {
  for (float& v : t.s) v *= sign;
  for (int h = 0; h < heads; ++h)
    for (int i = 0; i < half; ++i) {
      y[h * head_dim + i] = first(x + h * head_dim, t, i);
      y[h * head_dim + i + half] = second(x + h * head_dim, t, i);
    }
}

}  // namespace

ROPECHECK_EXPORT int ropecheck_plugin_describe(ropecheck_convention* out) {
  if (!out) return 1;
  *out = foreign::hf_defaults();
  out->abi = 3;
  out->base = claimed_base;
  out->max_position_embeddings = 8192;
  out->max_position = 0;  // ABI 2's fields, which ABI 3 reads as ABI 2 does
  out->negative_positions = 1;
  out->supports_inverse = 1;
  out->position_rows = 1;
  return 0;
}

ROPECHECK_EXPORT int ropecheck_plugin_apply(const void* xv, void* yv, const int64_t* positions, int64_t tokens,
                                            int32_t heads, int32_t inverse) {
  if (!xv || !yv || !positions || tokens < 0 || heads <= 0) return 1;
  const auto* x = static_cast<const float*>(xv);
  auto* y = static_cast<float*>(yv);
  static const std::vector<float> f = inv_freq(claimed_base);
  for (int64_t t = 0; t < tokens; ++t)
    rotate_heads(x + t * heads * head_dim, y + t * heads * head_dim, heads, at(f, positions[t]), inverse ? -1.0f : 1.0f);
  return 0;
}

ROPECHECK_EXPORT int ropecheck_plugin_apply_qk(const void* qv, const void* kv, void* qov, void* kov, const int64_t* positions,
                                               int64_t tokens, int32_t q_heads, int32_t k_heads) {
  if (!qv || !kv || !qov || !kov || !positions || tokens < 0 || q_heads <= 0 || k_heads <= 0 || q_heads % k_heads != 0)
    return 1;
  const auto* q = static_cast<const float*>(qv);
  const auto* k = static_cast<const float*>(kv);
  auto* q_out = static_cast<float*>(qov);
  auto* k_out = static_cast<float*>(kov);
  static const std::vector<float> fq = inv_freq(claimed_base), fk = inv_freq(key_base);
  for (int64_t t = 0; t < tokens; ++t) {
    const int64_t p = positions[t];
#ifdef FAULT_QK_SEGV
    if (p > 4096) *static_cast<volatile int*>(nullptr) = 1;
#endif
    const float* qt = q + t * q_heads * head_dim;
    const float* kt = k + t * k_heads * head_dim;
    float* qo = q_out + t * q_heads * head_dim;
    float* ko = k_out + t * k_heads * head_dim;
    rotate_heads(qt, qo, q_heads, at(fq, p), 1.0f);
    rotate_heads(kt, ko, k_heads, at(fk, p + key_shift), 1.0f);
#ifdef BUG_QK_CROSSED
    const cos_sin c = at(fq, p);
    const int n_rep = q_heads / k_heads;
    for (int h = 0; h < q_heads; ++h)  // out_q1 = k_0 * sin + k_1 * cos: the key head query head h reads
      for (int i = 0; i < half; ++i) qo[h * head_dim + i + half] = second(kt + (h / n_rep) * head_dim, c, i);
    for (int g = 0; g < k_heads; ++g)  // out_k0 = q_0 * cos - q_1 * sin: query head g
      for (int i = 0; i < half; ++i) ko[g * head_dim + i] = first(qt + g * head_dim, c, i);
#endif
  }
  return 0;
}

ROPECHECK_EXPORT const char* ropecheck_plugin_name(void) { return ROPECHECK_FOREIGN_NAME; }
