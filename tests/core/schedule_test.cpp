// tests/core/schedule_test.cpp — frequency schedules (schedule.hpp) against the MPFR reference.
//
// Every rule, in float / double / long double (compute_frequencies) and in HF's own fp32 steps
// (hf_frequencies_fp32), band by band against ropecheck::reference::rope_reference, within
// tolerances derived below; plus the exact facts each rule promises (NTK keeps band 0, Llama-3
// keeps its fast bands, YaRN's ramp ends, dynamic NTK resets) and the seeds' figures.
#include "ropecheck/schedule.hpp"

#include <gtest/gtest.h>

#include <Eigen/Core>
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "ropecheck/error.hpp"
#include "ropecheck/presets.hpp"
#include "ropecheck/reference/reference.hpp"
#include "ropecheck/judge/error_model.hpp"

namespace {

using namespace ropecheck;

using reference::rope_reference;

// The tolerance model (bound_native, bound_hf, ...) lives in ropecheck/judge/error_model.hpp, section 5.

// ------------------------------------------------------------------------------------------------
// The configurations checked: the real models' rope settings (see tests/data/configs).
std::vector<double> phi3_like_short() {
  std::vector<double> v;
  for (int i = 0; i < 48; ++i) v.push_back(1.0 + 0.18 * std::pow(i / 47.0, 3) + 0.01 * std::sin(i));
  return v;
}
std::vector<double> phi3_like_long() {
  std::vector<double> v;
  for (int i = 0; i < 48; ++i) v.push_back(1.0 + 1.6 * (i / 47.0) + 58.0 * std::pow(i / 47.0, 6));
  return v;
}

std::vector<named_config> checked_configs() {
  std::vector<named_config> out;
  rope_config base;  // Llama-2-7B: d 128, base 1e4
  out.push_back({"llama2_default", base});

  rope_config qwen = base;
  qwen.base = 1.0e6;
  qwen.max_position_embeddings = 131072;
  out.push_back({"qwen2_base1e6", qwen});

  rope_config pythia = base;  // GPT-NeoX partial rotary: 128 * 0.25
  pythia.rotary_dim = 32;
  out.push_back({"pythia_partial32", pythia});

  rope_config phi_plain = base;  // head 96: exponents 2i/96 are inexact
  phi_plain.head_dim = phi_plain.rotary_dim = 96;
  out.push_back({"default_d96", phi_plain});

  rope_config linear = base;
  linear.scaling = scaling_kind::linear;
  linear.factor = 4.0;
  out.push_back({"linear_x4", linear});

  rope_config ntk = base;
  ntk.scaling = scaling_kind::ntk;
  ntk.factor = 8.0;
  out.push_back({"ntk_x8", ntk});

  rope_config dyn = base;
  dyn.scaling = scaling_kind::dynamic_ntk;
  dyn.factor = 2.0;
  out.push_back({"dynamic_x2_at_L", dyn, 0});
  out.push_back({"dynamic_x2_at_16384", dyn, 16384});

  out.push_back({"llama3_1", *find_preset("llama3-8b")});

  const rope_config ds = *find_preset("deepseek-v3");
  out.push_back({"yarn_deepseek_v3", ds});
  rope_config ds2 = ds;
  ds2.mscale_all_dim = 0.707;
  out.push_back({"yarn_mscale_ratio", ds2});

  rope_config qy = base;  // Qwen-style yarn, factor 4 over 32768
  qy.base = 1.0e6;
  qy.scaling = scaling_kind::yarn;
  qy.factor = 4.0;
  qy.original_max_position_embeddings = 32768;
  qy.max_position_embeddings = 131072;
  out.push_back({"yarn_qwen", qy});

  rope_config oss;  // gpt-oss: truncate false
  oss.head_dim = oss.rotary_dim = 64;
  oss.base = 150000.0;
  oss.scaling = scaling_kind::yarn;
  oss.factor = 32.0;
  oss.original_max_position_embeddings = 4096;
  oss.max_position_embeddings = 131072;
  oss.truncate = false;
  out.push_back({"yarn_no_truncate", oss});

  rope_config phi;  // Phi-3-mini-128k: d 96, factor from lengths (factor 1 = "absent")
  phi.head_dim = phi.rotary_dim = 96;
  phi.scaling = scaling_kind::longrope;
  phi.original_max_position_embeddings = 4096;
  phi.max_position_embeddings = 131072;
  phi.short_factor = phi3_like_short();
  phi.long_factor = phi3_like_long();
  out.push_back({"longrope_phi3_short", phi, 0});
  out.push_back({"longrope_phi3_long", phi, 8192});
  return out;
}

// ------------------------------------------------------------------------------------------------
template <class T>
class ScheduleInType : public ::testing::Test {};
using native_types = ::testing::Types<float, double, long double>;
TYPED_TEST_SUITE(ScheduleInType, native_types);

TYPED_TEST(ScheduleInType, EveryRuleMatchesTheReferenceWithinItsDerivedBound) {
  using T = TypeParam;
  for (const auto& nc : checked_configs()) {
    SCOPED_TRACE(nc.name);
    const rope_reference ref(nc.cfg, nc.seq_len);
    const auto got = compute_frequencies<T>(nc.cfg, nc.seq_len);
    ASSERT_EQ(static_cast<int>(got.inv_freq.size()), ref.bands());
    double worst = 0, worst_ratio = 0;
    int worst_band = 0;
    for (int i = 0; i < ref.bands(); ++i) {
      const auto r = ref.inv_freq(i);
      const double err = static_cast<double>(ulp_error<T>(got.inv_freq[static_cast<std::size_t>(i)], r.hi, r.lo));
      const double bound = judge::bound_native<T>(nc.cfg, i, nc.seq_len);
      EXPECT_LE(err, bound) << "band " << i << " of " << nc.name << ": " << err << " ulps > bound " << bound;
      if (err / bound > worst_ratio) {
        worst_ratio = err / bound;
        worst = err;
        worst_band = i;
      }
    }
    const auto af = ref.attention_factor();
    const double af_err = static_cast<double>(ulp_error<T>(got.attention_factor, af.hi, af.lo));
    EXPECT_LE(af_err, judge::bound_attention_native<T>(nc.cfg)) << "attention factor of " << nc.name;
    std::printf("  %-22s worst band %2d: %6.2f ulps (bound %6.2f); attention factor %.2f ulps\n", nc.name.c_str(),
                worst_band, worst, judge::bound_native<T>(nc.cfg, worst_band, nc.seq_len), af_err);
  }
}

TEST(HfFrequenciesFp32, EveryRuleMatchesTheReferenceWithinItsDerivedBound) {
  for (const auto& nc : checked_configs()) {
    SCOPED_TRACE(nc.name);
    const rope_reference ref(nc.cfg, nc.seq_len);
    const auto got = hf_frequencies_fp32(nc.cfg, nc.seq_len);
    double worst = 0, worst_ratio = 0;
    int worst_band = 0;
    for (int i = 0; i < ref.bands(); ++i) {
      const auto r = ref.inv_freq(i);
      const double err = static_cast<double>(ulp_error<float>(got.inv_freq[static_cast<std::size_t>(i)], r.hi, r.lo));
      const double bound = judge::bound_hf(nc.cfg, i, nc.seq_len);
      EXPECT_LE(err, bound) << "band " << i << " of " << nc.name << ": " << err << " ulps > bound " << bound;
      if (err / bound > worst_ratio) {
        worst_ratio = err / bound;
        worst = err;
        worst_band = i;
      }
    }
    // The attention factor is HF's Python double rounded to fp32: <= 1/2 ulp + double's error.
    const auto af = ref.attention_factor();
    EXPECT_LE(static_cast<double>(ulp_error<float>(got.attention_factor, af.hi, af.lo)), 0.5 + 1e-6);
    std::printf("  %-22s worst band %2d: %6.2f ulps of fp32 (bound %6.2f)\n", nc.name.c_str(), worst_band, worst,
                judge::bound_hf(nc.cfg, worst_band, nc.seq_len));
  }
}

// inv_freq held in bf16 / fp16: the float schedule rounded band by band, nothing else.
template <class T>
void expect_rounded_from_float(const rope_config& cfg) {
  const auto wide = compute_frequencies<float>(cfg);
  const auto narrow = compute_frequencies<T>(cfg);
  ASSERT_EQ(narrow.inv_freq.size(), wide.inv_freq.size());
  for (std::size_t i = 0; i < wide.inv_freq.size(); ++i) {
    const T expect = static_cast<T>(wide.inv_freq[i]);
    EXPECT_EQ(Eigen::numext::bit_cast<std::uint16_t>(narrow.inv_freq[i]), Eigen::numext::bit_cast<std::uint16_t>(expect))
        << "band " << i;
  }
}

TEST(ScheduleInNarrowTypes, Bf16AndHalfAreTheFloatScheduleRoundedPerBand) {
  for (const auto& nc : checked_configs()) {
    SCOPED_TRACE(nc.name);
    expect_rounded_from_float<Eigen::bfloat16>(nc.cfg);
    expect_rounded_from_float<Eigen::half>(nc.cfg);
  }
}

TEST(ScheduleInNarrowTypes, Bf16InvFreqIsOffByUpToTheBf16UnitRoundoff) {
  // The bug class: bf16 keeps 8 significant bits, so rounding alone is off by up to u = 2^-8
  // relative (plus float's few 2^-24).
  const rope_config cfg;
  const rope_reference ref(cfg);
  const auto bf = compute_frequencies<Eigen::bfloat16>(cfg);
  double worst = 0;
  for (int i = 0; i < ref.bands(); ++i) {
    const double exact = static_cast<double>(ref.inv_freq(i).value());
    worst = std::max(worst, std::fabs(static_cast<double>(static_cast<float>(bf.inv_freq[static_cast<std::size_t>(i)])) - exact) / exact);
  }
  std::printf("  bf16 inv_freq worst relative error %.3g (u_bf16 = 2^-8 = %.3g)\n", worst, std::ldexp(1.0, -8));
  EXPECT_LE(worst, std::ldexp(1.0, -8) * (1 + std::ldexp(1.0, -20)));
  EXPECT_GT(worst, std::ldexp(1.0, -16));  // visibly worse than fp32
}

// ------------------------------------------------------------------------------------------------
// Exact facts.

rope_config with(scaling_kind k, double factor) {
  rope_config c;
  c.scaling = k;
  c.factor = factor;
  return c;
}

TEST(NtkSchedule, KeepsBandZeroExactlyAndDividesTheLastBandByTheFactor) {
  const rope_config c = with(scaling_kind::ntk, 8.0);
  const auto f = compute_frequencies<double>(c);
  EXPECT_EQ(f.inv_freq[0], 1.0);  // pow(b', -0) == 1 exactly
  const int d = c.rotary_dim;
  const long double expect = std::pow(10000.0L, -static_cast<long double>(d - 2) / d) / 8.0L;
  const double err = static_cast<double>(ulp_error<double>(f.inv_freq.back(), static_cast<double>(expect),
                                                           static_cast<double>(expect - static_cast<double>(expect))));
  // judge::bound_native<double> for the last band (e ~ 1): pow + e(k ln s + pow + 2) ~ 9 ulps.
  EXPECT_LE(err, judge::bound_native<double>(c, d / 2 - 1, 0));
  std::printf("  NTK last band vs base^(-(d-2)/d)/s: %.2f ulps\n", err);
}

TEST(NtkSchedule, SeedsFigureBasePrimeIsAbout82700) {
  const double bp = ntk_scaled_base<double>(with(scaling_kind::ntk, 8.0));
  std::printf("  NTK base' for d=128, s=8: %.1f\n", bp);
  EXPECT_NEAR(bp, 82700.0, 50.0);  // the seed quotes "~82,700" (3 significant figures)
}

TEST(DefaultSchedule, SeedsFigureTheta63Is1155e4) {
  const auto f = compute_frequencies<double>(rope_config{});
  std::printf("  theta_63 (d=128, base 1e4) = %.6g\n", f.inv_freq[63]);
  EXPECT_NEAR(f.inv_freq[63], 1.155e-4, 0.0005e-4);  // quoted to 4 significant figures
  EXPECT_EQ(f.inv_freq[0], 1.0);
}

TEST(DynamicNtkSchedule, EqualsTheDefaultScheduleUpToTheTrainedLength) {
  const rope_config dyn = with(scaling_kind::dynamic_ntk, 2.0);
  const auto plain = compute_frequencies<double>(rope_config{});
  for (std::int64_t seq : {std::int64_t{0}, std::int64_t{1}, std::int64_t{4095}, std::int64_t{4096}}) {
    const auto f = compute_frequencies<double>(dyn, seq);
    EXPECT_EQ(f.inv_freq, plain.inv_freq) << "seq_len " << seq;
  }
  const auto hf_plain = hf_frequencies_fp32(rope_config{});
  EXPECT_EQ(hf_frequencies_fp32(dyn, 4096).inv_freq, hf_plain.inv_freq);
  EXPECT_NE(compute_frequencies<double>(dyn, 4097).inv_freq, plain.inv_freq);
}

TEST(DynamicNtkState, GrowsWithTheLongestSequenceAndResetsOnAShortOne) {
  dynamic_ntk_state st(with(scaling_kind::dynamic_ntk, 2.0));
  const auto plain = compute_frequencies<double>(rope_config{});
  EXPECT_EQ(st.current().inv_freq, plain.inv_freq);
  EXPECT_FALSE(st.update(100));
  EXPECT_TRUE(st.update(10000));  // growth
  const auto at10k = compute_frequencies<double>(st.config(), 10000);
  EXPECT_EQ(st.current().inv_freq, at10k.inv_freq);
  EXPECT_FALSE(st.update(8000));  // shorter but still past L: keeps the longest
  EXPECT_EQ(st.current().inv_freq, at10k.inv_freq);
  EXPECT_EQ(st.max_seq_len_cached(), 10000);
  EXPECT_FALSE(st.update(4096));  // HF resets only when strictly shorter than L
  EXPECT_TRUE(st.update(4095));   // reset
  EXPECT_EQ(st.current().inv_freq, plain.inv_freq);
  EXPECT_EQ(st.max_seq_len_cached(), 4096);
}

TEST(DynamicNtkState, LongropeSwitchesBetweenShortAndLongFactors) {
  const auto cs = checked_configs();
  const auto it = std::find_if(cs.begin(), cs.end(), [](const named_config& n) { return n.name == "longrope_phi3_short"; });
  ASSERT_NE(it, cs.end());
  dynamic_ntk_state st(it->cfg);
  EXPECT_FALSE(st.update(4096));
  EXPECT_TRUE(st.update(4097));
  EXPECT_EQ(st.current().inv_freq, compute_frequencies<double>(it->cfg, 8192).inv_freq);
  EXPECT_TRUE(st.update(10));
  EXPECT_EQ(st.current().inv_freq, st.original().inv_freq);
}

TEST(Llama3Schedule, KeepsTheFastBandsAndDividesTheSlowOnesByTheFactor) {
  rope_config l3 = with(scaling_kind::llama3, 8.0);
  l3.base = 500000.0;
  l3.original_max_position_embeddings = 8192;
  rope_config plain = l3, lin = l3;
  plain.scaling = scaling_kind::none;
  lin.scaling = scaling_kind::linear;
  const auto f = compute_frequencies<double>(l3);
  EXPECT_EQ(f.inv_freq.front(), compute_frequencies<double>(plain).inv_freq.front());
  EXPECT_EQ(f.inv_freq.back(), compute_frequencies<double>(lin).inv_freq.back());
  const auto h = hf_frequencies_fp32(l3);
  EXPECT_EQ(h.inv_freq.front(), hf_frequencies_fp32(plain).inv_freq.front());
  EXPECT_EQ(h.inv_freq.back(), hf_frequencies_fp32(lin).inv_freq.back());
}

TEST(YarnSchedule, BandsBelowTheRampAreUnscaledAndBandsAboveAreInterpolated) {
  for (const auto& nc : checked_configs()) {
    if (nc.cfg.scaling != scaling_kind::yarn) continue;
    SCOPED_TRACE(nc.name);
    rope_config plain = nc.cfg, lin = nc.cfg;
    plain.scaling = scaling_kind::none;
    lin.scaling = scaling_kind::linear;
    const auto f = compute_frequencies<double>(nc.cfg);
    const auto p = compute_frequencies<double>(plain);
    const auto l = compute_frequencies<double>(lin);
    const auto [lo, hi] = judge::yarn_range(nc.cfg);
    int below = 0, above = 0;
    for (int i = 0; i < nc.cfg.bands(); ++i) {
      if (i <= lo) {
        EXPECT_EQ(f.inv_freq[static_cast<std::size_t>(i)], p.inv_freq[static_cast<std::size_t>(i)]) << "band " << i;
        ++below;
      } else if (i >= hi) {
        EXPECT_EQ(f.inv_freq[static_cast<std::size_t>(i)], l.inv_freq[static_cast<std::size_t>(i)]) << "band " << i;
        ++above;
      } else {
        EXPECT_LT(f.inv_freq[static_cast<std::size_t>(i)], p.inv_freq[static_cast<std::size_t>(i)]);
        EXPECT_GT(f.inv_freq[static_cast<std::size_t>(i)], l.inv_freq[static_cast<std::size_t>(i)]);
      }
    }
    std::printf("  %-20s ramp [%.3Lf, %.3Lf]: %d bands unscaled, %d interpolated\n", nc.name.c_str(), lo, hi, below,
                above);
    EXPECT_GT(below, 0);
  }
}

TEST(YarnSchedule, DeepSeekAttentionFactorIsTheMscaleRatio) {
  rope_config ds = with(scaling_kind::yarn, 40.0);
  ds.head_dim = ds.rotary_dim = 64;
  ds.original_max_position_embeddings = 4096;
  ds.max_position_embeddings = 163840;
  ds.mscale = 1.0;
  ds.mscale_all_dim = 1.0;
  EXPECT_EQ(compute_frequencies<double>(ds).attention_factor, 1.0);  // equal mscales cancel
  ds.mscale_all_dim.reset();
  EXPECT_DOUBLE_EQ(compute_frequencies<double>(ds).attention_factor, 0.1 * std::log(40.0) + 1.0);
  ds.mscale = 0.0;  // Python truthiness: 0 counts as absent
  ds.mscale_all_dim = 1.0;
  EXPECT_DOUBLE_EQ(compute_frequencies<double>(ds).attention_factor, 0.1 * std::log(40.0) + 1.0);
}

TEST(YarnSchedule, TheExplicitFactorWinsOverTheLengthRatioAsInTransformersV5) {
  // Qwen2.5 + yarn as documented: max_position_embeddings 32768, original 32768, factor 4.
  // transformers 4.4x-4.5x computed factor = 32768/32768 = 1 (no scaling at all); v5 uses 4.
  rope_config q = with(scaling_kind::yarn, 4.0);
  q.base = 1.0e6;
  q.original_max_position_embeddings = 32768;
  q.max_position_embeddings = 32768;
  const auto f = compute_frequencies<double>(q);
  EXPECT_DOUBLE_EQ(f.attention_factor, 0.1 * std::log(4.0) + 1.0);
  const rope_reference ref(q);
  const auto af = ref.attention_factor();
  EXPECT_LE(static_cast<double>(ulp_error<double>(f.attention_factor, af.hi, af.lo)), judge::bound_attention_native<double>(q));
  const auto last = ref.inv_freq(q.bands() - 1);
  EXPECT_LE(static_cast<double>(ulp_error<double>(f.inv_freq.back(), last.hi, last.lo)),
            judge::bound_native<double>(q, q.bands() - 1, 0));
}

TEST(HfFrequenciesFp32, DiffersFromCorrectlyRoundedFp32InSomeBandsForBase500000) {
  rope_config c;
  c.base = 500000.0;
  const rope_reference ref(c);
  const auto hf = hf_frequencies_fp32(c);
  int differ = 0, worst = 0;
  for (int i = 0; i < ref.bands(); ++i) {
    const auto r = ref.inv_freq(i);
    // Correct rounding of hi + lo to float: nearest of the float neighbours of (float)hi.
    const float f0 = static_cast<float>(r.hi);
    float best = f0;
    for (float cand : {std::nextafter(f0, 0.0f), std::nextafter(f0, 2.0f)})
      if (std::fabs((static_cast<long double>(cand) - r.hi) - r.lo) < std::fabs((static_cast<long double>(best) - r.hi) - r.lo))
        best = cand;
    const float got = hf.inv_freq[static_cast<std::size_t>(i)];
    if (got != best) {
      ++differ;
      const int ulps = static_cast<int>(std::fabs(static_cast<double>(got - best)) /
                                        static_cast<double>(ulp_of<float>(best)) + 0.5);
      worst = std::max(worst, ulps);
    }
  }
  std::printf("  torch-style fp32 inv_freq, base 500000, d 128: %d of %d bands differ from the correctly rounded "
              "value (largest difference %d ulp; DESIGN quotes 21 of 64 for torch's Sleef powf)\n",
              differ, ref.bands(), worst);
  EXPECT_GT(differ, 0);
  EXPECT_LE(worst, 2);
}

TEST(Validate, RejectsWhatNoRuleCanEvaluateNamingTheField) {
  auto expect_field = [](rope_config c, const char* field) {
    try {
      validate(c);
      ADD_FAILURE() << "accepted; expected a complaint about " << field;
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find(field), std::string::npos) << e.what();
    }
    EXPECT_THROW((void)compute_frequencies<double>(c), std::invalid_argument);
    EXPECT_THROW((void)hf_frequencies_fp32(c), std::invalid_argument);
  };
  rope_config c;
  c.rotary_dim = 127;
  expect_field(c, "rotary_dim");
  c = {};
  c.rotary_dim = 0;
  expect_field(c, "rotary_dim");
  c = {};
  c.rotary_dim = 256;
  expect_field(c, "rotary_dim");
  c = {};
  c.head_dim = 0;
  expect_field(c, "head_dim");
  c = {};
  c.base = 1.0;
  expect_field(c, "base");
  c = {};
  c.base = std::numeric_limits<double>::infinity();
  expect_field(c, "base");
  c = with(scaling_kind::linear, 0.0);
  expect_field(c, "factor");
  c = with(scaling_kind::llama3, 8.0);
  expect_field(c, "original_max_position_embeddings");
  c.original_max_position_embeddings = 8192;
  c.high_freq_factor = 0.5;  // below low_freq_factor 1
  expect_field(c, "high_freq_factor");
  // At equality (Llama 4 Scout: low = high = 1) there is no smooth band; every rule evaluates it.
  c.high_freq_factor = c.low_freq_factor;
  EXPECT_NO_THROW(validate(c));
  for (const double f : compute_frequencies<double>(c).inv_freq) EXPECT_TRUE(std::isfinite(f));
  for (const float f : hf_frequencies_fp32(c).inv_freq) EXPECT_TRUE(std::isfinite(f));
  c = with(scaling_kind::longrope, 1.0);
  c.short_factor.assign(63, 1.0);
  c.long_factor.assign(64, 1.0);
  expect_field(c, "short_factor");
  c = with(scaling_kind::ntk, 2.0);
  c.head_dim = c.rotary_dim = 2;
  expect_field(c, "rotary_dim");
  c = with(scaling_kind::yarn, 4.0);
  c.beta_fast = 0.5;
  expect_field(c, "beta_fast");
}

// M-RoPE's band-to-row maps, checked band by band against the rules written out from transformers'
// code (contiguous: Qwen2-VL's split of cos/sin by mrope_section; interleaved: Qwen3-VL's
// apply_interleaved_mrope, slices offset:3*s_r:3 for rows 1 and 2 over a row-0 base).
TEST(Mrope, PositionRowFollowsTheContiguousAndInterleavedRules) {
  rope_config c;  // head_dim 128: 64 bands
  c.mrope = mrope_kind::contiguous;
  c.mrope_section = {16, 24, 24};
  validate(c);
  EXPECT_EQ(c.position_rows(), 3);
  for (int b = 0; b < c.bands(); ++b) EXPECT_EQ(c.position_row(b), b < 16 ? 0 : b < 40 ? 1 : 2) << "band " << b;
  c.mrope = mrope_kind::interleaved;
  c.mrope_section = {24, 20, 20};
  validate(c);
  std::vector<int> want(64, 0);
  for (int r = 1; r <= 2; ++r)
    for (int b = r; b < 3 * c.mrope_section[static_cast<std::size_t>(r)]; b += 3) want[static_cast<std::size_t>(b)] = r;
  for (int b = 0; b < c.bands(); ++b) EXPECT_EQ(c.position_row(b), want[static_cast<std::size_t>(b)]) << "band " << b;
  // Boundaries: band 59 = 3*20 - 1 is row 2 (59 % 3 == 2), band 61 (61 % 3 == 1, 61 >= 60) is row 0.
  EXPECT_EQ(c.position_row(59), 2);
  EXPECT_EQ(c.position_row(58), 1);
  EXPECT_EQ(c.position_row(61), 0);
  rope_config plain;
  EXPECT_EQ(plain.position_rows(), 1);
  EXPECT_EQ(plain.position_row(63), 0);
}

TEST(Mrope, ValidateRejectsSectionsThatDoNotCoverTheBandsNamingTheField) {
  auto rejects = [](rope_config c, const char* part) {
    try {
      validate(c);
      ADD_FAILURE() << "accepted; expected mrope_section: " << part;
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find("mrope_section"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find(part), std::string::npos) << e.what();
    }
  };
  rope_config c;
  c.mrope = mrope_kind::contiguous;
  c.mrope_section = {16, 24, 23};  // 63 of 64 bands
  rejects(c, "sums to 63");
  c.mrope_section = {16, 24, 25};
  rejects(c, "sums to 65");
  c.mrope_section = {64};
  rejects(c, "at least 2");
  c.mrope_section = {-1, 40, 25};
  rejects(c, "negative");
  c.mrope = mrope_kind::interleaved;
  c.mrope_section = {16, 24, 24};  // 3*24 = 72 > 64: rows 1 and 2 get 21 bands each, row 0 the other 22
  rejects(c, "interleaved rule gives row 0 22 bands");
  c.mrope_section = {32, 32};
  rejects(c, "3 rows");
  rope_config plain;
  plain.mrope_section = {32, 32};
  rejects(plain, "not M-RoPE");
  rope_config ds;  // half-split output order needs interleaved input pairs
  ds.outputs = output_order::half_split;
  EXPECT_THROW(validate(ds), std::invalid_argument);
  ds.pair_layout = layout::interleaved;
  EXPECT_NO_THROW(validate(ds));
}

// LongRoPE's switch sits at seq_len == original_max_position_embeddings: transformers takes
// `long_factor if seq_len > original_max_position_embeddings else short_factor`
// (modeling_rope_utils.py _compute_longrope_parameters; PhimoeRotaryEmbedding.forward for the mscales).
// At equality the short factors and short mscale, one past it the long ones, in every evaluation.
TEST(LongropeSwitch, ShortAtTheOriginalLengthLongOnePast) {
  const auto cs = checked_configs();
  const auto it = std::find_if(cs.begin(), cs.end(), [](const named_config& n) { return n.name == "longrope_phi3_short"; });
  ASSERT_NE(it, cs.end());
  rope_config c = it->cfg;
  const std::int64_t L0 = c.original_max_position_embeddings;
  rope_config all_short = c, all_long = c;
  all_long.short_factor = c.long_factor;
  all_short.long_factor = c.short_factor;
  EXPECT_EQ(compute_frequencies<double>(c, L0).inv_freq, compute_frequencies<double>(all_short, L0).inv_freq);
  EXPECT_EQ(compute_frequencies<double>(c, L0 + 1).inv_freq, compute_frequencies<double>(all_long, L0 + 1).inv_freq);
  EXPECT_NE(compute_frequencies<double>(c, L0).inv_freq, compute_frequencies<double>(c, L0 + 1).inv_freq);
  EXPECT_EQ(hf_frequencies_fp32(c, L0).inv_freq, hf_frequencies_fp32(all_short, L0).inv_freq);
  EXPECT_EQ(hf_frequencies_fp32(c, L0 + 1).inv_freq, hf_frequencies_fp32(all_long, L0 + 1).inv_freq);
  EXPECT_NE(hf_frequencies_fp32(c, L0).inv_freq, hf_frequencies_fp32(c, L0 + 1).inv_freq);
  // (The reference switches at the same place: reference_test.cpp LongRopePicksShortOrLongFactors...)
  // Phi-3.5-MoE's mscales switch there too.
  c.short_mscale = 1.1;
  c.long_mscale = 1.243163121016122;
  EXPECT_EQ(compute_frequencies<double>(c, L0).attention_factor, 1.1);
  EXPECT_EQ(compute_frequencies<double>(c, L0 + 1).attention_factor, 1.243163121016122);
  EXPECT_EQ(hf_frequencies_fp32(c, L0).attention_factor, 1.1f);
  EXPECT_EQ(hf_frequencies_fp32(c, L0 + 1).attention_factor, static_cast<float>(1.243163121016122));
}

// Proportional RoPE (Gemma 4): the frozen tail is exactly 0 in every evaluation, the turning bands are
// the default schedule's (exponent over head_dim = rotary_dim), and validate keeps one band turning.
TEST(ProportionalRope, FrozenBandsAreExactlyZeroAndTheOthersTheDefaultSchedule) {
  rope_config c;
  c.head_dim = c.rotary_dim = 512;
  c.base = 1e6;
  c.frozen_bands = 192;
  rope_config plain = c;
  plain.frozen_bands = 0;
  const auto f = compute_frequencies<double>(c), p = compute_frequencies<double>(plain);
  const auto h = hf_frequencies_fp32(c), hp = hf_frequencies_fp32(plain);
  ASSERT_EQ(f.inv_freq.size(), 256u);
  for (std::size_t i = 0; i < 256; ++i) {
    if (i < 64) {
      EXPECT_EQ(f.inv_freq[i], p.inv_freq[i]) << "band " << i;
      EXPECT_EQ(h.inv_freq[i], hp.inv_freq[i]) << "band " << i;
    } else {
      EXPECT_EQ(f.inv_freq[i], 0.0) << "band " << i;
      EXPECT_EQ(h.inv_freq[i], 0.0f) << "band " << i;
    }
  }
  c.frozen_bands = 255;  // one band turns: allowed
  EXPECT_NO_THROW(validate(c));
  c.frozen_bands = 256;  // none turns
  EXPECT_THROW(validate(c), std::invalid_argument);
  c.frozen_bands = -1;
  EXPECT_THROW(validate(c), std::invalid_argument);
  c.frozen_bands = 8;
  c.scaling = scaling_kind::yarn;
  c.factor = 4;
  EXPECT_THROW(validate(c), std::invalid_argument);
}

}  // namespace
