// tools/report/strategy_plugin.cpp — any implementation of the report (tools/sweep/strategies.hpp) behind the C
// plugin interface (src/ropecheck/plugin.h), so that the plugin door can be asked the question the
// report's verdict column and a dump audit answer, about the very same kernel
// (tests/doors/three_doors_test.cpp checks that all three name the same class).
//
// Chosen at load time from the environment (a plugin's describe() must be fixed for the life of the
// library, and it is):
//   ROPECHECK_STRATEGY         the implementation's report name (hf_float, fast_sincos, ...; required)
//   ROPECHECK_STRATEGY_PRESET  the model convention (a preset name, default llama3-8b); describe()
//                              fails for a convention ABI 1 cannot carry (LongRoPE, YaRN without
//                              truncation or with DeepSeek's mscale)
// apply(): the strategy built at seq_len = the largest position of the call + 1 (as strategy_outputs
// builds it for the probe set), each token rotated by rotate_heads<Compute, Storage> with the
// strategy's own cos/sin (rotation_sense::inverse for inverse), x and y in the Storage type's bits.
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <algorithm>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "ropecheck/plugin.h"
#include "ropecheck/presets.hpp"
#include "ropecheck/rope.hpp"
#include "sweep/strategies.hpp"

#define ROPECHECK_EXPORT extern "C" __attribute__((visibility("default")))

namespace {

using namespace ropecheck;

template <class Storage>
constexpr std::int32_t wire_dtype() {
  if constexpr (std::is_same_v<Storage, float>) return ROPECHECK_DTYPE_F32;
  else if constexpr (std::is_same_v<Storage, double>) return ROPECHECK_DTYPE_F64;
  else if constexpr (std::is_same_v<Storage, bfloat16>) return ROPECHECK_DTYPE_BF16;
  else return ROPECHECK_DTYPE_F16;
}

template <class V>
struct cos_sin_row {
  const cos_sin_pair<V>* row;
  [[nodiscard]] cos_sin_pair<V> cos_sin(std::int64_t, int band) const { return row[band]; }
};

using apply_fn = int (*)(const rope_config&, const void*, void*, const std::int64_t*, std::int64_t, std::int32_t,
                         bool);

// One strategy's apply, instantiated for its Compute/Storage types and maker.
template <class Compute, class Storage, class Make>
int apply_with(const rope_config& cfg, const void* x, void* y, const std::int64_t* positions, std::int64_t tokens,
               std::int32_t heads, bool inverse) {
  if (tokens <= 0) return 0;
  const std::int64_t last = *std::max_element(positions, positions + tokens);
  const auto s = Make{}(cfg, last + 1);
  using V = typename std::decay_t<decltype(s)>::value_type;
  const rope_geometry g = rope_geometry::of(cfg);
  const auto per_token = static_cast<std::size_t>(heads) * static_cast<std::size_t>(cfg.head_dim);
  std::vector<cos_sin_pair<V>> row(static_cast<std::size_t>(g.bands()));
  const auto* xs = static_cast<const Storage*>(x);  // Storage has the wire layout (bits of its type)
  auto* ys = static_cast<Storage*>(y);
  for (std::int64_t t = 0; t < tokens; ++t) {
    for (int b = 0; b < g.bands(); ++b) row[static_cast<std::size_t>(b)] = s.cos_sin(positions[t], b);
    const auto o = static_cast<std::size_t>(t) * per_token;
    rotate_heads<Compute, Storage>(std::span<const Storage>(xs + o, per_token), std::span<Storage>(ys + o, per_token),
                                   heads, g, positions[t], cos_sin_row<V>{row.data()},
                                   inverse ? rotation_sense::inverse : rotation_sense::forward);
  }
  return 0;
}

struct chosen {
  std::string name;
  rope_config cfg;
  std::int32_t dtype = ROPECHECK_DTYPE_F32;
  apply_fn apply = nullptr;
};

std::optional<chosen> choose() {
  const char* name = std::getenv("ROPECHECK_STRATEGY");
  const char* preset = std::getenv("ROPECHECK_STRATEGY_PRESET");
  if (!name) return std::nullopt;
  const auto cfg = find_preset(preset ? preset : "llama3-8b");
  if (!cfg) return std::nullopt;
  std::optional<chosen> out;
  sweep::for_each_strategy([&]<class Compute, class Storage>(const char* n, const char*, const char*, bool, auto make,
                                                            const sweep::arithmetic&) {
    if (std::string_view(n) != name) return;
    out = chosen{n, *cfg, wire_dtype<Storage>(), &apply_with<Compute, Storage, decltype(make)>};
  });
  return out;
}

const std::optional<chosen>& the_strategy() {
  static const std::optional<chosen> c = choose();
  return c;
}

std::int32_t scaling_of(scaling_kind k) {
  switch (k) {
    case scaling_kind::none: return ROPECHECK_SCALING_NONE;
    case scaling_kind::linear: return ROPECHECK_SCALING_LINEAR;
    case scaling_kind::ntk: return ROPECHECK_SCALING_NTK;
    case scaling_kind::dynamic_ntk: return ROPECHECK_SCALING_DYNAMIC;
    case scaling_kind::yarn: return ROPECHECK_SCALING_YARN;
    case scaling_kind::llama3: return ROPECHECK_SCALING_LLAMA3;
    case scaling_kind::longrope: return ROPECHECK_SCALING_LONGROPE;
  }
  return -1;
}

}  // namespace

ROPECHECK_EXPORT int ropecheck_plugin_describe(struct ropecheck_convention* out) {
  const auto& c = the_strategy();
  if (!c) return 1;
  const rope_config& f = c->cfg;
  if (f.scaling == scaling_kind::longrope || !f.truncate || f.mscale || f.mscale_all_dim) return 2;
  // The ABI this code was written for (the flat fields, every position and inverse accepted), not the header's:
  // ROPECHECK_PLUGIN_ABI would declare 2 or 3 with ABI 2's fields zero, i.e. no negative positions and no
  // inverse, and the audit would skip the inverse property (plugin.h, "ABI 3 adds NO field").
  out->abi = 1;
  out->head_dim = f.head_dim;
  out->rotary_dim = f.rotary_dim;
  out->base = f.base;
  out->layout = f.pair_layout == layout::interleaved ? ROPECHECK_LAYOUT_INTERLEAVED : ROPECHECK_LAYOUT_HALF_SPLIT;
  out->scaling = scaling_of(f.scaling);
  out->factor = f.factor;
  out->max_position_embeddings = f.max_position_embeddings;
  out->original_max_position_embeddings = f.original_max_position_embeddings;
  out->beta_fast = f.beta_fast;
  out->beta_slow = f.beta_slow;
  out->low_freq_factor = f.low_freq_factor;
  out->high_freq_factor = f.high_freq_factor;
  out->attention_factor = f.attention_factor ? *f.attention_factor : 0.0;
  out->dtype = c->dtype;
  return 0;
}

ROPECHECK_EXPORT int ropecheck_plugin_apply(const void* x, void* y, const std::int64_t* positions, std::int64_t tokens,
                                            std::int32_t heads, std::int32_t inverse) {
  const auto& c = the_strategy();
  if (!c || heads <= 0) return 1;
  return c->apply(c->cfg, x, y, positions, tokens, heads, inverse != 0);
}

ROPECHECK_EXPORT const char* ropecheck_plugin_name(void) {
  static const std::string n = the_strategy() ? "report strategy " + the_strategy()->name : "report strategy (unset)";
  return n.c_str();
}
