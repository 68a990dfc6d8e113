// tools/audit/plugins/hf_rope.cpp — an HF-style RoPE kernel behind ropecheck/plugin.h, and the
// bugs and faults real kernels have, one build definition each (tools/audit/plugin_audit.cmake).
//
// Follows transformers' src/transformers/modeling_rope_utils.py (_compute_default_rope_parameters:
// inv_freq = 1.0 / (base ** (torch.arange(0, dim, 2).float() / dim)), dim = head_dim *
// partial_rotary_factor) and src/transformers/models/llama/modeling_llama.py (LlamaRotaryEmbedding
// .forward: freqs = inv_freq.float() @ position_ids.float(), emb = cat(freqs, freqs), cos/sin times
// attention_scaling, then .to(dtype=x.dtype); rotate_half; apply_rotary_pos_emb:
// q * cos + rotate_half(q) * sin). Every step in fp32; with HF_BF16 the model dtype is bf16: x and
// y in bf16, cos/sin cast to bf16, and the rotation in eager bf16 (each op rounded to bf16).
//
// Correct:  (none)                       fp32, Llama-2-like (head_dim 128, base 1e4, half-split)
//           HF_BF16                      the same model in bf16
// Bugs (declared convention unchanged; the kernel does something else):
//           BUG_BASE_500000              computes with rope_theta 500000, declares 10000
//           BUG_FAST_SINCOS              a parabola sin/cos (|error| ~1e-3) instead of libm's
//           ANGLE_FP64                   (with it) the angle formed and reduced mod 2 pi in double, as
//                                        kernels that range-reduce before a fast polynomial do
//           BUG_BF16_POSITIONS           positions cast to bf16 before the product
//           BUG_INTERLEAVED_PAIRS        rotates pairs (2i, 2i+1), declares half-split
//           BUG_THETA_OVER_HEAD_DIM      partial rotary (rotary_dim 64 of 128): exponent 2i/head_dim
//           BUG_DECODE_ONE_AHEAD         a call of one token (a decode step) rotates at position + 1, calls
//                                        of two tokens or more (prefill) are right: the KV-cache off-by-one
//                                        of microsoft/onnxruntime-genai pull request #2354 (its varlen
//                                        decoder took a decode step's past length as the sequence's size,
//                                        which already counts the token being processed; PagedAttention
//                                        derives the RoPE positions from it: one step too far)
// Faults (the plugin door must report them, never crash):
//           FAULT_SEGV, FAULT_ABORT      crash (null write, abort()) at positions past 4096
//           FAULT_DESCRIBE_SEGV          crashes in ropecheck_plugin_describe (cannot be loaded: exit 2)
//           FAULT_HANG                   never returns at positions past 4096
//           FAULT_NAN                    NaN at positions past 65504
//           FAULT_WRITE_PAST_Y           writes one element past the end of y
//           FAULT_NONDETERMINISTIC       hidden call counter: the first call takes one path, every later
//                                        call another whose first value is one ulp up (as a kernel autotuned
//                                        on its first call then runs a different reduction order)
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <vector>

#include "foreign_kernel.hpp"

namespace {

#ifdef HF_BF16
using elem = std::uint16_t;
inline float load(elem v) { return foreign::from_bf16(v); }
inline elem store(float v) { return foreign::to_bf16(v); }
inline float op(float v) { return foreign::round_bf16(v); }  // one eager bf16 op
#else
using elem = float;
inline float load(elem v) { return v; }
inline elem store(float v) { return v; }
inline float op(float v) { return v; }
#endif

constexpr int head_dim = 128;
#ifdef BUG_THETA_OVER_HEAD_DIM
constexpr int rotary_dim = 64;  // partial_rotary_factor 0.5
#else
constexpr int rotary_dim = 128;
#endif
constexpr double declared_base = 10000.0;
#ifdef BUG_BASE_500000
constexpr double used_base = 500000.0;
#else
constexpr double used_base = declared_base;
#endif

#ifdef BUG_FAST_SINCOS
// The classic parabola sin: 4/pi x - 4/pi^2 x|x| on [-pi, pi], one refinement step (0.225).
float fast_sin(float x) {
  const float two_pi = 6.28318530718f;
  x -= two_pi * std::nearbyint(x / two_pi);
  float y = 1.27323954f * x - 0.405284735f * x * std::fabs(x);
  return 0.225f * (y * std::fabs(y) - y) + y;
}
float kernel_sin(float x) { return fast_sin(x); }
float kernel_cos(float x) { return fast_sin(x + 1.57079632679f); }
#else
float kernel_sin(float x) { return std::sin(x); }
float kernel_cos(float x) { return std::cos(x); }
#endif

// inv_freq = 1.0 / (base ** (arange(0, dim, 2).float() / dim)), in fp32 as torch computes it.
const std::vector<float>& inv_freq() {
  static const std::vector<float> f = [] {
#ifdef BUG_THETA_OVER_HEAD_DIM
    const int dim = head_dim;  // the bug: the exponent's denominator is head_dim, not rotary_dim
#else
    const int dim = rotary_dim;
#endif
    std::vector<float> v(rotary_dim / 2);
    for (int i = 0; i < rotary_dim / 2; ++i) {
      const float e = static_cast<float>(2 * i) / static_cast<float>(dim);
      v[static_cast<std::size_t>(i)] = 1.0f / std::pow(static_cast<float>(used_base), e);
    }
    return v;
  }();
  return f;
}

#ifdef FAULT_NONDETERMINISTIC
int calls = 0;  // hidden state: the plugin contract forbids it
#endif

}  // namespace

ROPECHECK_EXPORT int ropecheck_plugin_describe(ropecheck_convention* out) {
  if (!out) return 1;
#ifdef FAULT_DESCRIBE_SEGV
  *static_cast<volatile int*>(nullptr) = 1;
#endif
  *out = foreign::hf_defaults();
  out->rotary_dim = rotary_dim;
  out->base = declared_base;
#ifdef HF_BF16
  out->dtype = ROPECHECK_DTYPE_BF16;
#endif
  return 0;
}

ROPECHECK_EXPORT int ropecheck_plugin_apply(const void* xv, void* yv, const int64_t* positions, int64_t tokens,
                                            int32_t heads, int32_t inverse) {
  if (!xv || !yv || !positions || tokens < 0 || heads <= 0) return 1;
  const auto* x = static_cast<const elem*>(xv);
  auto* y = static_cast<elem*>(yv);
  const int half = rotary_dim / 2;
  const auto& f = inv_freq();
  std::vector<float> cos_t(static_cast<std::size_t>(half)), sin_t(static_cast<std::size_t>(half));
  for (int64_t t = 0; t < tokens; ++t) {
#ifdef BUG_DECODE_ONE_AHEAD
    const int64_t p = tokens == 1 ? positions[t] + 1 : positions[t];
#else
    const int64_t p = positions[t];
#endif
#if defined(FAULT_SEGV)
    if (p > 4096) *static_cast<volatile int*>(nullptr) = 1;
#elif defined(FAULT_ABORT)
    if (p > 4096) std::abort();
#elif defined(FAULT_HANG)
    if (p > 4096)
      for (volatile int spin = 0; spin == 0;) {  // a volatile read each turn: a loop that is not UB
      }
#endif
#ifdef BUG_BF16_POSITIONS
    const float pf = foreign::from_bf16(foreign::to_bf16(static_cast<float>(p)));
#else
    [[maybe_unused]] const float pf = static_cast<float>(p);  // position_ids.float() (unused with ANGLE_FP64)
#endif
    for (int i = 0; i < half; ++i) {
#ifdef ANGLE_FP64
      const float angle = static_cast<float>(
          std::remainder(static_cast<double>(f[static_cast<std::size_t>(i)]) * static_cast<double>(p), 6.283185307179586));
#else
      const float angle = f[static_cast<std::size_t>(i)] * pf;  // inv_freq @ position_ids: one fp32 product
#endif
      // cos/sin in fp32 (attention_scaling 1), then .to(x.dtype)
      cos_t[static_cast<std::size_t>(i)] = op(kernel_cos(angle));
      sin_t[static_cast<std::size_t>(i)] = op(kernel_sin(angle)) * (inverse ? -1.0f : 1.0f);
    }
#ifdef FAULT_NAN
    if (p > 65504) cos_t[0] = std::nanf("");
#endif
    for (int h = 0; h < heads; ++h) {
      const std::size_t off = (static_cast<std::size_t>(t) * static_cast<std::size_t>(heads) + static_cast<std::size_t>(h)) *
                              head_dim;
      for (int i = 0; i < half; ++i) {
#ifdef BUG_INTERLEAVED_PAIRS
        const std::size_t a = off + 2 * static_cast<std::size_t>(i), b = a + 1;
#else
        const std::size_t a = off + static_cast<std::size_t>(i), b = a + static_cast<std::size_t>(half);
#endif
        const float c = cos_t[static_cast<std::size_t>(i)], s = sin_t[static_cast<std::size_t>(i)];
        const float xa = load(x[a]), xb = load(x[b]);
        // q * cos + rotate_half(q) * sin, rotate_half(q) = cat(-q2, q1)
        y[a] = store(op(op(xa * c) + op(-xb * s)));
        y[b] = store(op(op(xb * c) + op(xa * s)));
      }
      for (int j = rotary_dim; j < head_dim; ++j) y[off + static_cast<std::size_t>(j)] = x[off + static_cast<std::size_t>(j)];
    }
  }
#ifdef FAULT_WRITE_PAST_Y
  y[static_cast<std::size_t>(tokens) * static_cast<std::size_t>(heads) * head_dim] = store(1.0f);
#endif
#ifdef FAULT_NONDETERMINISTIC
  if (++calls > 1 && tokens > 0) {
    float v = load(y[0]);
    v = std::nextafter(v, 2.0f);
    y[0] = store(v);
  }
#endif
  return 0;
}

ROPECHECK_EXPORT const char* ropecheck_plugin_name(void) { return ROPECHECK_FOREIGN_NAME; }
