// tests/judge/bias_test.cpp — the bias judge's ALiBi half (ropecheck/judge/bias.hpp): engines' conventions emulated
// here (slopes by the paper's get_slopes and MPT's gen_slopes written in this file, not the claim's rules; scores and
// bias rounded in T with Eigen's bfloat16 / half or float; the softmax in fp32, as the engines do), run on
// make_bias_probe's calls, read back by bias_evidence_of_attention and judged by judge_bias. Correct conventions
// pass in fp32, bf16 and fp16; each emulated bug is named with its class. Deterministic: no randomness.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "ropecheck/judge/bias.hpp"
#include "ropecheck/judge/classes.hpp"
#include "ropecheck/scalar.hpp"

namespace ropecheck::judge_test {
namespace {

using namespace ropecheck::judge;

// The paper's get_slopes (ofirpress/attention_with_linear_biases): a power of two n gives start^(i+1) with
// start = 2^(-8/n); otherwise the closest power of two's slopes and every other slope of twice that.
std::vector<double> paper_slopes(int n) {
  int p = 1;
  while (2 * p <= n) p *= 2;
  const auto pow2 = [](int k) {
    std::vector<double> s;
    for (int i = 0; i < k; ++i) s.push_back(std::pow(std::exp2(-8.0 / k), i + 1));
    return s;
  };
  std::vector<double> s = pow2(p);
  if (p == n) return s;
  const std::vector<double> extra = pow2(2 * p);
  for (int i = 0; i < n - p; ++i) s.push_back(extra[static_cast<std::size_t>(2 * i)]);
  return s;
}

// MPT's gen_slopes: 2^ceil(log2 H) slopes 1 / 2^(k bias_max / P), strided when P != H.
std::vector<double> mpt_slopes(int H, double bias_max) {
  int P = 1;
  while (P < H) P *= 2;
  std::vector<double> s;
  for (int k = 1; k <= P; ++k) s.push_back(1 / std::exp2(k * bias_max / P));
  if (P == H) return s;
  std::vector<double> o;
  for (int i = 1; i < P; i += 2) o.push_back(s[static_cast<std::size_t>(i)]);
  for (int i = 0; i < P; i += 2) o.push_back(s[static_cast<std::size_t>(i)]);
  o.resize(static_cast<std::size_t>(H));
  return o;
}

// How each engine forms the scores, from its code (read in the repositories themselves):
// - transformers models/bloom/modeling_bloom.py build_alibi_tensor: fp32 slopes x the key positions (cumsum of the
//   mask), `.to(dtype)`; BloomAttention: `alibi.baddbmm(..., beta=self.beta, alpha=self.inv_norm_factor)`, beta
//   1: the bias is not scaled.
// - transformers models/falcon/modeling_falcon.py build_alibi_tensor: `slopes[..., None].bfloat16() *
//   arange_tensor` (int positions, promoted to bf16: the product is rounded in bf16 whatever the model dtype), then
//   `.to(dtype)`. Eager FalconAttention.forward: the scores cast to fp32, `+ alibi`, then `*= self.inv_norm_factor`.
//   SDPA (FalconModel._update_causal_mask): `alibi / math.sqrt(...)` in the model dtype, folded into the mask.
// - flash-attention csrc/flash_attn/src/alibi.h Alibi::apply_alibi: causal `+= alibi_slope * col_idx` (the key
//   position) on the unscaled scores with the slope divided by scale_softmax (csrc/flash_attn/src/flash_fwd_kernel.h), softmax then
//   scales; non-causal `-= alibi_slope * abs(row_idx + max_seqlen_k - max_seqlen_q - col_idx)`; slopes fp32.
// - vLLM csrc/attention/attention_kernels.cuh: `qk = scale * dot; qk += alibi_slope * (token_idx - seq_len + 1)`.
enum class engine {
  eager_key_position,  // HF BLOOM: slope x n built in fp32, held in T (.to(dtype)), added in T
  eager_relative,      // a bias tensor -slope (m - n) held in T, added in T
  kernel_fp32,         // vLLM's paged kernel / flash-attn non-causal: -slope (m - n) (|m - n|) in fp32, fp32 scores
  flash_causal,        // flash-attn causal: (slope / scale) x n added to the unscaled fp32 scores, softmax scales
  hf_falcon_eager,     // HF Falcon eager: bf16(bf16(slope) x bf16(n)) -> T; fp32 (q.k + alibi) x inv_norm_factor
  hf_falcon_sdpa,      // HF Falcon SDPA: the same bias -> T, / sqrt(head_dim) in T, added to the scaled scores in T
};

struct kernel {
  std::vector<double> slopes;  // per held head, as the kernel's code computes them
  engine how = engine::eager_key_position;
  double inv_norm = 1;         // HF Falcon's inv_norm_factor (1: none)
  bool bias_in_bf16 = false;   // the bias tensor held in bf16 whatever T
  bool symmetric = false;      // kernel_fp32: -slope |m - n| (flash-attn non-causal)
};

template <class T>
std::vector<double> run(const attention_probe& p, const kernel& k) {
  const auto HQ = static_cast<std::size_t>(p.q_heads), DV = static_cast<std::size_t>(p.value_dim);
  std::vector<double> o(p.q_positions.size() * HQ * DV);
  const auto t = [](double x) { return static_cast<double>(static_cast<T>(static_cast<float>(x))); };
  const auto bf = [](double x) { return static_cast<double>(static_cast<Eigen::bfloat16>(static_cast<float>(x))); };
  const auto f = [](double x) { return static_cast<double>(static_cast<float>(x)); };
  for (int c = 0; c < p.calls_count(); ++c) {
    const auto e = static_cast<std::size_t>(p.calls[static_cast<std::size_t>(c)]);
    const auto k0 = static_cast<std::size_t>(p.key_calls[static_cast<std::size_t>(c)]);
    const std::size_t nk = static_cast<std::size_t>(p.key_calls[static_cast<std::size_t>(c) + 1]) - k0;
    const std::int64_t m = p.q_positions[e];
    for (std::size_t h = 0; h < HQ; ++h) {
      const double slope = k.slopes[h];
      std::vector<float> s(nk);
      for (std::size_t j = 0; j < nk; ++j) {
        const std::int64_t n = p.k_positions[k0 + j];
        const double qk = p.q_amplitude * p.k_amplitude;  // exact in every T
        const double sc = p.softmax_scale;
        switch (k.how) {
          case engine::kernel_fp32: {
            const double dist = k.symmetric ? static_cast<double>(std::llabs(m - n)) : static_cast<double>(m - n);
            s[j] = static_cast<float>(f(qk * sc) - f(f(slope) * dist));
            break;
          }
          case engine::flash_causal:
            s[j] = static_cast<float>(f(f(qk + f(f(slope) / f(sc)) * static_cast<double>(n)) * f(sc)));
            break;
          case engine::hf_falcon_eager:
          case engine::hf_falcon_sdpa: {
            const double stored = t(bf(bf(slope) * bf(static_cast<double>(n))));
            s[j] = k.how == engine::hf_falcon_eager ? static_cast<float>(f(f(qk + stored) * f(k.inv_norm)))
                                                    : static_cast<float>(t(t(qk * sc) + t(stored * k.inv_norm)));
            break;
          }
          default: {
            const double bias = k.how == engine::eager_key_position ? f(f(slope) * static_cast<double>(n))
                                                                   : -f(f(slope) * static_cast<double>(m - n));
            const double stored = k.bias_in_bf16 ? bf(bias) : t(bias);
            s[j] = static_cast<float>(t(t(qk * sc) + stored));
          }
        }
      }
      const float mx = *std::max_element(s.begin(), s.end());
      float sum = 0;
      std::vector<float> w(nk);
      for (std::size_t j = 0; j < nk; ++j) sum += (w[j] = std::exp(s[j] - mx));
      for (std::size_t j = 0; j < nk; ++j) o[(e * HQ + h) * DV + j] = t(w[j] / sum);
    }
  }
  return o;
}

std::vector<double> slice(const std::vector<double>& g, int from, int count) {
  return {g.begin() + from, g.begin() + from + count};
}

bias_claim alibi(int H, alibi_distance d, alibi_slope_rule rule = alibi_slope_rule::press, double bias_max = 8) {
  bias_claim c;
  c.alibi.heads = H, c.alibi.distance = d, c.alibi.rule = rule, c.alibi.bias_max = bias_max;
  return c;
}

template <class T>
bias_verdict judge_run(const bias_claim& c, const kernel& k, const std::string& dtype, std::int64_t max_position = 0) {
  const attention_probe p = make_bias_probe(c, c.alibi.held_heads(), 64, 64, 0, max_position);
  const bias_evidence e = bias_evidence_of_attention(p, run<T>(p, k), dtype);
  const bias_verdict v = judge_bias(e, c);
  std::printf("  %s: %s, worst %.3g of the allowance (head %d, m %lld, n %lld), %lld cells, %lld rows dropped%s%s\n",
              dtype.c_str(), v.pass ? "pass" : "fail", v.worst_ratio, v.worst_head, static_cast<long long>(v.worst_m),
              static_cast<long long>(v.worst_n), static_cast<long long>(v.cells), static_cast<long long>(e.dropped_rows),
              v.findings.empty() ? "" : ": ", v.findings.empty() ? "" : (v.findings[0].bug_class + " " + v.findings[0].sentence).c_str());
  return v;
}

// Every correct convention passes in the three dtypes (fp16's positions stop at 65536: slope x n past 65504 is
// infinite in fp16, BLOOM's own limit).
void expect_pass_every_dtype(const bias_claim& c, const kernel& k) {
  EXPECT_TRUE(judge_run<float>(c, k, "float32").pass);
  EXPECT_TRUE(judge_run<Eigen::bfloat16>(c, k, "bfloat16").pass);
  EXPECT_TRUE(judge_run<Eigen::half>(c, k, "float16", 65536).pass);
}

TEST(AlibiConventions, BloomSlopeTimesKeyPositionHeldInTPasses) {
  kernel k{paper_slopes(16), engine::eager_key_position};
  expect_pass_every_dtype(alibi(16, alibi_distance::key_position), k);
  // Its bias differs from -slope (m - n) by slope m, a per-row constant: a relative claim passes it too.
  EXPECT_TRUE(judge_run<float>(alibi(16, alibi_distance::relative), k, "float32").pass);
}

TEST(AlibiConventions, MptGenSlopesWithBiasMaxEightPassForTwelveHeads) {
  expect_pass_every_dtype(alibi(12, alibi_distance::relative, alibi_slope_rule::mpt, 8),
                          kernel{mpt_slopes(12, 8), engine::eager_relative});
  expect_pass_every_dtype(alibi(16, alibi_distance::relative, alibi_slope_rule::mpt, 8),
                          kernel{mpt_slopes(16, 8), engine::eager_relative});
}

TEST(AlibiConventions, HfFalconBf16ProductScaledWithTheScoresPassesEagerAndSdpa) {
  bias_claim c = alibi(32, alibi_distance::key_position);
  c.alibi.slopes_bf16 = true, c.alibi.bias_scale = 1 / std::sqrt(64.0);
  expect_pass_every_dtype(c, kernel{paper_slopes(32), engine::hf_falcon_eager, 1 / std::sqrt(64.0)});
  expect_pass_every_dtype(c, kernel{paper_slopes(32), engine::hf_falcon_sdpa, 1 / std::sqrt(64.0)});
  // 71 heads (Falcon-7B's count: 64 + 7 interleaved, slopes that are no power of two).
  bias_claim c71 = alibi(71, alibi_distance::key_position);
  c71.alibi.slopes_bf16 = true, c71.alibi.bias_scale = 1 / std::sqrt(64.0);
  EXPECT_TRUE(judge_run<Eigen::bfloat16>(c71, kernel{paper_slopes(71), engine::hf_falcon_sdpa, 1 / std::sqrt(64.0)},
                                         "bfloat16").pass);
}

TEST(AlibiConventions, VllmFalconFp32SlopesTimesInverseSqrtHeadDimInTheKernelPass) {
  bias_claim c = alibi(32, alibi_distance::relative);
  c.alibi.bias_scale = 1 / std::sqrt(64.0);
  std::vector<double> s = paper_slopes(32);
  for (double& x : s) x /= std::sqrt(64.0);
  expect_pass_every_dtype(c, kernel{s, engine::kernel_fp32});
}

TEST(AlibiConventions, FlashAttnCausalKeyPositionOnUnscaledScoresPasses) {
  // Its bias is + slope n: a per-row constant from -slope (m - n), so a relative claim passes it (rule 1).
  expect_pass_every_dtype(alibi(16, alibi_distance::relative), kernel{paper_slopes(16), engine::flash_causal});
  expect_pass_every_dtype(alibi(12, alibi_distance::key_position), kernel{paper_slopes(12), engine::flash_causal});
}

TEST(AlibiConventions, SymmetricNonCausalPassesAndACausalKernelUnderItIsNamed) {
  expect_pass_every_dtype(alibi(8, alibi_distance::symmetric), kernel{paper_slopes(8), engine::kernel_fp32, 1, false, true});
  // -slope (m - n) on keys after the query grows with distance there: the sign is wrong on that side.
  const bias_verdict v = judge_run<float>(alibi(8, alibi_distance::symmetric), kernel{paper_slopes(8), engine::kernel_fp32},
                                          "float32");
  EXPECT_FALSE(v.pass);
  ASSERT_FALSE(v.findings.empty());
  EXPECT_EQ(v.findings[0].bug_class, classes::bias_sign_wrong) << v.findings[0].sentence;
}

TEST(AlibiConventions, FlashAttnRelativeFp32InKernelAndATensorParallelRankPass) {
  expect_pass_every_dtype(alibi(8, alibi_distance::relative), kernel{paper_slopes(8), engine::kernel_fp32});
  bias_claim c = alibi(32, alibi_distance::relative);
  c.alibi.head_offset = 16, c.alibi.local_heads = 16;
  expect_pass_every_dtype(c, kernel{slice(paper_slopes(32), 16, 16), engine::kernel_fp32});
}

void expect_named(const bias_verdict& v, const char* cls) {
  EXPECT_FALSE(v.pass);
  ASSERT_FALSE(v.findings.empty());
  EXPECT_EQ(v.findings[0].bug_class, cls) << v.findings[0].sentence;
}

TEST(AlibiBugs, UniformSlopesForTwelveHeads) {
  std::vector<double> s;
  for (int h = 1; h <= 12; ++h) s.push_back(std::exp2(-8.0 * h / 12));  // mlx's create_alibi_slope before PR 3071
  expect_named(judge_run<float>(alibi(12, alibi_distance::relative), kernel{s, engine::kernel_fp32}, "float32"),
               classes::alibi_slopes_wrong);
  expect_named(judge_run<Eigen::bfloat16>(alibi(12, alibi_distance::relative), kernel{s, engine::kernel_fp32}, "bfloat16"),
               classes::alibi_slopes_wrong);
}

TEST(AlibiBugs, ExponentOffByOne) {
  std::vector<double> s;
  for (int h = 0; h < 8; ++h) s.push_back(std::exp2(-8.0 * h / 8));  // head 0 with slope 1
  expect_named(judge_run<float>(alibi(8, alibi_distance::relative), kernel{s, engine::kernel_fp32}, "float32"),
               classes::alibi_slopes_wrong);
}

TEST(AlibiBugs, SlopesSortedInsteadOfInterleaved) {
  std::vector<double> s = paper_slopes(12);
  std::sort(s.begin(), s.end(), std::greater<>());
  expect_named(judge_run<float>(alibi(12, alibi_distance::key_position), kernel{s, engine::eager_key_position}, "float32"),
               classes::alibi_slopes_wrong);
}

TEST(AlibiBugs, SlopesSortedAscending) {
  std::vector<double> s = paper_slopes(12);
  std::sort(s.begin(), s.end());
  const bias_verdict v = judge_run<float>(alibi(12, alibi_distance::relative), kernel{s, engine::kernel_fp32}, "float32");
  expect_named(v, classes::alibi_slopes_wrong);
  EXPECT_NE(v.findings.at(0).sentence.find("ascending"), std::string::npos) << v.findings.at(0).sentence;
}

TEST(AlibiBugs, ThePapersSlopesUnderAnMptClaimOfFour) {
  const bias_verdict v = judge_run<float>(alibi(12, alibi_distance::relative, alibi_slope_rule::mpt, 4),
                                          kernel{paper_slopes(12), engine::eager_relative}, "float32");
  expect_named(v, classes::alibi_slopes_wrong);
  EXPECT_NE(v.findings.at(0).sentence.find("alibi_bias_max 8 "), std::string::npos) << v.findings.at(0).sentence;
  EXPECT_NE(v.findings.at(0).sentence.find("get_slopes (press)"), std::string::npos) << v.findings.at(0).sentence;
}

TEST(AlibiBugs, AlibiBiasMaxSixteenUnderAnMptClaimOfEight) {
  const bias_verdict v = judge_run<float>(alibi(12, alibi_distance::relative, alibi_slope_rule::mpt, 8),
                                          kernel{mpt_slopes(12, 16), engine::eager_relative}, "float32");
  expect_named(v, classes::alibi_slopes_wrong);
  EXPECT_NE(v.findings.at(0).sentence.find("alibi_bias_max 16"), std::string::npos);
}

TEST(AlibiBugs, RankOneOfTwoUsingRankZerosSlopesAndLocalHeadCount) {
  bias_claim c = alibi(32, alibi_distance::relative);
  c.alibi.head_offset = 16, c.alibi.local_heads = 16;
  const bias_verdict rank0 = judge_run<float>(c, kernel{slice(paper_slopes(32), 0, 16), engine::kernel_fp32}, "float32");
  expect_named(rank0, classes::alibi_slopes_wrong);
  EXPECT_NE(rank0.findings.at(0).sentence.find("head offset 0"), std::string::npos);
  const bias_verdict local = judge_run<float>(c, kernel{paper_slopes(16), engine::kernel_fp32}, "float32");
  expect_named(local, classes::alibi_slopes_wrong);
  EXPECT_NE(local.findings.at(0).sentence.find("local head count"), std::string::npos);
}

TEST(AlibiBugs, SignFlipped) {
  std::vector<double> s = paper_slopes(8);
  for (double& x : s) x = -x;
  expect_named(judge_run<float>(alibi(8, alibi_distance::relative), kernel{s, engine::kernel_fp32}, "float32"),
               classes::bias_sign_wrong);
}

TEST(AlibiBugs, BiasMissing) {
  expect_named(judge_run<Eigen::bfloat16>(alibi(8, alibi_distance::key_position),
                                          kernel{std::vector<double>(8, 0.0), engine::eager_key_position}, "bfloat16"),
               classes::bias_missing);
}

TEST(AlibiBugs, BloomBiasScaledByInverseSqrtHeadDim) {
  std::vector<double> s = paper_slopes(16);
  for (double& x : s) x /= 8;
  const bias_verdict v = judge_run<float>(alibi(16, alibi_distance::key_position), kernel{s, engine::eager_key_position}, "float32");
  expect_named(v, classes::bias_scaled);
  EXPECT_NE(v.findings.at(0).sentence.find("1/sqrt(64)"), std::string::npos);
}

TEST(AlibiBugs, FalconScaleMissing) {
  bias_claim c = alibi(32, alibi_distance::key_position);
  c.alibi.slopes_bf16 = true, c.alibi.bias_scale = 1 / std::sqrt(64.0);
  const bias_verdict v = judge_run<float>(c, kernel{paper_slopes(32), engine::hf_falcon_eager, 1}, "float32");
  expect_named(v, classes::bias_scaled);
  EXPECT_NE(v.findings.at(0).sentence.find("sqrt(64)"), std::string::npos);
}

TEST(AlibiBugs, Bf16BiasUnderFp32OutputsAtLongDistance) {
  kernel k{paper_slopes(16), engine::eager_key_position};
  k.bias_in_bf16 = true;
  expect_named(judge_run<float>(alibi(16, alibi_distance::key_position), k, "float32"), classes::bias_low_precision);
}

TEST(BiasProbe, TheDefaultSoftmaxScaleIsTheFamilys) {
  // T5 scales nothing (modeling_t5.py T5Attention.forward): q.k = A B = 1, the score constant 1; ALiBi's families
  // scale by head_dim^-0.5: A B = 8 at head_dim 64, the constant 1 again.
  bias_claim t5;
  t5.scheme = bias_scheme::t5;
  t5.t5 = {32, 128, true, 8, {}};
  const attention_probe pt = make_bias_probe(t5, 8, 64, 64, 0);
  EXPECT_EQ(pt.softmax_scale, 1.0);
  EXPECT_EQ(pt.q_amplitude * pt.k_amplitude, 1.0);
  const attention_probe pa = make_bias_probe(alibi(8, alibi_distance::relative), 8, 64, 64, 0);
  EXPECT_EQ(pa.softmax_scale, 0.125);
  EXPECT_EQ(pa.q_amplitude * pa.k_amplitude, 8.0);
  EXPECT_EQ(make_bias_probe(t5, 8, 64, 64, 0.125).softmax_scale, 0.125);  // a scale given is kept
}

TEST(AlibiProbe, KeysCarryNoPositionalSignalAndWindowsEndAtTheQuery) {
  const attention_probe p = make_bias_probe(alibi(8, alibi_distance::relative), 2, 64, 64, 0);
  for (int c = 0; c < p.calls_count(); ++c) {
    const auto k0 = static_cast<std::size_t>(p.key_calls[static_cast<std::size_t>(c)]);
    const auto k1 = static_cast<std::size_t>(p.key_calls[static_cast<std::size_t>(c) + 1]);
    EXPECT_EQ(p.k_positions[k1 - 1], p.q_positions[static_cast<std::size_t>(c)]);
    for (std::size_t j = k0; j + 1 < k1; ++j) EXPECT_EQ(p.k_positions[j] + 1, p.k_positions[j + 1]);
  }
  EXPECT_EQ(p.q_positions.back(), std::int64_t{1} << 20);
  EXPECT_EQ(p.q_positions.front(), 63);
  // Boundaries at equality: value_dim 16 and kv_heads dividing the heads are accepted, 15 and 3 refused.
  EXPECT_NO_THROW((void)make_bias_probe(alibi(8, alibi_distance::relative), 8, 16, 64, 0));
  EXPECT_THROW((void)make_bias_probe(alibi(8, alibi_distance::relative), 8, 15, 64, 0), std::invalid_argument);
  EXPECT_THROW((void)make_bias_probe(alibi(8, alibi_distance::relative), 3, 64, 64, 0), std::invalid_argument);
  EXPECT_NO_THROW((void)make_bias_probe(alibi(8, alibi_distance::relative), 8, 64, 64, 0, 63));
  EXPECT_THROW((void)make_bias_probe(alibi(8, alibi_distance::relative), 8, 64, 64, 0, 62), std::invalid_argument);
}

TEST(AlibiEvidence, OutputsThatAreNotSoftmaxWeightsAreRefused) {
  const attention_probe p = make_bias_probe(alibi(8, alibi_distance::relative), 8, 64, 64, 0, 64);
  std::vector<double> o = run<float>(p, kernel{paper_slopes(8), engine::kernel_fp32});
  std::vector<double> doubled = o;
  for (double& x : doubled) x *= 2;
  EXPECT_THROW((void)bias_evidence_of_attention(p, doubled, "float32"), std::invalid_argument);
  EXPECT_THROW((void)bias_evidence_of_attention(p, std::vector<double>(o.begin(), o.end() - 1), "float32"), std::invalid_argument);
}

}  // namespace
}  // namespace ropecheck::judge_test
