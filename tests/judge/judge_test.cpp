// tests/judge/judge_test.cpp — the diagnosis core of `ropecheck audit`: dumps made with ropecheck's
// own kernels and angle strategies, correct ones pass, each deliberately wrong one is named by the
// top finding.
#include "ropecheck/judge/judge.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <limits>
#include <random>

#include "ropecheck/angle.hpp"
#include "ropecheck/rope.hpp"
#include "ropecheck/reference/reference.hpp"
#include "ropecheck/scalar.hpp"
#include "ropecheck/schedule.hpp"

namespace {

using namespace ropecheck;
using audit::dump;
using audit::verdict;

constexpr int kHeads = 2;

std::vector<std::int64_t> test_positions() {
  std::vector<std::int64_t> p;
  for (int i = 0; i < 64; ++i) p.push_back(i);
  for (std::int64_t q : {1000, 1777, 2500, 3333, 4097, 5000, 15962, 32769, 65537, 100000}) p.push_back(q);
  return p;
}

rope_config claimed_config(int head_dim = 64) {
  rope_config c;
  c.head_dim = c.rotary_dim = head_dim;
  c.base = 500000.0;
  c.pair_layout = layout::half_split;
  c.max_position_embeddings = 131072;
  return c;
}

// Inputs k/64, |k| <= 128: exact in bfloat16 and every wider type.
std::vector<double> random_x(std::size_t n, unsigned seed) {
  std::mt19937 gen(seed);
  std::uniform_int_distribution<int> k(-128, 128);
  std::vector<double> x(n);
  for (auto& v : x) {
    int q = 0;
    while (q == 0) q = k(gen);
    v = q / 64.0;
  }
  return x;
}

// Run the kernel rotate_tokens<Compute, Storage> with `cs` at `used` positions over geometry `g`;
// the dump records the `told` positions.
template <class Storage, class Compute = float, class CS>
dump make_dump(const rope_geometry& g, const CS& cs, const std::vector<std::int64_t>& told,
               const std::vector<std::int64_t>& used, const std::string& dtype, unsigned seed = 7) {
  dump d;
  d.positions = told;
  d.tokens = static_cast<int>(told.size());
  d.heads = kHeads;
  d.head_dim = g.head_dim;
  d.dtype = dtype;
  d.x = random_x(static_cast<std::size_t>(d.tokens) * kHeads * g.head_dim, seed);
  std::vector<Storage> xs(d.x.size()), ys(d.x.size());
  for (std::size_t j = 0; j < xs.size(); ++j) xs[j] = scalar_traits<Storage>::narrow(d.x[j]);
  rotate_tokens<Compute, Storage>(std::span<const Storage>(xs), std::span<Storage>(ys), used, kHeads, g, cs);
  d.y.resize(ys.size());
  for (std::size_t j = 0; j < ys.size(); ++j) d.y[j] = static_cast<double>(scalar_traits<Storage>::widen(ys[j]));
  return d;
}

void print(const std::string& name, const verdict& v) {
  std::printf("[%s] %s  max %.3g ulps (abs %.3g), tolerance %.3g ulps\n  reason: %s\n", name.c_str(),
              v.pass ? "PASS" : "FAIL", v.max_error_ulps, v.max_error_abs, v.tolerance, v.tolerance_reason.c_str());
  for (const auto& f : v.findings) std::printf("  - %s (%.2f): %s\n", f.bug_class.c_str(), f.confidence, f.sentence.c_str());
}

void expect_top(const verdict& v, const std::string& cls) {
  EXPECT_FALSE(v.pass);
  ASSERT_FALSE(v.findings.empty()) << "expected " << cls;
  EXPECT_EQ(v.findings.front().bug_class, cls) << v.findings.front().sentence;
}

// fp32 angle from an inv_freq held in bfloat16 (the framework's fp32 value rounded once).
struct bf16_inv_freq_angle {
  using value_type = float;
  explicit bf16_inv_freq_angle(const rope_config& c) : inner(c) {}
  hf_angle<float> inner;
  [[nodiscard]] float inv(int band) const {
    return static_cast<float>(scalar_traits<bfloat16>::narrow(inner.frequencies().inv_freq[static_cast<std::size_t>(band)]));
  }
  [[nodiscard]] cos_sin_pair<float> cos_sin(std::int64_t pos, int band) const {
    const float a = static_cast<float>(pos) * inv(band);
    return {std::cos(a), std::sin(a)};
  }
};

const auto kPos = test_positions();

TEST(Diagnose, CorrectFp32Passes) {
  const auto c = claimed_config();
  const auto v = audit::audit(make_dump<float>(rope_geometry::of(c), hf_angle<float>(c), kPos, kPos, "float32"), c);
  print("correct fp32", v);
  EXPECT_TRUE(v.pass);
  for (const auto& f : v.findings) EXPECT_EQ(f.bug_class, "angle_drift_fp32");  // a warning at most
}

TEST(Diagnose, CorrectBf16Passes) {
  const auto c = claimed_config();
  const auto v = audit::audit(
      make_dump<bfloat16>(rope_geometry::of(c), hf_angle<bfloat16>(c), kPos, kPos, "bfloat16"), c);
  print("correct bf16", v);
  EXPECT_TRUE(v.pass);
}

TEST(Diagnose, CorrectFp32PartialRotaryPasses) {
  auto c = claimed_config(128);
  c.rotary_dim = 32;
  c.pair_layout = layout::interleaved;
  const auto v = audit::audit(make_dump<float>(rope_geometry::of(c), hf_angle<float>(c), kPos, kPos, "float32"), c);
  print("correct fp32 partial", v);
  EXPECT_TRUE(v.pass);
}

TEST(Diagnose, BaseWrong) {
  const auto c = claimed_config();
  auto impl = c;
  impl.base = 10000.0;
  const auto v = audit::audit(make_dump<float>(rope_geometry::of(c), hf_angle<float>(impl), kPos, kPos, "float32"), c);
  print("base 1e4 claimed 5e5", v);
  expect_top(v, "base_wrong");
  EXPECT_NE(v.findings.front().sentence.find("base is 10000 not 500000"), std::string::npos);
}

TEST(Diagnose, BaseWrongBf16) {
  const auto c = claimed_config(128);
  auto impl = c;
  impl.base = 10000.0;
  const auto v = audit::audit(
      make_dump<bfloat16>(rope_geometry::of(c), hf_angle<bfloat16>(impl), kPos, kPos, "bfloat16"), c);
  print("bf16 base 1e4 claimed 5e5", v);
  expect_top(v, "base_wrong");
}

TEST(Diagnose, LayoutSwapped) {
  const auto c = claimed_config();
  auto g = rope_geometry::of(c);
  g.pair_layout = layout::interleaved;
  const auto v = audit::audit(make_dump<float>(g, hf_angle<float>(c), kPos, kPos, "float32"), c);
  print("interleaved, claimed half_split", v);
  expect_top(v, "layout_swapped");
}

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

TEST(Diagnose, RotaryDimThetaOverHeadDim) {
  auto c = claimed_config(64);
  c.rotary_dim = 32;
  auto impl = c;
  impl.rotary_dim = 64;  // theta_i = base^(-2i/64) but only 32 coordinates rotated
  const auto v = audit::audit(make_dump<float>(rope_geometry::of(c), hf_angle<float>(impl), kPos, kPos, "float32"), c);
  print("theta over head_dim", v);
  expect_top(v, "rotary_dim_wrong");
}

TEST(Diagnose, RotaryDimAllCoordinatesRotated) {
  auto c = claimed_config(64);
  c.rotary_dim = 32;
  auto impl = c;
  impl.rotary_dim = 64;
  const auto v = audit::audit(make_dump<float>(rope_geometry::of(impl), hf_angle<float>(impl), kPos, kPos, "float32"), c);
  print("rotary over head_dim", v);
  expect_top(v, "rotary_dim_wrong");
}

TEST(Diagnose, AttentionFactorMissing) {
  auto c = claimed_config(128);
  c.base = 1000000.0;
  c.scaling = scaling_kind::yarn;
  c.factor = 4.0;
  c.original_max_position_embeddings = 32768;
  c.max_position_embeddings = 131072;
  auto impl = c;
  impl.attention_factor = 1.0;
  const auto v = audit::audit(make_dump<float>(rope_geometry::of(c), hf_angle<float>(impl), kPos, kPos, "float32"), c);
  print("yarn attention factor missing", v);
  expect_top(v, "attention_factor_wrong");
  EXPECT_NE(v.findings.front().sentence.find("missing"), std::string::npos);
}

TEST(Diagnose, CorrectYarnPasses) {
  auto c = claimed_config(128);
  c.base = 1000000.0;
  c.scaling = scaling_kind::yarn;
  c.factor = 4.0;
  c.original_max_position_embeddings = 32768;
  c.max_position_embeddings = 131072;
  const auto v = audit::audit(make_dump<float>(rope_geometry::of(c), hf_angle<float>(c), kPos, kPos, "float32"), c);
  print("correct yarn fp32", v);
  EXPECT_TRUE(v.pass);
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

TEST(Diagnose, CorrectFloat16Passes) {
  const auto c = claimed_config();
  const auto v = audit::audit(
      make_dump<float16>(rope_geometry::of(c), hf_angle<float16>(c), kPos, kPos, "float16"), c);
  print("correct fp16", v);
  EXPECT_TRUE(v.pass);
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

TEST(Diagnose, FastSinCos) {
  const auto c = claimed_config();
  const auto v = audit::audit(make_dump<float>(rope_geometry::of(c), fast_sincos_angle(c), kPos, kPos, "float32"), c);
  print("fast sin/cos", v);
  expect_top(v, "fast_sincos");
}

TEST(Diagnose, CosSinCacheInBf16) {
  const auto c = claimed_config();
  const auto v = audit::audit(
      make_dump<float>(rope_geometry::of(c), cached<bfloat16, hf_angle<float>>(hf_angle<float>(c)), kPos, kPos, "float32"), c);
  print("cos/sin cache in bf16", v);
  expect_top(v, "cos_sin_low_precision");
}

TEST(Diagnose, InvFreqInBf16) {
  const auto c = claimed_config();
  const auto v = audit::audit(make_dump<float>(rope_geometry::of(c), bf16_inv_freq_angle(c), kPos, kPos, "float32"), c);
  print("inv_freq in bf16", v);
  expect_top(v, "inv_freq_low_precision");
}

TEST(Diagnose, Fp32AnglesInAFloat64Dump) {
  const auto c = claimed_config();
  const auto v = audit::audit(
      make_dump<double, double>(rope_geometry::of(c), hf_angle<double>(c), kPos, kPos, "float64"), c);
  print("fp32 angles, float64 dump", v);
  expect_top(v, "angle_drift_fp32");
}

TEST(Diagnose, RejectsInconsistentDumps) {
  const auto c = claimed_config();
  auto d = make_dump<float>(rope_geometry::of(c), hf_angle<float>(c), kPos, kPos, "float32");
  d.dtype = "int8";
  EXPECT_THROW((void)audit::audit(d, c), std::invalid_argument);
  d.dtype = "float32";
  d.y.pop_back();
  EXPECT_THROW((void)audit::audit(d, c), std::invalid_argument);
}

}  // namespace

namespace {
// ggml forms theta_i by repeated fp32 products (2-4x the HF angle error, DESIGN): a careful fp32
// implementation, so it passes, with the drift as a warning at most.
TEST(Diagnose, GgmlAnglesPassWithAWarning) {
  const auto c = claimed_config();
  const auto v = audit::audit(make_dump<float>(rope_geometry::of(c), ggml_angle(c), kPos, kPos, "float32"), c);
  print("ggml fp32", v);
  EXPECT_TRUE(v.pass);
  for (const auto& f : v.findings) EXPECT_EQ(f.bug_class, "angle_drift_fp32") << f.sentence;
}

// With one head there is no rigidity test across heads: the pairing is taken as claimed, and the
// frequency and position tests still work.
TEST(Diagnose, OneHeadBaseWrong) {
  const auto c = claimed_config();
  auto impl = c;
  impl.base = 10000.0;
  auto d = make_dump<float>(rope_geometry::of(c), hf_angle<float>(impl), kPos, kPos, "float32");
  d.heads = 1;
  std::vector<double> x, y;
  for (int t = 0; t < d.tokens; ++t)
    for (int j = 0; j < d.head_dim; ++j) {
      x.push_back(d.x[static_cast<std::size_t>(t) * kHeads * d.head_dim + j]);
      y.push_back(d.y[static_cast<std::size_t>(t) * kHeads * d.head_dim + j]);
    }
  d.x = x, d.y = y;
  const auto v = audit::audit(d, c);
  print("one head, base 1e4", v);
  expect_top(v, "base_wrong");
}
}  // namespace

namespace {

using namespace ropecheck;

// Dynamic NTK: a short sequence rotated with the frequencies of an earlier long one.
TEST(Diagnose, DynamicNtkNotReset) {
  auto c = claimed_config();
  c.scaling = scaling_kind::dynamic_ntk;
  c.factor = 2.0;
  c.max_position_embeddings = 4096;
  std::vector<std::int64_t> pos;
  for (int i = 0; i < 64; ++i) pos.push_back(i);
  for (std::int64_t q : {100, 333, 1000, 1777, 2500, 3333, 4000}) pos.push_back(q);
  const auto good = audit::audit(make_dump<float>(rope_geometry::of(c), hf_angle<float>(c, 4001), pos, pos, "float32"), c);
  print("dynamic NTK, reset", good);
  EXPECT_TRUE(good.pass);
  const auto v = audit::audit(make_dump<float>(rope_geometry::of(c), hf_angle<float>(c, 16384), pos, pos, "float32"), c);
  print("dynamic NTK, stale base of 16384 tokens", v);
  expect_top(v, "dynamic_ntk_not_reset");
  EXPECT_NE(v.findings.front().sentence.find("16384"), std::string::npos) << "the implied length is 16384 exactly";
}

// YaRN claimed, the plain schedule used (the attention factor too is missing then).
TEST(Diagnose, ScalingMissing) {
  auto c = claimed_config();
  c.scaling = scaling_kind::yarn;
  c.factor = 4.0;
  c.original_max_position_embeddings = 32768;
  auto impl = c;
  impl.scaling = scaling_kind::none;
  const auto v = audit::audit(make_dump<float>(rope_geometry::of(c), hf_angle<float>(impl), kPos, kPos, "float32"), c);
  print("yarn claimed, none used", v);
  expect_top(v, "scaling_wrong");
  EXPECT_NE(v.findings.front().sentence.find("no scaling"), std::string::npos);
  const bool factor_named = std::any_of(v.findings.begin(), v.findings.end(),
                                        [](const auto& f) { return f.bug_class == "attention_factor_wrong"; });
  EXPECT_TRUE(factor_named);
}

TEST(Diagnose, ScalingFactorWrong) {
  auto c = claimed_config();
  c.scaling = scaling_kind::linear;
  c.factor = 4.0;
  auto impl = c;
  impl.factor = 8.0;
  const auto v = audit::audit(make_dump<float>(rope_geometry::of(c), hf_angle<float>(impl), kPos, kPos, "float32"), c);
  print("linear 4 claimed, 8 used", v);
  expect_top(v, "scaling_wrong");
  EXPECT_NE(v.findings.front().sentence.find("factor 8"), std::string::npos);
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

// HF's convention as the reference: the HF fp32 dump sits far closer to it than to exact angles,
// and passes with the convention's tighter allowance (no angle term); a dump with fp64 angles is
// then the one that differs.
TEST(Diagnose, HfReferenceJudgesAgainstHfsOwnAngles) {
  const auto c = claimed_config();
  const auto hf_dump = make_dump<float>(rope_geometry::of(c), hf_angle<float>(c), kPos, kPos, "float32");
  audit::audit_options hf;
  hf.reference = audit::reference_kind::hf;
  const auto v = audit::audit(hf_dump, c, hf);
  print("HF fp32 against HF's convention", v);
  EXPECT_TRUE(v.pass);
  EXPECT_EQ(v.reference, audit::reference_kind::hf);
  EXPECT_LT(v.from_framework.max_ulps * 100, v.from_exact.max_ulps);
  EXPECT_EQ(v.max_error_ulps, v.from_framework.max_ulps);
  const auto exact_dump = make_dump<float, double>(rope_geometry::of(c), direct_angle<double>(c), kPos, kPos, "float32");
  const auto w = audit::audit(exact_dump, c, hf);
  print("fp64 angles against HF's convention", w);
  EXPECT_FALSE(w.pass);
  EXPECT_TRUE(audit::audit(exact_dump, c).pass);
}

// Strict mode: the fp32 drift a default audit only warns about fails and is named.
TEST(Diagnose, StrictModeFailsFp32Drift) {
  const auto c = claimed_config();
  const auto d = make_dump<float>(rope_geometry::of(c), hf_angle<float>(c), kPos, kPos, "float32");
  audit::audit_options strict;
  strict.strict = true;
  const auto v = audit::audit(d, c, strict);
  print("HF fp32, strict", v);
  expect_top(v, "angle_drift_fp32");
  EXPECT_TRUE(audit::audit(d, c).pass);
}

// A flat tolerance override replaces the derived allowance (both ways).
TEST(Diagnose, ToleranceOverride) {
  const auto c = claimed_config();
  const auto d = make_dump<float>(rope_geometry::of(c), hf_angle<float>(c), kPos, kPos, "float32");
  const auto base = audit::audit(d, c);
  audit::audit_options o;
  o.tolerance_ulps = base.max_error_ulps * 0.5;
  EXPECT_FALSE(audit::audit(d, c, o).pass);
  o.tolerance_ulps = base.max_error_ulps * 2;
  EXPECT_TRUE(audit::audit(d, c, o).pass);
  o.tolerance_ulps = -1;
  EXPECT_THROW((void)audit::audit(d, c, o), std::invalid_argument);
}

// NaN in the output fails with its own finding; the verdict does not depend on the thread count;
// a dump larger than the diagnosis budget is diagnosed on a subset with the same top finding.
TEST(Diagnose, NonFiniteThreadsAndSubsets) {
  const auto c = claimed_config();
  auto d = make_dump<float>(rope_geometry::of(c), hf_angle<float>(c), kPos, kPos, "float32");
  auto bad = d;
  bad.y[5] = std::numeric_limits<double>::quiet_NaN();
  const auto nf = audit::audit(bad, c);
  expect_top(nf, "non_finite");

  auto impl = c;
  impl.base = 10000.0;
  const auto wrong = make_dump<float>(rope_geometry::of(c), hf_angle<float>(impl), kPos, kPos, "float32");
  audit::audit_options one, many, small;
  one.threads = 1;
  many.threads = 3;
  small.diagnosis_tokens = 70;
  const auto a = audit::audit(wrong, c, one), b = audit::audit(wrong, c, many), s = audit::audit(wrong, c, small);
  EXPECT_EQ(a.max_error_ulps, b.max_error_ulps);
  EXPECT_EQ(a.worst_ratio, b.worst_ratio);
  EXPECT_EQ(a.from_framework.max_ulps, b.from_framework.max_ulps);
  EXPECT_EQ(a.from_exact.worst_position, b.from_exact.worst_position);
  ASSERT_EQ(a.findings.size(), b.findings.size());
  EXPECT_EQ(s.tokens_diagnosed, 70);
  EXPECT_EQ(a.tokens_diagnosed, 74);
  expect_top(s, "base_wrong");
}

}  // namespace

namespace {
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

TEST(Diagnose, ExactAnglesAreNotHfsConvention) {
  const auto c = claimed_config();
  const auto d = make_dump<float, double>(rope_geometry::of(c), direct_angle<double>(c), kPos, kPos, "float32");
  audit::audit_options hf;
  hf.reference = audit::reference_kind::hf;
  const auto v = audit::audit(d, c, hf);
  print("fp64 angles, HF reference", v);
  expect_top(v, "not_hf_convention");
}
}  // namespace

namespace {
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
}  // namespace

namespace {
// The same bug in a bf16 dump: the slow bands' fits are noisy (bf16 outputs), the fast ones show
// the grid.
TEST(Diagnose, InvFreqInBf16Bf16Dump) {
  const auto c = claimed_config(128);
  std::vector<std::int64_t> pos;
  for (int i = 0; i < 64; ++i) pos.push_back(i);
  for (double q = 64; q < 131072; q *= 1.09) pos.push_back(static_cast<std::int64_t>(q));
  const auto v = audit::audit(
      make_dump<bfloat16>(rope_geometry::of(c), bf16_inv_freq_angle(c), pos, pos, "bfloat16"), c);
  print("inv_freq in bf16, bf16 dump", v);
  expect_top(v, "inv_freq_low_precision");
}
}  // namespace

namespace {
// The implied scores: exact angles rounded to fp32 keep the relative-offset identity to within the
// element allowance (cos/sin 3u + rotation 2u per component gives ||y - y*|| <= 2 * 5u ||x||, and
// a score error <= 2 * that: 20u); positions held in bf16 break it by orders of magnitude. Every
// token gets its own error entry.
TEST(Diagnose, ScoreViolationAndPerPositionErrors) {
  const auto c = claimed_config();
  const auto good = audit::audit(
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
  const auto bad = audit::audit(make_dump<float, double>(rope_geometry::of(c), direct_angle<double>(c), kPos, used, "float32"), c);
  std::printf("score violation, positions in bf16: %.3g at m=%lld n=%lld\n", bad.score_violation,
              static_cast<long long>(bad.score_violation_m), static_cast<long long>(bad.score_violation_n));
  EXPECT_GT(bad.score_violation, 1e-3);
}
}  // namespace

namespace {
// ggml's convention as the reference: ggml's own fp32 chain passes it tightly (no angle term) and
// sits far closer to it than to exact angles; HF's fp32 angles do not reproduce it.
TEST(Diagnose, GgmlReferenceJudgesAgainstGgmlsChain) {
  const auto c = claimed_config();
  audit::audit_options g;
  g.reference = audit::reference_kind::ggml;
  const auto ggml_dump = make_dump<float>(rope_geometry::of(c), ggml_angle(c), kPos, kPos, "float32");
  const auto v = audit::audit(ggml_dump, c, g);
  print("ggml fp32 against ggml's convention", v);
  EXPECT_TRUE(v.pass);
  EXPECT_EQ(v.framework, "ggml");
  EXPECT_LT(v.from_framework.max_ulps * 100, v.from_exact.max_ulps);
  const auto hf_dump = make_dump<float>(rope_geometry::of(c), hf_angle<float>(c), kPos, kPos, "float32");
  EXPECT_FALSE(audit::audit(hf_dump, c, g).pass);
  const auto exact = make_dump<float, double>(rope_geometry::of(c), direct_angle<double>(c), kPos, kPos, "float32");
  expect_top(audit::audit(exact, c, g), "not_ggml_convention");
}
}  // namespace

namespace {
// Sparse positions (nothing to unwrap a line fit through): the base is still found by scanning
// bases against the wrapped angles. A single position cannot be diagnosed and says so.
TEST(Diagnose, SparsePositionsBaseWrongAndSinglePosition) {
  const auto c = claimed_config();
  auto impl = c;
  impl.base = 10000.0;
  const std::vector<std::int64_t> sparse{17, 4000, 9000, 123456};
  const auto v = audit::audit(make_dump<float>(rope_geometry::of(c), hf_angle<float>(impl), sparse, sparse, "float32"), c);
  print("sparse positions, base 1e4", v);
  expect_top(v, "base_wrong");
  EXPECT_NE(v.findings.front().sentence.find("base is 10000 not 500000"), std::string::npos);
  const std::vector<std::int64_t> one{5};
  const auto w = audit::audit(make_dump<float>(rope_geometry::of(c), hf_angle<float>(impl), one, one, "float32"), c);
  print("one position, base 1e4", w);
  EXPECT_FALSE(w.pass);
  ASSERT_FALSE(w.findings.empty());
  EXPECT_TRUE(w.findings.front().bug_class == "unexplained" || w.findings.front().bug_class == "base_wrong")
      << w.findings.front().bug_class;
}
}  // namespace

namespace {
// One head: no rigidity across heads, the pairing is judged by the magnitude ratios.
TEST(Diagnose, OneHeadLayoutSwapped) {
  const auto c = claimed_config();
  auto impl = c;
  impl.pair_layout = layout::interleaved;
  dump d = make_dump<float>(rope_geometry::of(impl), hf_angle<float>(c), kPos, kPos, "float32");
  // keep head 0 only
  dump one = d;
  one.heads = 1;
  one.x.clear();
  one.y.clear();
  for (int t = 0; t < d.tokens; ++t) {
    const auto o = static_cast<std::ptrdiff_t>(static_cast<std::size_t>(t) * kHeads * d.head_dim);
    one.x.insert(one.x.end(), d.x.begin() + o, d.x.begin() + o + d.head_dim);
    one.y.insert(one.y.end(), d.y.begin() + o, d.y.begin() + o + d.head_dim);
  }
  const auto v = audit::audit(one, c);
  print("one head, interleaved claimed half_split", v);
  expect_top(v, "layout_swapped");
}
}  // namespace

namespace {
// Sparse positions: the discrete hypotheses are judged on the wrapped angles too.
TEST(Diagnose, SparsePositionsOtherFrequencyClasses) {
  const std::vector<std::int64_t> sparse{17, 4000, 9000, 50001, 123456};
  {
    auto c = claimed_config(128);
    c.rotary_dim = 64;
    auto impl = c;
    impl.rotary_dim = 128;  // theta over head_dim, applied to the first 64 coordinates
    const auto g = rope_geometry::of(c);
    struct over_head_dim {
      using value_type = float;
      hf_angle<float> inner;
      [[nodiscard]] cos_sin_pair<float> cos_sin(std::int64_t pos, int band) const { return inner.cos_sin(pos, band); }
    };
    const auto v = audit::audit(make_dump<float>(g, over_head_dim{hf_angle<float>(impl)}, sparse, sparse, "float32"), c);
    print("sparse, theta over head_dim", v);
    expect_top(v, "rotary_dim_wrong");
  }
  {
    auto c = claimed_config();
    c.scaling = scaling_kind::llama3;
    c.factor = 8;
    c.original_max_position_embeddings = 8192;
    auto impl = c;
    impl.scaling = scaling_kind::none;
    const auto v = audit::audit(make_dump<float>(rope_geometry::of(c), hf_angle<float>(impl), sparse, sparse, "float32"), c);
    print("sparse, llama3 claimed, none used", v);
    expect_top(v, "scaling_wrong");
  }
}
}  // namespace
