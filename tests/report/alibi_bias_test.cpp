// tests/report/alibi_bias_test.cpp — the report's ALiBi bias figure (tools/report/alibi_bias.hpp): each strategy's
// error against hand-computed cases, fp32 exact where it must be, and the files' fields. Claims are built directly
// (bias_claim), independent of the config reader.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "report/alibi_bias.hpp"

namespace {

namespace fs = std::filesystem;
using namespace ropecheck;
using namespace ropecheck::report;

bias_claim alibi(int heads) {
  bias_claim c;
  c.scheme = bias_scheme::alibi;
  c.alibi.heads = heads;
  c.alibi.distance = alibi_distance::key_position;
  return c;
}

const alibi_bias_row& row_at(const alibi_bias_result& r, alibi_strategy s, std::int64_t x) {
  for (const auto& series : r.series)
    if (series.strategy == s)
      for (const auto& row : series.rows)
        if (row.x == x) return row;
  throw std::runtime_error("no row");
}

std::string slurp(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

TEST(alibi_bias, positions_are_two_per_octave_up_to_2_pow_20) {
  const auto p = alibi_positions(20);
  EXPECT_EQ(p.front(), 0);
  EXPECT_EQ(p.back(), std::int64_t{1} << 20);
  EXPECT_EQ(p.size(), 41u);  // 0, 1, 2^k (k = 1..20), round(2^(k + 1/2)) (k = 1..19; k = 0 rounds to 1, kept once)
  EXPECT_NE(std::find(p.begin(), p.end(), 2048), p.end());
  EXPECT_NE(std::find(p.begin(), p.end(), 65536), p.end());
}

// bf16 keeps 8 significant bits: in [32768, 65536) its spacing is 256. Slope 1/2 (press, 8 heads: 2^-h) at key
// 65792 has the exact bias 32896 = 32768 + 128, a tie, rounded to even 32768: an error of exactly 128 (half the
// spacing, the largest a rounding gives); at 65790 the bias 32895 rounds to 32768, error 127.
TEST(alibi_bias, bf16_tensor_rounds_to_the_spacing_at_32768) {
  const auto r = alibi_bias_errors(alibi(8), {65535, 65536, 65790, 65792});
  EXPECT_EQ(row_at(r, alibi_strategy::tensor_bf16, 65792).max_abs_error, 128.0);
  EXPECT_EQ(row_at(r, alibi_strategy::tensor_bf16, 65792).worst_slope, 0.5);
  EXPECT_EQ(row_at(r, alibi_strategy::tensor_bf16, 65790).max_abs_error, 127.0);
  // 65535 x 1/2 = 32767.5 (spacing 128 below 32768) rounds up to 32768, the value of key 65536: neighbours merge
  EXPECT_EQ(alibi_bias_by(alibi_strategy::tensor_bf16, 0.5, 65535), 32768.0);
  EXPECT_EQ(alibi_bias_by(alibi_strategy::tensor_bf16, 0.5, 65536), 32768.0);
  EXPECT_GE(row_at(r, alibi_strategy::tensor_bf16, 65536).merged_heads, 1);
  // bf16 arithmetic: 65792 itself is a tie in bf16 (spacing 512 from 65536) and rounds to 65536: 32768, error 128
  EXPECT_EQ(row_at(r, alibi_strategy::kernel_bf16, 65792).max_abs_error, 128.0);
}

// A slope 2^-k times an integer below 2^24 is exact in fp32: the fp32 strategies have no error at all, at every
// position up to 2^20, and never merge neighbours.
TEST(alibi_bias, fp32_is_exact_for_power_of_two_slopes) {
  const auto r = alibi_bias_errors(alibi(8), alibi_positions(20));
  for (const auto& s : r.series) {
    if (s.strategy != alibi_strategy::tensor_fp32 && s.strategy != alibi_strategy::kernel_fp32) continue;
    for (const auto& row : s.rows) {
      EXPECT_EQ(row.max_abs_error, 0.0) << to_string(s.strategy) << " at " << row.x;
      EXPECT_EQ(row.merged_heads, 0) << to_string(s.strategy) << " at " << row.x;
    }
  }
}

// BLOOM-like 32 heads (slopes 2^(-h/4), irrational for h not a multiple of 4): fp32 rounds the slope (<= 2^-24
// relative) and the product (<= 2^-24 relative): |error| <= (2^-24 + 2^-24 + 2^-48) s x. Below 2^24 the integer is
// exact. The bound is reached in order of magnitude (not 0) for the steepest head.
TEST(alibi_bias, fp32_error_stays_within_two_roundings) {
  const auto r = alibi_bias_errors(alibi(32), alibi_positions(20));
  const double u = std::ldexp(1.0, -24);
  for (const auto& s : r.series) {
    if (s.strategy != alibi_strategy::tensor_fp32) continue;
    double worst_ratio = 0;
    for (const auto& row : s.rows) {
      for (const double slope : r.slopes) {
        const double e = std::fabs(alibi_bias_by(s.strategy, slope, row.x) - slope * static_cast<double>(row.x));
        EXPECT_LE(e, (2 * u + u * u) * slope * static_cast<double>(row.x) * (1 + 1e-12)) << row.x;
      }
      if (row.x > 0) worst_ratio = std::max(worst_ratio, row.max_abs_error / (r.slopes[0] * static_cast<double>(row.x)));
    }
    EXPECT_GT(worst_ratio, u / 16);  // the error is real, not zero
  }
}

TEST(alibi_bias, a_t5_claim_is_refused) {
  bias_claim c;
  c.scheme = bias_scheme::t5;
  c.t5.heads = 8;
  EXPECT_THROW((void)alibi_bias_errors(c, {1}), std::invalid_argument);
}

TEST(alibi_bias, files_carry_their_fields) {
  const auto r = alibi_bias_errors(alibi(32), alibi_positions(20));
  const fs::path dir = fs::path(testing::TempDir()) / "alibi_bias_files";
  fs::remove_all(dir);
  const auto files = write_alibi_report(r, dir, "ropecheck report --alibi-heads 32", /*plots=*/false);
  for (const alibi_strategy s : alibi_strategies) {
    const std::string csv = slurp(dir / "data" / ("alibi_bias_" + std::string(to_string(s)) + ".csv"));
    EXPECT_EQ(csv.substr(0, csv.find('\n')), "x,max_abs_error,worst_head,worst_slope,half_slope,merged_heads");
    EXPECT_EQ(std::count(csv.begin(), csv.end(), '\n'), 42);  // header + 41 positions
  }
  const std::string json = slurp(dir / "summary.json");
  for (const char* key : {"\"alibi_bias\"", "\"claim\"", "\"slope_min\"", "\"slope_max\"", "\"strategies\"", "\"tensor_bf16\"",
                          "\"kernel_fp32\"", "\"first_x_error_ge_half_slope\"", "\"first_x_neighbours_merged\"", "\"source\""})
    EXPECT_NE(json.find(key), std::string::npos) << key;
  EXPECT_NE(slurp(dir / "plots" / "alibi_bias.gp").find("set logscale xy"), std::string::npos);
  EXPECT_NE(slurp(dir / "report.html").find("id=\"alibi-bias\""), std::string::npos);
  // deterministic bytes
  const fs::path again = dir.string() + "_again";
  (void)write_alibi_report(r, again, "ropecheck report --alibi-heads 32", false);
  EXPECT_EQ(slurp(dir / "summary.json"), slurp(again / "summary.json"));
  EXPECT_EQ(slurp(dir / "data" / "alibi_bias_tensor_bf16.csv"), slurp(again / "data" / "alibi_bias_tensor_bf16.csv"));
}

}  // namespace
