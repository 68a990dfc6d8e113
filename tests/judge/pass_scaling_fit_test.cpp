// tests/judge/pass_scaling_fit_test.cpp — parameter fits inside a scaling rule (judge/src/pass_scaling_fit.cpp):
// the claimed rule's shape with other numbers is named scaling_wrong with the values that fit. Dumps
// are the probe set of the claim (ropecheck/judge/probe.hpp) rotated in fp32 under the WRONG
// parameters (the frequencies HF's fp32 code forms, hf_frequencies_fp32), audited under the claimed
// ones; the correct kernels on the same probe set still pass. Seeds are fixed and printed.
#include "judge/judge_dumps.hpp"
#include "judge/probe_dumps.hpp"

#include <cmath>
#include <cstdio>
#include <limits>
#include <numbers>

#include "passes.hpp"  // judge/src: the acceptance threshold, for its boundary
#include "ropecheck/judge/classes.hpp"
#include "ropecheck/judge/probe.hpp"
#include "ropecheck/presets.hpp"

namespace {

using namespace ropecheck;
using namespace ropecheck::judge_test;

constexpr std::uint64_t kProbeSeed = 20240722;

template <class Storage = float, class CS>
dump probe_dump(const rope_config& claim, const CS& cs, const std::string& dtype = "float32") {
  return probe_dump_in<Storage, float>(claim, rope_geometry::of(claim), cs, dtype, kProbeSeed);
}

// fp32 angles float(p) * f_i from a given fp32 inv_freq table, cos and sin times `magnitude` (the
// kernel's attention factor), as hf_angle<float> forms them.
struct table_angle {
  using value_type = float;
  std::vector<float> f;
  float magnitude = 1;
  [[nodiscard]] cos_sin_pair<float> cos_sin(std::int64_t pos, int band) const {
    const float a = static_cast<float>(pos) * f[static_cast<std::size_t>(band)];
    return {std::cos(a) * magnitude, std::sin(a) * magnitude};
  }
};

// The probe set of `claim` rotated by `cs` (rotate_tokens<float, Storage>).

// HF's fp32 frequencies and attention factor for `impl` (hf_angle<float>), on the probe set of `claim`.
verdict audit_impl(const std::string& name, const rope_config& claim, const rope_config& impl) {
  const auto v = judge::audit(probe_dump(claim, hf_angle<float>(impl)), claim);
  print(name, v);
  return v;
}

rope_config qwen_yarn() { return *find_preset("qwen2.5-7b-yarn"); }  // head_dim 128, base 1e6, YaRN x4 over 32768
rope_config llama31() { return *find_preset("llama3-8b"); }          // base 5e5, Llama-3 x8 over 8192, 1 / 4

void expect_fit(const verdict& v, const std::string& words) {
  expect_top(v, judge::classes::scaling_wrong);
  ASSERT_FALSE(v.findings.empty());
  EXPECT_NE(v.findings.front().sentence.find(words), std::string::npos) << v.findings.front().sentence;
}

// ---- the acceptance threshold (pass_scaling_fit.cpp) at equality ----

using judge::detail::frequency_mismatch;
using judge::detail::scaling_fit_accepted;

TEST(ScalingFitModel, AFitIsNamedOnlyWithinTheScheduleTolerance) {
  const double below = std::nextafter(1e-3, 0.0);
  EXPECT_TRUE(scaling_fit_accepted(below, 1.0));
  EXPECT_FALSE(scaling_fit_accepted(1e-3, 1.0)) << "1e-3 itself is outside the schedule hypotheses' tolerance";
  EXPECT_FALSE(scaling_fit_accepted(std::numeric_limits<double>::infinity(), 1.0));
}

TEST(ScalingFitModel, TheClaimMustBeOutsideTheToleranceAndTenTimesWorse) {
  EXPECT_TRUE(scaling_fit_accepted(1e-6, 1e-3)) << "a claim off by 1e-3 is outside the tolerance";
  EXPECT_FALSE(scaling_fit_accepted(1e-6, std::nextafter(1e-3, 0.0))) << "the claim itself fits: pass_drift's case";
  EXPECT_FALSE(scaling_fit_accepted(4e-4, 4e-3)) << "exactly 10x is not clearly better";
  EXPECT_TRUE(scaling_fit_accepted(4e-4, std::nextafter(4e-3, 1.0)));
}

// The mismatch judges only bands with noise < 5e-4 and needs a quarter of the bands (at least 2).
TEST(ScalingFitModel, TheMismatchUsesThePreciselyFittedBandsOnly) {
  std::vector<double> fit(12, 1.0);
  fit[11] = 2.0;
  const std::vector<double> hyp(12, 1.0);
  std::vector<double> noise(12, 1.0);
  noise[0] = noise[1] = noise[2] = std::nextafter(5e-4, 0.0);
  EXPECT_EQ(frequency_mismatch(fit, noise, hyp), 0.0) << "3 of 12 bands, a quarter, suffice";
  noise[2] = 5e-4;
  EXPECT_EQ(frequency_mismatch(fit, noise, hyp), std::numeric_limits<double>::infinity()) << "noise 5e-4 is not precise";
  noise.assign(12, 0.0);
  EXPECT_EQ(frequency_mismatch(fit, noise, hyp), 1.0);
}

// ---- YaRN (Qwen2.5-7B-like claim) ----

TEST(Diagnose, ScalingFitYarnOriginalLength) {
  auto impl = qwen_yarn();
  impl.original_max_position_embeddings = 4096;  // the ramp moves
  expect_fit(audit_impl("yarn original 4096 claimed 32768", qwen_yarn(), impl),
             "YaRN with original_max_position_embeddings 4096 (claimed 32768");
}

// ggml's freq_scale 4 instead of 1/4: theta_interp = freq_scale theta_extrap multiplies the
// frequencies by 4, and its mscale 1 + 0.1 ln(1/freq_scale) = 1 + 0.1 ln(1/4) (ggml ops.cpp rope_yarn).
TEST(Diagnose, ScalingFitYarnFactorInverted) {
  auto impl = qwen_yarn();
  impl.factor = 0.25;  // schedule.hpp's YaRN with s = 1/4: the interpolated bands times 4
  const auto f = hf_frequencies_fp32(impl).inv_freq;
  const table_angle ggml{f, static_cast<float>(1 + 0.1 * std::log(0.25))};
  const auto v = judge::audit(probe_dump(qwen_yarn(), ggml), qwen_yarn());
  print("yarn factor 0.25 (ggml freq_scale 4) claimed 4", v);
  expect_fit(v, "factor 0.25 (claimed 4: inverted");
  for (std::size_t k = 1; k < v.findings.size(); ++k) {
    if (v.findings[k].bug_class != judge::classes::attention_factor_wrong) continue;
    EXPECT_NE(v.findings[k].sentence.find("explains this magnitude"), std::string::npos) << v.findings[k].sentence;
  }
}

TEST(Diagnose, ScalingFitYarnBetaFast) {
  auto impl = qwen_yarn();
  impl.beta_fast = 16;
  expect_fit(audit_impl("yarn beta_fast 16 claimed 32", qwen_yarn(), impl), "beta_fast 16 (claimed 32");
}

// beta_slow moves the ramp's low end (HF _compute_yarn_parameters: high = ceil(corr(beta_slow))): each YaRN
// parameter has its own fit and its own setter (issue 34: a mutant whose beta_slow setter wrote beta_fast survived).
TEST(Diagnose, ScalingFitYarnBetaSlow) {
  auto impl = qwen_yarn();
  impl.beta_slow = 2;
  expect_fit(audit_impl("yarn beta_slow 2 claimed 1", qwen_yarn(), impl), "beta_slow 2 (claimed 1");
}

// ---- Llama 3.1 ----

TEST(Diagnose, ScalingFitLlama3HighFreqFactor) {
  auto impl = llama31();
  impl.high_freq_factor = 8;
  expect_fit(audit_impl("llama3 high_freq_factor 8 claimed 4", llama31(), impl), "high_freq_factor 8 (claimed 4");
}

// HF _compute_llama3_parameters with smooth_factor replaced by 1 - smooth_factor in the medium band
// (transformers src/transformers/modeling_rope_utils.py: smoothed_inv_freq = (1 - smooth) inv_freq /
// factor + smooth inv_freq), in fp32 as the kernel would.
std::vector<float> llama3_smoothing_inverted(const rope_config& c) {
  std::vector<float> f(static_cast<std::size_t>(c.bands()));
  const double L0 = static_cast<double>(c.original_max_position_embeddings);
  for (int i = 0; i < c.bands(); ++i) {
    const float x = 1.0f / std::pow(static_cast<float>(c.base), static_cast<float>(2 * i) / static_cast<float>(c.rotary_dim));
    const double wavelen = 2 * std::numbers::pi / x;
    float v = x;
    if (wavelen > L0 / c.low_freq_factor) v = x / static_cast<float>(c.factor);
    else if (wavelen >= L0 / c.high_freq_factor) {
      const auto smooth = static_cast<float>((L0 / wavelen - c.low_freq_factor) / (c.high_freq_factor - c.low_freq_factor));
      v = smooth * x / static_cast<float>(c.factor) + (1 - smooth) * x;  // the bug: the weights exchanged
    }
    f[static_cast<std::size_t>(i)] = v;
  }
  return f;
}

TEST(Diagnose, ScalingFitLlama3SmoothingInverted) {
  const auto v = judge::audit(probe_dump(llama31(), table_angle{llama3_smoothing_inverted(llama31()), 1.0f}), llama31());
  print("llama3 smoothing inverted", v);
  expect_fit(v, "Llama-3 smoothing inverted in bands");
}

TEST(Diagnose, ScalingFitLlama3LowFreqFactor) {
  auto impl = llama31();
  impl.low_freq_factor = 2;
  expect_fit(audit_impl("llama3 low_freq_factor 2 claimed 1", llama31(), impl), "low_freq_factor 2 (claimed 1");
}

TEST(Diagnose, ScalingFitLlama3OriginalLength) {
  auto impl = llama31();
  impl.original_max_position_embeddings = 4096;
  expect_fit(audit_impl("llama3 original 4096 claimed 8192", llama31(), impl),
             "original_max_position_embeddings 4096 (claimed 8192");
}

// ---- a factor off the discrete list (pass_frequencies.cpp kFactors) ----

// Linear: every frequency 0.8x, the same as every position 0.8p: pass_positions names it first.
TEST(Diagnose, ScalingFitLinearFactorOffTheList) {
  auto claim = claimed_config(128);
  claim.scaling = scaling_kind::linear;
  claim.factor = 4;
  auto impl = claim;
  impl.factor = 5;
  expect_fit(audit_impl("linear 5 claimed 4", claim, impl), "factor 5");
}

// A rule of another type: an NTK kernel (base x s^(d/(d-2))) under a linear claim of the same factor is named with
// the rule it follows (pass_frequencies.cpp best_scaling's other rules; issue 34: NTK dropped from them survived).
TEST(Diagnose, AnNtkKernelUnderALinearClaimIsNamedWithItsRule) {
  auto claim = claimed_config(128);
  claim.scaling = scaling_kind::linear;
  claim.factor = 4;
  const rope_config impl = with_scaling(claim, scaling_kind::ntk);
  const auto v = audit_impl("ntk x4 claimed linear x4", claim, impl);
  expect_top(v, judge::classes::scaling_wrong);
  ASSERT_FALSE(v.findings.empty());
  EXPECT_NE(v.findings.front().sentence.find("ntk"), std::string::npos) << v.findings.front().sentence;
}

// YaRN: only the interpolated bands move, which no position explains: the factor fit names it.
TEST(Diagnose, ScalingFitYarnFactorOffTheList) {
  auto impl = qwen_yarn();
  impl.factor = 5;
  expect_fit(audit_impl("yarn factor 5 claimed 4", qwen_yarn(), impl), "YaRN with factor 5 (claimed 4)");
}

// ---- LongRoPE (a Phi-3-like claim): the other factor list at the call's sequence length ----

// The rule sweep's LongRoPE (presets.hpp rule_sweep "phi3_longrope_long"): head_dim 96, base 10000, original 4096
// of 131072, short factors near 1, long ones growing with the band (Phi-3's shape).
rope_config phi3_like() {
  for (const auto& n : rule_sweep())
    if (n.name == "phi3_longrope_long") return n.cfg;
  ADD_FAILURE() << "rule_sweep() has no phi3_longrope_long";
  return {};
}

// The plain dump's sequence length is its largest position + 1 (2^24 + 9 on the probe set): long factors claimed.
// A kernel applying the short list at every length is named, with the length and the rule.
TEST(Diagnose, ScalingFitLongRopeShortFactorsPastTheOriginalLength) {
  auto impl = phi3_like();
  impl.long_factor = impl.short_factor;  // one list whatever the length
  expect_fit(audit_impl("longrope short factors everywhere", phi3_like(), impl),
             "LongRoPE with the short factors at sequence length 16777225, where the long ones apply");
}

// vLLM's reading (--engine vllm, max_model_len past the original length): one list for every position, the long
// one; the short one kept as unused_factor (config_json_vllm.hpp). A kernel with the lists swapped applies the short
// list everywhere: named with the other-list hypothesis (issue 34: it was unexplained). The claim's own kernel passes.
TEST(Diagnose, ScalingFitLongRopeOtherListUnderVllmsReading) {
  rope_config claim = phi3_like();
  claim.unused_factor = claim.short_factor;
  claim.short_factor = claim.long_factor;
  rope_config impl = claim;
  impl.short_factor = impl.long_factor = claim.unused_factor;
  impl.unused_factor.clear();
  expect_fit(audit_impl("vllm longrope, the lists swapped", claim, impl), "LongRoPE with the other factor list for every position");
  expect_pass(audit_impl("vllm longrope, the claim's list", claim, claim));
}

// At seq_len 4096 = original_max_position_embeddings (the boundary: `seq_len > original` picks long, so 4096 is
// short) a kernel applying the long list is named; the correct kernel at that length passes.
TEST(Diagnose, ScalingFitLongRopeLongFactorsUpToTheOriginalLength) {
  const auto claim = phi3_like();
  auto impl = claim;
  impl.short_factor = impl.long_factor;
  judge::audit_options at_original;
  at_original.seq_len = 4096;
  const auto v = judge::audit(probe_dump(claim, hf_angle<float>(impl, 4096)), claim, at_original);
  print("longrope long factors at 4096", v);
  expect_fit(v, "LongRoPE with the long factors at sequence length 4096, where the short ones apply");
  const auto ok = judge::audit(probe_dump(claim, hf_angle<float>(claim, 4096)), claim, at_original);
  print("longrope correct at 4096", ok);
  expect_pass(ok);
  judge::audit_options past;
  past.seq_len = 4097;  // one past: the long list is the claim's, and the same kernel passes
  const auto long_ok = judge::audit(probe_dump(claim, hf_angle<float>(impl, 4097)), claim, past);
  print("longrope long factors at 4097", long_ok);
  expect_pass(long_ok);
}

// Phi-3.5-MoE's claim: LongRoPE whose attention factor is the file's short_mscale / long_mscale (transformers
// models/phimoe/modeling_phimoe.py PhimoeRotaryEmbedding). The judge's other-rule hypotheses drop the mscales with
// the rule (with_scaling): before, they kept them, validate refused each hypothesis and a kernel with no scaling at
// all was left without its finding.
TEST(Diagnose, PhimoeClaimKernelWithoutScalingIsNamed) {
  auto claim = phi3_like();
  claim.short_mscale = claim.long_mscale = 1.243163121016122;  // Phi-3.5-MoE-instruct's rope_scaling
  const rope_config impl = with_scaling(claim, scaling_kind::none);
  EXPECT_FALSE(impl.short_mscale || impl.long_mscale);
  const auto v = audit_impl("phimoe claim, a kernel without scaling", claim, impl);
  EXPECT_FALSE(v.pass);
  bool named = false;
  for (const auto& f : v.findings) named = named || (f.bug_class == "scaling_wrong" && f.sentence.find("no scaling") != std::string::npos);
  EXPECT_TRUE(named) << "no scaling_wrong finding saying no scaling";
}

// ---- correct kernels on the same probe set: nothing but at most the fp32 drift warning ----

TEST(Diagnose, ScalingFitCorrectKernelsStillPass) {
  for (const auto& c : {qwen_yarn(), llama31()}) {
    const auto v32 = judge::audit(probe_dump(c, hf_angle<float>(c)), c);
    print("correct fp32 " + std::string(to_string(c.scaling)), v32);
    expect_pass(v32);
    const auto v16 = judge::audit(probe_dump<bfloat16>(c, hf_angle<bfloat16>(c), "bfloat16"), c);
    print("correct bf16 " + std::string(to_string(c.scaling)), v16);
    expect_pass(v16);
  }
}

}  // namespace
