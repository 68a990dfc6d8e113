// tests/core/bias_claim_test.cpp — src/ropecheck/bias_claim.hpp: the slope rules (the paper's get_slopes and MPT's
// gen_slopes), a rank's slice, Falcon's bf16 slopes, the distances, T5's buckets through the claim, and the fields
// validate() names.
#include "ropecheck/bias_claim.hpp"

#include <gtest/gtest.h>

#include <cmath>

namespace ropecheck {
namespace {

TEST(BiasClaim, MptSlopesEqualThePapersAtBiasMaxEightForEveryHeadCount) {
  // mosaicml/examples PR 307: gen_slopes with alibi_bias_max 8 reaches get_slopes' slopes by another route.
  for (int H = 1; H <= 96; ++H) {
    const auto press = global_alibi_slopes(alibi_slope_rule::press, H);
    const auto mpt = global_alibi_slopes(alibi_slope_rule::mpt, H, 8);
    ASSERT_EQ(press.size(), static_cast<std::size_t>(H));
    for (int h = 0; h < H; ++h) EXPECT_DOUBLE_EQ(press[h], mpt[h]) << "H " << H << " head " << h;
  }
}

TEST(BiasClaim, MptSlopesFollowTheirBiasMaxAndStridedOrder) {
  // H = 12, bias_max 16: P = 16, s_k = 2^(-k); concat(s[1::2], s[::2])[:12] = 2^-2, 2^-4, ..., 2^-16, 2^-1, 2^-3, 2^-5, 2^-7.
  const auto s = global_alibi_slopes(alibi_slope_rule::mpt, 12, 16);
  const double want[] = {-2, -4, -6, -8, -10, -12, -14, -16, -1, -3, -5, -7};
  for (int h = 0; h < 12; ++h) EXPECT_EQ(s[h], std::exp2(want[h])) << "head " << h;
  // A power of two: no reordering, 2^(-k bias_max / H).
  const auto p = global_alibi_slopes(alibi_slope_rule::mpt, 4, 4);
  EXPECT_EQ(p, (std::vector<double>{0.5, 0.25, 0.125, 0.0625}));
}

TEST(BiasClaim, ARankHoldsItsSliceOfTheGlobalSlopesScaledAndRounded) {
  alibi_claim a;
  a.heads = 12;
  a.head_offset = 6;
  a.local_heads = 6;
  const auto g = global_alibi_slopes(alibi_slope_rule::press, 12);
  auto s = claimed_slopes(a);
  ASSERT_EQ(s.size(), 6u);
  for (int h = 0; h < 6; ++h) EXPECT_EQ(s[h], g[6 + h]);
  a.bias_scale = 0.125;
  a.slopes_bf16 = true;
  s = claimed_slopes(a);
  // g[8] = 2^-0.5 = 0.70710678...: bf16 keeps 8 bits, 0x1.6ap-1 = 0.70703125.
  EXPECT_EQ(s[2], 0.70703125 * 0.125);
  EXPECT_EQ(s[0], g[6] * 0.125);  // 2^-7 is exact in bf16
}

TEST(BiasClaim, RoundToBf16TiesToEven) {
  EXPECT_EQ(round_to_bf16(1.0 + std::exp2(-8)), 1.0);                           // tie, even below
  EXPECT_EQ(round_to_bf16(1.0 + 3 * std::exp2(-8)), 1.0 + std::exp2(-6));      // tie, even above
  EXPECT_EQ(round_to_bf16(1.0 + std::exp2(-8) + std::exp2(-20)), 1.0 + std::exp2(-7));
  EXPECT_EQ(round_to_bf16(-0.70710678118654752), -0.70703125);
}

TEST(BiasClaim, DistancesDifferByAPerRowConstantOrByTheKeysAfterTheQuery) {
  const double s = 0.25;
  for (std::int64_t m : {0, 7, 100000}) {
    for (std::int64_t n : {0LL, 3LL, 7LL}) {
      if (n > m) continue;
      EXPECT_EQ(alibi_bias_value(s, alibi_distance::key_position, m, n) - alibi_bias_value(s, alibi_distance::relative, m, n),
                s * static_cast<double>(m));
      EXPECT_EQ(alibi_bias_value(s, alibi_distance::symmetric, m, n), alibi_bias_value(s, alibi_distance::relative, m, n));
    }
  }
  EXPECT_EQ(alibi_bias_value(s, alibi_distance::symmetric, 3, 7), -1.0);
  EXPECT_EQ(alibi_bias_value(s, alibi_distance::relative, 3, 7), 1.0);
}

TEST(BiasClaim, T5BucketsThroughTheClaim) {
  t5_claim t;
  t.heads = 8;
  EXPECT_EQ(t5_bucket(t, 10, 10), 0);
  EXPECT_EQ(t5_bucket(t, 10, 11), 17);  // bidirectional: keys after the query in the upper half
  t.bidirectional = false;
  EXPECT_EQ(t5_bucket(t, 10, 11), 0);   // causal: keys after the query share bucket 0
  EXPECT_EQ(t5_bucket(t, 10, 9), 1);
}

TEST(BiasClaim, ValidateNamesTheField) {
  const auto message = [](const bias_claim& c) {
    try {
      validate(c);
    } catch (const std::invalid_argument& e) {
      return std::string(e.what());
    }
    return std::string("valid");
  };
  bias_claim c;
  c.alibi.heads = 8;
  EXPECT_EQ(message(c), "valid");
  c.alibi.head_offset = 7;  // the last head: valid
  EXPECT_EQ(message(c), "valid");
  c.alibi.head_offset = 8;  // past it
  EXPECT_EQ(message(c).rfind("head_offset:", 0), 0u) << message(c);
  c.alibi.head_offset = 4;
  c.alibi.local_heads = 4;  // heads 4..7: valid
  EXPECT_EQ(message(c), "valid");
  c.alibi.local_heads = 5;
  EXPECT_EQ(message(c).rfind("local_heads:", 0), 0u) << message(c);
  c.alibi = {};
  c.alibi.heads = 0;
  EXPECT_EQ(message(c).rfind("heads:", 0), 0u) << message(c);
  c.alibi.heads = 8;
  c.alibi.bias_max = 0;
  EXPECT_EQ(message(c).rfind("alibi_bias_max:", 0), 0u) << message(c);
  bias_claim t;
  t.scheme = bias_scheme::t5;
  t.t5.heads = 8;
  EXPECT_EQ(message(t), "valid");
  t.t5.num_buckets = 4;  // the fewest: valid
  t.t5.max_distance = 2;
  EXPECT_EQ(message(t), "valid");
  t.t5.max_distance = 1;  // = max_exact (bidirectional, 4 buckets: 1)
  EXPECT_EQ(message(t).rfind("relative_attention_max_distance:", 0), 0u) << message(t);
  t.t5.num_buckets = 3;
  EXPECT_EQ(message(t).rfind("relative_attention_num_buckets:", 0), 0u) << message(t);
}

TEST(BiasClaim, DescribeSaysEveryFactThatDiffersFromThePlainRule) {
  bias_claim c;
  c.alibi.heads = 32;
  EXPECT_EQ(describe(c), "ALiBi press slopes of 32 heads, distance relative");
  c.alibi.rule = alibi_slope_rule::mpt;
  c.alibi.head_offset = 16;
  c.alibi.local_heads = 16;
  c.alibi.bias_scale = 0.125;
  c.alibi.slopes_bf16 = true;
  c.alibi.distance = alibi_distance::key_position;
  EXPECT_EQ(describe(c), "ALiBi mpt slopes (alibi_bias_max 8) of 32 heads (heads 16..31 held), distance key_position, bias x 0.125, "
                         "slopes in bf16");
  bias_claim t;
  t.scheme = bias_scheme::t5;
  t.t5.heads = 8;
  t.t5.bidirectional = false;
  EXPECT_EQ(describe(t), "T5 buckets 32, max_distance 128, causal, 8 heads");
}

}  // namespace
}  // namespace ropecheck
