// tests/judge/pass_positions_test.cpp — the positions tokens act at (pass_positions.cpp).
#include "judge/judge_dumps.hpp"

#include <cmath>
#include <limits>

#include "passes.hpp"  // judge/src: the pass's threshold, tested at equality

namespace {

using namespace ropecheck;
using namespace ropecheck::judge_test;

constexpr double kInf = std::numeric_limits<double>::infinity();  // std::nextafter toward it: one ulp above

TEST(Diagnose, PositionsOffset) {
  const auto c = claimed_config();
  auto used = kPos;
  for (auto& p : used) p += 3;
  const auto v = judge::audit(make_dump<float>(rope_geometry::of(c), hf_angle<float>(c), kPos, used, "float32"), c);
  print("positions + 3", v);
  expect_top(v, "positions_offset");
  EXPECT_NE(v.findings.front().sentence.find("+3"), std::string::npos);
}

TEST(Diagnose, PositionsConstant) {
  const auto c = claimed_config();
  const std::vector<std::int64_t> zeros(kPos.size(), 0);
  const auto v = judge::audit(make_dump<float>(rope_geometry::of(c), hf_angle<float>(c), kPos, zeros, "float32"), c);
  print("all positions 0", v);
  expect_top(v, "positions_constant");
}

TEST(Diagnose, PositionsInBf16) {
  const auto c = claimed_config();
  const auto v = judge::audit(
      make_dump<float>(rope_geometry::of(c), storage_positions<bfloat16, float>(c), kPos, kPos, "float32"), c);
  print("positions in bf16", v);
  expect_top(v, "positions_low_precision");
  EXPECT_NE(v.findings.front().sentence.find("bfloat16"), std::string::npos);
  EXPECT_NE(v.findings.front().sentence.find("100000 -> 99840"), std::string::npos);  // 2^16 + 2^9 k
}

TEST(Diagnose, PositionsInBf16Bf16Dump) {
  const auto c = claimed_config(128);
  const auto v = judge::audit(
      make_dump<bfloat16>(rope_geometry::of(c), storage_positions<bfloat16, float>(c), kPos, kPos, "bfloat16"), c);
  print("bf16 dump, positions in bf16", v);
  expect_top(v, "positions_low_precision");
}

TEST(Diagnose, DecodeOffByOneBf16) {
  const auto c = claimed_config(128);
  auto used = kPos;
  for (auto& p : used) p -= 1;
  const auto v = judge::audit(
      make_dump<bfloat16>(rope_geometry::of(c), hf_angle<bfloat16>(c), kPos, used, "bfloat16"), c);
  print("bf16 positions - 1", v);
  expect_top(v, "positions_offset");
  EXPECT_NE(v.findings.front().sentence.find("-1"), std::string::npos);
}

// A KV cache that rotated two of the tokens at position 0 (decode restarted), the rest right.
TEST(Diagnose, SomeTokensAtPositionZero) {
  const auto c = claimed_config();
  auto used = kPos;
  used[70] = 0;
  used[72] = 0;
  const auto v = judge::audit(make_dump<float>(rope_geometry::of(c), hf_angle<float>(c), kPos, used, "float32"), c);
  print("two tokens at 0", v);
  expect_top(v, "positions_wrong");
  EXPECT_NE(v.findings.front().sentence.find("2 of 74 tokens"), std::string::npos);
  EXPECT_NE(v.findings.front().sentence.find("position 0"), std::string::npos);
}

TEST(Diagnose, LinearFactorWhereNoneClaimed) {
  const auto c = claimed_config();
  auto impl = c;
  impl.scaling = scaling_kind::linear;
  impl.factor = 2.0;
  const auto v = judge::audit(make_dump<float>(rope_geometry::of(c), hf_angle<float>(impl), kPos, kPos, "float32"), c);
  print("linear 2 used, none claimed", v);
  expect_top(v, "scaling_wrong");
  EXPECT_NE(v.findings.front().sentence.find("factor 2"), std::string::npos);
}

// A uniform frequency error is not a wrong position: the acting positions (1 + r) p are not integers.
// Where it moves the largest position (100000) by half a token or more it is the linear factor
// (scaling_wrong); 1.3e-5 is just past that (1.3 tokens), 2e-4 far past. Before, these were named
// positions_wrong ("65537 -> 65538").
TEST(Diagnose, UniformFrequencyErrorIsALinearFactorNotWrongPositions) {
  const auto c = claimed_config();
  for (double r : {1.3e-5, 2.6e-5, 2e-4}) {
    const auto v = judge::audit(
        make_dump<float, double>(rope_geometry::of(c), scaled_frequencies{c, r}, kPos, kPos, "float32"), c);
    print("every frequency times 1 + " + std::to_string(r), v);
    expect_top(v, "scaling_wrong");
    for (const auto& f : v.findings)
      EXPECT_TRUE(f.bug_class.rfind("positions_", 0) != 0) << f.bug_class << ": " << f.sentence;
  }
}

// ---- the fp32 position-resolvability cut (0.05 rad rms of the allowed fp32 angle error) ----
// Equality resolves: the pass leaves a token out only when the allowed error exceeds 0.05 rad, half
// the 0.1 rad acceptance; at exactly half, a careful fp32 implementation's error still fits twice
// inside the acceptance, so the token can confirm or refute a position.
TEST(Diagnose, Fp32ResolvesAPositionAtTheCutItself) {
  using judge::detail::fp32_resolves_position;
  EXPECT_TRUE(fp32_resolves_position(std::nextafter(0.05, 0.0)));
  EXPECT_TRUE(fp32_resolves_position(0.05));
  EXPECT_FALSE(fp32_resolves_position(std::nextafter(0.05, kInf)));
  EXPECT_TRUE(fp32_resolves_position(0.0));  // position 0: every angle is exact
}

}  // namespace
