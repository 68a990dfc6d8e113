// conformance/drivers/implementation.hpp — one notion of an implementation under test.
//
// Boost.Math's "bindings" idea: the property drivers (rope_properties.hpp) see a RoPE
// implementation only through this struct — a declared convention, a rotate function on long double
// buffers (every checked type but MPFR widens to long double exactly), what it accepts, and the
// error model's bound for it — so the same drivers check ropecheck's own kernels in every
// storage/compute pairing (tests/properties/rope_under_test.hpp binds them), deliberately broken
// kernels (tests/properties/mutation_test.cpp), foreign kernels behind the C plugin interface
// (tools/audit/plugin_audit.cpp) and a user's templated kernel in the conformance suite
// (ropecheck/conformance.hpp, conformance/src/driven.hpp).
//
// Internal to the build (not installed): the installed face of it is ropecheck::conformance::kernel.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>

#include "ropecheck/config.hpp"
#include "ropecheck/reference/reference.hpp"
#include "ropecheck/rope.hpp"

namespace ropecheck::test {

struct rope_under_test {
  std::string name;            // "<storage>/<compute> <strategy>"
  rope_config declared;        // the convention it claims to implement
  std::int64_t seq_len = 0;    // for the length-dependent rules
  std::int64_t max_position = (std::int64_t{1} << 31) - 1;  // where its contract ends (fp16: 65504)
  // Whether it computes in double or wider (positions drawn to 2^31, else 2^24): from the compute
  // type where there is one (scalar_traits<Compute>::digits >= 53), from the kernel's declaration
  // otherwise, never from its name.
  bool wide_compute = false;
  // Whether rotate() accepts a negative position (R(-p) = R(p)^T). Kernels that index a cos/sin
  // cache by position do not: the drivers then rotate by nonnegative offsets only (the relative
  // offset identity is checked in the form af <R(m - n) q, k> when n < m).
  bool negative_positions = true;
  // Whether rotate() honours rotation_sense::inverse. When false the inverse property cannot be
  // checked (the conformance suite skips it and says why).
  bool has_inverse = true;
  std::shared_ptr<const reference::rope_reference> ref;      // the reference for `declared`
  // Round a value to the storage type (inputs are drawn exact, this is a guard).
  std::function<long double(long double)> to_storage;
  // Rotate `heads` heads of one token at `pos`; x and y hold heads * head_dim values.
  std::function<void(std::span<const long double>, std::span<long double>, int heads, std::int64_t pos,
                     rotation_sense)>
      rotate;
  // The error model's bound on |y_j - (R x)_j| for the two coordinates of band `band` at `pos`,
  // in units of af (|x_a| + |x_b|) (judge/include/ropecheck/judge/error_model.hpp sections 1-4,
  // or the judge's allowance, ropecheck/judge/allowance.hpp).
  std::function<long double(std::int64_t pos, int band)> bound;
  // The key side, for the score property (score_properties.hpp): keys of kv_heads heads read by
  // q_heads query heads (query head h reads key head h / (q_heads / kv_heads), transformers'
  // repeat_kv), rotated by rotate_k (same contract as rotate; empty: keys are rotated by rotate) with
  // bound_k (same units as bound; empty: bound). kv_heads must divide q_heads.
  int q_heads = 1, kv_heads = 1;
  std::function<void(std::span<const long double>, std::span<long double>, int heads, std::int64_t pos,
                     rotation_sense)>
      rotate_k;
  std::function<long double(std::int64_t pos, int band)> bound_k;

  [[nodiscard]] long double attention_factor() const { return ref->attention_factor().value(); }
  [[nodiscard]] rope_geometry geometry() const { return rope_geometry::of(declared); }
  // The key side's rotation and bound (rotate's and bound when it has none of its own).
  [[nodiscard]] const auto& key_rotate() const { return rotate_k ? rotate_k : rotate; }
  [[nodiscard]] const auto& key_bound() const { return bound_k ? bound_k : bound; }
};

}  // namespace ropecheck::test
