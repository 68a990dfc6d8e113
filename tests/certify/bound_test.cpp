// tests/certify/bound_test.cpp — tools/certify/bound.hpp: the error-model bound on the applied angle.
//
// What is checked:
//   * the bound holds: for every implementation of the report and five configs (llama3-8b,
//     llama2-7b, YaRN x4, linear x4, GPT-J's partial interleaved rotary), the per-band worst applied
//     angle error the report engine measures (series.band_position_heat) over an exhaustive sweep of
//     0..2^16 and over the long sweep to 2^31 - 1 (windows at 65504, 2^24, 2^31) is <= the bound;
//     worst/bound per implementation (min, median, max over bands) is printed;
//   * its branches at their edges: the position term at 2^24 (0) and 2^24 + 1 (one token), bf16 at
//     256/257, float16 positions finite up to 65519 and +inf from 65520 (the strategy's own rounding
//     checked to agree), the ulp of a binade at its edges and in the subnormal range, the turn of a
//     relative rounding at pi/4 and below, an unknown name.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <numbers>
#include <string>
#include <vector>

#include "certify/bound.hpp"
#include "../../tools/report/engine.hpp"  // the report's engine (certify has an engine.hpp too)
#include "ropecheck/angle.hpp"
#include "ropecheck/presets.hpp"

namespace {

using namespace ropecheck;

struct named { std::string name; rope_config cfg; };

std::vector<named> configs() {
  rope_config linear = *find_preset("llama2-7b");
  linear.scaling = scaling_kind::linear;
  linear.factor = 4.0;
  return {{"llama3-8b", *find_preset("llama3-8b")},
          {"llama2-7b", *find_preset("llama2-7b")},
          {"yarn-x4 (qwen2.5-7b-yarn)", *find_preset("qwen2.5-7b-yarn")},
          {"linear-x4 (llama2-7b)", linear},
          {"partial-interleaved (gpt-j-6b)", *find_preset("gpt-j-6b")}};
}

std::vector<std::string> all_implementations() {
  std::vector<std::string> out;
  for (const auto& i : report::known_implementations()) out.push_back(i.name);
  return out;
}

report::report_result measure(const rope_config& cfg, std::int64_t max_position, bool exhaustive,
                              std::vector<std::string> implementations) {
  report::report_request r;
  r.config_name = "bound_test";
  r.config = cfg;
  r.max_position = max_position;
  r.exhaustive = exhaustive;
  r.implementations = std::move(implementations);
  r.threads = 2;
  r.judge = false;
  std::printf("[ropecheck] seed %llu\n", static_cast<unsigned long long>(r.seed));
  return report::run_report(r);
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// Every band of every implementation: measured worst <= bound; ratios printed.
void expect_bounds_hold(const std::string& config_name, const rope_config& cfg, std::int64_t max_position,
                        bool exhaustive, std::vector<std::string> implementations = all_implementations()) {
  const report::report_result res = measure(cfg, max_position, exhaustive, std::move(implementations));
  std::printf("%s, 0..%lld%s: worst/bound per band (min median max), bands outside 2x with a why\n",
              config_name.c_str(), static_cast<long long>(max_position), exhaustive ? " exhaustive" : " sweep");
  for (const auto& s : res.series) {
    const auto bounds = certify::applied_angle_bounds(s.name, cfg, max_position + 1, max_position);
    ASSERT_EQ(bounds.size(), s.band_position_heat.size()) << s.name;
    std::vector<double> ratios;
    int below_half = 0, explained = 0, infinite = 0;
    for (std::size_t b = 0; b < bounds.size(); ++b) {
      double worst = 0;
      for (double v : s.band_position_heat[b]) worst = std::max(worst, v);
      const double bound = bounds[b].angle_rad;
      EXPECT_LE(worst, bound) << config_name << " " << s.name << " band " << b << " up to " << max_position;
      if (std::isinf(bound)) {
        ++infinite;
        continue;
      }
      const double ratio = bound > 0 ? worst / bound : 1;
      ratios.push_back(ratio);
      if (ratio < 0.5) {
        ++below_half;
        if (std::getenv("ROPECHECK_BOUND_DETAIL")) {
          const auto t = certify::applied_angle_terms(s.name, cfg, max_position + 1, max_position)[b];
          std::printf("    %s band %zu worst %.3g bound %.3g ratio %.3f: F %.3g P %.3g R %.3g S %.3g  %s\n", s.name.c_str(), b,
                      worst, bound, ratio, t.frequency, t.position, t.product, t.sin_cos, bounds[b].why.c_str());
        }
        if (!bounds[b].why.empty()) ++explained;
      }
    }
    if (ratios.empty()) {
      std::printf("  %-20s bound +inf in every band (%s)\n", s.name.c_str(), bounds.front().why.c_str());
      continue;
    }
    std::printf("  %-20s %.3f %.3f %.3f  below 0.5: %d (with why: %d)  +inf: %d\n", s.name.c_str(),
                *std::min_element(ratios.begin(), ratios.end()), median(ratios),
                *std::max_element(ratios.begin(), ratios.end()), below_half, explained, infinite);
  }
}

// Exhaustive, one test per config (about 13 s per 2^16 at RelWithDebInfo on 2 threads): 2^16 for the
// scaled configs (llama3-8b, YaRN x4), 2^15 for the base-10^4 ones (llama2-7b, linear x4, GPT-J).
void expect_exhaustive(std::size_t i, int log2_positions = 16) {
  const auto c = configs()[i];
  expect_bounds_hold(c.name, c.cfg, std::int64_t{1} << log2_positions, true);
}
TEST(AppliedAngleBound, holds_in_every_band_exhaustively_to_2_to_the_16_llama3_8b) { expect_exhaustive(0); }
TEST(AppliedAngleBound, holds_in_every_band_exhaustively_to_2_to_the_15_llama2_7b) { expect_exhaustive(1, 15); }
TEST(AppliedAngleBound, holds_in_every_band_exhaustively_to_2_to_the_16_yarn_x4) { expect_exhaustive(2); }
TEST(AppliedAngleBound, holds_in_every_band_exhaustively_to_2_to_the_15_linear_x4) { expect_exhaustive(3, 15); }
TEST(AppliedAngleBound, holds_in_every_band_exhaustively_to_2_to_the_15_partial_interleaved) { expect_exhaustive(4, 15); }

// The 16-bit position types up to their last finite position (65504: every larger position of the
// exhaustive runs above overflows float16), and one past the edge of exact fp32 positions.
TEST(AppliedAngleBound, holds_for_float16_positions_exhaustively_to_65504) {
  const auto c = configs()[0];  // llama3-8b: its slowest bands' theta and sines are subnormal in float16
  expect_bounds_hold(c.name, c.cfg, 65504, true, {"direct_float16", "hf_float16"});
}

TEST(AppliedAngleBound, holds_in_every_band_of_every_implementation_on_the_sweep_to_2_to_the_31_minus_1) {
  for (const auto& c : configs()) expect_bounds_hold(c.name, c.cfg, (std::int64_t{1} << 31) - 1, false);
}

// ---------------------------------------------------------------------------------------------
// The branches at their edges.

TEST(PositionTerm, is_zero_up_to_2_to_the_24_and_one_token_from_2_to_the_24_plus_1_in_fp32) {
  EXPECT_EQ(certify::position_rounding_tokens(std::int64_t{1} << 24, 24, -126), 0.0);
  EXPECT_EQ(certify::position_rounding_tokens((std::int64_t{1} << 24) + 1, 24, -126), 1.0);
  EXPECT_EQ(certify::position_rounding_tokens(256, 8, -126), 0.0);
  EXPECT_EQ(certify::position_rounding_tokens(257, 8, -126), 1.0);
  EXPECT_EQ(certify::position_rounding_tokens(511, 8, -126), 1.0);
  // Binade [512, 1024) has ulp 4, but up to 513 only 512 itself is in it: the binade below (ulp 2) rules.
  EXPECT_EQ(certify::position_rounding_tokens(512, 8, -126), 1.0);
  EXPECT_EQ(certify::position_rounding_tokens(513, 8, -126), 1.0);
  EXPECT_EQ(certify::position_rounding_tokens(514, 8, -126), 2.0);
  EXPECT_EQ(static_cast<float>(position_as<bfloat16>(514)), 512.0f);  // 514 is a tie: to even, 2 off
  // hf_float's bound in band 0 gains theta~ = 1 rad at 2^24 + 1, where fp32 rounds the position by a token.
  const rope_config cfg = *find_preset("llama3-8b");
  const auto at = certify::applied_angle_terms("hf_float", cfg, (1 << 24) + 1, 1 << 24);
  const auto past = certify::applied_angle_terms("hf_float", cfg, (1 << 24) + 2, (1 << 24) + 1);
  EXPECT_EQ(at[0].position, 0.0);
  EXPECT_EQ(past[0].position, 1.0);  // inv_freq_0 = 1 exactly in fp32
  EXPECT_EQ(static_cast<float>((1 << 24) + 1), static_cast<float>(1 << 24));  // the rounding it charges
}

TEST(PositionTerm, float16_positions_are_finite_to_65519_and_infinite_from_65520) {
  const rope_config cfg = *find_preset("llama2-7b");
  for (std::int64_t n : {65504, 65505, 65519}) {
    const auto b = certify::applied_angle_bounds("direct_float16", cfg, n + 1, n);
    EXPECT_TRUE(std::isfinite(b[0].angle_rad)) << n;
    EXPECT_TRUE(b[0].why.find("overflow") == std::string::npos) << n;
    EXPECT_TRUE(std::isfinite(static_cast<float>(position_as<float16>(n)))) << n;  // the strategy agrees
  }
  const auto b = certify::applied_angle_bounds("direct_float16", cfg, 65521, 65520);
  EXPECT_TRUE(std::isinf(b[0].angle_rad));
  EXPECT_NE(b[0].why.find("overflow"), std::string::npos);
  EXPECT_TRUE(std::isinf(static_cast<float>(position_as<float16>(65520))));
  // 65505 rounds to 65504 (half an ulp of 32 is 16): one token of rounding, not an overflow.
  EXPECT_EQ(certify::position_rounding_tokens(65505, 11, -14), 16.0);
  EXPECT_EQ(certify::position_rounding_tokens(2048, 11, -14), 0.0);
  EXPECT_EQ(certify::position_rounding_tokens(2049, 11, -14), 1.0);
}

TEST(HalfUlp, of_a_binade_at_its_edges_and_in_the_subnormal_range) {
  EXPECT_EQ(certify::half_ulp_below(1.0, 24, -126), std::ldexp(1.0, -24));
  EXPECT_EQ(certify::half_ulp_below(std::nextafter(2.0, 0.0), 24, -126), std::ldexp(1.0, -24));
  EXPECT_EQ(certify::half_ulp_below(2.0, 24, -126), std::ldexp(1.0, -23));
  EXPECT_EQ(certify::half_ulp_below(0.0, 24, -126), 0.0);
  // float16 below 2^-14 is subnormal: fixed spacing 2^-24, half of it 2^-25.
  EXPECT_EQ(certify::half_ulp_below(1e-6, 11, -14), std::ldexp(1.0, -25));
  EXPECT_EQ(certify::half_ulp_below(std::ldexp(1.0, -14), 11, -14), std::ldexp(1.0, -25));
  EXPECT_EQ(certify::half_ulp_below(std::ldexp(1.0, -13), 11, -14), std::ldexp(1.0, -24));
}

TEST(RelativeRoundingTurn, is_asin_e_from_pi_over_4_and_about_e_sin_2x_below) {
  const double e = std::ldexp(1.0, -8);
  EXPECT_EQ(certify::relative_rounding_turn(e, std::numbers::pi / 4), std::asin(e));
  EXPECT_EQ(certify::relative_rounding_turn(e, 3.0), std::asin(e));
  const double x = 1e-3;
  const double t = certify::relative_rounding_turn(e, x);
  EXPECT_LT(t, std::asin(e));
  // First order E |sin 2x| (engine.hpp's storage floor); the next order is e times that (rho - 1 = 2e (1 + e + ...)).
  EXPECT_NEAR(t, e * std::sin(2 * x), 2 * e * e * std::sin(2 * x));
  // Reached: a pair at angle x with components rounded by +e and -e turns by exactly this.
  const double turned = std::atan2(std::sin(x) * (1 + e), std::cos(x) * (1 - e)) - x;
  EXPECT_NEAR(turned, t, 8 * std::numeric_limits<double>::epsilon() * x);  // a few double roundings at size x
  EXPECT_EQ(certify::relative_rounding_turn(1.0, 0.1), std::numbers::pi);
}

TEST(FastSinCos, bound_is_finite_while_the_reduction_lands_near_its_range_and_infinite_once_it_returns_zero_pairs) {
  const rope_config cfg = *find_preset("llama3-8b");
  const auto small = certify::applied_angle_bounds("fast_sincos", cfg, 65537, 65536);
  EXPECT_TRUE(std::isfinite(small[0].angle_rad));
  const std::int64_t n = std::int64_t{1} << 28;
  const auto large = certify::applied_angle_bounds("fast_sincos", cfg, n + 1, n);
  EXPECT_TRUE(std::isinf(large[0].angle_rad));
  EXPECT_NE(large[0].why.find("fast_sin's reduction"), std::string::npos);
  // What the why says: at 2^28 in band 0 (theta~ = 1) both reductions give 0, so the pair is (0, 0).
  const fast_sincos_angle s(cfg, n + 1);
  const auto cs = s.cos_sin(n, 0);
  EXPECT_EQ(cs.cos, 0.0f);
  EXPECT_EQ(cs.sin, 0.0f);
  // The slowest band's angles stay below 1/2 at 2^16: the parabola's Taylor bound (about 0.0132 x) wins.
  const auto terms = certify::applied_angle_terms("fast_sincos", cfg, 65537, 65536);
  EXPECT_LT(terms.back().largest_angle, 0.5);
  EXPECT_LT(terms.back().sin_cos, std::asin(std::sqrt(2.0) * 1.1e-3));
}

TEST(AppliedAngleBound, rejects_an_unknown_implementation) {
  EXPECT_THROW((void)certify::applied_angle_bounds("nonsense", *find_preset("llama3-8b"), 4097, 4096),
               std::invalid_argument);
}

}  // namespace
