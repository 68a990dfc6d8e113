// tests/judge/output_order_test.cpp — claims whose outputs are written half-split (DeepSeek's
// rope_interleave, judge/src/output_order.cpp): the correct order passes, outputs left in
// place pass with the warning outputs_in_place (vLLM's DeepSeek rotates these pairs in place;
// scores are unchanged when q and k agree) and fail as layout_swapped under strict, and a GLM-style interleaved dump judged with a Llama-style claim
// is layout_swapped too.
#include "judge/judge_dumps.hpp"

#include "output_order.hpp"

namespace {

using namespace ropecheck;
using namespace ropecheck::judge_test;

// DeepSeek-V3's convention: interleaved pairs in, half-split order out, rotary part of rd coordinates.
rope_config deepseek_claim(int head_dim, int rd) {
  auto c = claimed_config(head_dim);
  c.rotary_dim = rd;
  c.pair_layout = layout::interleaved;
  c.outputs = output_order::half_split;
  return c;
}

// What rope_interleave writes: the in-place interleaved result with pair i moved to (i, i + rd/2).
dump to_half_split_order(const dump& d, int rd) {
  dump m = d;
  const int half = rd / 2;
  const std::size_t per_head = static_cast<std::size_t>(d.head_dim);
  for (std::size_t row = 0; row < static_cast<std::size_t>(d.tokens * d.heads); ++row)
    for (int i = 0; i < half; ++i) {
      m.y[row * per_head + static_cast<std::size_t>(i)] = d.y[row * per_head + 2 * static_cast<std::size_t>(i)];
      m.y[row * per_head + static_cast<std::size_t>(i + half)] = d.y[row * per_head + 2 * static_cast<std::size_t>(i) + 1];
    }
  return m;
}

dump interleaved_in_place(const rope_config& claim) {
  rope_config k = claim;
  k.outputs = output_order::in_place;
  return make_dump<float>(rope_geometry::of(k), hf_angle<float>(k), kPos, kPos, "float32");
}

TEST(OutputOrder, MappingBackIsTheInverseOfRopeInterleavesOrderAndLeavesPassThroughAlone) {
  const auto c = deepseek_claim(96, 64);
  const dump d = interleaved_in_place(c);
  const dump half = to_half_split_order(d, c.rotary_dim);
  EXPECT_NE(half.y, d.y);
  EXPECT_EQ(judge::detail::to_input_order(half, c.rotary_dim).y, d.y);  // exact: a permutation
}

TEST(OutputOrder, ACorrectRopeInterleaveDumpPasses) {
  for (int rd : {64, 32}) {  // whole head, and a partial rotary part with pass-through coordinates
    const auto c = deepseek_claim(64, rd);
    const auto v = judge::audit(to_half_split_order(interleaved_in_place(c), rd), c);
    print("deepseek rope_interleave rd " + std::to_string(rd), v);
    expect_pass(v);
  }
}

TEST(OutputOrder, OutputsLeftInTheInputsOrderPassWithAWarningAndFailUnderStrict) {
  const auto c = deepseek_claim(64, 64);
  const auto v = judge::audit(interleaved_in_place(c), c);
  print("deepseek outputs in place", v);
  EXPECT_TRUE(v.pass) << v.tolerance_reason;
  ASSERT_EQ(v.findings.size(), 1u);
  EXPECT_EQ(v.findings.front().bug_class, "outputs_in_place");
  EXPECT_NE(v.findings.front().sentence.find("warning: outputs are in the input's (interleaved) coordinate order, "
                                             "where rope_interleave writes them half-split"),
            std::string::npos)
      << v.findings.front().sentence;
  judge::audit_options strict;
  strict.strict = true;
  const auto s = judge::audit(interleaved_in_place(c), c, strict);
  print("deepseek outputs in place, strict", s);
  expect_top(s, "layout_swapped");
  ASSERT_FALSE(s.findings.empty());
  EXPECT_NE(s.findings.front().sentence.find("(failed: strict)"), std::string::npos) << s.findings.front().sentence;
  // The same dump claimed in place passes with no finding but the fp32 drift warning (expect_pass).
  rope_config in_place = c;
  in_place.outputs = output_order::in_place;
  const auto ip = judge::audit(interleaved_in_place(c), in_place);
  expect_pass(ip);
}

TEST(OutputOrder, AHalfSplitInPlaceDumpClaimedAsRopeInterleaveIsLayoutSwapped) {
  auto c = deepseek_claim(64, 64);
  rope_config llama = c;
  llama.pair_layout = layout::half_split;
  llama.outputs = output_order::in_place;
  const auto v = judge::audit(make_dump<float>(rope_geometry::of(llama), hf_angle<float>(llama), kPos, kPos, "float32"), c);
  print("llama dump claimed as deepseek", v);
  expect_top(v, "layout_swapped");
  ASSERT_FALSE(v.findings.empty());
  EXPECT_NE(v.findings.front().sentence.find("pairs are half_split"), std::string::npos) << v.findings.front().sentence;
}

TEST(OutputOrder, AGlmDumpJudgedWithALlamaStyleClaimIsLayoutSwapped) {
  // GLM-4: interleaved pairs over half the head (partial_rotary_factor 0.5).
  auto glm = claimed_config(128);
  glm.rotary_dim = 64;
  glm.pair_layout = layout::interleaved;
  const dump d = make_dump<float>(rope_geometry::of(glm), hf_angle<float>(glm), kPos, kPos, "float32");
  expect_pass(judge::audit(d, glm));
  rope_config llama_style = glm;
  llama_style.pair_layout = layout::half_split;
  const auto v = judge::audit(d, llama_style);
  print("glm dump, llama-style claim", v);
  expect_top(v, "layout_swapped");
}

}  // namespace
