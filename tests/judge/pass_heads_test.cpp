// tests/judge/pass_heads_test.cpp — some heads not rotated as the others (pass_heads.cpp): copied,
// unwritten, another head's, or rotated wrong while the others are right. Dumps: ropecheck's HF fp32
// kernel on the probe set (4 heads), then heads mutated as a wrong head loop leaves them.
#include "judge/probe_dumps.hpp"

#include <cmath>
#include <string>

#include "passes.hpp"  // judge/src: the pass's states and thresholds, tested at equality

namespace {

using namespace ropecheck;
using namespace ropecheck::judge_test;
using judge::detail::head_judgement;
using judge::detail::head_state;
using judge::detail::kPairLengthSlack;
using judge::detail::pair_lengths_agree;

// Llama-2-like claim: base 1e4, 128 dims (the foreign plugins' convention).
rope_config llama2() {
  auto c = claimed_config(128);
  c.base = 10000.0;
  c.max_position_embeddings = 4096;
  return c;
}

dump hf_probe(const rope_config& c, int heads = 4) { return probe_dump<float>(c, hf_angle<float>(c), "float32", INT64_MAX, heads); }

bool has(const verdict& v, const std::string& cls) {
  for (const auto& f : v.findings)
    if (f.bug_class == cls) return true;
  return false;
}

void copy_heads(dump& d, int from, int to) {  // y = x for heads from..to
  for (int t = 0; t < d.tokens; ++t)
    for (int h = from; h <= to; ++h) {
      const auto x = head_of(d.x, d, t, h);
      std::copy(x.begin(), x.end(), head_of(d.y, d, t, h).begin());
    }
}

TEST(Heads, CopiedHeadsAreNamedAloneWithTheRotatedHeadsRight) {
  const auto c = llama2();
  dump d = hf_probe(c);
  copy_heads(d, 1, 3);
  const auto v = judge::audit(d, c);
  print("heads 1..3 copied", v);
  expect_top(v, "heads_wrong");
  ASSERT_FALSE(v.findings.empty());
  EXPECT_EQ(v.findings.size(), 1u);  // head 0 is right: nothing else to name
  const std::string& s = v.findings.front().sentence;
  EXPECT_NE(s.find("heads 1..3 of 4 are not rotated: their outputs equal their inputs"), std::string::npos) << s;
  EXPECT_NE(s.find("(head 0 rotated right, worst error/allowance"), std::string::npos) << s;
}

TEST(Heads, UnwrittenHeadsAreZero) {
  const auto c = llama2();
  dump d = hf_probe(c);
  for (int t = 0; t < d.tokens; ++t)
    for (int h : {2, 3})
      for (double& y : head_of(d.y, d, t, h)) y = 0;
  const auto v = judge::audit(d, c);
  print("heads 2..3 unwritten", v);
  expect_top(v, "heads_wrong");
  ASSERT_FALSE(v.findings.empty());
  EXPECT_EQ(v.findings.size(), 1u);
  EXPECT_NE(v.findings.front().sentence.find("heads 2..3 of 4 are not written: their outputs are zero"), std::string::npos)
      << v.findings.front().sentence;
}

TEST(Heads, AHeadRotatedFromAnotherHeadsInput) {
  const auto c = llama2();
  dump d = hf_probe(c);
  for (int t = 0; t < d.tokens; ++t) {  // y_1 = y_0 = R(p) x_0
    const auto y0 = head_of(d.y, d, t, 0);
    std::copy(y0.begin(), y0.end(), head_of(d.y, d, t, 1).begin());
  }
  const auto v = judge::audit(d, c);
  print("head 1 = head 0's rotation", v);
  expect_top(v, "heads_wrong");
  ASSERT_FALSE(v.findings.empty());
  EXPECT_NE(v.findings.front().sentence.find("head 1 is rotated from head 0's input"), std::string::npos)
      << v.findings.front().sentence;
}

// The rotated heads have their own bug: both are named, heads_wrong first, the base from the rotated
// heads alone (the copied ones would hide it from the rigid fit).
TEST(Heads, RotatedHeadsWithAWrongBaseNameBothClasses) {
  const auto c = llama2();
  auto impl = c;
  impl.base = 500000.0;
  dump d = hf_probe(impl);
  copy_heads(d, 2, 3);
  const auto v = judge::audit(d, c);
  print("heads 0..1 base 5e5, heads 2..3 copied", v);
  expect_top(v, "heads_wrong");
  ASSERT_FALSE(v.findings.empty());
  EXPECT_TRUE(has(v, "base_wrong"));
  EXPECT_NE(v.findings.front().sentence.find("heads 0..1 of 4 are rotated wrong"), std::string::npos)
      << v.findings.front().sentence;

  // One head right, the others with the wrong base.
  dump m = hf_probe(impl);
  const dump right = hf_probe(c);
  for (int t = 0; t < m.tokens; ++t) {
    const auto y0 = head_of(const_cast<std::vector<double>&>(right.y), right, t, 0);
    std::copy(y0.begin(), y0.end(), head_of(m.y, m, t, 0).begin());
  }
  const auto w = judge::audit(m, c);
  print("head 0 right, heads 1..3 base 5e5", w);
  expect_top(w, "heads_wrong");
  ASSERT_FALSE(w.findings.empty());
  EXPECT_TRUE(has(w, "base_wrong"));
}

// A bug every head shares is not heads_wrong.
TEST(Heads, EveryHeadWithTheSameWrongBaseIsBaseWrongOnly) {
  const auto c = llama2();
  auto impl = c;
  impl.base = 500000.0;
  const auto v = judge::audit(hf_probe(impl), c);
  print("every head base 5e5", v);
  expect_top(v, "base_wrong");
  EXPECT_FALSE(has(v, "heads_wrong"));

  dump all = hf_probe(c);
  copy_heads(all, 0, 3);
  const auto w = judge::audit(all, c);
  print("every head copied", w);
  EXPECT_FALSE(w.pass);
  EXPECT_FALSE(has(w, "heads_wrong"));
}

TEST(Heads, OneHeadDumpIsNeverHeadsWrong) {
  const auto c = llama2();
  auto impl = c;
  impl.base = 500000.0;
  const auto v = judge::audit(hf_probe(impl, 1), c);
  print("one head, base 5e5", v);
  expect_top(v, "base_wrong");
  EXPECT_FALSE(has(v, "heads_wrong"));
}

TEST(Heads, CorrectDumpsPass) {
  const auto c = llama2();
  expect_pass(judge::audit(hf_probe(c), c));
  expect_pass(judge::audit(probe_dump<bfloat16>(c, hf_angle<bfloat16>(c), "bfloat16"), c));
}

// ---- the pass's boundaries (pass_heads.cpp) ----

// A copy is |y - x| <= u_T |x|: at u_T itself a head still counts as copied, one ulp more it is rotated wrong.
TEST(Heads, CopiedAtExactlyUnitRoundoff) {
  const auto c = llama2();
  for (const bool beyond : {false, true}) {
    dump d = hf_probe(c);
    copy_heads(d, 1, 3);
    for (int t = 0; t < d.tokens; ++t)
      for (int h = 1; h <= 3; ++h) {
        auto y = head_of(d.y, d, t, h);
        for (double& v : y) {
          const double at = v * (1 + 0x1p-24);  // exact in double: v = k/128
          v = beyond ? std::nextafter(at, at * 2) : at;
        }
      }
    const auto v = judge::audit(d, c);
    print(beyond ? "heads 1..3 copied, one ulp beyond u_T" : "heads 1..3 copied times (1 + u_T)", v);
    expect_top(v, "heads_wrong");
    ASSERT_FALSE(v.findings.empty());
    const std::string& s = v.findings.front().sentence;
    EXPECT_EQ(s.find("are not rotated") != std::string::npos, !beyond) << s;
    EXPECT_EQ(s.find("are rotated wrong") != std::string::npos, beyond) << s;
  }
}

TEST(Heads, HeadsDifferUnlessAllShareOneFailure) {
  using judge::detail::heads_differ;
  auto of = [](std::initializer_list<head_state> s) {
    std::vector<head_judgement> v;
    for (auto x : s) v.push_back({x, -1, 0});
    return v;
  };
  EXPECT_FALSE(heads_differ(of({head_state::wrong})));  // one head
  EXPECT_FALSE(heads_differ(of({head_state::copied, head_state::copied})));
  EXPECT_FALSE(heads_differ(of({head_state::unwritten, head_state::unwritten})));
  EXPECT_FALSE(heads_differ(of({head_state::wrong, head_state::wrong, head_state::wrong})));
  EXPECT_TRUE(heads_differ(of({head_state::right, head_state::wrong})));
  EXPECT_TRUE(heads_differ(of({head_state::copied, head_state::wrong})));
  EXPECT_TRUE(heads_differ(of({head_state::other_head, head_state::other_head})));  // heads permuted
  EXPECT_EQ(judge::detail::head_list({1, 2, 3}), "heads 1..3");
  EXPECT_EQ(judge::detail::head_list({0, 2, 3, 5}), "heads 0, 2..3, 5");
  EXPECT_EQ(judge::detail::head_list({2}), "head 2");
}

TEST(Heads, PairLengthsAgreeToOnePercentItselfIncluded) {
  EXPECT_TRUE(pair_lengths_agree(101.0, 100.0));  // 1% exactly (0.01 * 100 rounds to 1): agrees
  EXPECT_TRUE(pair_lengths_agree(99.0, 100.0));
  EXPECT_FALSE(pair_lengths_agree(101.01, 100.0));
  EXPECT_FALSE(pair_lengths_agree(98.99, 100.0));
  EXPECT_DOUBLE_EQ(kPairLengthSlack, 0.01);
}

}  // namespace
