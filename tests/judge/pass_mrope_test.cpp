// tests/judge/pass_mrope_test.cpp — the judge on M-RoPE dumps (judge/src/pass_mrope.cpp): correct
// Qwen2-VL (contiguous) and Qwen3-VL (interleaved) dumps pass in fp32 and in bf16 with fp32 compute;
// each M-RoPE bug is named first (rows swapped, another section split, text positions for image
// tokens), and so are the 1-D classes on an M-RoPE dump (sglang's bf16 cos/sin cache under fp32 x, a
// wrong base), from its text tokens.
#include <gtest/gtest.h>

#include <stdexcept>

#include "mrope_dumps.hpp"

namespace ropecheck::judge_test {
namespace {

const mrope_positions kRows = hf_style_positions();

TEST(PassMrope, PositionsAreLaidOutAsHfDoes) {
  // 64 text, 64 image, 32 video, 26 text tokens; the image's first token at (64, 64, 64), its last at
  // (64, 71, 71); text resumes at 64 + 8 + 4 = 76.
  ASSERT_EQ(kRows.tokens, 186);
  EXPECT_EQ(kRows.rows[64], 64);
  EXPECT_EQ(kRows.rows[static_cast<std::size_t>(kRows.tokens + 127)], 71);
  EXPECT_EQ(kRows.rows[160], 76);
  EXPECT_EQ(kRows.rows[static_cast<std::size_t>(2 * kRows.tokens + 160)], 76);
}

TEST(PassMrope, CorrectContiguousAndInterleavedPassInFp32AndBf16) {
  for (const rope_config& c : {qwen2vl(), qwen3vl()}) {
    const hf_angle<float> hf(c);
    const verdict f32 = judge::audit(make_mrope_dump<float>(c, hf, kRows, kRows, "float32"), c);
    print("mrope correct fp32 " + std::string(to_string(c.mrope)), f32);
    expect_pass(f32);
    const verdict b16 = judge::audit(make_mrope_dump<bfloat16>(c, hf, kRows, kRows, "bfloat16"), c);
    print("mrope correct bf16 " + std::string(to_string(c.mrope)), b16);
    expect_pass(b16);
  }
}

TEST(PassMrope, RowsSwappedAreNamed) {
  for (const rope_config& c : {qwen2vl(), qwen3vl()}) {
    for (const std::vector<int>& perm : {std::vector<int>{0, 2, 1}, std::vector<int>{1, 0, 2}}) {
      const verdict v = judge::audit(make_mrope_dump<float>(c, hf_angle<float>(c), kRows, permuted(kRows, perm), "float32"), c);
      print("mrope rows swapped " + std::string(to_string(c.mrope)), v);
      expect_top(v, "mrope_rows_swapped");
    }
  }
}

TEST(PassMrope, TextPositionsForImageTokensAreNamed) {
  for (const rope_config& c : {qwen2vl(), qwen3vl()}) {
    const verdict v = judge::audit(make_mrope_dump<bfloat16>(c, hf_angle<float>(c), kRows, permuted(kRows, {0, 0, 0}), "bfloat16"), c);
    print("mrope text positions " + std::string(to_string(c.mrope)), v);
    expect_top(v, "mrope_text_positions");
  }
}

TEST(PassMrope, AnotherSectionSplitIsNamed) {
  struct cas {
    rope_config claim, used;
  };
  const cas cases[] = {
      {qwen2vl(), mrope_claim(mrope_kind::interleaved, {24, 20, 20})},  // Qwen3-VL's split under a Qwen2-VL claim
      {qwen3vl(), mrope_claim(mrope_kind::contiguous, {24, 20, 20})},   // the other kind, same sections
      {qwen2vl(), mrope_claim(mrope_kind::contiguous, {32, 16, 16})},   // other sections, fitted
  };
  for (const cas& k : cases) {
    const verdict v = judge::audit(make_mrope_dump<float>(k.used, hf_angle<float>(k.used), kRows, kRows, "float32"), k.claim);
    print("mrope section wrong", v);
    expect_top(v, "mrope_section_wrong");
  }
}

// sglang (2026): the M-RoPE cos/sin cache cast to bf16 while q/k stay fp32.
TEST(PassMrope, CosSinDowncastIsNamedFromTheTextTokens) {
  for (const rope_config& c : {qwen2vl(), qwen3vl()}) {
    const cached<bfloat16, hf_angle<float>> cs(hf_angle<float>{c});
    const verdict v = judge::audit(make_mrope_dump<float>(c, cs, kRows, kRows, "float32"), c);
    print("mrope cos/sin downcast", v);
    expect_top(v, "cos_sin_low_precision");
  }
}

TEST(PassMrope, WrongBaseIsNamedFromTheTextTokens) {
  const rope_config c = qwen2vl();
  rope_config used = c;
  used.base = 10000.0;
  const verdict v = judge::audit(make_mrope_dump<float>(used, hf_angle<float>(used), kRows, kRows, "float32"), c);
  print("mrope base wrong", v);
  expect_top(v, "base_wrong");
}

TEST(PassMrope, RowsSwappedBesideABf16CacheAreBothNamed) {
  const rope_config c = qwen2vl();
  const cached<bfloat16, hf_angle<float>> cs(hf_angle<float>{c});
  const verdict v = judge::audit(make_mrope_dump<float>(c, cs, kRows, permuted(kRows, {0, 2, 1}), "float32"), c);
  print("mrope rows swapped + bf16 cache", v);
  expect_top(v, "mrope_rows_swapped");
  bool cache = false;
  for (const auto& f : v.findings) cache = cache || f.bug_class == "cos_sin_low_precision";
  EXPECT_TRUE(cache);
}

TEST(PassMrope, TextOnlyDumpWithoutRowsIsPlainRope) {
  const rope_config c = qwen2vl();
  dump d = make_mrope_dump<float>(c, hf_angle<float>(c), kRows, kRows, "float32");
  // Only the text tokens, rows dropped: an M-RoPE claim reads them as all rows equal.
  std::vector<int> text;
  for (int t = 0; t < d.tokens; ++t)
    if (kRows.rows[static_cast<std::size_t>(t)] == kRows.rows[static_cast<std::size_t>(kRows.tokens + t)] &&
        kRows.rows[static_cast<std::size_t>(t)] == kRows.rows[static_cast<std::size_t>(2 * kRows.tokens + t)])
      text.push_back(t);
  dump s;
  s.tokens = static_cast<int>(text.size()), s.heads = d.heads, s.head_dim = d.head_dim, s.dtype = d.dtype;
  const auto row = static_cast<std::size_t>(d.heads * d.head_dim);
  for (int t : text) {
    s.positions.push_back(d.positions[static_cast<std::size_t>(t)]);
    s.x.insert(s.x.end(), d.x.begin() + static_cast<std::ptrdiff_t>(t * row), d.x.begin() + static_cast<std::ptrdiff_t>((t + 1) * row));
    s.y.insert(s.y.end(), d.y.begin() + static_cast<std::ptrdiff_t>(t * row), d.y.begin() + static_cast<std::ptrdiff_t>((t + 1) * row));
  }
  expect_pass(judge::audit(s, c));
  rope_config plain = c;
  plain.mrope = mrope_kind::none, plain.mrope_section.clear();
  expect_pass(judge::audit(s, plain));
}

TEST(PassMrope, RowsThatDoNotFitTheClaimAreRefused) {
  const rope_config c = qwen2vl();
  const dump d = make_mrope_dump<float>(c, hf_angle<float>(c), kRows, kRows, "float32");
  rope_config plain = c;
  plain.mrope = mrope_kind::none, plain.mrope_section.clear();
  try {
    (void)judge::audit(d, plain);
    ADD_FAILURE() << "a multimodal dump under a 1-D claim must be refused";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("looks multimodal"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("mrope_section"), std::string::npos) << e.what();
  }
  dump two = d;
  two.position_rows.resize(2 * static_cast<std::size_t>(d.tokens));
  EXPECT_THROW((void)judge::audit(two, c), std::invalid_argument);
  dump off = d;
  off.positions[3] += 1;  // positions must be row 0
  EXPECT_THROW((void)judge::audit(off, c), std::invalid_argument);
}

}  // namespace
}  // namespace ropecheck::judge_test
