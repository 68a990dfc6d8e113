// tests/judge/score_dump_test.cpp — scores and weights as data (judge/src/score_dump.cpp): an eager attention
// emulated with ropecheck's HF fp32 rotation of q and k (GQA 4/2), fp32 logits and softmax, a causal mask,
// the weights or logits stored in the dtype; correct, with a per-row constant added, and with each bug planted.
// Inputs k/64 from fixed, printed seeds.
#include "judge/judge_dumps.hpp"

#include <cmath>
#include <string>

#include "ropecheck/judge/score_dump.hpp"
#include "ropecheck/judge/scores.hpp"

namespace {

using namespace ropecheck;
using namespace ropecheck::judge_test;
using judge::score_dump;

rope_config claim() {
  auto c = claimed_config(64);
  c.max_position_embeddings = 131072;
  return c;
}

struct eager {
  rope_config kernel = claim();
  std::int64_t key_shift = 0;
  double scale_factor = 1;
  bool rotate = true;
  double row_constant = 0;  // added to row a's logits times a (BLOOM's slope x key position is one such)
};

// T tokens at first .. first + T - 1, causal; Storage the dtype of the stored values.
template <class Storage>
score_dump attend(const eager& e, std::int64_t first, score_dump::kind what, const std::string& dtype, int T = 40) {
  score_dump d;
  d.what = what;
  d.q_heads = 4, d.k_heads = 2, d.head_dim = 64, d.q_tokens = d.k_tokens = T;
  d.dtype = dtype;
  for (int t = 0; t < T; ++t) d.q_positions.push_back(first + t);
  d.k_positions = d.q_positions;
  std::printf("[ropecheck] seeds 11, 12 (q, k inputs)\n");
  d.q = random_x(static_cast<std::size_t>(T * 4 * 64), 11);
  d.k = random_x(static_cast<std::size_t>(T * 2 * 64), 12);
  for (auto& x : d.q) x /= 4;  // |q . k| scale a few units: weights well inside every dtype's range
  const auto rot = [&](const std::vector<double>& x, std::vector<std::int64_t> pos, int heads) {
    std::vector<Storage> xs(x.size()), ys(x.size());
    for (std::size_t j = 0; j < x.size(); ++j) xs[j] = scalar_traits<Storage>::narrow(x[j]);
    if (!e.rotate) return xs;
    rotate_tokens<float, Storage>(std::span<const Storage>(xs), std::span<Storage>(ys), pos, heads, rope_geometry::of(e.kernel),
                                  hf_angle<float>(e.kernel));
    return ys;
  };
  std::vector<std::int64_t> kp = d.k_positions;
  for (auto& n : kp) n += e.key_shift;
  const auto q = rot(d.q, d.q_positions, 4), k = rot(d.k, kp, 2);
  d.values.assign(static_cast<std::size_t>(4 * T * T), 0.0);
  const float scale = static_cast<float>(e.scale_factor / 8.0);  // 64^-0.5 = 1/8
  for (int h = 0; h < 4; ++h)
    for (int a = 0; a < T; ++a) {
      std::vector<float> s(static_cast<std::size_t>(T), -INFINITY);
      float top = -INFINITY;
      for (int b = 0; b <= a; ++b) {
        float dot = 0;
        for (int j = 0; j < 64; ++j)
          dot += static_cast<float>(scalar_traits<Storage>::widen(q[static_cast<std::size_t>((a * 4 + h) * 64 + j)])) *
                 static_cast<float>(scalar_traits<Storage>::widen(k[static_cast<std::size_t>((b * 2 + h / 2) * 64 + j)]));
        s[static_cast<std::size_t>(b)] = dot * scale + static_cast<float>(e.row_constant * a);
        top = std::max(top, s[static_cast<std::size_t>(b)]);
      }
      float sum = 0;
      std::vector<float> w(static_cast<std::size_t>(T), 0.f);
      for (int b = 0; b <= a; ++b) sum += (w[static_cast<std::size_t>(b)] = std::exp(s[static_cast<std::size_t>(b)] - top));
      for (int b = 0; b < T; ++b) {
        const float x = what == score_dump::kind::weights ? w[static_cast<std::size_t>(b)] / sum : s[static_cast<std::size_t>(b)];
        d.values[static_cast<std::size_t>((h * T + a) * T + b)] =
            std::isinf(x) ? static_cast<double>(x) : static_cast<double>(scalar_traits<Storage>::widen(scalar_traits<Storage>::narrow(x)));
      }
    }
  return d;
}

void print(const std::string& name, const judge::score_dump_verdict& v) {
  std::printf("[%s] %s: %lld scores in %lld rows, noise RMS %.3g, worst %.3g of the allowance (m %lld, n %lld, head %d)\n",
              name.c_str(), v.pass ? "PASS" : "FAIL", static_cast<long long>(v.scores), static_cast<long long>(v.rows), v.noise_rms,
              v.worst_ratio,
              static_cast<long long>(v.worst_m), static_cast<long long>(v.worst_n), v.worst_head);
  for (const auto& f : v.findings) std::printf("  - %s (%.2f): %s\n", f.bug_class.c_str(), f.confidence, f.sentence.c_str());
}

void expect_first(const judge::score_dump_verdict& v, const std::string& cls) {
  EXPECT_FALSE(v.pass);
  ASSERT_FALSE(v.findings.empty()) << "expected " << cls;
  EXPECT_EQ(v.findings.front().bug_class, cls) << v.findings.front().sentence;
}

constexpr auto W = score_dump::kind::weights;
constexpr auto L = score_dump::kind::logits;

TEST(ScoreDump, EagerWeightsAndLogitsPassInFp32AndBf16AtSmallAndLargePositions) {
  for (const std::int64_t first : {std::int64_t{0}, std::int64_t{70000}}) {
    const auto a = judge::audit_scores(attend<float>({}, first, W, "float32"), claim());
    print("fp32 weights", a);
    EXPECT_TRUE(a.pass);
    const auto b = judge::audit_scores(attend<bfloat16>({}, first, W, "bfloat16"), claim());
    print("bf16 weights", b);
    EXPECT_TRUE(b.pass);
    const auto c = judge::audit_scores(attend<bfloat16>({}, first, L, "bfloat16"), claim());
    print("bf16 logits", c);
    EXPECT_TRUE(c.pass);
    EXPECT_GT(c.scores, 4 * 40 * 20);
    for (const auto* x : {&a, &b, &c}) EXPECT_LT(x->noise_rms, 1.0);  // the model's scale or below: far from its bound
  }
}

TEST(ScoreDump, APerRowConstantIsTheSameAttention) {
  eager e;
  e.row_constant = 0.37;  // each row's logits shifted by its own constant: softmax removes it
  const auto v = judge::audit_scores(attend<float>(e, 100, L, "float32"), claim());
  print("logits + a per-row constant", v);
  EXPECT_TRUE(v.pass);
}

TEST(ScoreDump, KeysAtAnotherPositionAreKeyPositionsWrong) {
  eager e;
  e.key_shift = 1;
  const auto v = judge::audit_scores(attend<bfloat16>(e, 0, W, "bfloat16"), claim());
  print("keys at n + 1", v);
  expect_first(v, "key_positions_wrong");
  EXPECT_NE(v.findings.front().sentence.find("positions +1"), std::string::npos) << v.findings.front().sentence;
  EXPECT_LE(v.worst_ratio, 1.0);  // within the worst case: only the statistical half sees it in bf16
  EXPECT_GT(v.noise_rms, judge::detail::kNoiseRms);
  eager none;
  none.rotate = false;
  const auto w = judge::audit_scores(attend<float>(none, 0, W, "float32"), claim());
  print("no RoPE", w);
  expect_first(w, "key_positions_wrong");
  EXPECT_NE(w.findings.front().sentence.find("do not depend on position"), std::string::npos) << w.findings.front().sentence;
}

TEST(ScoreDump, TheOtherLayoutAndAnotherBaseAreNamed) {
  eager e;
  e.kernel.pair_layout = layout::interleaved;
  const auto v = judge::audit_scores(attend<float>(e, 0, W, "float32"), claim());
  print("interleaved", v);
  expect_first(v, "layout_swapped");
  eager b;
  b.kernel.base = 10000;
  const auto w = judge::audit_scores(attend<bfloat16>(b, 0, L, "bfloat16"), claim());
  print("base 1e4", w);
  expect_first(w, "base_wrong");
  EXPECT_NE(w.findings.front().sentence.find("base is 10000 not 500000"), std::string::npos) << w.findings.front().sentence;
}

TEST(ScoreDump, AnotherScaleIsScoreScaleWrong) {
  eager e;
  e.scale_factor = 1.0 / 8;  // 1/d instead of 1/sqrt(d)
  const auto v = judge::audit_scores(attend<float>(e, 0, L, "float32"), claim());
  print("scale 1/d", v);
  expect_first(v, "score_scale_wrong");
  EXPECT_NE(v.findings.front().sentence.find("0.125 times"), std::string::npos) << v.findings.front().sentence;
}

TEST(ScoreDump, TheNoiseBoundAtEquality) {
  EXPECT_TRUE(judge::detail::noise_within(3.0));
  EXPECT_FALSE(judge::detail::noise_within(std::nextafter(3.0, 4.0)));
}

TEST(ScoreDump, InconsistentDumpsAreRefused) {
  auto d = attend<float>({}, 0, W, "float32");
  d.values.pop_back();
  EXPECT_THROW((void)judge::audit_scores(d, claim()), std::invalid_argument);
  auto e = attend<float>({}, 0, W, "float32");
  e.k_heads = 3;
  EXPECT_THROW((void)judge::audit_scores(e, claim()), std::invalid_argument);
  auto f = attend<float>({}, 0, W, "float32");
  f.q[0] = NAN;
  EXPECT_THROW((void)judge::audit_scores(f, claim()), std::invalid_argument);
  auto g = attend<float>({}, 0, W, "float32");
  g.values[5] = NAN;
  expect_first(judge::audit_scores(g, claim()), "non_finite");
}

}  // namespace
