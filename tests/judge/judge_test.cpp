// tests/judge/judge_test.cpp — the judging and the orchestration of `ropecheck audit`'s judge: correct
// dumps pass (against exact maths, HF's and ggml's conventions), the allowance and its override, NaN,
// threads and the diagnosis subset, the score identity.
#include "judge/judge_dumps.hpp"

#include <algorithm>
#include <limits>
#include <random>

#include "ropecheck/reference/reference.hpp"

namespace {

using namespace ropecheck;
using namespace ropecheck::judge_test;

TEST(Diagnose, CorrectFp32Passes) {
  const auto c = claimed_config();
  const auto v = judge::audit(make_dump<float>(rope_geometry::of(c), hf_angle<float>(c), kPos, kPos, "float32"), c);
  print("correct fp32", v);
  EXPECT_TRUE(v.pass);
  for (const auto& f : v.findings) EXPECT_EQ(f.bug_class, "angle_drift_fp32");  // a warning at most
}

TEST(Diagnose, CorrectBf16Passes) {
  const auto c = claimed_config();
  const auto v = judge::audit(
      make_dump<bfloat16>(rope_geometry::of(c), hf_angle<bfloat16>(c), kPos, kPos, "bfloat16"), c);
  print("correct bf16", v);
  EXPECT_TRUE(v.pass);
}

TEST(Diagnose, CorrectFp32PartialRotaryPasses) {
  auto c = claimed_config(128);
  c.rotary_dim = 32;
  c.pair_layout = layout::interleaved;
  const auto v = judge::audit(make_dump<float>(rope_geometry::of(c), hf_angle<float>(c), kPos, kPos, "float32"), c);
  print("correct fp32 partial", v);
  EXPECT_TRUE(v.pass);
}

TEST(Diagnose, CorrectYarnPasses) {
  auto c = yarn_claim();
  const auto v = judge::audit(make_dump<float>(rope_geometry::of(c), hf_angle<float>(c), kPos, kPos, "float32"), c);
  print("correct yarn fp32", v);
  EXPECT_TRUE(v.pass);
}

TEST(Diagnose, CorrectFloat16Passes) {
  const auto c = claimed_config();
  const auto v = judge::audit(
      make_dump<float16>(rope_geometry::of(c), hf_angle<float16>(c), kPos, kPos, "float16"), c);
  print("correct fp16", v);
  EXPECT_TRUE(v.pass);
}

TEST(Diagnose, RejectsInconsistentDumps) {
  const auto c = claimed_config();
  auto d = make_dump<float>(rope_geometry::of(c), hf_angle<float>(c), kPos, kPos, "float32");
  d.dtype = "int8";
  EXPECT_THROW((void)judge::audit(d, c), std::invalid_argument);
  d.dtype = "float32";
  d.y.pop_back();
  EXPECT_THROW((void)judge::audit(d, c), std::invalid_argument);
}

// The subset always holds the 64 smallest positions: a smaller diagnosis_tokens is an error (it read out
// of range before), 64 itself is accepted, on a dump of more tokens than that.
TEST(Diagnose, DiagnosisTokensBelowTheSmallestPositionsAreRejected) {
  const auto c = claimed_config();
  const auto d = make_dump<float>(rope_geometry::of(c), hf_angle<float>(c), kPos, kPos, "float32");
  ASSERT_GT(d.tokens, 64);
  judge::audit_options o;
  o.diagnosis_tokens = 63;
  try {
    (void)judge::audit(d, c, o);
    ADD_FAILURE() << "diagnosis_tokens 63 accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(e.what(), "audit: diagnosis_tokens must be at least 64 (the smallest positions are always diagnosed), not 63");
  }
  o.diagnosis_tokens = 64;
  const auto v = judge::audit(d, c, o);
  EXPECT_TRUE(v.pass);
  EXPECT_EQ(v.tokens_diagnosed, 64);
}

// ggml forms theta_i by repeated fp32 products (2-4x the HF angle error, DESIGN): a careful fp32
// implementation, so it passes, with the drift as a warning at most.
TEST(Diagnose, GgmlAnglesPassWithAWarning) {
  const auto c = claimed_config();
  const auto v = judge::audit(make_dump<float>(rope_geometry::of(c), ggml_angle(c), kPos, kPos, "float32"), c);
  print("ggml fp32", v);
  EXPECT_TRUE(v.pass);
  for (const auto& f : v.findings) EXPECT_EQ(f.bug_class, "angle_drift_fp32") << f.sentence;
}

// HF's convention as the reference: the HF fp32 dump sits far closer to it than to exact angles,
// and passes with the convention's tighter allowance (no angle term); a dump with fp64 angles is
// then the one that differs.
TEST(Diagnose, HfReferenceJudgesAgainstHfsOwnAngles) {
  const auto c = claimed_config();
  const auto hf_dump = make_dump<float>(rope_geometry::of(c), hf_angle<float>(c), kPos, kPos, "float32");
  judge::audit_options hf;
  hf.reference = judge::reference_kind::hf;
  const auto v = judge::audit(hf_dump, c, hf);
  print("HF fp32 against HF's convention", v);
  EXPECT_TRUE(v.pass);
  EXPECT_EQ(v.reference, judge::reference_kind::hf);
  EXPECT_LT(v.from_framework.max_ulps * 100, v.from_exact.max_ulps);
  EXPECT_EQ(v.max_error_ulps, v.from_framework.max_ulps);
  const auto exact_dump = make_dump<float, double>(rope_geometry::of(c), direct_angle<double>(c), kPos, kPos, "float32");
  const auto w = judge::audit(exact_dump, c, hf);
  print("fp64 angles against HF's convention", w);
  EXPECT_FALSE(w.pass);
  EXPECT_TRUE(judge::audit(exact_dump, c).pass);
}

// A flat tolerance override replaces the derived allowance (both ways).
TEST(Diagnose, ToleranceOverride) {
  const auto c = claimed_config();
  const auto d = make_dump<float>(rope_geometry::of(c), hf_angle<float>(c), kPos, kPos, "float32");
  const auto base = judge::audit(d, c);
  judge::audit_options o;
  o.tolerance_ulps = base.max_error_ulps * 0.5;
  EXPECT_FALSE(judge::audit(d, c, o).pass);
  o.tolerance_ulps = base.max_error_ulps * 2;
  EXPECT_TRUE(judge::audit(d, c, o).pass);
  o.tolerance_ulps = -1;
  EXPECT_THROW((void)judge::audit(d, c, o), std::invalid_argument);
}

// NaN in the output fails with its own finding; the verdict does not depend on the thread count;
// a dump larger than the diagnosis budget is diagnosed on a subset with the same top finding.
TEST(Diagnose, NonFiniteThreadsAndSubsets) {
  const auto c = claimed_config();
  auto d = make_dump<float>(rope_geometry::of(c), hf_angle<float>(c), kPos, kPos, "float32");
  auto bad = d;
  bad.y[5] = std::numeric_limits<double>::quiet_NaN();
  const auto nf = judge::audit(bad, c);
  expect_top(nf, "non_finite");

  auto impl = c;
  impl.base = 10000.0;
  const auto wrong = make_dump<float>(rope_geometry::of(c), hf_angle<float>(impl), kPos, kPos, "float32");
  judge::audit_options one, many, small;
  one.threads = 1;
  many.threads = 3;
  small.diagnosis_tokens = 70;
  const auto a = judge::audit(wrong, c, one), b = judge::audit(wrong, c, many), s = judge::audit(wrong, c, small);
  EXPECT_EQ(a.max_error_ulps, b.max_error_ulps);
  EXPECT_EQ(a.worst_ratio, b.worst_ratio);
  EXPECT_EQ(a.from_framework.max_ulps, b.from_framework.max_ulps);
  EXPECT_EQ(a.from_exact.worst_position, b.from_exact.worst_position);
  ASSERT_EQ(a.findings.size(), b.findings.size());
  EXPECT_EQ(s.tokens_diagnosed, 70);
  EXPECT_EQ(a.tokens_diagnosed, 74);
  expect_top(s, "base_wrong");
}

// A kernel that turns by R(-p) under a forward dynamic-NTK claim, diagnosed on a subset that leaves out
// the largest position: the subset's pre-test of rotation_reversed must judge with the claim's sequence
// length (the whole dump's, 100001: base scaled for it), not the subset's (65538), or it fails and the
// reversal goes unnamed.
TEST(Diagnose, ReversedRotationIsNamedWhenTheSubsetMissesTheLargestPosition) {
  auto c = claimed_config();
  c.scaling = scaling_kind::dynamic_ntk;
  c.factor = 4.0;
  c.max_position_embeddings = 4096;  // HF's dynamic rule scales past max_position_embeddings
  auto g = rope_geometry::of(c);
  g.direction = rotation_direction::reversed;
  const auto d = make_dump<float>(g, hf_angle<float>(c, kPos.back() + 1), kPos, kPos, "float32");
  judge::audit_options small;
  small.diagnosis_tokens = 70;
  const auto v = judge::audit(d, c, small);
  print("reversed kernel, forward dynamic claim, subset", v);
  ASSERT_LT(v.tokens_diagnosed, d.tokens);
  expect_top(v, "rotation_reversed");
  // And claimed reversed, the same kernel passes.
  auto r = c;
  r.direction = rotation_direction::reversed;
  expect_pass(judge::audit(d, r, small));
}

TEST(Diagnose, ExactAnglesAreNotHfsConvention) {
  const auto c = claimed_config();
  const auto d = make_dump<float, double>(rope_geometry::of(c), direct_angle<double>(c), kPos, kPos, "float32");
  judge::audit_options hf;
  hf.reference = judge::reference_kind::hf;
  const auto v = judge::audit(d, c, hf);
  print("fp64 angles, HF reference", v);
  expect_top(v, "not_hf_convention");
}

// The hf reference takes cos/sin of fp32 angles from long double libm: it must agree with MPFR's
// exact value far below an ulp of float64 (2^-53) over the angles HF forms (positions to 2^31).
TEST(Diagnose, HfReferenceCosSinAgreeWithMpfr) {
  const auto c = claimed_config(128);
  const auto s = hf_frequencies_fp32(c);
  std::mt19937_64 gen(11);
  long double worst = 0;
  for (int k = 0; k < 4000; ++k) {
    const auto p = static_cast<std::int64_t>(gen() % (std::uint64_t{1} << (k % 32)));
    const float a = static_cast<float>(p) * s.inv_freq[static_cast<std::size_t>(k % 64)];
    const auto m = reference::cos_sin_of_angle(static_cast<double>(a));
    worst = std::max({worst, std::fabs(std::cos(static_cast<long double>(a)) - m.cos.value()),
                      std::fabs(std::sin(static_cast<long double>(a)) - m.sin.value())});
  }
  std::printf("largest |libm long double - MPFR| over 4000 HF fp32 angles: %.3Lg (2^%.1f)\n", worst,
              static_cast<double>(std::log2(worst)));
  EXPECT_LT(worst, 0x1p-60L);
}

// The implied scores: exact angles rounded to fp32 keep the relative-offset identity to within the
// element allowance (cos/sin 3u + rotation 2u per component gives ||y - y*|| <= 2 * 5u ||x||, and
// a score error <= 2 * that: 20u); positions held in bf16 break it by orders of magnitude. Every
// token gets its own error entry.
TEST(Diagnose, ScoreViolationAndPerPositionErrors) {
  const auto c = claimed_config();
  const auto good = judge::audit(
      make_dump<float, double>(rope_geometry::of(c), direct_angle<double>(c), kPos, kPos, "float32"), c);
  std::printf("score violation, fp64 angles stored in fp32: %.3g (allowance 20u = %.3g)\n", good.score_violation,
              20 * 0x1p-24);
  EXPECT_LT(good.score_violation, 20 * 0x1p-24);
  ASSERT_EQ(good.per_position.size(), kPos.size());
  for (std::size_t t = 0; t < kPos.size(); ++t) {
    EXPECT_EQ(good.per_position[t].position, kPos[t]);
    EXPECT_LE(good.per_position[t].worst_ratio, good.worst_ratio);
  }
  std::vector<std::int64_t> used;
  for (auto p : kPos) used.push_back(static_cast<std::int64_t>(static_cast<float>(scalar_traits<bfloat16>::narrow(static_cast<double>(p)))));
  const auto bad = judge::audit(make_dump<float, double>(rope_geometry::of(c), direct_angle<double>(c), kPos, used, "float32"), c);
  std::printf("score violation, positions in bf16: %.3g at m=%lld n=%lld\n", bad.score_violation,
              static_cast<long long>(bad.score_violation_m), static_cast<long long>(bad.score_violation_n));
  EXPECT_GT(bad.score_violation, 1e-3);
}

// ggml's convention as the reference: ggml's own fp32 chain passes it tightly (no angle term) and
// sits far closer to it than to exact angles; HF's fp32 angles do not reproduce it.
TEST(Diagnose, GgmlReferenceJudgesAgainstGgmlsChain) {
  const auto c = claimed_config();
  judge::audit_options g;
  g.reference = judge::reference_kind::ggml;
  const auto ggml_dump = make_dump<float>(rope_geometry::of(c), ggml_angle(c), kPos, kPos, "float32");
  const auto v = judge::audit(ggml_dump, c, g);
  print("ggml fp32 against ggml's convention", v);
  EXPECT_TRUE(v.pass);
  EXPECT_EQ(v.framework, "ggml");
  EXPECT_LT(v.from_framework.max_ulps * 100, v.from_exact.max_ulps);
  const auto hf_dump = make_dump<float>(rope_geometry::of(c), hf_angle<float>(c), kPos, kPos, "float32");
  EXPECT_FALSE(judge::audit(hf_dump, c, g).pass);
  const auto exact = make_dump<float, double>(rope_geometry::of(c), direct_angle<double>(c), kPos, kPos, "float32");
  expect_top(judge::audit(exact, c, g), "not_ggml_convention");
}

}  // namespace
