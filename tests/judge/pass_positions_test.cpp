// tests/judge/pass_positions_test.cpp — the positions tokens act at (pass_positions.cpp).
#include "judge/judge_dumps.hpp"

namespace {

using namespace ropecheck;
using namespace ropecheck::judge_test;

TEST(Diagnose, PositionsOffset) {
  const auto c = claimed_config();
  auto used = kPos;
  for (auto& p : used) p += 3;
  const auto v = audit::audit(make_dump<float>(rope_geometry::of(c), hf_angle<float>(c), kPos, used, "float32"), c);
  print("positions + 3", v);
  expect_top(v, "positions_offset");
  EXPECT_NE(v.findings.front().sentence.find("+3"), std::string::npos);
}

TEST(Diagnose, PositionsConstant) {
  const auto c = claimed_config();
  const std::vector<std::int64_t> zeros(kPos.size(), 0);
  const auto v = audit::audit(make_dump<float>(rope_geometry::of(c), hf_angle<float>(c), kPos, zeros, "float32"), c);
  print("all positions 0", v);
  expect_top(v, "positions_constant");
}

TEST(Diagnose, PositionsInBf16) {
  const auto c = claimed_config();
  const auto v = audit::audit(
      make_dump<float>(rope_geometry::of(c), storage_positions<bfloat16, float>(c), kPos, kPos, "float32"), c);
  print("positions in bf16", v);
  expect_top(v, "positions_low_precision");
  EXPECT_NE(v.findings.front().sentence.find("bfloat16"), std::string::npos);
  EXPECT_NE(v.findings.front().sentence.find("100000 -> 99840"), std::string::npos);  // 2^16 + 2^9 k
}

TEST(Diagnose, PositionsInBf16Bf16Dump) {
  const auto c = claimed_config(128);
  const auto v = audit::audit(
      make_dump<bfloat16>(rope_geometry::of(c), storage_positions<bfloat16, float>(c), kPos, kPos, "bfloat16"), c);
  print("bf16 dump, positions in bf16", v);
  expect_top(v, "positions_low_precision");
}

TEST(Diagnose, DecodeOffByOneBf16) {
  const auto c = claimed_config(128);
  auto used = kPos;
  for (auto& p : used) p -= 1;
  const auto v = audit::audit(
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
  const auto v = audit::audit(make_dump<float>(rope_geometry::of(c), hf_angle<float>(c), kPos, used, "float32"), c);
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
  const auto v = audit::audit(make_dump<float>(rope_geometry::of(c), hf_angle<float>(impl), kPos, kPos, "float32"), c);
  print("linear 2 used, none claimed", v);
  expect_top(v, "scaling_wrong");
  EXPECT_NE(v.findings.front().sentence.find("factor 2"), std::string::npos);
}

}  // namespace
