// tests/report/strategy_outputs_test.cpp — the report's implementations as the judge sees them
// (tools/report/strategy_outputs.hpp) and the judge's class in the report's verdict column.
//
//   * strategy_outputs drives an implementation on the probe set: the dump carries the probe's
//     positions and inputs, its dtype is the implementation's storage type, and every output value
//     is one of that type's values (widened exactly);
//   * the judge's verdict on the llama3-8b preset: the conventions real engines use (HF fp32 and bf16,
//     a fused bf16 kernel, ggml's fp32 chain, fp64) pass or drift; positions held in bf16 are named
//     positions_low_precision first; the report's `passes` is the judge's, the threshold crossings stay
//     figures beside it (hf_bf16 drifts although its bf16 cos/sin are half a token off from p = 118).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <stdexcept>
#include <string>
#include <vector>

#include "report/engine.hpp"
#include "ropecheck/presets.hpp"
#include "ropecheck/scalar.hpp"
#include "report/strategy_outputs.hpp"

namespace {

using namespace ropecheck;
using namespace ropecheck::report;

constexpr std::uint64_t probe_seed = 0x5eed2026;  // the report's default seed

// Every test here draws its inputs from the probe set of this seed.
void print_seed() { std::printf("[ropecheck] seed %llu (probe set)\n", static_cast<unsigned long long>(probe_seed)); }

const rope_config& llama3() {
  static const rope_config c = *find_preset("llama3-8b");
  return c;
}

const judge::probe_set& llama3_probe() {
  static const judge::probe_set p = judge::make_probe(llama3(), probe_seed);
  return p;
}

TEST(StrategyOutputs, carry_the_probe_and_are_values_of_the_storage_dtype) {
  print_seed();
  const auto& probe = llama3_probe();
  struct expectation {
    const char* name;
    const char* dtype;
  };
  for (const auto& [name, dtype] : {expectation{"hf_float", "float32"}, expectation{"hf_bf16", "bfloat16"},
                                    expectation{"fused_bf16", "bfloat16"}, expectation{"direct_double", "float64"},
                                    expectation{"cos_sin_cache_bf16", "float32"}, expectation{"hf_float16", "float16"}}) {
    const judge::dump d = strategy_outputs(name, llama3(), probe);
    EXPECT_EQ(d.dtype, dtype) << name;
    EXPECT_EQ(d.positions, probe.positions) << name;
    EXPECT_EQ(d.x, probe.x) << name;
    EXPECT_EQ(d.tokens, probe.tokens());
    EXPECT_EQ(d.heads, probe.heads);
    EXPECT_EQ(d.head_dim, llama3().head_dim);
    ASSERT_EQ(d.y.size(), d.x.size()) << name;
    const std::string dt = dtype;
    for (const double y : d.y) {
      ASSERT_TRUE(std::isfinite(y)) << name;
      if (dt == "bfloat16") {
        ASSERT_EQ(static_cast<double>(static_cast<float>(bfloat16(static_cast<float>(y)))), y) << name;
      }
      if (dt == "float16") {
        ASSERT_EQ(static_cast<double>(static_cast<float>(float16(static_cast<float>(y)))), y) << name;
      }
      if (dt == "float32") {
        ASSERT_EQ(static_cast<double>(static_cast<float>(y)), y) << name;
      }
    }
  }
}

TEST(StrategyOutputs, position_zero_leaves_the_input_unrotated_and_the_rotation_keeps_the_norm) {
  print_seed();
  // At p = 0 every strategy's angle is exactly 0 and libm's cos/sin of 0 are 1 and 0: y = x (af 1).
  const auto& probe = llama3_probe();
  ASSERT_EQ(probe.positions.front(), 0);
  const auto per_token = static_cast<std::size_t>(probe.heads * probe.head_dim);
  const judge::dump d = strategy_outputs("hf_float", llama3(), probe);
  for (std::size_t j = 0; j < per_token; ++j) ASSERT_EQ(d.y[j], d.x[j]) << j;
  // fp64 everywhere: every pair's length kept to ~2^-50 relative (cos/sin to 2^-53, two roundings each).
  const judge::dump e = strategy_outputs("direct_double", llama3(), probe);
  const int half = llama3().rotary_dim / 2;
  for (std::size_t t = 0; t < static_cast<std::size_t>(e.tokens); ++t)
    for (int h = 0; h < e.heads; ++h)
      for (int b = 0; b < half; ++b) {  // half-split pairs (b, b + rotary_dim / 2)
        const std::size_t a = t * per_token + static_cast<std::size_t>(h * e.head_dim + b), c = a + static_cast<std::size_t>(half);
        const double nx = std::hypot(e.x[a], e.x[c]), ny = std::hypot(e.y[a], e.y[c]);
        ASSERT_NEAR(ny, nx, 0x1p-50 * nx) << "token " << t << " band " << b;
      }
}

TEST(StrategyOutputs, an_unknown_name_or_another_head_dim_is_rejected) {
  EXPECT_THROW((void)strategy_outputs("hf_fp8", llama3(), llama3_probe()), std::invalid_argument);
  rope_config other = llama3();
  other.head_dim = other.rotary_dim = 64;
  EXPECT_THROW((void)strategy_outputs("hf_float", other, llama3_probe()), std::invalid_argument);
}

TEST(JudgeColumn, the_conventions_real_engines_use_pass_or_drift_on_llama3) {
  print_seed();
  for (const char* name : {"hf_float", "hf_bf16", "fused_bf16", "ggml_float", "direct_double"}) {
    const judge_column j = judge_implementation(name, llama3(), probe_seed);
    EXPECT_TRUE(j.judged);
    EXPECT_TRUE(j.pass) << name << ": " << j.verdict << " (worst error/allowance " << j.worst_ratio << "): " << j.finding;
    EXPECT_TRUE(j.verdict == "pass" || j.verdict == "drift") << name << ": " << j.verdict;
    EXPECT_LE(j.worst_ratio, 1.0) << name;
  }
  // fp64 angles: no drift to warn about.
  EXPECT_EQ(judge_implementation("direct_double", llama3(), probe_seed).verdict, "pass");
}

TEST(JudgeColumn, positions_held_in_bf16_are_named_first) {
  print_seed();
  const judge_column j = judge_implementation("bf16_positions", llama3(), probe_seed);
  EXPECT_FALSE(j.pass);
  EXPECT_EQ(j.verdict, "positions_low_precision") << j.finding;
  EXPECT_GT(j.worst_ratio, 1.0);
  EXPECT_EQ(j.dtype, "float32");
}

// On the probe set (which reaches 2^24, where a careful fp32 angle is off by radians) the judge
// still names each bug first, not fp32 drift.
TEST(JudgeColumn, a_fast_sin_cos_and_a_bf16_cos_sin_cache_are_named_first) {
  print_seed();
  const judge_column fast = judge_implementation("fast_sincos", llama3(), probe_seed);
  EXPECT_FALSE(fast.pass);
  EXPECT_EQ(fast.verdict, "fast_sincos") << fast.finding;
  const judge_column cache = judge_implementation("cos_sin_cache_bf16", llama3(), probe_seed);
  EXPECT_FALSE(cache.pass);
  EXPECT_EQ(cache.verdict, "cos_sin_low_precision") << cache.finding;
}

TEST(JudgeColumn, is_the_same_with_one_and_two_threads) {
  print_seed();
  for (const char* name : {"hf_bf16", "bf16_positions"}) {
    const judge_column a = judge_implementation(name, llama3(), probe_seed, 1);
    const judge_column b = judge_implementation(name, llama3(), probe_seed, 2);
    EXPECT_EQ(a.verdict, b.verdict) << name;
    EXPECT_EQ(a.worst_ratio, b.worst_ratio) << name;
    EXPECT_EQ(a.max_error_ulps, b.max_error_ulps) << name;
    EXPECT_EQ(a.finding, b.finding) << name;
  }
}

TEST(JudgeColumn, is_the_reports_verdict_and_the_threshold_crossings_stay_figures) {
  print_seed();
  report_request r;
  r.config_name = "llama3-8b";
  r.config = llama3();
  r.max_position = 131072;
  r.implementations = {"hf_bf16", "bf16_positions"};
  const report_result res = run_report(r);
  const auto& hf = res.series[0];
  const auto& bf = res.series[1];
  // hf_bf16's bf16 cos/sin apply angles up to 1.5 * 2^-8 p tokens off: past half a token from p ~ 100,
  // which a bf16 model cannot represent finer anyway; the judge, in bf16 ulps, lets it drift.
  EXPECT_GE(hf.first_position_error_over_threshold, 0);
  EXPECT_TRUE(hf.judge.judged);
  EXPECT_EQ(hf.judge.verdict, "drift") << hf.judge.finding;
  EXPECT_TRUE(hf.passes);
  EXPECT_EQ(bf.judge.verdict, "positions_low_precision");
  EXPECT_FALSE(bf.passes);
  // Without the judge, the verdict is the thresholds'.
  r.judge = false;
  const report_result no = run_report(r);
  EXPECT_FALSE(no.series[0].judge.judged);
  EXPECT_FALSE(no.series[0].passes);
  EXPECT_EQ(no.series[0].judge.verdict, "");
}

}  // namespace
