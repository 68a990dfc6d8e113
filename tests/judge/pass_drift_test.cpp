// tests/judge/pass_drift_test.cpp — angle error growing with position (pass_drift.cpp).
#include "judge/judge_dumps.hpp"

#include <cmath>
#include <limits>

#include "passes.hpp"  // judge/src: the pass's threshold, tested at equality

namespace {

using namespace ropecheck;
using namespace ropecheck::judge_test;

constexpr double kInf = std::numeric_limits<double>::infinity();  // std::nextafter toward it: one ulp above

TEST(Diagnose, Fp32AnglesInAFloat64Dump) {
  const auto c = claimed_config();
  const auto v = judge::audit(
      make_dump<double, double>(rope_geometry::of(c), hf_angle<double>(c), kPos, kPos, "float64"), c);
  print("fp32 angles, float64 dump", v);
  expect_top(v, "angle_drift_fp32");
}

// Strict mode: the fp32 drift a default audit only warns about fails and is named.
TEST(Diagnose, StrictModeFailsFp32Drift) {
  const auto c = claimed_config();
  const auto d = make_dump<float>(rope_geometry::of(c), hf_angle<float>(c), kPos, kPos, "float32");
  judge::audit_options strict;
  strict.strict = true;
  const auto v = judge::audit(d, c, strict);
  print("HF fp32, strict", v);
  expect_top(v, "angle_drift_fp32");
  EXPECT_TRUE(judge::audit(d, c).pass);
}

// M-RoPE-like (Qwen2-VL style): tokens 100..159 carry other positions in bands 16..63 only (height
// rows in bands 16..39, width columns in 40..63), the rest is correct. No position explains those
// tokens (their bands disagree) and no schedule explains the bands, and the excess is orders of
// magnitude past any fp32 drift: unexplained, naming the tokens and bands where the residual sits,
// never angle_drift_fp32 outside its own error model.
struct mrope_like {
  using value_type = float;
  hf_angle<float> inner;
  bool all_bands = false;  // one other position (p - 100) in every band instead: then positions_wrong
  int shift = 0;           // bands 16..63 at p + shift instead of the image's rows and columns
  [[nodiscard]] cos_sin_pair<float> cos_sin(std::int64_t pos, int band) const {
    if (pos >= 100 && pos < 160) {
      if (all_bands) pos -= 100;
      else if (band >= 16 && shift != 0) pos += shift;
      else if (band >= 16) pos = band < 40 ? (pos - 100) / 8 : (pos - 100) % 8;  // row, column of an 8-wide image
    }
    return inner.cos_sin(pos, band);
  }
};

std::vector<std::int64_t> positions_0_to(int n) {
  std::vector<std::int64_t> p(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) p[static_cast<std::size_t>(i)] = i;
  return p;
}

TEST(Diagnose, MropeLikeBandsAreUnexplainedWithTheirTokensAndBands) {
  const auto c = claimed_config(128);
  const auto pos = positions_0_to(160);
  const auto v = judge::audit(make_dump<float>(rope_geometry::of(c), mrope_like{hf_angle<float>(c)}, pos, pos, "float32"), c);
  print("M-RoPE-like: tokens 100..159 other positions in bands 16..63", v);
  expect_top(v, "unexplained");
  for (const auto& f : v.findings) EXPECT_NE(f.bug_class, "angle_drift_fp32") << f.sentence;
  const std::string& s = v.findings.front().sentence;
  EXPECT_NE(s.find("positions 100..159"), std::string::npos) << s;
  EXPECT_NE(s.find("bands 16..63"), std::string::npos) << s;
  // The whole sentence, never cut at a buffer's length (it is longer than 512 characters).
  EXPECT_TRUE(s.ends_with("agree with the claim within that bound")) << s;

  // A small shift (7 tokens) in bands 16..63: the fast bands 0..15 pin one position per token within
  // 0.1 rad, so this reaches the drift pass from the position side; still far beyond fp32 drift.
  const auto w = judge::audit(
      make_dump<float>(rope_geometry::of(c), mrope_like{hf_angle<float>(c), false, 7}, pos, pos, "float32"), c);
  print("tokens 100..159 at p + 7 in bands 16..63", w);
  expect_top(w, "unexplained");
  for (const auto& f : w.findings) EXPECT_NE(f.bug_class, "angle_drift_fp32") << f.sentence;
  EXPECT_NE(w.findings.front().sentence.find("positions 100..159"), std::string::npos);
  EXPECT_NE(w.findings.front().sentence.find("bands 16..63"), std::string::npos);
}

// The same tokens at other positions in ALL bands: one position explains each token, so it is
// positions_wrong, naming them.
TEST(Diagnose, MropeLikeAllBandsIsPositionsWrong) {
  const auto c = claimed_config(128);
  const auto pos = positions_0_to(160);
  const auto v = judge::audit(
      make_dump<float>(rope_geometry::of(c), mrope_like{hf_angle<float>(c), true}, pos, pos, "float32"), c);
  print("tokens 100..159 other positions in every band", v);
  expect_top(v, "positions_wrong");
}

// ---- the drift bound (every angle error within 2 fixed + K u_f32 |p theta|) ----
// Equality is within: the bound is the largest error fp32 angle formation may reach (K = 4 (k_max +
// 2) already holds a factor 4 of room), so an error that reaches it is still fp32 drift; one ulp past
// it is not (error / bound rounds to 1 + 2^-52 > 1).
TEST(Diagnose, AnErrorAtTheBoundIsWithinFp32Drift) {
  using judge::detail::within_fp32_drift;
  for (const double bound : {1.0, 2.5e-6, 9.3e-3, 0.1}) {
    EXPECT_TRUE(within_fp32_drift(std::nextafter(bound, 0.0), bound)) << bound;
    EXPECT_TRUE(within_fp32_drift(bound, bound)) << bound;
    EXPECT_FALSE(within_fp32_drift(std::nextafter(bound, kInf), bound)) << bound;
  }
  EXPECT_TRUE(within_fp32_drift(0.0, 2.5e-6));  // exact angles
}

}  // namespace
