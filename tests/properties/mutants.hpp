// tests/properties/mutants.hpp — deliberately broken RoPE kernels, one per bug class of
// shared/DESIGN.md. Each declares the correct convention (and carries the correct kernel's error
// bound) but computes something else, exactly as the bug does in real engines.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "rope_under_test.hpp"

namespace ropecheck::test {

// cos/sin of an inner strategy passed through a transformation (a sign flip, a wrong factor).
template <angle_strategy Inner>
class transformed_cos_sin {
 public:
  using value_type = typename Inner::value_type;
  transformed_cos_sin(Inner inner, std::function<cos_sin_pair<value_type>(cos_sin_pair<value_type>)> f)
      : inner_(std::move(inner)), f_(std::move(f)) {}
  [[nodiscard]] long double angle(std::int64_t pos, int band) const { return inner_.angle(pos, band); }
  [[nodiscard]] cos_sin_pair<value_type> cos_sin(std::int64_t pos, int band) const { return f_(inner_.cos_sin(pos, band)); }
  [[nodiscard]] int bands() const { return inner_.bands(); }
  [[nodiscard]] std::string name() const { return inner_.name() + "_transformed"; }

 private:
  Inner inner_;
  std::function<cos_sin_pair<value_type>(cos_sin_pair<value_type>)> f_;
};

// The correct fp32 HF-style kernel for `nc`: the control every mutant is compared with.
inline rope_under_test correct_hf_float(const named_config& nc) {
  return bind_kernel<float, float>("hf_float", nc, hf_angle<float>(nc.cfg, nc.seq_len), hf_model<float>(nc));
}

inline named_config llama3() { return {"llama3-8b", *find_preset("llama3-8b")}; }
inline named_config yarn() { return {"qwen2.5-7b-yarn", *find_preset("qwen2.5-7b-yarn")}; }
inline named_config pythia() { return {"pythia", *find_preset("pythia")}; }

inline rope_under_test correct_control() { return correct_hf_float(llama3()); }

// A broken binding presented as an implementation of `declared`: its claim, reference and error
// bound are the correct kernel's; only what it computes differs.
inline rope_under_test as_mutant(std::string name, const named_config& declared, rope_under_test broken) {
  const auto good = correct_hf_float(declared);
  broken.name = std::move(name);
  broken.declared = good.declared;
  broken.seq_len = good.seq_len;
  broken.ref = good.ref;
  broken.bound = good.bound;
  return broken;
}

inline std::vector<rope_under_test> rope_mutants() {
  std::vector<rope_under_test> m;
  const auto l3 = llama3();
  const auto model = hf_model<float>(l3);

  using flip = transformed_cos_sin<hf_angle<float>>;
  m.push_back(as_mutant("sin_sign_flipped", l3,
                        bind_kernel<float, float>("", l3, flip(hf_angle<float>(l3.cfg), [](cos_sin_pair<float> cs) {
                                                    return cos_sin_pair<float>{cs.cos, -cs.sin};
                                                  }), model)));

  named_config swapped = l3;
  swapped.cfg.pair_layout = l3.cfg.pair_layout == layout::half_split ? layout::interleaved : layout::half_split;
  m.push_back(as_mutant("pair_layout_swapped", l3,
                        bind_kernel<float, float>("", swapped, hf_angle<float>(swapped.cfg), model)));

  rope_config wrong_base = l3.cfg;
  wrong_base.base = 10000.0;  // the runtime's default, not the checkpoint's 500000
  m.push_back(as_mutant("base_wrong_1e4_not_5e5", l3,
                        bind_kernel<float, float>("", l3, hf_angle<float>(wrong_base), model)));

  m.push_back(as_mutant("positions_in_bf16", l3,
                        bind_kernel<float, float>("", l3, storage_positions<bfloat16, float>(l3.cfg), model)));

  m.push_back(as_mutant("fast_sin_cos", l3, bind_kernel<float, float>("", l3, fast_sincos_angle(l3.cfg), model)));

  m.push_back(as_mutant("cos_sin_cache_in_bf16", l3,
                        bind_kernel<float, float>("", l3, cached<bfloat16, hf_angle<float>>(hf_angle<float>(l3.cfg)),
                                                  model)));

  const auto py = pythia();
  rope_config over_head_dim = py.cfg;
  over_head_dim.rotary_dim = over_head_dim.head_dim;  // theta_i = base^(-2i/head_dim), not /rotary_dim
  m.push_back(as_mutant("partial_rotary_over_head_dim", py,
                        bind_kernel<float, float>("", py, hf_angle<float>(over_head_dim), hf_model<float>(py))));

  const auto y = yarn();
  const float af = static_cast<float>(hf_angle<float>(y.cfg).frequencies().attention_factor);
  m.push_back(as_mutant("yarn_attention_factor_missing", y,
                        bind_kernel<float, float>("", y, flip(hf_angle<float>(y.cfg), [af](cos_sin_pair<float> cs) {
                                                    return cos_sin_pair<float>{cs.cos / af, cs.sin / af};
                                                  }), hf_model<float>(y))));
  m.push_back(as_mutant("yarn_attention_factor_doubled", y,
                        bind_kernel<float, float>("", y, flip(hf_angle<float>(y.cfg), [af](cos_sin_pair<float> cs) {
                                                    return cos_sin_pair<float>{cs.cos * af, cs.sin * af};
                                                  }), hf_model<float>(y))));
  return m;
}

// Bugs that live in the KV cache rather than the rotation: a property and the mutant it runs on.
struct cache_mutant {
  std::string name;
  std::string property_name;
  std::function<void()> property;
};
std::vector<cache_mutant> cache_mutants();  // tests/properties/cache_mutants.cpp

}  // namespace ropecheck::test
