// tools/report/strategies.hpp — the implementations `ropecheck report` measures, as one list: each a
// name, a description, the dtype its cos/sin are held in, whether it is in the default set, its
// Compute and Storage types and a captureless maker (cfg, seq_len) -> the angle strategy.
//
// Header-only over ropecheck::core (no reference, no judge): the report's registry (registry.cpp)
// and the strategy plugin (strategy_plugin.cpp, which puts any of them behind the C plugin interface
// so that the plugin door can be compared with the report's verdict) read the same list.
#pragma once

#include <cstdint>

#include "ropecheck/angle.hpp"
#include "ropecheck/config.hpp"
#include "ropecheck/scalar.hpp"

namespace ropecheck::report {

// Calls f.template operator()<Compute, Storage>(name, description, cos_sin_dtype, in_default_set, make)
// once per implementation, in report order (names are stable: they appear in CSV/JSON and CI scripts).
template <class F>
void for_each_strategy(F&& f) {
  f.template operator()<float, float>("hf_float", "HF transformers in fp32: torch's fp32 inv_freq, float(position) * inv_freq, cos/sin, fp32 rotation",
      "float", true, [](const rope_config& c, std::int64_t n) { return hf_angle<float>(c, n); });
  f.template operator()<bfloat16, bfloat16>("hf_bf16", "HF transformers, bf16 model: fp32 angle and cos/sin cast to bf16, eager bf16 rotation",
      "bfloat16", true, [](const rope_config& c, std::int64_t n) { return hf_angle<bfloat16>(c, n); });
  f.template operator()<float, bfloat16>("fused_bf16", "fused kernel: bf16 q/k in memory, HF fp32 angle and cos/sin, fp32 rotation",
      "float", true, [](const rope_config& c, std::int64_t n) { return hf_angle<float>(c, n); });
  f.template operator()<float16, float16>("direct_float16", "everything in fp16: inv_freq, position, angle, cos/sin and rotation",
      "float16", true, [](const rope_config& c, std::int64_t n) { return direct_angle<float16>(c, n); });
  f.template operator()<float, float>("direct_float", "hand-written fp32 kernel: fp32 inv_freq, fp32 position * inv_freq, cosf/sinf, fp32 rotation",
      "float", true, [](const rope_config& c, std::int64_t n) { return direct_angle<float>(c, n); });
  f.template operator()<double, double>("direct_double", "everything in double", "double", true,
      [](const rope_config& c, std::int64_t n) { return direct_angle<double>(c, n); });
  f.template operator()<float, float>("ggml_float", "ggml/llama.cpp: theta by repeated fp32 products theta *= powf(base, -2/d), cosf/sinf, fp32 rotation",
      "float", true, [](const rope_config& c, std::int64_t n) { return ggml_angle(c, n); });
  f.template operator()<float, float>("bf16_positions", "position ids held in bf16 before an fp32 angle (the bf16-positions bug), fp32 rotation",
      "float", true, [](const rope_config& c, std::int64_t n) { return storage_positions<bfloat16, float>(c, n); });
  f.template operator()<float, float>("cos_sin_cache_bf16", "HF fp32 cos/sin stored in a bf16 cache, fp32 rotation (the bf16-cache bug)",
      "bfloat16", true, [](const rope_config& c, std::int64_t n) { return cached<bfloat16, hf_angle<float>>(hf_angle<float>(c, n)); });
  f.template operator()<float, float>("fast_sincos", "fp32 angle, fast parabola sin/cos with |error| <= 1.1e-3 (the fast-math class), fp32 rotation",
      "float", true, [](const rope_config& c, std::int64_t n) { return fast_sincos_angle(c, n); });
  f.template operator()<bfloat16, bfloat16>("eager_bf16", "eager bf16 throughout: bf16 inv_freq, positions, angle, cos/sin and rotation",
      "bfloat16", true, [](const rope_config& c, std::int64_t n) { return direct_angle<bfloat16>(c, n); });
  f.template operator()<float16, float16>("hf_float16", "HF transformers, fp16 model: fp32 angle and cos/sin cast to fp16, eager fp16 rotation",
      "float16", false, [](const rope_config& c, std::int64_t n) { return hf_angle<float16>(c, n); });
}

}  // namespace ropecheck::report
