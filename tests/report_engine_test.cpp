// tests/report_engine_test.cpp — the computation behind `ropecheck report` (tools/report/engine.hpp).
//
// What is checked, each against theory rather than against a previous run:
//   * the band table reproduces the seeds' numbers (d 128, base 1e4, trained 4096, eval 32768);
//   * verdicts that follow from the representation alone: bf16 positions collide at 256/257 and
//     are a token off from 257; a fast sin/cos has exactly direct_float's angles but ~1e-3 cos/sin
//     error from the first nonzero angle; direct_double passes;
//   * every field but the timing is identical with 1 and 2 threads (sparse and pooled sweeps);
//   * the error sources add up: |angle error| <= frequency + position + product at every point;
//   * the engine's angle error agrees with the reference's MPFR angle_error;
//   * each strategy's trace() reports exactly what it returns, and ggml's fill_angles is its chain.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstring>
#include <numbers>
#include <limits>
#include <string>
#include <vector>

#include "engine.hpp"
#include "ropecheck/angle.hpp"
#include "ropecheck/error.hpp"
#include "ropecheck/presets.hpp"
#include "ropecheck/reference/reference.hpp"

namespace {

using namespace ropecheck;
using namespace ropecheck::report;

report_request request_for(const std::string& preset, std::int64_t max_position, std::vector<std::string> impls) {
  report_request r;
  r.config_name = preset;
  r.config = *find_preset(preset);
  r.max_position = max_position;
  r.implementations = std::move(impls);
  return r;
}

const implementation_series& series_named(const report_result& r, const std::string& name) {
  for (const auto& s : r.series)
    if (s.name == name) return s;
  throw std::runtime_error("no series " + name);
}

const position_errors& point_at(const implementation_series& s, std::int64_t pos) {
  for (const auto& p : s.points)
    if (p.position == pos) return p;
  throw std::runtime_error("no point at " + std::to_string(pos));
}

// One sparse report of llama3-8b up to 131072 shared by the verdict tests (about a second).
const report_result& theory_report() {
  static const report_result r = run_report(
      request_for("llama3-8b", 131072, {"bf16_positions", "fast_sincos", "direct_float", "direct_double", "ggml_float"}));
  return r;
}

TEST(BandTable, reproduces_the_seeds_example_of_band_63_at_32768) {
  rope_config cfg;  // d 128, base 1e4, no scaling
  const auto rows = band_table(cfg, 0, 4096, 32768);
  ASSERT_EQ(rows.size(), 64u);
  const band_row& b63 = rows[63];
  // theta_63 = 1e4^(-126/128) = 1.1548e-4 rad/token, wavelength ~54,400 tokens.
  EXPECT_NEAR(b63.inv_freq, std::pow(1e4, -126.0 / 128.0), 1e-18);
  EXPECT_NEAR(b63.wavelength, 54410.0, 10.0);
  // At 32768 it sweeps 3.784 rad (the seeds round to 3.79); training saw 4096 theta = 0.473 rad.
  EXPECT_NEAR(32768.0 * b63.inv_freq, 3.784, 5e-4);
  EXPECT_NEAR(4096.0 * b63.inv_freq, 0.473, 5e-4);
  // Neither arc reaches 2 pi, so the unseen share is exactly 1 - 4096/32768.
  EXPECT_NEAR(b63.unseen_fraction_unscaled, 0.875, 1e-15);
  EXPECT_EQ(b63.unseen_fraction_scaled, b63.unseen_fraction_unscaled);  // no scaling
  // Band 0: theta 1, wavelength 2 pi, ~652 turns in training, nothing unseen.
  EXPECT_DOUBLE_EQ(rows[0].inv_freq, 1.0);
  EXPECT_NEAR(rows[0].turns_in_training, 4096.0 / (2 * std::numbers::pi), 1e-9);
  EXPECT_EQ(rows[0].unseen_fraction_unscaled, 0.0);
}

TEST(BandTable, interpolation_by_the_length_ratio_leaves_nothing_unseen) {
  rope_config cfg;
  cfg.scaling = scaling_kind::linear;
  cfg.factor = 8.0;  // 32768 / 4096: the scaled arc at 32768 is exactly the arc seen at 4096
  const auto rows = band_table(cfg, 0, 4096, 32768);
  EXPECT_NEAR(rows[63].inv_freq, rows[63].inv_freq_unscaled / 8.0, 1e-20);
  EXPECT_NEAR(rows[63].unseen_fraction_unscaled, 0.875, 1e-15);
  EXPECT_NEAR(rows[63].unseen_fraction_scaled, 0.0, 1e-15);
}

TEST(Verdicts, bf16_positions_collide_at_256_and_257_and_are_a_token_off_right_after) {
  const auto& s = series_named(theory_report(), "bf16_positions");
  // bf16 holds integers exactly up to 256; 257 rounds (to even) to 256.
  EXPECT_EQ(s.first_adjacent_positions_equal, 256);
  EXPECT_EQ(s.first_position_error_over_threshold, 257);
  EXPECT_NEAR(point_at(s, 257).position_tokens, 1.0, 1e-3);
  EXPECT_LT(point_at(s, 256).position_tokens, 1e-3);
  EXPECT_FALSE(s.passes);
}

TEST(Verdicts, fast_sincos_forms_direct_floats_angles_but_its_cos_sin_are_off_by_1e_3) {
  const auto& fast = series_named(theory_report(), "fast_sincos");
  const auto& direct = series_named(theory_report(), "direct_float");
  ASSERT_EQ(fast.points.size(), direct.points.size());
  for (std::size_t i = 0; i < fast.points.size(); ++i) {
    ASSERT_EQ(fast.points[i].angle_rad, direct.points[i].angle_rad) << "position " << fast.points[i].position;
    ASSERT_EQ(fast.points[i].position_tokens, direct.points[i].position_tokens);
  }
  // Position 0: every angle is 0, where the parabola is exact. From position 1 on, some band's
  // angle lands where the parabola is off by ~1e-3 (fast_sin's contract: <= 1.1e-3).
  EXPECT_EQ(point_at(fast, 0).cos_sin_abs, 0.0);
  for (std::int64_t p = 1; p <= 16; ++p) {
    EXPECT_GT(point_at(fast, p).cos_sin_abs, 2e-4) << p;
    EXPECT_LT(point_at(fast, p).cos_sin_abs, 1.2e-3) << p;
    EXPECT_LT(point_at(direct, p).cos_sin_abs, 1e-6) << p;
    EXPECT_GT(point_at(fast, p).sources.sin_cos, 2e-4) << "the sin/cos step is blamed";
  }
  // And that absolute error is many tokens in the slow bands: a position-error failure from the start.
  EXPECT_EQ(fast.first_angle_over_threshold, direct.first_angle_over_threshold);
}

TEST(Verdicts, direct_double_passes_up_to_131072) {
  const auto& s = series_named(theory_report(), "direct_double");
  EXPECT_TRUE(s.passes);
  EXPECT_EQ(s.first_angle_over_threshold, -1);
  EXPECT_EQ(s.first_position_error_over_threshold, -1);
  EXPECT_EQ(s.first_adjacent_positions_equal, -1);
  for (const auto& p : s.points) ASSERT_LT(p.angle_rad, 1e-9) << p.position;
}

TEST(Verdicts, fp32_angles_drift_past_1e_3_rad_but_stay_below_half_a_token) {
  // DESIGN: fp32 angles are off by up to ~1e-2 rad at 131071; ggml's chain by more.
  const auto& direct = series_named(theory_report(), "direct_float");
  EXPECT_GT(direct.first_angle_over_threshold, 1024);
  EXPECT_EQ(direct.first_position_error_over_threshold, -1);
  EXPECT_EQ(direct.first_adjacent_positions_equal, -1);
  const auto& ggml = series_named(theory_report(), "ggml_float");
  EXPECT_GT(point_at(ggml, 131072).angle_rad, point_at(direct, 131072).angle_rad);
}

TEST(ErrorSources, the_angle_error_is_at_most_frequency_plus_position_plus_product) {
  // angle - p theta = p (f_used - theta) + (p_used - p) f_used + (angle - p_used f_used) exactly.
  // The engine forms each term in double for fp32-and-narrower implementations: ggml's long double
  // frequency and the product p_used f_used then round by <= 2^-53 |p theta| each (|p theta| <= p
  // here, theta_0 = 1): slack 2^-50 p, far below the 2^-24 p of any fp32 error.
  for (const auto& s : theory_report().series)
    for (const auto& pt : s.points) {
      const auto& src = pt.sources;
      const double sum = src.frequency_rad + src.position_rad + src.product_rad;
      ASSERT_LE(pt.angle_rad, sum * (1 + 0x1p-52) + 0x1p-50 * static_cast<double>(pt.position))
          << s.name << " at " << pt.position;
    }
}

TEST(ErrorSources, blame_the_step_that_is_wrong) {
  const auto& bf = series_named(theory_report(), "bf16_positions");
  EXPECT_NEAR(point_at(bf, 257).sources.position_rad, 1.0, 1e-3);  // band 0: one token at theta 1
  EXPECT_EQ(point_at(bf, 256).sources.position_rad, 0.0);
  const auto& d = series_named(theory_report(), "direct_float");
  for (const auto& pt : d.points) {
    ASSERT_EQ(pt.sources.cache, 0.0);  // no cast after cos/sin
    if (pt.position <= (1 << 24)) ASSERT_EQ(pt.sources.position_rad, 0.0);  // integers exact in fp32
  }
}

TEST(AngleError, agrees_with_the_references_mpfr_angle_error) {
  const rope_config cfg = *find_preset("llama3-8b");
  const auto r = run_report(request_for("llama3-8b", 131072, {"hf_float", "bf16_positions"}));
  const reference::rope_reference ref(cfg, 131073);
  const hf_angle<float> hf(cfg, 131073);
  const storage_positions<bfloat16, float> bf(cfg, 131073);
  for (const std::int64_t p : {1, 255, 257, 4096, 4097, 65503, 131072}) {  // all on the sweep's grid
    double want_hf = 0, want_bf = 0;
    for (int b = 0; b < ref.bands(); ++b) {
      want_hf = std::max(want_hf, std::fabs(ref.angle_error(p, b, static_cast<double>(hf.angle(p, b)))));
      want_bf = std::max(want_bf, std::fabs(ref.angle_error(p, b, static_cast<double>(bf.angle(p, b)))));
    }
    // cos/sin in ulps of fp32, as ropecheck::ulp_error measures them (llama3's af is 1).
    double want_ulps = 0;
    for (int b = 0; b < ref.bands(); ++b) {
      const auto e = ref.cos_sin(p, b);
      const auto cs = hf.cos_sin(p, b);
      want_ulps = std::max({want_ulps, static_cast<double>(ulp_error<float>(cs.cos, e.cos.hi, e.cos.lo)),
                            static_cast<double>(ulp_error<float>(cs.sin, e.sin.hi, e.sin.lo))});
    }
    EXPECT_NEAR(point_at(series_named(r, "hf_float"), p).cos_sin_ulps, want_ulps, 0x1p-50 * want_ulps) << p;
    // angle_error returns the nearest double; ours rounds once more (engine.hpp: 2^-52 |error| + 2^-70).
    EXPECT_NEAR(point_at(series_named(r, "hf_float"), p).angle_rad, want_hf, 0x1p-52 * want_hf + 0x1p-70) << p;
    EXPECT_NEAR(point_at(series_named(r, "bf16_positions"), p).angle_rad, want_bf, 0x1p-52 * want_bf + 0x1p-70) << p;
  }
}

// Every field but the timing, compared exactly (bit patterns of the doubles).
void expect_identical(const report_result& a, const report_result& b) {
  ASSERT_EQ(a.series.size(), b.series.size());
  ASSERT_EQ(a.bands.size(), b.bands.size());
  for (std::size_t i = 0; i < a.bands.size(); ++i) {  // fieldwise: band_row has padding after `band`
    const auto& x = a.bands[i];
    const auto& y = b.bands[i];
    EXPECT_TRUE(x.band == y.band && x.inv_freq == y.inv_freq && x.inv_freq_unscaled == y.inv_freq_unscaled &&
                x.wavelength == y.wavelength && x.wavelength_unscaled == y.wavelength_unscaled &&
                x.turns_in_training == y.turns_in_training &&
                x.unseen_fraction_unscaled == y.unseen_fraction_unscaled &&
                x.unseen_fraction_scaled == y.unseen_fraction_scaled) << "band " << i;
  }
  EXPECT_EQ(a.attention_factor, b.attention_factor);
  for (std::size_t i = 0; i < a.series.size(); ++i) {
    const auto& x = a.series[i];
    const auto& y = b.series[i];
    EXPECT_EQ(x.name, y.name);
    ASSERT_EQ(x.points.size(), y.points.size()) << x.name;
    // position_errors is an int64 and doubles: no padding, so bytes compare bit patterns.
    static_assert(sizeof(position_errors) == sizeof(std::int64_t) + 12 * sizeof(double));
    EXPECT_EQ(0, std::memcmp(x.points.data(), y.points.data(), x.points.size() * sizeof(position_errors))) << x.name;
    EXPECT_EQ(x.band_position_heat, y.band_position_heat) << x.name;
    EXPECT_EQ(x.heat_bucket_edges, y.heat_bucket_edges);
    EXPECT_EQ(x.first_angle_over_threshold, y.first_angle_over_threshold) << x.name;
    EXPECT_EQ(x.first_position_error_over_threshold, y.first_position_error_over_threshold) << x.name;
    EXPECT_EQ(x.first_adjacent_positions_equal, y.first_adjacent_positions_equal) << x.name;
    EXPECT_EQ(x.worst_band, y.worst_band) << x.name;
    EXPECT_EQ(x.passes, y.passes) << x.name;
  }
  EXPECT_EQ(a.time.positions, b.time.positions);
  EXPECT_EQ(a.time.values, b.time.values);
}

TEST(Threads, every_field_of_a_sparse_report_is_the_same_with_one_and_two_threads) {
  auto r = request_for("qwen2.5-7b-yarn", 70000, {});  // every default implementation, YaRN's factor
  r.threads = 1;
  const auto one = run_report(r);
  r.threads = 2;
  const auto two = run_report(r);
  EXPECT_EQ(one.series.size(), 11u);
  expect_identical(one, two);
}

TEST(Threads, every_field_of_a_pooled_exhaustive_report_is_the_same_with_one_and_two_threads) {
  auto r = request_for("llama3-8b", 20000, {"hf_float", "ggml_float", "eager_bf16"});
  r.exhaustive = true;
  r.threads = 1;
  const auto one = run_report(r);
  r.threads = 2;
  const auto two = run_report(r);
  expect_identical(one, two);
  // Pooled to ~4096 points, positions below 1024 kept one by one; verdicts from every position.
  const auto& pts = one.series[0].points;
  EXPECT_LE(pts.size(), 4096u);
  EXPECT_GT(pts.size(), 3000u);
  for (std::int64_t p = 0; p < 1024; ++p) ASSERT_EQ(pts[static_cast<std::size_t>(p)].position, p);
  EXPECT_EQ(one.time.positions, 20001);
  // Eager bf16 rounds the angle itself to 8 bits: p theta and (p + 1) theta collide once 1/p is
  // below bf16's relative spacing (2^-8..2^-7), i.e. between 128 and 256, before the positions do.
  EXPECT_GE(series_named(one, "eager_bf16").first_adjacent_positions_equal, 128);
  EXPECT_LE(series_named(one, "eager_bf16").first_adjacent_positions_equal, 256);
}

TEST(Registry, an_unknown_name_is_rejected_with_the_known_ones_listed) {
  try {
    (void)run_report(request_for("llama2-7b", 100, {"hf_float", "hf_fp8"}));
    FAIL() << "expected std::invalid_argument";
  } catch (const std::invalid_argument& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("hf_fp8"), std::string::npos) << what;
    for (const auto& i : known_implementations()) EXPECT_NE(what.find(i.name), std::string::npos) << what;
  }
}

TEST(Progress, is_reported_monotonically_and_ends_at_the_total) {
  std::int64_t last = -1, total_seen = -1;
  auto r = request_for("llama2-7b", 4096, {"hf_float"});
  const auto res = run_report(r, [&](std::int64_t done, std::int64_t total) {
    EXPECT_GE(done, last);
    last = done;
    total_seen = total;
  });
  EXPECT_EQ(last, total_seen);
  EXPECT_EQ(total_seen, res.time.values);
}

// trace() must describe the values the strategy really returns, bit for bit.
// Equal, or both NaN (fp16 positions past 65504 are infinite, their cos/sin NaN).
bool same(long double a, long double b) { return a == b || (std::isnan(a) && std::isnan(b)); }

template <class S>
void expect_trace_matches(const S& s, std::int64_t pos) {
  using V = typename S::value_type;
  for (int b = 0; b < s.bands(); ++b) {
    const angle_trace t = s.trace(pos, b);
    const auto cs = s.cos_sin(pos, b);
    ASSERT_TRUE(same(t.angle, s.angle(pos, b))) << s.name() << " " << pos << " " << b;
    ASSERT_TRUE(same(t.cos_final, scalar_traits<V>::widen(cs.cos))) << s.name() << " " << pos << " " << b;
    ASSERT_TRUE(same(t.sin_final, scalar_traits<V>::widen(cs.sin))) << s.name() << " " << pos << " " << b;
  }
}

TEST(Trace, reports_exactly_what_every_strategy_returns) {
  for (const auto& nc : rule_sweep()) {
    const auto& c = nc.cfg;
    for (const std::int64_t p : {0LL, 1LL, 257LL, 65519LL, 131071LL, (1LL << 24) + 1}) {
      expect_trace_matches(hf_angle<float>(c, nc.seq_len), p);
      expect_trace_matches(hf_angle<bfloat16>(c, nc.seq_len), p);
      expect_trace_matches(direct_angle<float>(c, nc.seq_len), p);
      expect_trace_matches(direct_angle<double>(c, nc.seq_len), p);
      expect_trace_matches(direct_angle<bfloat16>(c, nc.seq_len), p);
      expect_trace_matches(direct_angle<float16>(c, nc.seq_len), p);
      expect_trace_matches(storage_positions<bfloat16, float>(c, nc.seq_len), p);
      expect_trace_matches(ggml_angle(c, nc.seq_len), p);
      expect_trace_matches(cached<bfloat16, hf_angle<float>>(hf_angle<float>(c, nc.seq_len)), p);
      expect_trace_matches(fast_sincos_angle(c, nc.seq_len), p);
    }
  }
}

TEST(Trace, ggml_fill_angles_and_trace_bands_form_the_same_chain_as_angle_fp32) {
  for (const auto& nc : rule_sweep()) {
    const ggml_angle g(nc.cfg, nc.seq_len);
    std::vector<float> all(static_cast<std::size_t>(g.bands()));
    std::vector<angle_trace> tr(all.size());
    for (std::int64_t p = -1; p < 300000; p += 997) {
      g.fill_angles(p, all);
      g.trace_bands(p, tr);
      for (int b = 0; b < g.bands(); ++b) {
        ASSERT_EQ(std::bit_cast<std::uint32_t>(all[static_cast<std::size_t>(b)]),
                  std::bit_cast<std::uint32_t>(g.angle_fp32(p, b)))
            << nc.name << " " << p << " " << b;
        const angle_trace one = g.trace(p, b), &many = tr[static_cast<std::size_t>(b)];
        ASSERT_TRUE(one.position_used == many.position_used && one.inv_freq_used == many.inv_freq_used &&
                    one.angle == many.angle && one.cos_raw == many.cos_raw && one.sin_raw == many.sin_raw &&
                    one.cos_final == many.cos_final && one.sin_final == many.sin_final)
            << nc.name << " " << p << " " << b;
      }
    }
  }
}

}  // namespace
