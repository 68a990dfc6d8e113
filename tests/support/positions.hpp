// tests/support/positions.hpp — positions by regime, deterministic from a printed seed.
//
// Regimes (named as in the error model): small positions; the edges where integers stop being
// exact in bf16 (256), fp16 (2048, and 65504 its largest finite value), fp32 (2^24); powers of
// two and their neighbours; log-uniform positions up to a maximum.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <iostream>
#include <random>
#include <string>
#include <vector>

namespace ropecheck::test {

// The seed for this test run: ROPECHECK_SEED if set, otherwise a fixed default; printed once so
// a failure can be reproduced with ROPECHECK_SEED=<seed>.
inline std::uint64_t test_seed() {
  static const std::uint64_t seed = [] {
    const char* env = std::getenv("ROPECHECK_SEED");
    const std::uint64_t s = env ? std::strtoull(env, nullptr, 0) : 0x5eed2026ull;
    std::cout << "[ropecheck] seed " << s << " (reproduce with ROPECHECK_SEED=" << s << ")\n";
    return s;
  }();
  return seed;
}

inline std::vector<std::int64_t> regime_positions(std::int64_t max_pos, int log_uniform_count,
                                                  std::uint64_t seed) {
  std::vector<std::int64_t> p;
  for (std::int64_t i = 0; i <= 64; ++i) p.push_back(i);
  for (std::int64_t edge : {std::int64_t{256}, std::int64_t{2048}, std::int64_t{4096}, std::int64_t{8192},
                            std::int64_t{65504}, std::int64_t{1} << 24, std::int64_t{1} << 31})
    for (std::int64_t d = -3; d <= 3; ++d) p.push_back(edge + d);
  for (int k = 1; k < 63; ++k)
    for (std::int64_t d : {-1, 0, 1}) p.push_back((std::int64_t{1} << k) + d);
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> lg(0.0, std::log2(static_cast<double>(max_pos)));
  for (int i = 0; i < log_uniform_count; ++i) p.push_back(static_cast<std::int64_t>(std::exp2(lg(rng))));
  std::erase_if(p, [&](std::int64_t x) { return x < 0 || x > max_pos; });
  std::sort(p.begin(), p.end());
  p.erase(std::unique(p.begin(), p.end()), p.end());
  return p;
}

}  // namespace ropecheck::test
