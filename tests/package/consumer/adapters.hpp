// adapters.hpp — the consumer's kernel behind ropecheck's conformance suite: what a kernel author
// writes (ropecheck/conformance/kernel.hpp says what an adapter holds).
#pragma once

#include <ropecheck/conformance/kernel.hpp>
#include <ropecheck/scalar.hpp>  // ropecheck::bfloat16 / float16 (Eigen's), for the 16-bit instantiations

#include <span>

#include "rope_kernel.hpp"

// The convention the kernel claims: Llama 3's rope_theta 500000, no scaling, head_dim 128, half-split.
inline ropecheck::rope_config claimed() {
  ropecheck::rope_config c;
  c.base = 500000.0;
  c.max_position_embeddings = 8192;
  return c;
}

template <class T, class Compute = float, consumer::bug B = consumer::bug::none>
struct rope_adapter {
  using storage = T;
  using compute = Compute;
  static ropecheck::rope_config convention() { return claimed(); }
  static void apply(std::span<const T> x, std::span<T> y, const ropecheck::conformance::call& c) {
    consumer::rope<T, Compute, B>(x.data(), y.data(), c.start(), c.tokens, c.heads, c.head_dim, claimed().base);
  }
};
