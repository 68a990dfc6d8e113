// tests/judge/scores_test.cpp — queries and keys judged together (judge/src/scores.cpp): the qk form's
// classes on pairs made with ropecheck's own HF-style kernel on the probe set, with distinct q (8 heads) and
// k (2 heads, GQA) and one side mutated as a fused kernel's bug leaves it. Seeds fixed and printed.
#include "judge/probe_dumps.hpp"

#include <string>

#include "ropecheck/judge/scores.hpp"

namespace {

using namespace ropecheck;
using namespace ropecheck::judge_test;

constexpr std::uint64_t kQuerySeed = 20261205, kKeySeed = 20261206;

// One side of a qk call on the probe set of `claim`: inputs from `seed`, rotated by ropecheck's HF fp32 kernel
// under `kernel` at each probe position + shift (the dump records the probe positions).
template <class Storage = float>
dump side(const rope_config& claim, const rope_config& kernel, int heads, std::uint64_t seed, std::int64_t shift = 0,
          const std::string& dtype = "float32") {
  dump d = probe_dump_in<Storage>(claim, rope_geometry::of(kernel), hf_angle<float>(kernel), dtype, seed, INT64_MAX, heads);
  if (shift == 0) return d;
  // Rotate again at p + shift: the same inputs, the positions the kernel used.
  std::vector<Storage> xs(d.x.size()), ys(d.x.size());
  for (std::size_t j = 0; j < xs.size(); ++j) xs[j] = scalar_traits<Storage>::narrow(d.x[j]);
  std::vector<std::int64_t> used = d.positions;
  for (auto& p : used) p += shift;
  rotate_tokens<float, Storage>(std::span<const Storage>(xs), std::span<Storage>(ys), used, heads, rope_geometry::of(kernel),
                                hf_angle<float>(kernel));
  for (std::size_t j = 0; j < ys.size(); ++j) d.y[j] = static_cast<double>(scalar_traits<Storage>::widen(ys[j]));
  return d;
}

rope_config claim() {
  auto c = claimed_config(64);
  c.max_position_embeddings = 8192;
  return c;
}

void print(const std::string& name, const judge::qk_verdict& v) {
  std::printf("[%s] %s; queries %s, keys %s; score identity %.3g (%.3g of its allowance) at m %lld n %lld over %lld pairs\n",
              name.c_str(), v.pass ? "PASS" : "FAIL", v.queries.pass ? "pass" : "FAIL", v.keys.pass ? "pass" : "FAIL",
              v.score.violation, v.score.worst_ratio,
              static_cast<long long>(v.score.m), static_cast<long long>(v.score.n), static_cast<long long>(v.score.pairs));
  for (const auto& f : v.findings) std::printf("  - %s (%.2f): %s\n", f.bug_class.c_str(), f.confidence, f.sentence.c_str());
}

void expect_first(const judge::qk_verdict& v, const std::string& cls) {
  EXPECT_FALSE(v.pass);
  ASSERT_FALSE(v.findings.empty()) << "expected " << cls;
  EXPECT_EQ(v.findings.front().bug_class, cls) << v.findings.front().sentence;
}

TEST(Scores, KeyHeadsFollowRepeatKv) {
  EXPECT_EQ(judge::key_head_of(0, 8, 2), 0);
  EXPECT_EQ(judge::key_head_of(3, 8, 2), 0);
  EXPECT_EQ(judge::key_head_of(4, 8, 2), 1);
  EXPECT_EQ(judge::key_head_of(7, 8, 8), 7);
  EXPECT_THROW((void)judge::key_head_of(0, 8, 3), std::invalid_argument);
}

TEST(Scores, CorrectGqaPairsPassInFp32AndBf16) {
  const auto c = claim();
  const auto v = judge::audit_qk(side(c, c, 8, kQuerySeed), side(c, c, 2, kKeySeed), c);
  print("fp32", v);
  EXPECT_TRUE(v.pass);
  for (const auto& f : v.findings) EXPECT_EQ(f.bug_class, "angle_drift_fp32") << f.sentence;
  EXPECT_GT(v.score.pairs, 8 * 200);
  EXPECT_LE(v.score.worst_ratio, 1.0);  // both sides within their allowances: every score within its bound
  const auto b = judge::audit_qk(side<bfloat16>(c, c, 8, kQuerySeed, 0, "bfloat16"),
                                 side<bfloat16>(c, c, 2, kKeySeed, 0, "bfloat16"), c);
  print("bf16", b);
  EXPECT_TRUE(b.pass);
  EXPECT_LE(b.score.worst_ratio, 1.0);
}

// YaRN (attention factor af = 0.1 ln 4 + 1 ~ 1.139 != 1): each side carries af once, so the score carries af^2
// and the identity's expectation must too (the reference's rotation already holds one af; a second multiplication
// by af^2 expected af^3 and failed every correct YaRN pair by a factor ~1.14).
TEST(Scores, CorrectYarnPairsCarryTheAttentionFactorOncePerSide) {
  auto c = claim();
  c.scaling = scaling_kind::yarn;
  c.factor = 4.0;
  c.original_max_position_embeddings = 2048;
  const auto v = judge::audit_qk(side(c, c, 8, kQuerySeed), side(c, c, 2, kKeySeed), c);
  print("yarn fp32", v);
  EXPECT_TRUE(v.pass);
  EXPECT_LE(v.score.worst_ratio, 1.0);
}

TEST(Scores, KeysAtOtherPositionsAreKeyPositionsWrong) {
  const auto c = claim();
  const auto v = judge::audit_qk(side(c, c, 8, kQuerySeed), side(c, c, 2, kKeySeed, 1), c);
  print("keys at p + 1", v);
  expect_first(v, "key_positions_wrong");
  EXPECT_TRUE(v.queries.pass);
  EXPECT_NE(v.findings.front().sentence.find("keys act at other positions than their queries"), std::string::npos);
  EXPECT_NE(v.findings.front().sentence.find("+1"), std::string::npos) << v.findings.front().sentence;
  EXPECT_GT(v.score.worst_ratio, 1.0);  // m - n off by one token at the score
}

TEST(Scores, KeysRotatedByAnotherRuleAreKeyConventionWrong) {
  const auto c = claim();
  auto other_base = c;
  other_base.base = 10000;
  const auto v = judge::audit_qk(side(c, c, 8, kQuerySeed), side(c, other_base, 2, kKeySeed), c);
  print("keys with base 1e4", v);
  expect_first(v, "key_convention_wrong");
  EXPECT_NE(v.findings.front().sentence.find("base is 10000 not 500000"), std::string::npos) << v.findings.front().sentence;
  auto interleaved = c;
  interleaved.pair_layout = layout::interleaved;
  const auto w = judge::audit_qk(side(c, c, 8, kQuerySeed), side(c, interleaved, 2, kKeySeed), c);
  print("keys interleaved", w);
  expect_first(w, "key_convention_wrong");
  EXPECT_NE(w.findings.front().sentence.find("interleaved"), std::string::npos) << w.findings.front().sentence;
}

TEST(Scores, BothSidesWrongTheSameWayKeepTheirClass) {
  const auto c = claim();
  auto other_base = c;
  other_base.base = 10000;
  const auto v = judge::audit_qk(side(c, other_base, 8, kQuerySeed), side(c, other_base, 2, kKeySeed), c);
  print("q and k with base 1e4", v);
  expect_first(v, "base_wrong");
  EXPECT_EQ(v.findings.front().sentence.rfind("queries and keys: ", 0), 0u) << v.findings.front().sentence;
}

TEST(Scores, QueriesWrongAloneAreNamedOnTheQueries) {
  const auto c = claim();
  const auto v = judge::audit_qk(side(c, c, 8, kQuerySeed, 1), side(c, c, 2, kKeySeed), c);
  print("queries at p + 1", v);
  expect_first(v, "positions_offset");
  EXPECT_EQ(v.findings.front().sentence.rfind("queries: ", 0), 0u) << v.findings.front().sentence;
}

// ColossalAI's fused_rotary_emb bug (PR 6429): out_q1 computed from k. q' coordinates 32..63 are k's rotation.
TEST(Scores, CrossedHalvesAreNamedFromTheOutputsAndFromTheProbe) {
  const auto c = claim();
  dump q = side(c, c, 8, kQuerySeed);
  const dump k = side(c, c, 2, kKeySeed);
  const dump q_right = q;
  for (int t = 0; t < q.tokens; ++t)
    for (int h = 0; h < q.heads; ++h) {
      const auto from = head_of(const_cast<std::vector<double>&>(k.y), k, t, judge::key_head_of(h, 8, 2));
      const auto to = head_of(q.y, q, t, h);
      std::copy(from.begin() + 32, from.end(), to.begin() + 32);
    }
  const auto v = judge::audit_qk(q, k, c);
  print("q's second half from k", v);
  expect_first(v, "qk_crossed");
  EXPECT_NE(v.findings.front().sentence.find("q's outputs at coordinates 32..63 are k's inputs rotated (key head h / 4)"),
            std::string::npos) << v.findings.front().sentence;
  EXPECT_EQ(v.findings.front().sentence.find("k's outputs"), std::string::npos) << v.findings.front().sentence;

  // The probe: the same calls with other keys. The right kernel's q' does not move; the crossed one's does.
  const dump k_other = side(c, c, 2, kKeySeed + 1);
  dump q_other = q_right;
  for (int t = 0; t < q.tokens; ++t)
    for (int h = 0; h < q.heads; ++h) {
      const auto from = head_of(const_cast<std::vector<double>&>(k_other.y), k_other, t, judge::key_head_of(h, 8, 2));
      const auto to = head_of(q_other.y, q_other, t, h);
      std::copy(from.begin() + 32, from.end(), to.begin() + 32);
    }
  EXPECT_FALSE(judge::crossing_finding(q_right.y, q_right.y, k.y, k.y, q.positions, 8, 2, 64));
  const auto f = judge::crossing_finding(q.y, q_other.y, k.y, k.y, q.positions, 8, 2, 64);
  ASSERT_TRUE(f);
  std::printf("  probe: %s\n", f->sentence.c_str());
  EXPECT_EQ(f->bug_class, "qk_crossed");
  EXPECT_NE(f->sentence.find("q's outputs depend on k's inputs"), std::string::npos) << f->sentence;
  EXPECT_EQ(f->sentence.find("k's outputs depend"), std::string::npos) << f->sentence;
  // The reverse side alone.
  const auto g = judge::crossing_finding(q.y, q.y, k.y, k_other.y, q.positions, 8, 2, 64);
  ASSERT_TRUE(g);
  EXPECT_NE(g->sentence.find("k's outputs depend on q's inputs"), std::string::npos) << g->sentence;
}

TEST(Scores, KeysCrossedFromTheQueriesAreNamed) {
  const auto c = claim();
  const dump q = side(c, c, 8, kQuerySeed);
  dump k = side(c, c, 2, kKeySeed);
  for (int t = 0; t < k.tokens; ++t)
    for (int g = 0; g < k.heads; ++g) {  // out_k0 from q: k's first half is its first reader's rotation
      const auto from = head_of(const_cast<std::vector<double>&>(q.y), q, t, 4 * g);
      std::copy(from.begin(), from.begin() + 32, head_of(k.y, k, t, g).begin());
    }
  const auto v = judge::audit_qk(q, k, c);
  print("k's first half from q", v);
  expect_first(v, "qk_crossed");
  EXPECT_NE(v.findings.front().sentence.find("k's outputs at coordinates 0..31 are q's inputs rotated (query head 4 g)"),
            std::string::npos) << v.findings.front().sentence;
}

// A context shift (llama.cpp's K-shift after llama_memory_seq_add(..., -n_discard)): keys rotated at n, re-rotated
// to n + delta. Right: they pass at n + delta. A shift that did not re-rotate them leaves them at n: an offset of
// -delta, key_positions_wrong; one that re-rotated them with another base: key_convention_wrong.
TEST(Scores, KeysAfterAContextShiftAreJudgedAtTheirRenumberedPositions) {
  const auto c = claim();
  constexpr std::int64_t delta = -32;
  const auto shifted = [&](const rope_config& kernel, std::int64_t rotate_by) {
    dump d = side(c, c, 2, kKeySeed, rotate_by);  // the rotation the shift leaves: at n + rotate_by
    if (kernel.base != c.base) d = side(c, kernel, 2, kKeySeed, rotate_by);
    dump out;
    out.heads = d.heads, out.head_dim = d.head_dim, out.dtype = d.dtype;
    const auto per = static_cast<std::size_t>(d.heads * d.head_dim);
    for (int t = 0; t < d.tokens; ++t) {
      const std::int64_t n = d.positions[static_cast<std::size_t>(t)];
      if (n < -delta) continue;  // evicted
      out.positions.push_back(n + delta);
      out.x.insert(out.x.end(), d.x.begin() + static_cast<std::ptrdiff_t>(t * per), d.x.begin() + static_cast<std::ptrdiff_t>((t + 1) * per));
      out.y.insert(out.y.end(), d.y.begin() + static_cast<std::ptrdiff_t>(t * per), d.y.begin() + static_cast<std::ptrdiff_t>((t + 1) * per));
    }
    out.tokens = static_cast<int>(out.positions.size());
    return out;
  };
  const auto right = judge::audit(shifted(c, delta), c);  // re-rotated by delta: rotated at n + delta
  EXPECT_TRUE(right.pass);
  for (const auto& f : judge::shift_findings(right, delta)) EXPECT_EQ(f.bug_class, "angle_drift_fp32") << f.sentence;
  const auto stale = judge::audit(shifted(c, 0), c);  // never re-rotated: still at n
  const auto fs = judge::shift_findings(stale, delta);
  for (const auto& f : fs) std::printf("  - %s: %s\n", f.bug_class.c_str(), f.sentence.c_str());
  ASSERT_FALSE(fs.empty());
  EXPECT_EQ(fs.front().bug_class, "key_positions_wrong");
  EXPECT_NE(fs.front().sentence.find("after a context shift of -32"), std::string::npos) << fs.front().sentence;
  EXPECT_NE(fs.front().sentence.find("+32"), std::string::npos) << fs.front().sentence;
  auto other = c;
  other.base = 10000;
  const auto rule = judge::shift_findings(judge::audit(shifted(other, delta), c), delta);
  ASSERT_FALSE(rule.empty());
  EXPECT_EQ(rule.front().bug_class, "key_convention_wrong") << rule.front().sentence;
}

TEST(Scores, CrossedCoordinateThresholdsAtEquality) {
  using judge::detail::coordinate_crossed;
  EXPECT_TRUE(coordinate_crossed(0.9, 0.0));
  EXPECT_FALSE(coordinate_crossed(std::nextafter(0.9, 0.0), 0.0));
  EXPECT_FALSE(coordinate_crossed(1.0, 0.1));
  EXPECT_TRUE(coordinate_crossed(1.0, std::nextafter(0.1, 0.0)));
}

TEST(Scores, InconsistentPairsAreRefused) {
  const auto c = claim();
  const dump q = side(c, c, 8, kQuerySeed);
  EXPECT_THROW((void)judge::audit_qk(q, side(c, c, 3, kKeySeed), c), std::invalid_argument);  // 3 does not divide 8
  dump k = side(c, c, 2, kKeySeed);
  k.dtype = "bfloat16";
  EXPECT_THROW((void)judge::audit_qk(q, k, c), std::invalid_argument);
  EXPECT_THROW((void)judge::crossing_finding(q.y, q.y, k.y, std::span<const double>(k.y).first(10), q.positions, 8, 2, 64),
               std::invalid_argument);
}

}  // namespace
