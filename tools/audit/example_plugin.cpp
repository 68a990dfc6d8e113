// tools/audit/example_plugin.cpp — an example RoPE kernel behind ropecheck/plugin.h.
//
// A correct fp32 HF-style kernel (LlamaRotaryEmbedding + apply_rotary_pos_emb in fp32) for a
// Llama-2-7B-like convention: head_dim 128, rope_theta 1e4, half-split pairs, no scaling. It is
// built from ropecheck's own rotate_heads and hf_angle<float>, so it is what a foreign kernel
// should compute. Variants of the same source (tools/CMakeLists.txt):
//   -DROPECHECK_EXAMPLE_BUG_BF16_POSITIONS  positions held in bf16 before the angle product
//                                            (storage_positions<bfloat16, float>): a real bug the
//                                            audit must catch (positions > 256 are rounded)
//   -DROPECHECK_EXAMPLE_ABI=<n>              declares ABI n (the loader's ABI-mismatch check); by
//                                            default ABI 1 (built against the ABI 3 header: ABI 1
//                                            plugins keep loading)
//   -DROPECHECK_EXAMPLE_BUG_IGNORES_INVERSE  apply() rotates forward whatever `inverse` says: with ABI 1 the
//                                            inverse property fails; rebuilt as ABI 3 with its zero limits
//                                            (the upgrade trap of plugin.h's Versioning) it is not asked, and
//                                            the audit warns
#include <cstdint>
#include <exception>
#include <span>

#include "ropecheck/angle.hpp"
#include "ropecheck/plugin.h"
#include "ropecheck/rope.hpp"

#ifndef ROPECHECK_EXAMPLE_ABI
#define ROPECHECK_EXAMPLE_ABI 1
#endif

#define ROPECHECK_EXPORT extern "C" __attribute__((visibility("default")))

namespace {

ropecheck_convention convention() {
  ropecheck_convention c{};
  c.abi = ROPECHECK_EXAMPLE_ABI;
  c.head_dim = 128;
  c.rotary_dim = 128;
  c.base = 10000.0;
  c.layout = ROPECHECK_LAYOUT_HALF_SPLIT;
  c.scaling = ROPECHECK_SCALING_NONE;
  c.factor = 1.0;
  c.max_position_embeddings = 4096;
  c.original_max_position_embeddings = 0;
  c.beta_fast = 32.0;
  c.beta_slow = 1.0;
  c.low_freq_factor = 1.0;
  c.high_freq_factor = 4.0;
  c.attention_factor = 0.0;  // the rule's default (1 for no scaling)
  c.dtype = ROPECHECK_DTYPE_F32;
  return c;
}

ropecheck::rope_config config() {
  ropecheck::rope_config r;  // defaults: d 128, base 1e4, half-split, no scaling
  r.max_position_embeddings = 4096;
  return r;
}

#ifdef ROPECHECK_EXAMPLE_BUG_BF16_POSITIONS
using strategy = ropecheck::storage_positions<ropecheck::bfloat16, float>;
#else
using strategy = ropecheck::hf_angle<float>;
#endif

#ifdef ROPECHECK_EXAMPLE_BUG_IGNORES_INVERSE
constexpr bool ignores_inverse = true;
#else
constexpr bool ignores_inverse = false;
#endif

const strategy& cos_sin() {
  static const strategy s(config());  // inv_freq computed once (thread-safe initialisation)
  return s;
}

}  // namespace

ROPECHECK_EXPORT int ropecheck_plugin_describe(ropecheck_convention* out) {
  if (!out) return 1;
  *out = convention();
  return 0;
}

ROPECHECK_EXPORT int ropecheck_plugin_apply(const void* x, void* y, const int64_t* positions, int64_t tokens,
                                            int32_t heads, int32_t inverse) {
  if (!x || !y || !positions || tokens < 0 || heads <= 0) return 1;
  try {
    const auto g = ropecheck::rope_geometry::of(config());
    const std::size_t per_token = static_cast<std::size_t>(heads) * static_cast<std::size_t>(g.head_dim);
    const std::size_t n = per_token * static_cast<std::size_t>(tokens);
    ropecheck::rotate_tokens<float>(std::span<const float>(static_cast<const float*>(x), n),
                                    std::span<float>(static_cast<float*>(y), n),
                                    std::span<const std::int64_t>(positions, static_cast<std::size_t>(tokens)), heads,
                                    g, cos_sin(), inverse && !ignores_inverse ? ropecheck::rotation_sense::inverse
                                                                              : ropecheck::rotation_sense::forward);
    return 0;
  } catch (const std::exception&) {
    return 2;
  }
}

ROPECHECK_EXPORT const char* ropecheck_plugin_name(void) {
#ifdef ROPECHECK_EXAMPLE_BUG_BF16_POSITIONS
  return "example hf fp32 (bug: positions in bf16)";
#else
  return "example hf fp32";
#endif
}
