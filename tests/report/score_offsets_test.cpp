// tools/report/score_offsets.hpp: the report's score error against m - n (score_by_offset of each series).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "report/engine.hpp"
#include "report/score_offsets.hpp"
#include "ropecheck/presets.hpp"

namespace {

using namespace ropecheck;
using namespace ropecheck::report;

const report_result& llama_report() {
  static const report_result r = [] {
    report_request q;
    q.judge = false;
    q.config_name = "llama3-8b";
    q.config = *find_preset("llama3-8b");
    q.max_position = 131072;
    q.implementations = {"direct_double", "hf_float", "bf16_positions"};
    return run_report(q);
  }();
  return r;
}

const implementation_series& named(const std::string& name) {
  for (const auto& s : llama_report().series)
    if (s.name == name) return s;
  throw std::runtime_error("no series " + name);
}

double worst(const implementation_series& s) {
  double m = 0;
  for (const auto& b : s.score_by_offset) m = std::max(m, b.max);
  return m;
}

TEST(ScoreOffsets, buckets_cover_keys_behind_at_and_ahead_of_the_query_and_hold_their_worst_pair) {
  const auto& rows = named("hf_float").score_by_offset;
  ASSERT_FALSE(rows.empty());
  std::int64_t pairs = 0;
  bool ahead = false, same = false, behind = false;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const auto& b = rows[i];
    if (i > 0) {
      EXPECT_LT(rows[i - 1].offset_hi, b.offset_lo);  // most negative first, disjoint
    }
    EXPECT_LE(b.offset_lo, b.worst_m - b.worst_n);
    EXPECT_GE(b.offset_hi, b.worst_m - b.worst_n);
    EXPECT_LE(b.rms, b.max);
    pairs += b.pairs;
    ahead |= b.offset_hi < 0, same |= b.offset_lo == 0 && b.offset_hi == 0, behind |= b.offset_lo > 0;
  }
  EXPECT_TRUE(ahead && same && behind);
  const auto q = score_query_positions(131072);
  EXPECT_EQ(q.front(), 0);
  EXPECT_EQ(q.back(), 131072);
  EXPECT_GE(pairs, static_cast<std::int64_t>(q.size() * q.size()));  // every query against every query position
  for (const auto& s : llama_report().series) EXPECT_EQ(s.score_by_offset.size(), rows.size()) << s.name;
}

// direct_double forms angles in fp64: each within 3 u_64 |p theta| (error_model.hpp section 3: k_freq 2 for
// pow, the product 1), theta_0 = 1 and p <= 2^17, so each side's rotation is off by <= 3 * 2^-53 * 2^17 rad
// ~ 4.4e-11 and the score, relative to |q| |k|, by at most their sum (plus 2^-50 of rounding): 1e-10. The
// measurement must see it (not 0), and must see bf16 positions (p moved by up to 2^-9 p: band 0 turns by
// hundreds of radians at 2^17) far above hf_float's fp32 drift: 50x at least (measured 0.24 against 2.0e-4).
TEST(ScoreOffsets, fp64_angles_stay_within_their_bound_and_bf16_positions_stand_out) {
  const double d = worst(named("direct_double")), f = worst(named("hf_float")), b = worst(named("bf16_positions"));
  std::printf("worst score error: direct_double %.3g, hf_float %.3g, bf16_positions %.3g\n", d, f, b);
  EXPECT_GT(d, 0);
  EXPECT_LT(d, 1e-10);
  EXPECT_GT(f, d);
  EXPECT_GT(b, 50 * f);
}

}  // namespace
