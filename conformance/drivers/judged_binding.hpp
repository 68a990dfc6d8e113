// conformance/drivers/judged_binding.hpp — a kernel driven from outside (the plugin door, the
// conformance suite) as an implementation under test whose bound is the judge's allowance
// (ropecheck/judge/allowance.hpp) for its declared convention and dtype against exact mathematics:
// the one every door applies. It covers HF's cos/sin cast to the model dtype and ggml's chain of fp32
// products; with fp32_angles false it allows fp64 angles only (strict).
#pragma once

#include <cmath>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <utility>

#include "implementation.hpp"
#include "ropecheck/judge/allowance.hpp"

namespace ropecheck::test {

struct driven_kernel {
  std::string name;
  rope_config declared;
  std::string dtype;            // the judge's dtype name: "float32", "float64", "bfloat16", "float16"
  bool wide_compute = false;    // computes in double or wider: positions drawn to 2^31
  std::int64_t max_position = (std::int64_t{1} << 31) - 1;
  bool negative_positions = true;
  bool has_inverse = true;
  // The sequence length the length-dependent rules (dynamic NTK, LongRoPE's short/long factors) are
  // evaluated at: the judge's on the probe set (its last position + 1, judge.hpp audit_options::seq_len),
  // so that the properties and the judge ask the kernel for one convention. 0: the rule's own default.
  std::int64_t seq_len = 0;
  std::function<long double(long double)> to_storage;
  std::function<void(std::span<const long double>, std::span<long double>, int heads, std::int64_t pos,
                     rotation_sense)>
      rotate;
  // The key side (implementation.hpp rope_under_test::rotate_k; empty: keys rotated by rotate) and the
  // score property's head counts. The keys are the same element type: the same allowance bounds them.
  std::function<void(std::span<const long double>, std::span<long double>, int heads, std::int64_t pos,
                     rotation_sense)>
      rotate_k;
  int q_heads = 1, kv_heads = 1;
};

inline rope_under_test judged_binding(const driven_kernel& k, bool fp32_angles) {
  rope_under_test r;
  r.name = k.name;
  r.declared = k.declared;
  r.seq_len = k.seq_len;
  r.max_position = k.max_position;
  r.wide_compute = k.wide_compute;
  r.negative_positions = k.negative_positions;
  r.has_inverse = k.has_inverse;
  r.ref = std::make_shared<const reference::rope_reference>(k.declared, k.seq_len);
  r.to_storage = k.to_storage;
  r.rotate = k.rotate;
  r.rotate_k = k.rotate_k;
  r.q_heads = k.q_heads;
  r.kv_heads = k.kv_heads;
  const auto ref = r.ref;
  const auto allow = std::make_shared<const judge::allowance>(k.declared, k.dtype, judge::reference_kind::exact,
                                                              !fp32_angles);
  r.bound = [ref, allow](std::int64_t pos, int band) -> long double {
    const double angle = std::fabs(static_cast<double>(ref->angle(pos, band).value()));
    return allow->pair(pos, band, angle);
  };
  return r;
}

}  // namespace ropecheck::test
