// tests/judge/probe_test.cpp — the probe set (ropecheck/judge/probe.hpp): the positions its contract
// lists, inputs exact in every audited dtype, reproducible from the seed.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <set>

#include "ropecheck/judge/probe.hpp"
#include "ropecheck/presets.hpp"
#include "ropecheck/scalar.hpp"

namespace ropecheck::judge {
namespace {

rope_config llama3() { return *find_preset("llama3-8b"); }

TEST(Probe, PositionsAreSortedDistinctAndHoldEveryRegimeEdge) {
  const auto p = probe_positions(llama3());
  ASSERT_TRUE(std::is_sorted(p.begin(), p.end()));
  ASSERT_EQ(std::set<std::int64_t>(p.begin(), p.end()).size(), p.size());
  const std::set<std::int64_t> s(p.begin(), p.end());
  for (std::int64_t i = 0; i < 64; ++i) EXPECT_TRUE(s.count(i)) << i;
  for (std::int64_t edge : {256, 2048, 4096, 65504, 1 << 24})
    for (std::int64_t x = edge - 8; x <= edge + 8; ++x) EXPECT_TRUE(s.count(x)) << x;
  // To and past max_position_embeddings (131072 for Llama-3.1): its end is 2 * that, nothing beyond
  // but the 2^24 window.
  const std::int64_t end = 2 * llama3().max_position_embeddings;
  EXPECT_TRUE(s.count(end));
  for (auto x : p) EXPECT_TRUE(x <= end || std::llabs(x - (1 << 24)) <= 8) << x;
}

TEST(Probe, ShortContextStillReachesTwoToTheSeventeen) {
  rope_config c = llama3();
  c.max_position_embeddings = 2048;
  const auto p = probe_positions(c);
  EXPECT_TRUE(std::count(p.begin(), p.end(), std::int64_t{1} << 17));
  // No log-spaced position past the end (2^24's window is a regime edge, kept on purpose).
  for (auto x : p) EXPECT_TRUE(x <= (1 << 17) || std::llabs(x - (1 << 24)) <= 8) << x;
}

TEST(Probe, InputsAreNonzeroAndExactInBf16AndFp16) {
  const auto s = make_probe(llama3(), 42, 3);
  ASSERT_EQ(s.x.size(), static_cast<std::size_t>(s.tokens()) * 3 * static_cast<std::size_t>(s.head_dim));
  for (double v : s.x) {
    ASSERT_NE(v, 0.0);
    ASSERT_LE(std::fabs(v), 127.0 / 128);
    ASSERT_EQ(static_cast<double>(static_cast<float>(scalar_traits<bfloat16>::narrow(v))), v);
    ASSERT_EQ(static_cast<double>(static_cast<float>(scalar_traits<float16>::narrow(v))), v);
  }
}

TEST(Probe, TheSameSeedGivesTheSameInputsAndAnotherSeedOthers) {
  EXPECT_EQ(make_probe(llama3(), 7).x, make_probe(llama3(), 7).x);
  EXPECT_NE(make_probe(llama3(), 7).x, make_probe(llama3(), 8).x);
}

}  // namespace
}  // namespace ropecheck::judge
