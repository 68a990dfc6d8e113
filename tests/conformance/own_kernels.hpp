// tests/conformance/own_kernels.hpp — ropecheck's own kernels (rotate_heads with an angle strategy) and
// the consumer project's kernel (tests/package/consumer/rope_kernel.hpp) behind conformance adapters,
// for the in-tree tests of the suite.
#pragma once

#include <cstdint>
#include <span>

#include "ropecheck/angle.hpp"
#include "ropecheck/conformance/kernel.hpp"
#include "ropecheck/presets.hpp"
#include "ropecheck/rope.hpp"
#include "ropecheck/scalar.hpp"

namespace ropecheck::conformance::testing {

// rotate_heads<C>(S...) with strategy Strategy<> built from the convention `Config()` returns, token
// by token at c.positions.
template <class S, class C, class Strategy, rope_config (*Config)()>
struct own_kernel {
  using storage = S;
  using compute = C;
  static rope_config convention() { return Config(); }
  static const Strategy& strategy() {
    static const Strategy s(Config());
    return s;
  }
  static void apply(std::span<const S> x, std::span<S> y, const call& c) {
    const auto g = rope_geometry::of(Config());
    const std::size_t per = static_cast<std::size_t>(c.heads) * static_cast<std::size_t>(c.head_dim);
    for (int t = 0; t < c.tokens; ++t) {
      const std::size_t at = static_cast<std::size_t>(t) * per;
      rotate_heads<C>(x.subspan(at, per), y.subspan(at, per), c.heads, g, c.positions[static_cast<std::size_t>(t)],
                      strategy(), c.inverse ? rotation_sense::inverse : rotation_sense::forward);
    }
  }
};

// Queries by own_kernel<S, C, Strategy, Config> and keys (apply_k) by the same kernel with KeyStrategy: two
// correct kernels of one convention on the two sides of the score.
template <class S, class C, class Strategy, class KeyStrategy, rope_config (*Config)()>
struct own_pair : own_kernel<S, C, Strategy, Config> {
  static void apply_k(std::span<const S> x, std::span<S> y, const call& c) {
    own_kernel<S, C, KeyStrategy, Config>::apply(x, y, c);
  }
};

inline rope_config llama3_8b() { return *find_preset("llama3-8b"); }
inline rope_config gptj() { return *find_preset("gpt-j-6b"); }

}  // namespace ropecheck::conformance::testing
