// tests/judge/pass_angle_precision_test.cpp — the judge names angles formed in a 16-bit type
// (judge/src/pass_angle_precision.cpp): eager bf16 / fp16 RoPE, direct_angle<T> with T storage
// and compute (position, inv_freq, product, cos/sin and rotation all in T), on the small test
// positions and on the probe set (ropecheck/judge/probe.hpp). The one-rounding classes stay first
// where they explain the dump alone: bf16 positions (positions_low_precision), bf16 inv_freq
// (inv_freq_low_precision). Seeds are fixed and printed.
#include "judge/judge_dumps.hpp"
#include "judge/probe_dumps.hpp"

#include <cmath>
#include <cstdio>
#include <limits>
#include <numbers>

#include "passes.hpp"  // judge/src: the pass's model, for its boundaries
#include "ropecheck/judge/probe.hpp"
#include "ropecheck/presets.hpp"

namespace {

using namespace ropecheck;
using namespace ropecheck::judge_test;

constexpr std::uint64_t kProbeSeed = 20240601;

// The kernel rotate_tokens<T, T> with direct_angle<T> on the probe set of c, positions <= pmax.
template <class T>
dump eager_probe_dump(const rope_config& c, const std::string& dtype, std::int64_t pmax) {
  return probe_dump_in<T, T>(c, rope_geometry::of(c), direct_angle<T>(c), dtype, kProbeSeed, pmax);
}

std::vector<std::pair<std::string, rope_config>> claims() {
  return {{"plain", claimed_config(128)}, {"llama3-8b", *find_preset("llama3-8b")}};
}

// ---- the model's boundaries (pass_angle_precision.cpp) ----

using judge::detail::angles16;
using judge::detail::fit_angle16;

// bf16(bf16(p) bf16(theta)) at p = 1777, theta = 0.3 (exact angle 533.1): 1777 -> 1776 (spacing 8
// at 1024..2048), 0.3 -> 0.30078125, 1776 * 0.30078125 = 534.1875 -> 536 (spacing 4): 2.9 rad off.
// An exact theta32 (kf 0). fp16: 1777 exact, 0.3 -> 0.300048828125, 533.186... -> 533 (spacing 0.5).
TEST(AnglePrecisionModel, TheCandidateIsTheChainOfRoundings) {
  const auto a = angles16(1777, 0.3, 0, 8);
  ASSERT_EQ(a.size(), 1u);
  EXPECT_EQ(a[0], 536.0);
  const auto h = angles16(1777, 0.3, 0, 11);
  ASSERT_EQ(h.size(), 1u);
  EXPECT_EQ(h[0], 533.0);
  // 65504, the largest finite fp16, is a position the model keeps finite (theta 1: the angle 65504).
  EXPECT_EQ(angles16(65504, 1.0, 0, 11).at(0), 65504.0);
}

// theta32 anywhere within kf u_f32 of theta: a theta at a bf16 midpoint gives both neighbours.
TEST(AnglePrecisionModel, ThetaAtAMidpointGivesBothRoundings) {
  const double mid = 1.0 + 0x1p-8;  // halfway between bf16 1 and 1 + 2^-7
  EXPECT_EQ(angles16(1, mid, 0, 8).size(), 1u);  // ties to even: 1
  const auto a = angles16(1, mid, 1, 8);
  ASSERT_EQ(a.size(), 2u);
  EXPECT_EQ(std::min(a[0], a[1]), 1.0);
  EXPECT_EQ(std::max(a[0], a[1]), 1.0 + 0x1p-7);
}

// A cell fits when its residual is at most delta: at delta exactly it fits, one double above not.
TEST(AnglePrecisionModel, ACellFitsUpToDeltaInclusive) {
  const double delta = 0x1p-5;
  const auto at = fit_angle16(536.0 + delta, 1777, 0.3, 0, 8, delta);
  EXPECT_EQ(at.angle, 536.0);
  EXPECT_EQ(at.residual, delta);
  EXPECT_TRUE(at.fits);
  const auto past = fit_angle16(536.0 + delta, 1777, 0.3, 0, 8, std::nextafter(delta, 0.0));
  EXPECT_FALSE(past.fits);
  // Mod 2 pi: the same residual one turn away.
  EXPECT_TRUE(fit_angle16(536.0 + delta - 2 * std::numbers::pi, 1777, 0.3, 0, 8, delta + 1e-12).fits);
}

TEST(AnglePrecisionModel, NearlyAllIsNinetyNinePercentInclusive) {
  EXPECT_TRUE(judge::detail::nearly_all(99, 100));
  EXPECT_FALSE(judge::detail::nearly_all(98, 100));
  EXPECT_TRUE(judge::detail::nearly_all(0, 0));
}

TEST(AnglePrecisionModel, HalfATokenIsNotPastHalfAToken) {
  EXPECT_FALSE(judge::detail::past_half_token(0.25, 0.5));
  EXPECT_TRUE(judge::detail::past_half_token(std::nextafter(0.25, 1.0), 0.5));
  EXPECT_TRUE(judge::detail::past_half_token(-0.3, 0.5));
}

// ---- the judge on eager 16-bit dumps ----

constexpr std::int64_t kNoLimit = std::numeric_limits<std::int64_t>::max();
constexpr std::int64_t kFp16Max = 65504;  // past it fp16 positions are inf (non_finite, tested below)

// make_dump's inputs come from seed 7 (judge_dumps.hpp).
void print_seed() { std::printf("[ropecheck] seed 7 (make_dump inputs)\n"); }

TEST(AnglePrecision, EagerBf16OnTheTestPositions) {
  print_seed();
  const auto c = claimed_config();
  const auto v = judge::audit(make_dump<bfloat16, bfloat16>(rope_geometry::of(c), direct_angle<bfloat16>(c), kPos, kPos, "bfloat16"), c);
  print("eager bf16, test positions", v);
  expect_top(v, "angle_low_precision");
  EXPECT_NE(v.findings.front().sentence.find("bfloat16"), std::string::npos) << v.findings.front().sentence;
}

TEST(AnglePrecision, EagerFp16OnTheTestPositions) {
  print_seed();
  const auto c = claimed_config();
  std::vector<std::int64_t> pos;
  for (auto p : kPos)
    if (p <= kFp16Max) pos.push_back(p);
  pos.push_back(kFp16Max);  // the largest finite fp16 position (equality with the range's end)
  const auto v = judge::audit(make_dump<float16, float16>(rope_geometry::of(c), direct_angle<float16>(c), pos, pos, "float16"), c);
  print("eager fp16, test positions <= 65504", v);
  expect_top(v, "angle_low_precision");
  EXPECT_NE(v.findings.front().sentence.find("float16"), std::string::npos) << v.findings.front().sentence;
}

TEST(AnglePrecision, EagerBf16OnTheProbeSet) {
  for (const auto& [name, c] : claims()) {
    const auto v = judge::audit(eager_probe_dump<bfloat16>(c, "bfloat16", kNoLimit), c);
    print(name + ": eager bf16, probe set", v);
    expect_top(v, "angle_low_precision");
    // The whole sentence: the dtype, how much fits, the largest error, where half a token is passed.
    ASSERT_FALSE(v.findings.empty());
    const std::string& s = v.findings.front().sentence;
    for (const char* part : {"bfloat16", "cells match", "the largest angle error it explains",
                             "the first position off by more than half a token is"})
      EXPECT_NE(s.find(part), std::string::npos) << part << " missing from: " << s;
  }
}

TEST(AnglePrecision, EagerFp16OnTheProbeSetBelow65504) {
  for (const auto& [name, c] : claims()) {
    const auto v = judge::audit(eager_probe_dump<float16>(c, "float16", kFp16Max), c);
    print(name + ": eager fp16, probe set <= 65504", v);
    expect_top(v, "angle_low_precision");
  }
}

// Past 65504 fp16 positions overflow: the outputs are not finite, and that is what is named.
TEST(AnglePrecision, EagerFp16PastItsRangeIsNonFinite) {
  const auto c = claimed_config(128);
  const auto v = judge::audit(eager_probe_dump<float16>(c, "float16", kNoLimit), c);
  print("plain: eager fp16, whole probe set", v);
  expect_top(v, "non_finite");
}

// One rounding explains these alone: the fewest assumptions win.
TEST(AnglePrecision, Bf16PositionsAloneStayPositionsLowPrecision) {
  print_seed();
  const auto c = claimed_config();
  const auto g = rope_geometry::of(c);
  for (const auto* dt : {"float32", "bfloat16"}) {
    const auto v = std::string(dt) == "float32"
                       ? judge::audit(make_dump<float>(g, storage_positions<bfloat16, float>(c), kPos, kPos, dt), c)
                       : judge::audit(make_dump<bfloat16>(g, storage_positions<bfloat16, float>(c), kPos, kPos, dt), c);
    print(std::string("bf16 positions, ") + dt + " dump", v);
    expect_top(v, "positions_low_precision");
    for (const auto& f : v.findings) EXPECT_NE(f.bug_class, "angle_low_precision") << f.sentence;
  }
}

TEST(AnglePrecision, Bf16InvFreqAloneStaysInvFreqLowPrecision) {
  print_seed();
  const auto c = claimed_config();
  const auto g = rope_geometry::of(c);
  for (const auto* dt : {"float32", "bfloat16"}) {
    const auto v = std::string(dt) == "float32"
                       ? judge::audit(make_dump<float>(g, bf16_inv_freq_angle(c), kPos, kPos, dt), c)
                       : judge::audit(make_dump<bfloat16>(g, bf16_inv_freq_angle(c), kPos, kPos, dt), c);
    print(std::string("bf16 inv_freq, ") + dt + " dump", v);
    expect_top(v, "inv_freq_low_precision");
    for (const auto& f : v.findings) EXPECT_NE(f.bug_class, "angle_low_precision") << f.sentence;
  }
}

// At positions that are powers of two, p bf16(theta) is already on the bf16 grid: bf16 inv_freq alone
// and the whole bf16 chain give the same angles, and the one rounding (inv_freq) is named.
TEST(AnglePrecision, Bf16InvFreqAtPowersOfTwoIsInvFreqNotAngles) {
  print_seed();
  const auto c = claimed_config();
  std::vector<std::int64_t> pos{0};
  for (std::int64_t p = 1; p <= 65536; p *= 2) pos.push_back(p);
  const auto v = judge::audit(make_dump<bfloat16>(rope_geometry::of(c), bf16_inv_freq_angle(c), pos, pos, "bfloat16"), c);
  print("bf16 inv_freq, positions 0 and 2^k, bf16 dump", v);
  expect_top(v, "inv_freq_low_precision");
  for (const auto& f : v.findings) EXPECT_NE(f.bug_class, "angle_low_precision") << f.sentence;
}

}  // namespace
