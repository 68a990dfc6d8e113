// tools/report/registry.cpp — the registry of report implementations (registry.hpp).
#include "registry.hpp"

#include "probe_outputs.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>
#include <utility>

namespace ropecheck::report {
namespace detail {
namespace {

// One entry: MakeS is a captureless lambda (cfg, seq_len) -> the strategy, so that the runner and
// the probe driver are made from the same strategy with the same Compute/Storage types.
template <class Compute, class Storage, class MakeS>
void add_entry(std::vector<registry_entry>& r, std::string name, std::string description, std::string dtype,
               bool in_default_set, MakeS) {
  registry_entry e;
  e.info = {std::move(name), std::move(description), std::move(dtype), in_default_set};
  e.make = [](const rope_config& c, std::int64_t n, const rope_reference& ref) -> std::unique_ptr<runner> {
    auto s = MakeS{}(c, n);
    return std::make_unique<typed_runner<decltype(s), Compute, Storage>>(std::move(s), ref);
  };
  e.outputs = [](const rope_config& c, std::int64_t n, const judge::probe_set& probe) {
    return probe_outputs<Compute, Storage>(MakeS{}(c, n), c, probe);
  };
  e.storage_dtype = judge_dtype_name<Storage>();
  r.push_back(std::move(e));
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// The registry.
const std::vector<registry_entry>& registry() {
  static const std::vector<registry_entry> entries = [] {
    std::vector<registry_entry> r;
    add_entry<float, float>(r, "hf_float", "HF transformers in fp32: torch's fp32 inv_freq, float(position) * inv_freq, cos/sin, fp32 rotation",
        "float", true, [](const rope_config& c, std::int64_t n) { return hf_angle<float>(c, n); });
    add_entry<bfloat16, bfloat16>(r, "hf_bf16", "HF transformers, bf16 model: fp32 angle and cos/sin cast to bf16, eager bf16 rotation",
        "bfloat16", true, [](const rope_config& c, std::int64_t n) { return hf_angle<bfloat16>(c, n); });
    add_entry<float, bfloat16>(r, "fused_bf16", "fused kernel: bf16 q/k in memory, HF fp32 angle and cos/sin, fp32 rotation",
        "float", true, [](const rope_config& c, std::int64_t n) { return hf_angle<float>(c, n); });
    add_entry<float16, float16>(r, "direct_float16", "everything in fp16: inv_freq, position, angle, cos/sin and rotation",
        "float16", true, [](const rope_config& c, std::int64_t n) { return direct_angle<float16>(c, n); });
    add_entry<float, float>(r, "direct_float", "hand-written fp32 kernel: fp32 inv_freq, fp32 position * inv_freq, cosf/sinf, fp32 rotation",
        "float", true, [](const rope_config& c, std::int64_t n) { return direct_angle<float>(c, n); });
    add_entry<double, double>(r, "direct_double", "everything in double", "double", true,
        [](const rope_config& c, std::int64_t n) { return direct_angle<double>(c, n); });
    add_entry<float, float>(r, "ggml_float", "ggml/llama.cpp: theta by repeated fp32 products theta *= powf(base, -2/d), cosf/sinf, fp32 rotation",
        "float", true, [](const rope_config& c, std::int64_t n) { return ggml_angle(c, n); });
    add_entry<float, float>(r, "bf16_positions", "position ids held in bf16 before an fp32 angle (the bf16-positions bug), fp32 rotation",
        "float", true, [](const rope_config& c, std::int64_t n) { return storage_positions<bfloat16, float>(c, n); });
    add_entry<float, float>(r, "cos_sin_cache_bf16", "HF fp32 cos/sin stored in a bf16 cache, fp32 rotation (the bf16-cache bug)",
        "bfloat16", true, [](const rope_config& c, std::int64_t n) { return cached<bfloat16, hf_angle<float>>(hf_angle<float>(c, n)); });
    add_entry<float, float>(r, "fast_sincos", "fp32 angle, fast parabola sin/cos with |error| <= 1.1e-3 (the fast-math class), fp32 rotation",
        "float", true, [](const rope_config& c, std::int64_t n) { return fast_sincos_angle(c, n); });
    add_entry<bfloat16, bfloat16>(r, "eager_bf16", "eager bf16 throughout: bf16 inv_freq, positions, angle, cos/sin and rotation",
        "bfloat16", true, [](const rope_config& c, std::int64_t n) { return direct_angle<bfloat16>(c, n); });
    add_entry<float16, float16>(r, "hf_float16", "HF transformers, fp16 model: fp32 angle and cos/sin cast to fp16, eager fp16 rotation",
        "float16", false, [](const rope_config& c, std::int64_t n) { return hf_angle<float16>(c, n); });
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
