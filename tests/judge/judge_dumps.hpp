// tests/judge/judge_dumps.hpp — dumps made with ropecheck's own kernels and angle strategies, for the
// judge's tests (one test file per pass, tests/judge/pass_<family>_test.cpp, and judge_test.cpp for
// the judging and the orchestration). Inputs are k/64 with 0 < |k| <= 128: exact in bfloat16 and
// every wider type, so a dump's only errors are the kernel's. Seeds are fixed per dump and printed.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "ropecheck/angle.hpp"
#include "ropecheck/judge/judge.hpp"
#include "ropecheck/rope.hpp"
#include "ropecheck/scalar.hpp"
#include "ropecheck/schedule.hpp"

namespace ropecheck::judge_test {

using judge::dump;
using judge::verdict;

inline constexpr int kHeads = 2;

// 0..63 (dense, for unwrapping) and a spread to 100000.
inline std::vector<std::int64_t> test_positions() {
  std::vector<std::int64_t> p;
  for (int i = 0; i < 64; ++i) p.push_back(i);
  for (std::int64_t q : {1000, 1777, 2500, 3333, 4097, 5000, 15962, 32769, 65537, 100000}) p.push_back(q);
  return p;
}
inline const std::vector<std::int64_t> kPos = test_positions();

inline rope_config claimed_config(int head_dim = 64) {
  rope_config c;
  c.head_dim = c.rotary_dim = head_dim;
  c.base = 500000.0;
  c.pair_layout = layout::half_split;
  c.max_position_embeddings = 131072;
  return c;
}

// A YaRN claim (Qwen2.5-style: base 1e6, factor 4 over 32768, 128 dims).
inline rope_config yarn_claim() {
  auto c = claimed_config(128);
  c.base = 1000000.0;
  c.scaling = scaling_kind::yarn;
  c.factor = 4.0;
  c.original_max_position_embeddings = 32768;
  c.max_position_embeddings = 131072;
  return c;
}

// Inputs k/64, 0 < |k| <= 128.
inline std::vector<double> random_x(std::size_t n, unsigned seed) {
  std::mt19937 gen(seed);
  std::uniform_int_distribution<int> k(-128, 128);
  std::vector<double> x(n);
  for (auto& v : x) {
    int q = 0;
    while (q == 0) q = k(gen);
    v = q / 64.0;
  }
  return x;
}

// Run the kernel rotate_tokens<Compute, Storage> with `cs` at `used` positions over geometry `g`;
// the dump records the `told` positions.
template <class Storage, class Compute = float, class CS>
dump make_dump(const rope_geometry& g, const CS& cs, const std::vector<std::int64_t>& told,
               const std::vector<std::int64_t>& used, const std::string& dtype, unsigned seed = 7,
               int heads = kHeads) {
  dump d;
  d.positions = told;
  d.tokens = static_cast<int>(told.size());
  d.heads = heads;
  d.head_dim = g.head_dim;
  d.dtype = dtype;
  d.x = random_x(static_cast<std::size_t>(d.tokens) * heads * g.head_dim, seed);
  std::vector<Storage> xs(d.x.size()), ys(d.x.size());
  for (std::size_t j = 0; j < xs.size(); ++j) xs[j] = scalar_traits<Storage>::narrow(d.x[j]);
  rotate_tokens<Compute, Storage>(std::span<const Storage>(xs), std::span<Storage>(ys), used, heads, g, cs);
  d.y.resize(ys.size());
  for (std::size_t j = 0; j < ys.size(); ++j) d.y[j] = static_cast<double>(scalar_traits<Storage>::widen(ys[j]));
  return d;
}

inline void print(const std::string& name, const verdict& v) {
  std::printf("[%s] %s  max %.3g ulps (abs %.3g), tolerance %.3g ulps\n  reason: %s\n", name.c_str(),
              v.pass ? "PASS" : "FAIL", v.max_error_ulps, v.max_error_abs, v.tolerance, v.tolerance_reason.c_str());
  for (const auto& f : v.findings) std::printf("  - %s (%.2f): %s\n", f.bug_class.c_str(), f.confidence, f.sentence.c_str());
}

inline void expect_top(const verdict& v, const std::string& cls) {
  EXPECT_FALSE(v.pass);
  ASSERT_FALSE(v.findings.empty()) << "expected " << cls;
  EXPECT_EQ(v.findings.front().bug_class, cls) << v.findings.front().sentence;
}

// A pass with at most the fp32 drift warning.
inline void expect_pass(const verdict& v) {
  EXPECT_TRUE(v.pass) << v.tolerance_reason;
  for (const auto& f : v.findings) EXPECT_EQ(f.bug_class, "angle_drift_fp32") << f.sentence;
}

// fp32 angle from an inv_freq held in bfloat16 (the framework's fp32 value rounded once).
// Every frequency (1 + r) times the exact one, angles in fp64: a uniform frequency error,
// indistinguishable from every position scaled by 1 + r.
struct scaled_frequencies {
  using value_type = double;
  rope_config c;
  double r = 0;
  [[nodiscard]] cos_sin_pair<double> cos_sin(std::int64_t pos, int band) const {
    const double th = std::pow(c.base, -2.0 * band / c.rotary_dim) * (1 + r);
    return {std::cos(static_cast<double>(pos) * th), std::sin(static_cast<double>(pos) * th)};
  }
};

struct bf16_inv_freq_angle {
  using value_type = float;
  explicit bf16_inv_freq_angle(const rope_config& c) : inner(c) {}
  hf_angle<float> inner;
  [[nodiscard]] float inv(int band) const {
    return static_cast<float>(scalar_traits<bfloat16>::narrow(inner.frequencies().inv_freq[static_cast<std::size_t>(band)]));
  }
  [[nodiscard]] cos_sin_pair<float> cos_sin(std::int64_t pos, int band) const {
    const float a = static_cast<float>(pos) * inv(band);
    return {std::cos(a), std::sin(a)};
  }
};

}  // namespace ropecheck::judge_test
