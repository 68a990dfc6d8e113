// tests/judge/probe_set_test.cpp — the judge on the probe set (ropecheck/judge/probe.hpp), the inputs
// the plugin door will drive kernels with: dumps made with ropecheck's own kernels and angle
// strategies (the report's registry, tools/report/engine.cpp) at positions 0..63, +-8 around 256,
// 2048, 4096, 65504 and 2^24 (fp32 positions round past it), 8 per octave to 2 max_position_embeddings.
// Correct conventions real engines use pass with at most the fp32 drift warning; each known-bad
// strategy fails with its class named first.
#include "judge/judge_dumps.hpp"
#include "judge/probe_dumps.hpp"

#include <cstdio>
#include <stdexcept>

#include "ropecheck/judge/probe.hpp"
#include "ropecheck/presets.hpp"

namespace {

using namespace ropecheck;
using namespace ropecheck::judge_test;

constexpr std::uint64_t kSeed = 20240601;

// The kernel rotate_tokens<Compute, Storage> with `cs` over geometry g, on the probe set of c.
template <class Storage, class Compute = float, class CS>
dump probe_dump(const rope_config& c, const rope_geometry& g, const CS& cs, const std::string& dtype) {
  return probe_dump_in<Storage, Compute>(c, g, cs, dtype, kSeed);
}

// Two claims: a plain schedule (base 500000, max_position_embeddings 131072) and Llama-3.1-8B's
// Llama-3 scaling.
std::vector<std::pair<std::string, rope_config>> claims() {
  return {{"plain", claimed_config(128)}, {"llama3-8b", *find_preset("llama3-8b")}};
}

rope_config with_layout(rope_config c, layout l) {
  c.pair_layout = l;
  return c;
}

// The probe set holds positions past 2^24 (where fp32 positions round): the allowance's k_pos.
TEST(ProbeSet, ReachesPastTwoToTheTwentyFour) {
  const auto p = judge::probe_positions(claimed_config(128));
  EXPECT_EQ(p.back(), (std::int64_t{1} << 24) + 8);
  EXPECT_NE(std::find(p.begin(), p.end(), 262144), p.end());  // 2 max_position_embeddings
}

TEST(ProbeSet, CorrectConventionsPass) {
  for (const auto& [name, c] : claims()) {
    const auto g = rope_geometry::of(c);
    const auto hf32 = judge::audit(probe_dump<float>(c, g, hf_angle<float>(c), "float32"), c);
    print(name + ": HF fp32", hf32);
    expect_pass(hf32);
    // HF with a bf16 model: fp32 angle, cos/sin cast to bf16, bf16 storage and arithmetic.
    const auto hf16 = judge::audit(probe_dump<bfloat16, bfloat16>(c, g, hf_angle<bfloat16>(c), "bfloat16"), c);
    print(name + ": HF bf16", hf16);
    expect_pass(hf16);
    // ggml's fp32 chain of products in both of its layouts (NEOX half-split, NORM interleaved).
    for (layout l : {layout::half_split, layout::interleaved}) {
      const rope_config cl = with_layout(c, l);
      const auto gg = judge::audit(probe_dump<float>(cl, rope_geometry::of(cl), ggml_angle(cl), "float32"), cl);
      print(name + ": ggml fp32 " + std::string(to_string(l)), gg);
      expect_pass(gg);
    }
    const auto dd = judge::audit(probe_dump<double, double>(c, g, direct_angle<double>(c), "float64"), c);
    print(name + ": direct double", dd);
    expect_pass(dd);
  }
}

// Where the fp32 drift fails (strict mode; fp32 angles in a float64 dump) it is named as such, past
// 2^24 too: fp32's rounded positions there are its own error model's k_pos, not positions_low_precision.
TEST(ProbeSet, Fp32DriftIsNamedAsDriftPastTwoToTheTwentyFour) {
  for (const auto& [name, c] : claims()) {
    const auto g = rope_geometry::of(c);
    judge::audit_options strict;
    strict.strict = true;
    const auto s = judge::audit(probe_dump<float>(c, g, hf_angle<float>(c), "float32"), c, strict);
    print(name + ": HF fp32, strict", s);
    expect_top(s, "angle_drift_fp32");
    const auto w = judge::audit(probe_dump<double, double>(c, g, hf_angle<double>(c), "float64"), c);
    print(name + ": fp32 angles in a float64 dump", w);
    expect_top(w, "angle_drift_fp32");
    for (const auto* v : {&s, &w})
      for (const auto& f : v->findings) EXPECT_NE(f.bug_class, "positions_low_precision") << f.sentence;
  }
}

TEST(ProbeSet, KnownBadStrategiesFailWithTheirClassFirst) {
  for (const auto& [name, c] : claims()) {
    const auto g = rope_geometry::of(c);
    const auto bp = judge::audit(probe_dump<float>(c, g, storage_positions<bfloat16, float>(c), "float32"), c);
    print(name + ": positions in bf16", bp);
    expect_top(bp, "positions_low_precision");
    const auto fs = judge::audit(probe_dump<float>(c, g, fast_sincos_angle(c), "float32"), c);
    print(name + ": fast sin/cos", fs);
    expect_top(fs, "fast_sincos");
    const auto cc = judge::audit(probe_dump<float>(c, g, cached<bfloat16, hf_angle<float>>(hf_angle<float>(c)), "float32"), c);
    print(name + ": bf16 cos/sin cache", cc);
    expect_top(cc, "cos_sin_low_precision");
  }
}

// The call plan (judge::plan_calls), the one every door walks. A probe set of the given positions
// (the plan reads only the positions).
judge::probe_set positions_only(std::vector<std::int64_t> p) {
  judge::probe_set s;
  s.positions = std::move(p);
  return s;
}

std::vector<std::int64_t> iota_positions(std::int64_t first, int n) {
  std::vector<std::int64_t> p(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) p[static_cast<std::size_t>(i)] = first + i;
  return p;
}

// The prefill split is `n < max_prefill_tokens`: a run of exactly 64 is one call, 65 is 64 + an isolated
// last token (prefilled with its neighbour), 66 is 64 + 2.
TEST(ProbePlan, a_run_of_64_consecutive_positions_is_one_prefill_call_and_65_is_two) {
  ASSERT_EQ(judge::max_prefill_tokens, 64);
  const auto p64 = judge::plan_calls(positions_only(iota_positions(100, 64)), judge::call_form::prefill);
  ASSERT_EQ(p64.size(), 1u);
  EXPECT_EQ(p64[0].first, 0);
  EXPECT_EQ(p64[0].count, 64);
  EXPECT_EQ(p64[0].positions, iota_positions(100, 64));
  EXPECT_FALSE(p64[0].has_neighbour);
  EXPECT_EQ(p64[0].probe_at, 0);

  const auto p65 = judge::plan_calls(positions_only(iota_positions(100, 65)), judge::call_form::prefill);
  ASSERT_EQ(p65.size(), 2u);
  EXPECT_EQ(p65[0].count, 64);
  EXPECT_EQ(p65[1].first, 64);
  EXPECT_EQ(p65[1].count, 1);
  EXPECT_TRUE(p65[1].has_neighbour);
  EXPECT_EQ(p65[1].neighbour, 163);
  EXPECT_EQ(p65[1].positions, (std::vector<std::int64_t>{163, 164}));
  EXPECT_EQ(p65[1].probe_at, 1);

  const auto p66 = judge::plan_calls(positions_only(iota_positions(100, 66)), judge::call_form::prefill);
  ASSERT_EQ(p66.size(), 2u);
  EXPECT_EQ(p66[1].count, 2);
  EXPECT_FALSE(p66[1].has_neighbour);
}

// An isolated position p is prefilled as (p - 1, p); position 0 has no predecessor: (0, 1).
TEST(ProbePlan, an_isolated_position_is_prefilled_after_its_predecessor_and_0_before_1) {
  const auto plan = judge::plan_calls(positions_only({0, 5, 6, 9}), judge::call_form::prefill);
  ASSERT_EQ(plan.size(), 3u);
  EXPECT_EQ(plan[0].positions, (std::vector<std::int64_t>{0, 1}));
  EXPECT_EQ(plan[0].probe_at, 0);
  EXPECT_TRUE(plan[0].has_neighbour);
  EXPECT_EQ(plan[0].neighbour, 1);
  EXPECT_EQ(plan[1].positions, (std::vector<std::int64_t>{5, 6}));
  EXPECT_FALSE(plan[1].has_neighbour);
  EXPECT_EQ(plan[2].positions, (std::vector<std::int64_t>{8, 9}));
  EXPECT_EQ(plan[2].probe_at, 1);
  EXPECT_EQ(plan[2].first, 3);
  // 1 is its own: a run of one too, prefilled as (0, 1).
  const auto one = judge::plan_calls(positions_only({1}), judge::call_form::prefill);
  ASSERT_EQ(one.size(), 1u);
  EXPECT_EQ(one[0].positions, (std::vector<std::int64_t>{0, 1}));
  EXPECT_EQ(one[0].probe_at, 1);
}

// On the real probe set, in both forms: the calls carry every token once, in order, each call's probe
// tokens at positions[probe_at ..] being the probe set's; decode calls are one token, no neighbour;
// prefill calls are 2 to 64 tokens.
TEST(ProbePlan, every_probe_token_is_in_exactly_one_call_of_either_form) {
  for (const auto& [name, c] : claims()) {
    const judge::probe_set ps = judge::make_probe(c, kSeed);
    for (const auto form : {judge::call_form::prefill, judge::call_form::decode}) {
      SCOPED_TRACE(name + " " + judge::to_string(form));
      const auto plan = judge::plan_calls(ps, form);
      std::vector<int> seen(static_cast<std::size_t>(ps.tokens()), 0);
      int next = 0;
      for (const auto& call : plan) {
        EXPECT_EQ(call.first, next);
        next += call.count;
        const std::size_t extra = call.has_neighbour ? 1 : 0;
        ASSERT_EQ(call.positions.size(), static_cast<std::size_t>(call.count) + extra);
        for (int i = 0; i < call.count; ++i) {
          ++seen[static_cast<std::size_t>(call.first + i)];
          EXPECT_EQ(call.positions[static_cast<std::size_t>(call.probe_at + i)],
                    ps.positions[static_cast<std::size_t>(call.first + i)]);
        }
        if (form == judge::call_form::decode) {
          EXPECT_EQ(call.count, 1);
          EXPECT_FALSE(call.has_neighbour);
        } else {
          EXPECT_GE(call.positions.size(), 2u);
          EXPECT_LE(call.positions.size(), static_cast<std::size_t>(judge::max_prefill_tokens));
        }
      }
      EXPECT_EQ(next, ps.tokens());
      EXPECT_EQ(std::count(seen.begin(), seen.end(), 1), ps.tokens());
      if (form == judge::call_form::decode) {
        EXPECT_EQ(plan.size(), static_cast<std::size_t>(ps.tokens()));
      }
    }
  }
}

}  // namespace

namespace ropecheck {
namespace {

// M-RoPE plans (probe_set::position_rows given, 3 rows [t, h, w]): text 0..3, a 1 x 2 x 2 image at
// st = 4 (row 0 stays at 4), a 2 x 1 x 2 video at st = 6 (row 0 steps 6 -> 7), then an isolated text
// token 20. A prefill run goes on while row 0 steps by 0 or +1 and breaks at +2 (4 -> 6) and beyond.
judge::probe_set mrope_probe() {
  judge::probe_set s;
  const std::vector<std::vector<std::int64_t>> tokens = {{0, 0, 0}, {1, 1, 1}, {2, 2, 2}, {3, 3, 3},
                                                         {4, 4, 4}, {4, 4, 5}, {4, 5, 4}, {4, 5, 5},
                                                         {6, 6, 6}, {6, 6, 7}, {7, 6, 6}, {7, 6, 7},
                                                         {20, 20, 20}};
  s.position_rows.resize(3 * tokens.size());
  for (std::size_t t = 0; t < tokens.size(); ++t) {
    s.positions.push_back(tokens[t][0]);
    for (std::size_t r = 0; r < 3; ++r) s.position_rows[r * tokens.size() + t] = tokens[t][r];
  }
  return s;
}

TEST(ProbePlan, m_rope_prefill_runs_go_on_while_row_0_stays_or_steps_by_one_and_each_call_carries_its_rows) {
  const auto plan = judge::plan_calls(mrope_probe(), judge::call_form::prefill);
  ASSERT_EQ(plan.size(), 3u);
  // Text 0..3 and the image (row 0: 3 -> 4 steps by one, then stays): one call of 8 tokens.
  EXPECT_EQ(plan[0].first, 0);
  EXPECT_EQ(plan[0].count, 8);
  EXPECT_EQ(plan[0].positions, (std::vector<std::int64_t>{0, 1, 2, 3, 4, 4, 4, 4}));
  EXPECT_EQ(plan[0].position_rows, (std::vector<std::int64_t>{0, 1, 2, 3, 4, 4, 4, 4,  //
                                                              0, 1, 2, 3, 4, 4, 5, 5,  //
                                                              0, 1, 2, 3, 4, 5, 4, 5}));
  // 4 -> 6 breaks; the video's frames (6, 6, 7, 7) are one call.
  EXPECT_EQ(plan[1].first, 8);
  EXPECT_EQ(plan[1].count, 4);
  EXPECT_EQ(plan[1].position_rows, (std::vector<std::int64_t>{6, 6, 7, 7, 6, 6, 6, 6, 6, 7, 6, 7}));
  // The isolated text token: prefilled after its neighbour 19, a text token (every row 19).
  EXPECT_TRUE(plan[2].has_neighbour);
  EXPECT_EQ(plan[2].positions, (std::vector<std::int64_t>{19, 20}));
  EXPECT_EQ(plan[2].position_rows, (std::vector<std::int64_t>{19, 20, 19, 20, 19, 20}));
}

// A step of -1 breaks a run too; the neighbour of an isolated multimodal token is a text token at its
// row 0 - 1. Without rows the same positions are 1-D: a repeated position is its own call.
TEST(ProbePlan, m_rope_a_step_back_breaks_a_run_and_without_rows_a_repeated_position_is_isolated) {
  judge::probe_set s;
  s.positions = {10, 10, 9};
  s.position_rows = {10, 10, 9, 10, 11, 9, 12, 13, 9};
  const auto plan = judge::plan_calls(s, judge::call_form::prefill);
  ASSERT_EQ(plan.size(), 2u);
  EXPECT_EQ(plan[0].count, 2);
  EXPECT_EQ(plan[0].position_rows, (std::vector<std::int64_t>{10, 10, 10, 11, 12, 13}));
  EXPECT_EQ(plan[1].positions, (std::vector<std::int64_t>{8, 9}));
  EXPECT_EQ(plan[1].position_rows, (std::vector<std::int64_t>{8, 9, 8, 9, 8, 9}));
  s.position_rows.clear();
  const auto flat = judge::plan_calls(s, judge::call_form::prefill);
  ASSERT_EQ(flat.size(), 3u);
  for (const auto& c : flat) EXPECT_TRUE(c.has_neighbour && c.position_rows.empty());
}

// Decode calls: one token each, its own column of every row; rows not a multiple of the tokens: an error.
TEST(ProbePlan, m_rope_decode_calls_carry_one_column_and_bad_rows_are_an_error) {
  const judge::probe_set s = mrope_probe();
  const auto plan = judge::plan_calls(s, judge::call_form::decode);
  ASSERT_EQ(plan.size(), 13u);
  EXPECT_EQ(plan[6].position_rows, (std::vector<std::int64_t>{4, 5, 4}));
  judge::probe_set bad = s;
  bad.position_rows.pop_back();
  EXPECT_THROW((void)judge::plan_calls(bad, judge::call_form::prefill), std::invalid_argument);
}

}  // namespace
}  // namespace ropecheck
