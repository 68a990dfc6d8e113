// tools/sweep/strategies.hpp — the implementations `ropecheck report` measures and `ropecheck certify`
// bounds, as one list: each a name, a description, the dtype its cos/sin are held in, whether it is in
// the default set, its Compute and Storage types, a captureless maker (cfg, seq_len) -> the angle
// strategy, and its arithmetic (what certify's error-model bound charges, tools/certify/bound.cpp).
//
// Header-only over ropecheck::core (no reference, no judge): the report's registry (registry.cpp)
// and the strategy plugin (tools/report/strategy_plugin.cpp, which puts any of them behind the C plugin interface
// so that the plugin door can be compared with the report's verdict) read the same list.
#pragma once

#include <cstdint>
#include <optional>

#include "ropecheck/angle.hpp"
#include "ropecheck/config.hpp"
#include "ropecheck/scalar.hpp"

namespace ropecheck::sweep {

// The binary formats an implementation's steps round in.
enum class number_format { f16, bf16, f32, f64 };

// How one implementation forms and evaluates its (cos, sin) pair (angle.hpp's strategies): the dtype
// of each step, for certify's bound. The default is a careful fp32 kernel: fp32 position, product,
// cosf/sinf and af product, no cast.
struct arithmetic {
  number_format position = number_format::f32;    // the dtype the position is held in
  number_format angle = number_format::f32;       // the dtype the product p theta~ rounds in
  bool ggml_chain = false;                        // theta formed by ggml_angle's repeated fp32 products
  bool fast_sincos = false;                       // fast_sincos_angle's parabola instead of libm
  number_format libm = number_format::f32;        // the dtype cos/sin are evaluated in (glibc, < 1 ulp)
  std::optional<number_format> rounded = {};      // the 16-bit types' rounding of cos_of's float result
  number_format af_product = number_format::f32;  // the dtype of the multiply by af
  std::optional<number_format> cast = {};         // HF's cast to the model dtype, or the cache
};

// Everything in one type T; a 16-bit T calls cosf and rounds its result, then the af product, to T.
[[nodiscard]] constexpr arithmetic all_in(number_format t) {
  const bool narrow = t == number_format::f16 || t == number_format::bf16;
  return {t, t, false, false, narrow ? number_format::f32 : t, narrow ? std::optional(t) : std::nullopt, t, {}};
}

// Calls f.template operator()<Compute, Storage>(name, description, cos_sin_dtype, in_default_set, make,
// arith) once per implementation, in report order (names are stable: they appear in CSV/JSON and CI
// scripts).
template <class F>
void for_each_strategy(F&& f) {
  using nf = number_format;
  constexpr arithmetic fp32{};
  constexpr arithmetic bf16_cast{.cast = nf::bf16};
  constexpr arithmetic f16_cast{.cast = nf::f16};
  f.template operator()<float, float>("hf_float", "HF transformers in fp32: torch's fp32 inv_freq, float(position) * inv_freq, cos/sin, fp32 rotation",
      "float", true, [](const rope_config& c, std::int64_t n) { return hf_angle<float>(c, n); }, fp32);
  f.template operator()<bfloat16, bfloat16>("hf_bf16", "HF transformers, bf16 model: fp32 angle and cos/sin cast to bf16, eager bf16 rotation",
      "bfloat16", true, [](const rope_config& c, std::int64_t n) { return hf_angle<bfloat16>(c, n); }, bf16_cast);  // HF cos.to(bf16)
  f.template operator()<float, bfloat16>("fused_bf16", "fused kernel: bf16 q/k in memory, HF fp32 angle and cos/sin, fp32 rotation",
      "float", true, [](const rope_config& c, std::int64_t n) { return hf_angle<float>(c, n); }, fp32);  // bf16 only in memory
  f.template operator()<float16, float16>("direct_float16", "everything in fp16: inv_freq, position, angle, cos/sin and rotation",
      "float16", true, [](const rope_config& c, std::int64_t n) { return direct_angle<float16>(c, n); }, all_in(nf::f16));
  f.template operator()<float, float>("direct_float", "hand-written fp32 kernel: fp32 inv_freq, fp32 position * inv_freq, cosf/sinf, fp32 rotation",
      "float", true, [](const rope_config& c, std::int64_t n) { return direct_angle<float>(c, n); }, fp32);
  f.template operator()<double, double>("direct_double", "everything in double", "double", true,
      [](const rope_config& c, std::int64_t n) { return direct_angle<double>(c, n); }, all_in(nf::f64));
  f.template operator()<float, float>("ggml_float", "ggml/llama.cpp: theta by repeated fp32 products theta *= powf(base, -2/d), cosf/sinf, fp32 rotation",
      "float", true, [](const rope_config& c, std::int64_t n) { return ggml_angle(c, n); }, arithmetic{.ggml_chain = true});
  f.template operator()<float, float>("bf16_positions", "position ids held in bf16 before an fp32 angle (the bf16-positions bug), fp32 rotation",
      "float", true, [](const rope_config& c, std::int64_t n) { return storage_positions<bfloat16, float>(c, n); }, arithmetic{.position = nf::bf16});
  f.template operator()<float, float>("cos_sin_cache_bf16", "HF fp32 cos/sin stored in a bf16 cache, fp32 rotation (the bf16-cache bug)",
      "bfloat16", true, [](const rope_config& c, std::int64_t n) { return cached<bfloat16, hf_angle<float>>(hf_angle<float>(c, n)); }, bf16_cast);  // the bf16 cache of HF's fp32 pair: the same rounding
  f.template operator()<float, float>("fast_sincos", "fp32 angle, fast parabola sin/cos with |error| <= 1.1e-3 (the fast-math class), fp32 rotation",
      "float", true, [](const rope_config& c, std::int64_t n) { return fast_sincos_angle(c, n); }, arithmetic{.fast_sincos = true});  // direct_float's angle
  f.template operator()<bfloat16, bfloat16>("eager_bf16", "eager bf16 throughout: bf16 inv_freq, positions, angle, cos/sin and rotation",
      "bfloat16", true, [](const rope_config& c, std::int64_t n) { return direct_angle<bfloat16>(c, n); }, all_in(nf::bf16));
  f.template operator()<float16, float16>("hf_float16", "HF transformers, fp16 model: fp32 angle and cos/sin cast to fp16, eager fp16 rotation",
      "float16", false, [](const rope_config& c, std::int64_t n) { return hf_angle<float16>(c, n); }, f16_cast);
}

}  // namespace ropecheck::sweep
