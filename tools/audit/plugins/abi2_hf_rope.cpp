// tools/audit/plugins/abi2_hf_rope.cpp — HF-style kernels that claim their convention by a config.json
// (plugin.h ABI 2: config_path) and state their limits; one build definition each
// (tools/audit/plugin_audit.cmake). ABI 1 cannot express either claim: LongRoPE's per-band factors,
// and a cos/sin cache that ends (max_position) and takes no negative positions.
//
// Follows transformers' src/transformers/modeling_rope_utils.py (_compute_llama3_parameters:
// wavelen = 2 pi / inv_freq, inv_freq / factor past low_freq_wavelen, the smoothed band between;
// _compute_longrope_parameters: inv_freq = 1.0 / (ext_factors * base ** (arange(0, dim, 2).float() /
// dim)), ext_factors = long_factor once seq_len > original_max_position_embeddings, attention_factor =
// sqrt(1 + log(factor) / log(original_max_position_embeddings)), factor = max / original) and
// models/llama/modeling_llama.py (cos/sin = cos(freqs) * attention_scaling in fp32; rotate_half).
// Every step in fp32, x and y fp32.
//
//   LLAMA3_CACHE                 Llama 3.1 (ROPECHECK_CONFIG_PATH, its config.json) through a cos/sin
//                                cache of max_position + 1 = 8192 rows built once (a vLLM-style
//                                cos_sin_cache): positions past it or negative return error 2, so it
//                                declares max_position 8191, negative_positions 0, supports_inverse 1
//   LONGROPE                     Phi-3-mini-128k (ROPECHECK_CONFIG_PATH) serving its long context: long factors
//                                (PHI3_SHORT_FACTOR, read from that file by CMake), no limit
// Bugs (the claim unchanged):
//   BUG_CACHE_OFFSET             (LLAMA3_CACHE) row p + 1 of the cache used for position p
//   BUG_NO_ATTENTION_FACTOR      (LONGROPE) cos/sin not multiplied by the attention factor
//   NO_INVERSE                   (LLAMA3_CACHE) supports_inverse 0 (correct: the audit skips the
//                                inverse property and says so)
//   ABI_FROM_HEADER              writes abi = ROPECHECK_PLUGIN_ABI instead of 2: this ABI 2 plugin rebuilt
//                                against the ABI 3 header declares 3, and must be audited exactly as before
//                                (plugin.h: ABI 3 adds no field)
// Bad declarations (cannot be loaded: exit 2, the field named):
//   BAD_MAX_POSITION=n           (LLAMA3_CACHE) declares max_position n (below the probe's 0..63)
//   (ROPECHECK_CONFIG_PATH a relative name of a missing file: resolved beside the .so, unreadable)
#include <cmath>
#include <cstdint>
#include <vector>

#include "foreign_kernel.hpp"

namespace {

#if defined(LLAMA3_CACHE)
constexpr int head_dim = 128;
constexpr double base = 500000.0;
constexpr int64_t cache_rows = 8192;  // max_position + 1
#elif defined(LONGROPE)
constexpr int head_dim = 96;  // hidden_size 3072 / 32 heads
constexpr double base = 10000.0;
constexpr double long_factor[] = {PHI3_LONG_FACTOR};
static_assert(sizeof long_factor / sizeof long_factor[0] == head_dim / 2, "one long factor per band");
#else
#error "define LLAMA3_CACHE or LONGROPE"
#endif
constexpr int half = head_dim / 2;

// inv_freq = 1.0 / (base ** (arange(0, dim, 2).float() / dim)) in fp32, then the rule's scaling.
std::vector<float> inv_freq() {
  std::vector<float> f(half);
  for (int i = 0; i < half; ++i) {
    const float e = static_cast<float>(2 * i) / static_cast<float>(head_dim);
    const float pos_freq = std::pow(static_cast<float>(base), e);
#if defined(LLAMA3_CACHE)
    const float factor = 8.0f, low = 1.0f, high = 4.0f, old_len = 8192.0f;
    const float inv = 1.0f / pos_freq;
    const float wavelen = 2.0f * static_cast<float>(M_PI) / inv;
    const float low_wl = old_len / low, high_wl = old_len / high;
    const float llama = wavelen > low_wl ? inv / factor : inv;
    const float smooth = (old_len / wavelen - low) / (high - low);
    const float smoothed = (1.0f - smooth) * llama / factor + smooth * llama;
    const bool medium = !(wavelen < high_wl) && !(wavelen > low_wl);
    f[static_cast<std::size_t>(i)] = medium ? smoothed : llama;
#else
    f[static_cast<std::size_t>(i)] = 1.0f / (static_cast<float>(long_factor[i]) * pos_freq);
#endif
  }
  return f;
}

float attention_scaling() {
#if defined(LONGROPE) && !defined(BUG_NO_ATTENTION_FACTOR)
  return static_cast<float>(std::sqrt(1.0 + std::log(131072.0 / 4096.0) / std::log(4096.0)));
#else
  return 1.0f;
#endif
}

// cos and sin of position p, band i, in fp32 (the cache's row p, or computed).
struct cos_sin {
  std::vector<float> c, s;
};
#if defined(LLAMA3_CACHE)
const cos_sin& cache() {
  static const cos_sin t = [] {
    cos_sin r;
    const std::vector<float> f = inv_freq();
    r.c.resize(static_cast<std::size_t>(cache_rows * half));
    r.s.resize(r.c.size());
    for (int64_t p = 0; p < cache_rows; ++p)
      for (int i = 0; i < half; ++i) {
        const float a = static_cast<float>(p) * f[static_cast<std::size_t>(i)];
        r.c[static_cast<std::size_t>(p * half + i)] = std::cos(a);
        r.s[static_cast<std::size_t>(p * half + i)] = std::sin(a);
      }
    return r;
  }();
  return t;
}
#endif

}  // namespace

ROPECHECK_EXPORT int ropecheck_plugin_describe(ropecheck_convention* out) {
  if (!out) return 1;
#ifdef ABI_FROM_HEADER
  out->abi = ROPECHECK_PLUGIN_ABI;
#else
  out->abi = 2;
#endif
  out->dtype = ROPECHECK_DTYPE_F32;
  out->config_path = ROPECHECK_CONFIG_PATH;  // the claim; the flat fields are left 0 (not read)
  out->layer = -1;
  out->part = nullptr;
#if defined(LLAMA3_CACHE)
#ifdef BAD_MAX_POSITION
  out->max_position = BAD_MAX_POSITION;
#else
  out->max_position = cache_rows - 1;
#endif
  out->negative_positions = 0;
#ifdef NO_INVERSE
  out->supports_inverse = 0;
#else
  out->supports_inverse = 1;
#endif
#else
  out->max_position = 0;
  out->negative_positions = 1;
  out->supports_inverse = 1;
#endif
  out->position_rows = 1;
  return 0;
}

ROPECHECK_EXPORT int ropecheck_plugin_apply(const void* xv, void* yv, const int64_t* positions, int64_t tokens,
                                            int32_t heads, int32_t inverse) {
  if (!xv || !yv || !positions || tokens < 0 || heads <= 0) return 1;
  const auto* x = static_cast<const float*>(xv);
  auto* y = static_cast<float*>(yv);
  [[maybe_unused]] const float af = attention_scaling();  // the cache path folds none (Llama 3: 1)
  std::vector<float> c(half), s(half);
#if !defined(LLAMA3_CACHE)
  static const std::vector<float> f = inv_freq();
#endif
  for (int64_t t = 0; t < tokens; ++t) {
    const int64_t p = positions[t];
#if defined(LLAMA3_CACHE)
#ifdef BUG_CACHE_OFFSET
    const int64_t row = p + 1;
#else
    const int64_t row = p;
#endif
    if (p < 0 || row >= cache_rows) return 2;  // past the cache: the kernel's documented error
    for (int i = 0; i < half; ++i) {
      c[static_cast<std::size_t>(i)] = cache().c[static_cast<std::size_t>(row * half + i)];
      s[static_cast<std::size_t>(i)] = cache().s[static_cast<std::size_t>(row * half + i)];
    }
#else
    for (int i = 0; i < half; ++i) {
      const float a = static_cast<float>(p) * f[static_cast<std::size_t>(i)];  // inv_freq @ position_ids
      c[static_cast<std::size_t>(i)] = std::cos(a) * af;
      s[static_cast<std::size_t>(i)] = std::sin(a) * af;
    }
#endif
    if (inverse)
      for (float& v : s) v = -v;
    for (int32_t h = 0; h < heads; ++h) {
      const float* xi = x + (t * heads + h) * head_dim;
      float* yo = y + (t * heads + h) * head_dim;
      for (int i = 0; i < half; ++i) {  // q * cos + rotate_half(q) * sin, half-split pairs (i, i + half)
        const float a = xi[i], b = xi[i + half];
        const float ci = c[static_cast<std::size_t>(i)], si = s[static_cast<std::size_t>(i)];
        yo[i] = a * ci - b * si;
        yo[i + half] = b * ci + a * si;
      }
    }
  }
  return 0;
}

ROPECHECK_EXPORT const char* ropecheck_plugin_name(void) { return ROPECHECK_FOREIGN_NAME; }
