// tools/report/registry.cpp — the registry of report implementations (registry.hpp).
#include "registry.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>
#include <utility>

namespace ropecheck::report {
namespace detail {
namespace {

template <class Compute, class Storage, class S>
std::unique_ptr<runner> make_runner(S s, const rope_reference& ref) {
  return std::make_unique<typed_runner<S, Compute, Storage>>(std::move(s), ref);
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// The registry.
const std::vector<registry_entry>& registry() {
  static const std::vector<registry_entry> entries = [] {
    std::vector<registry_entry> r;
    auto add = [&r](std::string name, std::string description, std::string dtype, bool dflt, auto make) {
      r.push_back({{std::move(name), std::move(description), std::move(dtype), dflt}, make});
    };
    add("hf_float", "HF transformers in fp32: torch's fp32 inv_freq, float(position) * inv_freq, cos/sin, fp32 rotation",
        "float", true, [](const rope_config& c, std::int64_t n, const rope_reference& ref) {
          return make_runner<float, float>(hf_angle<float>(c, n), ref);
        });
    add("hf_bf16", "HF transformers, bf16 model: fp32 angle and cos/sin cast to bf16, eager bf16 rotation",
        "bfloat16", true, [](const rope_config& c, std::int64_t n, const rope_reference& ref) {
          return make_runner<bfloat16, bfloat16>(hf_angle<bfloat16>(c, n), ref);
        });
    add("fused_bf16", "fused kernel: bf16 q/k in memory, HF fp32 angle and cos/sin, fp32 rotation",
        "float", true, [](const rope_config& c, std::int64_t n, const rope_reference& ref) {
          return make_runner<float, bfloat16>(hf_angle<float>(c, n), ref);
        });
    add("direct_float16", "everything in fp16: inv_freq, position, angle, cos/sin and rotation",
        "float16", true, [](const rope_config& c, std::int64_t n, const rope_reference& ref) {
          return make_runner<float16, float16>(direct_angle<float16>(c, n), ref);
        });
    add("direct_float", "hand-written fp32 kernel: fp32 inv_freq, fp32 position * inv_freq, cosf/sinf, fp32 rotation",
        "float", true, [](const rope_config& c, std::int64_t n, const rope_reference& ref) {
          return make_runner<float, float>(direct_angle<float>(c, n), ref);
        });
    add("direct_double", "everything in double", "double", true,
        [](const rope_config& c, std::int64_t n, const rope_reference& ref) {
          return make_runner<double, double>(direct_angle<double>(c, n), ref);
        });
    add("ggml_float", "ggml/llama.cpp: theta by repeated fp32 products theta *= powf(base, -2/d), cosf/sinf, fp32 rotation",
        "float", true, [](const rope_config& c, std::int64_t n, const rope_reference& ref) {
          return make_runner<float, float>(ggml_angle(c, n), ref);
        });
    add("bf16_positions", "position ids held in bf16 before an fp32 angle (the bf16-positions bug), fp32 rotation",
        "float", true, [](const rope_config& c, std::int64_t n, const rope_reference& ref) {
          return make_runner<float, float>(storage_positions<bfloat16, float>(c, n), ref);
        });
    add("cos_sin_cache_bf16", "HF fp32 cos/sin stored in a bf16 cache, fp32 rotation (the bf16-cache bug)",
        "bfloat16", true, [](const rope_config& c, std::int64_t n, const rope_reference& ref) {
          return make_runner<float, float>(cached<bfloat16, hf_angle<float>>(hf_angle<float>(c, n)), ref);
        });
    add("fast_sincos", "fp32 angle, fast parabola sin/cos with |error| <= 1.1e-3 (the fast-math class), fp32 rotation",
        "float", true, [](const rope_config& c, std::int64_t n, const rope_reference& ref) {
          return make_runner<float, float>(fast_sincos_angle(c, n), ref);
        });
    add("eager_bf16", "eager bf16 throughout: bf16 inv_freq, positions, angle, cos/sin and rotation",
        "bfloat16", true, [](const rope_config& c, std::int64_t n, const rope_reference& ref) {
          return make_runner<bfloat16, bfloat16>(direct_angle<bfloat16>(c, n), ref);
        });
    add("hf_float16", "HF transformers, fp16 model: fp32 angle and cos/sin cast to fp16, eager fp16 rotation",
        "float16", false, [](const rope_config& c, std::int64_t n, const rope_reference& ref) {
          return make_runner<float16, float16>(hf_angle<float16>(c, n), ref);
        });
    return r;
  }();
  return entries;
}

std::vector<const registry_entry*> select_implementations(const std::vector<std::string>& names) {
  std::vector<const registry_entry*> out;
  if (names.empty()) {
    for (const auto& e : registry())
      if (e.info.in_default_set) out.push_back(&e);
    return out;
  }
  for (const auto& n : names) {
    const auto it = std::find_if(registry().begin(), registry().end(), [&](const auto& e) { return e.info.name == n; });
    if (it == registry().end()) {
      std::string known;
      for (const auto& e : registry()) known += (known.empty() ? "" : ", ") + e.info.name;
      throw std::invalid_argument("report: unknown implementation '" + n + "' (known: " + known + ")");
    }
    if (std::find(out.begin(), out.end(), &*it) == out.end()) out.push_back(&*it);
  }
  return out;
}

}  // namespace detail

std::vector<implementation_info> known_implementations() {
  std::vector<implementation_info> out;
  for (const auto& e : detail::registry()) out.push_back(e.info);
  return out;
}

}  // namespace ropecheck::report
