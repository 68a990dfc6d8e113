// tests/judge/readout_test.cpp — RoPE inside attention (judge/src/readout.cpp): the attention probe's design,
// and the scores read back from o = softmax(scale q'k'^T) v of an emulated fused kernel (ropecheck's HF fp32
// rotation of q and k, fp32 scores and softmax, o stored in the dtype), correct and with each bug planted.
#include "judge/judge_dumps.hpp"

#include <cmath>
#include <limits>
#include <string>

#include "ropecheck/judge/readout.hpp"
#include "ropecheck/judge/scores.hpp"

namespace {

using namespace ropecheck;
using namespace ropecheck::judge_test;

rope_config claim() {
  auto c = claimed_config(64);
  c.max_position_embeddings = 8192;
  return c;
}

struct bugs {
  rope_config kernel;             // the convention the kernel rotates with
  std::int64_t key_shift = 0;     // keys rotated at n + shift
  double scale_factor = 1;        // the scores multiplied by this beyond the probe's scale
  bool no_rope = false;
};

// The fused kernel: q' and k' by rotate_tokens<float, Storage> with HF's fp32 angles, s = scale q'.k' in float,
// an fp32 softmax per row, o (= the weights: v is one-hot) stored in Storage.
template <class Storage>
std::vector<double> attend(const judge::attention_probe& p, const bugs& b) {
  const auto D = static_cast<std::size_t>(p.head_dim), DV = static_cast<std::size_t>(p.value_dim);
  const auto rotate = [&](const std::vector<double>& x, std::vector<std::int64_t> pos, int heads) {
    std::vector<Storage> xs(x.size()), ys(x.size());
    for (std::size_t j = 0; j < x.size(); ++j) xs[j] = scalar_traits<Storage>::narrow(x[j]);
    if (b.no_rope) return xs;
    rotate_tokens<float, Storage>(std::span<const Storage>(xs), std::span<Storage>(ys), pos, heads,
                                  rope_geometry::of(b.kernel), hf_angle<float>(b.kernel));
    return ys;
  };
  std::vector<std::int64_t> kpos = p.k_positions;
  for (auto& n : kpos) n += b.key_shift;
  const auto q = rotate(p.q, p.q_positions, p.q_heads), k = rotate(p.k, kpos, p.k_heads);
  std::vector<double> o(p.q_positions.size() * static_cast<std::size_t>(p.q_heads) * DV);
  for (int c = 0; c < p.calls_count(); ++c) {
    const auto k0 = static_cast<std::size_t>(p.key_calls[static_cast<std::size_t>(c)]);
    const std::size_t nk = static_cast<std::size_t>(p.key_calls[static_cast<std::size_t>(c) + 1]) - k0;
    for (auto e = static_cast<std::size_t>(p.calls[static_cast<std::size_t>(c)]); e < static_cast<std::size_t>(p.calls[static_cast<std::size_t>(c) + 1]); ++e)
    for (int h = 0; h < p.q_heads; ++h) {
      const int g = judge::key_head_of(h, p.q_heads, p.k_heads);
      std::vector<float> s(nk);
      float top = -INFINITY;
      for (std::size_t j = 0; j < nk; ++j) {
        float dot = 0;
        for (std::size_t i = 0; i < D; ++i)
          dot += static_cast<float>(scalar_traits<Storage>::widen(q[(e * static_cast<std::size_t>(p.q_heads) + static_cast<std::size_t>(h)) * D + i])) *
                 static_cast<float>(scalar_traits<Storage>::widen(k[((k0 + j) * static_cast<std::size_t>(p.k_heads) + static_cast<std::size_t>(g)) * D + i]));
        s[j] = dot * static_cast<float>(p.softmax_scale * b.scale_factor);
        top = std::max(top, s[j]);
      }
      float sum = 0;
      for (auto& x : s) sum += (x = std::exp(x - top));
      for (std::size_t j = 0; j < nk; ++j)
        o[(e * static_cast<std::size_t>(p.q_heads) + static_cast<std::size_t>(h)) * DV + j] =
            static_cast<double>(scalar_traits<Storage>::widen(scalar_traits<Storage>::narrow(s[j] / sum)));
    }
  }
  return o;
}

void print(const std::string& name, const judge::attention_verdict& v) {
  std::printf("[%s] %s: %lld scores read, scale ratio %.4g, worst error/allowance %.3g\n", name.c_str(), v.pass ? "PASS" : "FAIL",
              static_cast<long long>(v.cells), v.scale_ratio, v.scores.worst_ratio);
  for (const auto& f : v.findings) std::printf("  - %s (%.2f): %s\n", f.bug_class.c_str(), f.confidence, f.sentence.c_str());
}

void expect_first(const judge::attention_verdict& v, const std::string& cls) {
  EXPECT_FALSE(v.pass);
  ASSERT_FALSE(v.findings.empty()) << "expected " << cls;
  EXPECT_EQ(v.findings.front().bug_class, cls) << v.findings.front().sentence;
}

const judge::attention_probe& probe() {
  static const judge::attention_probe p = judge::make_attention_probe(claim(), 8, 2, 64);
  return p;
}

TEST(Readout, TheProbeIsOnePositionACallWithContiguousKeysEndingAtItAndAZeroKeyFirst) {
  const auto& p = probe();
  ASSERT_GT(p.calls_count(), 0);
  for (int c = 0; c < p.calls_count(); ++c) {
    const auto e = static_cast<std::size_t>(p.calls[static_cast<std::size_t>(c)]);
    ASSERT_EQ(p.calls[static_cast<std::size_t>(c) + 1], p.calls[static_cast<std::size_t>(c)] + 8);  // 32 bands, 4 a query
    for (std::size_t f = e; f < e + 8; ++f) EXPECT_EQ(p.q_positions[f], p.q_positions[e]);
    const auto k0 = static_cast<std::size_t>(p.key_calls[static_cast<std::size_t>(c)]);
    const auto k1 = static_cast<std::size_t>(p.key_calls[static_cast<std::size_t>(c) + 1]);
    ASSERT_LE(k1 - k0, 64u);
    EXPECT_EQ(p.k_positions[k1 - 1], p.q_positions[e]);
    for (std::size_t j = k0 + 1; j < k1; ++j) EXPECT_EQ(p.k_positions[j], p.k_positions[j - 1] + 1);
    for (std::size_t i = 0; i < 2 * 64; ++i) EXPECT_EQ(p.k[k0 * 2 * 64 + i], 0.0);  // the zero key, both heads
  }
  EXPECT_EQ(p.q_positions.front(), 63);
  EXPECT_NE(std::find(p.q_positions.begin(), p.q_positions.end(), (std::int64_t{1} << 24) + 1), p.q_positions.end());
  const double af = 1, C = p.softmax_scale * af * af * p.q_amplitude * p.k_amplitude;
  EXPECT_GE(C, 0.5);
  EXPECT_LE(C, 1.0);
  EXPECT_THROW((void)judge::make_attention_probe(claim(), 7, 7, 64), std::invalid_argument);  // odd query heads
  EXPECT_THROW((void)judge::make_attention_probe(claim(), 8, 3, 64), std::invalid_argument);
  EXPECT_THROW((void)judge::make_attention_probe(claim(), 8, 2, judge::min_attention_keys - 1), std::invalid_argument);
  EXPECT_NO_THROW((void)judge::make_attention_probe(claim(), 8, 2, judge::min_attention_keys));
  const auto limited = judge::make_attention_probe(claim(), 8, 2, 64, 0, 4096);
  EXPECT_EQ(*std::max_element(limited.q_positions.begin(), limited.q_positions.end()), 4096);
}

TEST(Readout, CorrectFusedKernelsPassInFp32Bf16AndFp16) {
  const auto c = claim();
  const auto f32 = judge::audit_attention(probe(), attend<float>(probe(), {c}), "float32", c);
  print("fp32", f32);
  EXPECT_TRUE(f32.pass);
  EXPECT_NEAR(f32.scale_ratio, 1, 1e-3);
  const auto b16 = judge::audit_attention(probe(), attend<bfloat16>(probe(), {c}), "bfloat16", c);
  print("bf16", b16);
  EXPECT_TRUE(b16.pass);
  const auto h16 = judge::audit_attention(probe(), attend<float16>(probe(), {c}), "float16", c);
  print("fp16", h16);
  EXPECT_TRUE(h16.pass);
  for (const auto* v : {&f32, &b16, &h16})
    for (const auto& f : v->findings) EXPECT_EQ(f.bug_class, "angle_drift_fp32") << f.sentence;
}

TEST(Readout, KeysRotatedAtAnotherPositionAreKeyPositionsWrong) {
  const auto c = claim();
  const auto v = judge::audit_attention(probe(), attend<float>(probe(), {c, 1}), "float32", c);
  print("keys at n + 1", v);
  expect_first(v, "key_positions_wrong");
  EXPECT_NE(v.findings.front().sentence.find("-1"), std::string::npos) << v.findings.front().sentence;
}

TEST(Readout, AnotherBaseInsideTheKernelIsBaseWrong) {
  const auto c = claim();
  auto k = c;
  k.base = 10000;
  const auto v = judge::audit_attention(probe(), attend<bfloat16>(probe(), {k}), "bfloat16", c);
  print("base 1e4 in bf16", v);
  expect_first(v, "base_wrong");
  EXPECT_NE(v.findings.front().sentence.find("base is 10000"), std::string::npos) << v.findings.front().sentence;
}

TEST(Readout, TheOtherLayoutInsideTheKernelIsLayoutSwapped) {
  const auto c = claim();
  auto k = c;
  k.pair_layout = layout::interleaved;
  const auto v = judge::audit_attention(probe(), attend<bfloat16>(probe(), {k}), "bfloat16", c);
  print("interleaved in bf16", v);
  expect_first(v, "layout_swapped");
}

TEST(Readout, AnotherSoftmaxScaleIsScoreScaleWrong) {
  const auto c = claim();
  // 1/d instead of 1/sqrt(d): the scores are 1/8 of the claim's.
  const auto v = judge::audit_attention(probe(), attend<float>(probe(), {c, 0, 0.125}), "float32", c);
  print("scale 1/d", v);
  expect_first(v, "score_scale_wrong");
  EXPECT_NEAR(v.scale_ratio, 0.125, 1e-3);
  // YaRN's temperature applied twice on the logits: 1 + 0.1 ln 4 once too often.
  const double t = 1 + 0.1 * std::log(4.0);
  const auto w = judge::audit_attention(probe(), attend<bfloat16>(probe(), {c, 0, t * t}), "bfloat16", c);
  print("temperature^2 on the logits", w);
  expect_first(w, "score_scale_wrong");
}

TEST(Readout, NoRotationFails) {
  const auto c = claim();
  const auto v = judge::audit_attention(probe(), attend<float>(probe(), {c, 0, 1, true}), "float32", c);
  print("no RoPE", v);
  EXPECT_FALSE(v.pass);
  ASSERT_FALSE(v.findings.empty());
}

TEST(Readout, OutputsThatDoNotComeFromVAreRefused) {
  const auto c = claim();
  const auto wide = judge::make_attention_probe(c, 8, 2, 80);  // 64 keys a call, 80 value coordinates
  auto o = attend<float>(wide, {c});
  const auto DV = static_cast<std::size_t>(wide.value_dim);
  const auto nk0 = static_cast<std::size_t>(wide.key_calls[1] - wide.key_calls[0]);
  ASSERT_EQ(nk0, 64u);
  auto past = o;
  past[nk0] = 0.01;  // a value past the first call's keys
  EXPECT_THROW((void)judge::audit_attention(wide, past, "float32", c), std::invalid_argument);
  auto zero_past = o;
  zero_past[nk0] = -0.0;  // a zero there is what v gives
  EXPECT_TRUE(judge::audit_attention(wide, zero_past, "float32", c).pass);
  // A negative weight is no softmax weight (exp >= 0 in every dtype); -0 is a zero.
  auto negative = o, negative_zero = o;
  negative[1] = -std::numeric_limits<double>::denorm_min(), negative[0] += o[1];
  negative_zero[0] += o[1], negative_zero[1] = -0.0;
  EXPECT_THROW((void)judge::audit_attention(wide, negative, "float32", c), std::invalid_argument);
  EXPECT_NO_THROW((void)judge::audit_attention(wide, negative_zero, "float32", c));
  // A row's sum: 1 +- 1/8 reads (at the boundary), beyond it is refused.
  auto low = o, lower = o;
  for (std::size_t j = 0; j < DV; ++j) low[j] = lower[j] = 0;
  low[0] = 0.875, lower[0] = std::nextafter(0.875, 0.0);  // the first row sums to exactly 7/8, or just below
  EXPECT_NO_THROW((void)judge::audit_attention(wide, low, "float32", c));
  EXPECT_THROW((void)judge::audit_attention(wide, lower, "float32", c), std::invalid_argument);
  EXPECT_THROW((void)judge::audit_attention(wide, std::vector<double>(o.begin(), o.end() - 1), "float32", c),
               std::invalid_argument);
  auto nan = o;
  nan[1] = NAN;
  expect_first(judge::audit_attention(wide, nan, "float32", c), "non_finite");
}

}  // namespace
