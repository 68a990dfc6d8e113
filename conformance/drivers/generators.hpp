// conformance/drivers/generators.hpp — the generators RapidCheck lacks.
//
// RapidCheck's own floating-point generator never yields NaN, infinities or subnormals and
// shrinks poorly; positions need regimes, not uniform integers. These generators shrink towards
// the simplest case of their regime (small positions, zero, band 0).
#pragma once

#include <rapidcheck.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "ropecheck/scalar.hpp"

namespace ropecheck::test::gen {

// Positions log-uniform on [0, max]: every octave equally likely, so 2^20..2^21 is drawn as
// often as 16..32. Shrinks towards 0.
inline rc::Gen<std::int64_t> log_uniform_position(std::int64_t max) {
  const int top = static_cast<int>(std::floor(std::log2(static_cast<double>(std::max<std::int64_t>(max, 1)))));
  return rc::gen::mapcat(rc::gen::inRange(0, top + 1), [max](int octave) {
    const std::int64_t lo = octave == 0 ? 0 : (std::int64_t{1} << (octave - 1));
    const std::int64_t hi = std::min<std::int64_t>(max, (std::int64_t{1} << octave) - 1);
    return rc::gen::inRange<std::int64_t>(lo, hi + 1);
  });
}

// Powers of two and their neighbours up to max: where integers stop being exact in a type
// (256 in bf16, 2048 in fp16, 2^24 in fp32) and where reductions misbehave.
inline rc::Gen<std::int64_t> power_of_two_neighbour(std::int64_t max) {
  const int top = static_cast<int>(std::floor(std::log2(static_cast<double>(std::max<std::int64_t>(max, 2)))));
  return rc::gen::suchThat(
      rc::gen::apply([](int k, int d) { return (std::int64_t{1} << k) + d; }, rc::gen::inRange(1, top + 1),
                     rc::gen::inRange(-2, 3)),
      [max](std::int64_t p) { return p >= 0 && p <= max; });
}

// The regime edges of the error model: 256 (bf16), 2048 and 65504 (fp16), 2^24 (fp32), each +-3.
inline rc::Gen<std::int64_t> regime_edge(std::int64_t max) {
  return rc::gen::suchThat(
      rc::gen::apply([](std::int64_t edge, int d) { return edge + d; },
                     rc::gen::element<std::int64_t>(256, 2048, 65504, std::int64_t{1} << 24, std::int64_t{1} << 31),
                     rc::gen::inRange(-3, 4)),
      [max](std::int64_t p) { return p >= 0 && p <= max; });
}

// Any position of interest: log-uniform most of the time (6 in 10), powers of two and their
// neighbours (2 in 10), the regime edges (2 in 10). Built from independent components that each
// shrink towards 0, so a failing position shrinks towards the smallest position that still fails
// (the one-of generators above shrink poorly when combined).
inline rc::Gen<std::int64_t> position(std::int64_t max) {
  const int top = static_cast<int>(std::floor(std::log2(static_cast<double>(std::max<std::int64_t>(max, 2)))));
  return rc::gen::apply(
      [max, top](int kind, int octave, std::uint64_t mantissa, int edge, int delta) -> std::int64_t {
        std::int64_t p = 0;
        if (kind < 6) {
          const std::int64_t lo = octave == 0 ? 0 : (std::int64_t{1} << (octave - 1));
          const std::int64_t hi = std::min<std::int64_t>(max, (std::int64_t{1} << octave) - 1);
          p = lo + static_cast<std::int64_t>(mantissa % static_cast<std::uint64_t>(hi - lo + 1));
        } else if (kind < 8) {
          p = (std::int64_t{1} << std::max(octave, 1)) + (delta - 3);
        } else {
          constexpr std::int64_t edges[] = {256, 2048, 65504, std::int64_t{1} << 24, std::int64_t{1} << 31};
          p = edges[edge] + (delta - 3);
        }
        (void)top;
        return std::clamp<std::int64_t>(p, 0, max);
      },
      rc::gen::inRange(0, 10), rc::gen::inRange(0, top + 1), rc::gen::arbitrary<std::uint64_t>(),
      rc::gen::inRange(0, 5), rc::gen::inRange(0, 7));
}

// Values k/64 with |k| <= 255: exact in bf16 and every wider type, normal everywhere, so that
// inputs carry no rounding of their own. Shrinks towards 0.
inline rc::Gen<long double> exact_value() {
  // i = 0, 1, 2, 3, ... -> k = 0, 1, -1, 2, ...: shrinking i shrinks |k| towards 0.
  return rc::gen::map(rc::gen::inRange(0, 511), [](int i) {
    const int k = i % 2 ? (i + 1) / 2 : -(i / 2);
    return static_cast<long double>(k) / 64.0L;
  });
}

inline rc::Gen<std::vector<long double>> exact_vector(std::size_t n) {
  return rc::gen::container<std::vector<long double>>(n, exact_value());
}

// Head dims of real models (GPT-2 64, Phi-2 80, Phi-3 96, Llama 128, Gemma 256) and the rotary
// fractions in use (GPT-NeoX 0.25, ChatGLM/Phi-2 0.5, full 1).
inline rc::Gen<int> head_dim() { return rc::gen::element(64, 80, 96, 128, 256); }
inline rc::Gen<double> rotary_fraction() { return rc::gen::element(0.25, 0.5, 1.0); }

// Floats from bit patterns: every class of value, subnormals, signed zeros, infinities and NaN
// included, each class with a fair share. For properties whose outcome is defined there.
template <class T>
rc::Gen<T> any_bits() {
  using tr = scalar_traits<T>;
  using B = typename tr::bits_type;
  return rc::gen::map(rc::gen::arbitrary<B>(), [](B b) { return tr::from_bits(b); });
}

// Every value of a 16-bit type, by index (shrinks towards +0).
template <class T>
rc::Gen<T> any_16bit_value() {
  return rc::gen::map(rc::gen::inRange<std::uint32_t>(0, 0x10000),
                      [](std::uint32_t b) { return scalar_traits<T>::from_bits(static_cast<std::uint16_t>(b)); });
}

}  // namespace ropecheck::test::gen
