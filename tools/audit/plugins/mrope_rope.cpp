// tools/audit/plugins/mrope_rope.cpp — a Qwen2-VL-style M-RoPE kernel (3 position rows: temporal,
// height, width) in fp32, through plugin.h ABI 2's apply2; the claim is Qwen2.5-VL-7B's config.json
// (ROPECHECK_CONFIG_PATH: rope_theta 1e6, head_dim 3584 / 28 = 128, mrope_section [16, 24, 24]).
//
// Follows transformers src/transformers/models/qwen2_vl/modeling_qwen2_vl.py:
//   Qwen2VLRotaryEmbedding.forward  inv_freq (the default rule, 1 / base^(arange(0, dim, 2) / dim) in
//                                   fp32) times each row's position in fp32, emb = cat(freqs, freqs),
//                                   cos = emb.cos(), sin = emb.sin() (attention_scaling 1), per row
//   apply_multimodal_rotary_pos_emb mrope_section * 2 = [16, 24, 24, 16, 24, 24] splits the head_dim
//                                   coordinates of cos/sin into chunks, chunk i from row i % 3;
//                                   q * cos + rotate_half(q) * sin (half-split pairs (j, j + 64))
// Qwen2.5-VL's text model rotates the same way (only its get_rope_index, which makes the rows, differs).
// Every step in fp32, x and y fp32. Only apply2 is exported (an M-RoPE kernel takes rows).
//
// Bugs (the claim unchanged):
//   BUG_MROPE_ROWS_SWAPPED     the height and width rows swapped (row 2 turns the height bands, row 1
//                              the width bands)
//   BUG_MROPE_TEXT_POSITIONS   every band rotated with row 0 (a kernel that ignores the rows: plain
//                              RoPE at the temporal position, right on text tokens only)
// Bad declarations (cannot be loaded: exit 2, the field named):
//   BAD_POSITION_ROWS=n        declares position_rows n (the claim has 3)
//   BAD_APPLY_QK               declares ABI 3 and exports apply_qk, which takes one position per token
#include <cmath>
#include <cstdint>

#include "foreign_kernel.hpp"

namespace {

constexpr int head_dim = 128;
constexpr int half = head_dim / 2;
constexpr double base = 1000000.0;
constexpr int rows = 3;
constexpr int mrope_section[rows] = {16, 24, 24};  // bands per row: temporal, height, width

// The row that turns band i (coordinates i and i + half): chunk i of mrope_section, and chunk i + 3
// for the second half, both take row i % 3 (apply_multimodal_rotary_pos_emb's m[i % 3]).
int row_of_band(int i) {
  int end = 0;
  int r = 0;
  for (; r < rows; ++r) {
    end += mrope_section[r];
    if (i < end) break;
  }
#if defined(BUG_MROPE_TEXT_POSITIONS)
  return 0;
#elif defined(BUG_MROPE_ROWS_SWAPPED)
  return r == 1 ? 2 : r == 2 ? 1 : r;
#else
  return r;
#endif
}

float inv_freq(int i) {
  const float e = static_cast<float>(2 * i) / static_cast<float>(head_dim);
  return 1.0f / std::pow(static_cast<float>(base), e);
}

}  // namespace

ROPECHECK_EXPORT int ropecheck_plugin_describe(ropecheck_convention* out) {
  if (!out) return 1;
#ifdef BAD_APPLY_QK
  out->abi = 3;
#else
  out->abi = 2;
#endif
  out->head_dim = head_dim;  // a guard: must equal the config's
  out->dtype = ROPECHECK_DTYPE_F32;
  out->config_path = ROPECHECK_CONFIG_PATH;  // the claim; the flat fields are left 0 (not read)
  out->layer = -1;
  out->part = nullptr;
  out->max_position = 0;
  out->negative_positions = 1;
  out->supports_inverse = 1;
#ifdef BAD_POSITION_ROWS
  out->position_rows = BAD_POSITION_ROWS;
#else
  out->position_rows = rows;
#endif
  return 0;
}

ROPECHECK_EXPORT int ropecheck_plugin_apply2(const void* xv, void* yv, const int64_t* positions, int32_t nrows,
                                             int64_t tokens, int32_t heads, int32_t inverse) {
  if (!xv || !yv || !positions || nrows != rows || tokens < 0 || heads <= 0) return 1;
  const auto* x = static_cast<const float*>(xv);
  auto* y = static_cast<float*>(yv);
  float c[half], s[half];
  for (int64_t t = 0; t < tokens; ++t) {
    for (int i = 0; i < half; ++i) {
      // freqs = inv_freq @ position_ids of the band's row, in fp32
      const auto p = static_cast<float>(positions[static_cast<int64_t>(row_of_band(i)) * tokens + t]);
      const float a = inv_freq(i) * p;
      c[i] = std::cos(a);
      s[i] = inverse ? -std::sin(a) : std::sin(a);
    }
    for (int32_t h = 0; h < heads; ++h) {
      const float* xi = x + (t * heads + h) * head_dim;
      float* yo = y + (t * heads + h) * head_dim;
      for (int i = 0; i < half; ++i) {  // q * cos + rotate_half(q) * sin
        const float a = xi[i], b = xi[i + half];
        yo[i] = a * c[i] - b * s[i];
        yo[i + half] = b * c[i] + a * s[i];
      }
    }
  }
  return 0;
}

#ifdef BAD_APPLY_QK
ROPECHECK_EXPORT int ropecheck_plugin_apply_qk(const void*, const void*, void*, void*, const int64_t*, int64_t, int32_t,
                                               int32_t) {
  return 1;  // never called: the loader refuses the plugin
}
#endif

ROPECHECK_EXPORT const char* ropecheck_plugin_name(void) { return ROPECHECK_FOREIGN_NAME; }
