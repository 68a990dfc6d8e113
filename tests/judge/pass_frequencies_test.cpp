// tests/judge/pass_frequencies_test.cpp — the frequencies in use: base, scaling, dynamic NTK, theta over
// head_dim, inv_freq precision, dense and sparse positions (pass_frequencies.cpp).
#include "judge/judge_dumps.hpp"

namespace {

using namespace ropecheck;
using namespace ropecheck::judge_test;

TEST(Diagnose, BaseWrong) {
  const auto c = claimed_config();
  auto impl = c;
  impl.base = 10000.0;
  const auto v = judge::audit(make_dump<float>(rope_geometry::of(c), hf_angle<float>(impl), kPos, kPos, "float32"), c);
  print("base 1e4 claimed 5e5", v);
  expect_top(v, "base_wrong");
  EXPECT_NE(v.findings.front().sentence.find("base is 10000 not 500000"), std::string::npos);
}

TEST(Diagnose, BaseWrongBf16) {
  const auto c = claimed_config(128);
  auto impl = c;
  impl.base = 10000.0;
  const auto v = judge::audit(
      make_dump<bfloat16>(rope_geometry::of(c), hf_angle<bfloat16>(impl), kPos, kPos, "bfloat16"), c);
  print("bf16 base 1e4 claimed 5e5", v);
  expect_top(v, "base_wrong");
}

TEST(Diagnose, RotaryDimThetaOverHeadDim) {
  auto c = claimed_config(64);
  c.rotary_dim = 32;
  auto impl = c;
  impl.rotary_dim = 64;  // theta_i = base^(-2i/64) but only 32 coordinates rotated
  const auto v = judge::audit(make_dump<float>(rope_geometry::of(c), hf_angle<float>(impl), kPos, kPos, "float32"), c);
  print("theta over head_dim", v);
  expect_top(v, "rotary_dim_wrong");
}

TEST(Diagnose, InvFreqInBf16) {
  const auto c = claimed_config();
  const auto v = judge::audit(make_dump<float>(rope_geometry::of(c), bf16_inv_freq_angle(c), kPos, kPos, "float32"), c);
  print("inv_freq in bf16", v);
  expect_top(v, "inv_freq_low_precision");
}

// The same bug on a short dense prompt (positions 0..299, base 10000, head_dim 64: what
// `model.to(torch.bfloat16)` does to HF's non-persistent inv_freq buffer, captured by
// python/ropecheck/capture.py). Every angle is within 0.1 rad of its claimed value there (0.035
// rad at most), so the positions "explain" the tokens and the frequency fit must still be asked
// before anything is called unexplained.
TEST(Diagnose, InvFreqInBf16OnAShortDensePrompt) {
  auto c = claimed_config(64);
  c.base = 10000.0;
  std::vector<std::int64_t> pos;
  for (int i = 0; i < 300; ++i) pos.push_back(i);
  const auto v = judge::audit(make_dump<float>(rope_geometry::of(c), bf16_inv_freq_angle(c), pos, pos, "float32"), c);
  print("inv_freq in bf16, positions 0..299", v);
  expect_top(v, "inv_freq_low_precision");
}

// One decode step: a single position, 300, where the bf16 inv_freq is off by at most 0.01 rad in
// most bands (too little for the median-residual test); the angles sit within the fp32 drift bound
// of p * bf16(theta_i) and not of the claim. At position 1 the grid offsets (<= 2^-9 rad) are still
// beyond that bound; at position 0 nothing can be seen and nothing is named but the failure.
TEST(Diagnose, InvFreqInBf16AtOneDecodePosition) {
  auto c = claimed_config(64);
  c.base = 10000.0;
  for (std::int64_t p : {300, 1}) {
    const std::vector<std::int64_t> pos{p};
    const auto v = judge::audit(make_dump<float>(rope_geometry::of(c), bf16_inv_freq_angle(c), pos, pos, "float32"), c);
    print("inv_freq in bf16, one position " + std::to_string(p), v);
    expect_top(v, "inv_freq_low_precision");
  }
  // The correct kernel at the same single position is not diagnosed at all (it passes).
  const std::vector<std::int64_t> pos{300};
  expect_pass(judge::audit(make_dump<float>(rope_geometry::of(c), hf_angle<float>(c), pos, pos, "float32"), c));
}

// The same bug in a bf16 dump: the slow bands' fits are noisy (bf16 outputs), the fast ones show
// the grid.
TEST(Diagnose, InvFreqInBf16Bf16Dump) {
  const auto c = claimed_config(128);
  std::vector<std::int64_t> pos;
  for (int i = 0; i < 64; ++i) pos.push_back(i);
  for (double q = 64; q < 131072; q *= 1.09) pos.push_back(static_cast<std::int64_t>(q));
  const auto v = judge::audit(
      make_dump<bfloat16>(rope_geometry::of(c), bf16_inv_freq_angle(c), pos, pos, "bfloat16"), c);
  print("inv_freq in bf16, bf16 dump", v);
  expect_top(v, "inv_freq_low_precision");
}

// Dynamic NTK: a short sequence rotated with the frequencies of an earlier long one.
TEST(Diagnose, DynamicNtkNotReset) {
  auto c = claimed_config();
  c.scaling = scaling_kind::dynamic_ntk;
  c.factor = 2.0;
  c.max_position_embeddings = 4096;
  std::vector<std::int64_t> pos;
  for (int i = 0; i < 64; ++i) pos.push_back(i);
  for (std::int64_t q : {100, 333, 1000, 1777, 2500, 3333, 4000}) pos.push_back(q);
  const auto good = judge::audit(make_dump<float>(rope_geometry::of(c), hf_angle<float>(c, 4001), pos, pos, "float32"), c);
  print("dynamic NTK, reset", good);
  EXPECT_TRUE(good.pass);
  const auto v = judge::audit(make_dump<float>(rope_geometry::of(c), hf_angle<float>(c, 16384), pos, pos, "float32"), c);
  print("dynamic NTK, stale base of 16384 tokens", v);
  expect_top(v, "dynamic_ntk_not_reset");
  EXPECT_NE(v.findings.front().sentence.find("16384"), std::string::npos) << "the implied length is 16384 exactly";
}

// Dynamic NTK claimed, a call of 4097 tokens rotated with rope_theta unscaled: the base of a sequence of at most
// 4096 tokens, as a key cached by an earlier, shorter call keeps it (one bf16 token, as a decode call's group is
// in tests/python/test_kv_cache.py, where the base scan names it). The fitted rope_theta (below the claim's) is
// read back as the effective base at this length and the length whose base it is.
TEST(Diagnose, DynamicNtkBaseOfAShorterSequenceIsSaidAsItsEffectiveBase) {
  auto c = claimed_config(128);
  c.base = 10000.0;
  c.scaling = scaling_kind::dynamic_ntk;
  c.factor = 2.0;
  c.max_position_embeddings = 4096;
  const std::vector<std::int64_t> pos{4096};
  const auto v =
      judge::audit(make_dump<bfloat16>(rope_geometry::of(c), hf_angle<bfloat16>(c, 4096), pos, pos, "bfloat16", 7, 2), c);
  print("dynamic NTK at 4097 tokens, rotated at the base of 4096", v);
  EXPECT_FALSE(v.pass);
  const auto base = std::find_if(v.findings.begin(), v.findings.end(), [](const auto& f) { return f.bug_class == "base_wrong"; });
  ASSERT_NE(base, v.findings.end()) << "no base_wrong finding";
  EXPECT_NE(base->sentence.find("where the claim's is 10004.96"), std::string::npos) << base->sentence;
  EXPECT_NE(base->sentence.find("at most 4096 tokens"), std::string::npos) << base->sentence;
}

// YaRN claimed, the plain schedule used (the attention factor too is missing then).
TEST(Diagnose, ScalingMissing) {
  auto c = claimed_config();
  c.scaling = scaling_kind::yarn;
  c.factor = 4.0;
  c.original_max_position_embeddings = 32768;
  auto impl = c;
  impl.scaling = scaling_kind::none;
  const auto v = judge::audit(make_dump<float>(rope_geometry::of(c), hf_angle<float>(impl), kPos, kPos, "float32"), c);
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
  const auto v = judge::audit(make_dump<float>(rope_geometry::of(c), hf_angle<float>(impl), kPos, kPos, "float32"), c);
  print("linear 4 claimed, 8 used", v);
  expect_top(v, "scaling_wrong");
  EXPECT_NE(v.findings.front().sentence.find("factor 8"), std::string::npos);
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
  const auto v = judge::audit(d, c);
  print("one head, base 1e4", v);
  expect_top(v, "base_wrong");
}

// Sparse positions (nothing to unwrap a line fit through): the base is still found by scanning
// bases against the wrapped angles. A single position cannot be diagnosed and says so.
TEST(Diagnose, SparsePositionsBaseWrongAndSinglePosition) {
  const auto c = claimed_config();
  auto impl = c;
  impl.base = 10000.0;
  const std::vector<std::int64_t> sparse{17, 4000, 9000, 123456};
  const auto v = judge::audit(make_dump<float>(rope_geometry::of(c), hf_angle<float>(impl), sparse, sparse, "float32"), c);
  print("sparse positions, base 1e4", v);
  expect_top(v, "base_wrong");
  EXPECT_NE(v.findings.front().sentence.find("base is 10000 not 500000"), std::string::npos);
  const std::vector<std::int64_t> one{5};
  const auto w = judge::audit(make_dump<float>(rope_geometry::of(c), hf_angle<float>(impl), one, one, "float32"), c);
  print("one position, base 1e4", w);
  EXPECT_FALSE(w.pass);
  ASSERT_FALSE(w.findings.empty());
  EXPECT_TRUE(w.findings.front().bug_class == "unexplained" || w.findings.front().bug_class == "base_wrong")
      << w.findings.front().bug_class;
}

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
      using value_type [[maybe_unused]] = float;  // the angle-strategy contract (angle.hpp); make_dump does not ask
      hf_angle<float> inner;
      [[nodiscard]] cos_sin_pair<float> cos_sin(std::int64_t pos, int band) const { return inner.cos_sin(pos, band); }
    };
    const auto v = judge::audit(make_dump<float>(g, over_head_dim{hf_angle<float>(impl)}, sparse, sparse, "float32"), c);
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
    const auto v = judge::audit(make_dump<float>(rope_geometry::of(c), hf_angle<float>(impl), sparse, sparse, "float32"), c);
    print("sparse, llama3 claimed, none used", v);
    expect_top(v, "scaling_wrong");
  }
}

}  // namespace
