// tests/judge/table_test.cpp — the table judge (ropecheck/judge/table.hpp) on rows emulated here as each family's code
// computes them: the sinusoid's frequency and angle in fp32 (torch's float32 arithmetic: fairseq's and M2M100's
// get_embedding, Whisper's sinusoids), the paper's in float64 (Marian's and DistilBERT's numpy), then one rounding
// into the model dtype with Eigen's bfloat16 / half; a learned table's rows as the weights' rows. Each family's correct
// table passes in fp32, bf16 and fp16; each bug of issue 32 is emulated and named.
// The emulations cite the code they follow:
//   transformers models/m2m_100/modeling_m2m_100.py M2M100SinusoidalPositionalEmbedding.get_embedding: emb =
//     log(10000) / (half_dim - 1); exp(arange(half_dim).float() * -emb); arange(num).float()[:, None] * emb[None];
//     cat([sin, cos], 1); emb[padding_idx] = 0; positions from create_position_ids_from_input_ids
//   transformers models/marian/modeling_marian.py MarianSinusoidalPositionalEmbedding._init_weight: numpy float64
//   transformers models/opt/modeling_opt.py OPTLearnedPositionalEmbedding (offset 2), OPTDecoder.forward (mask cumsum)
//   transformers models/roberta/modeling_roberta.py create_position_ids_from_input_ids
#include <gtest/gtest.h>

#include <Eigen/Core>

#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "ropecheck/judge/classes.hpp"
#include "ropecheck/judge/table.hpp"
#include "table_internal.hpp"

namespace {

using namespace ropecheck;
using namespace ropecheck::judge;

enum class dt { f32, bf16, f16 };
const char* name(dt t) { return t == dt::f32 ? "float32" : t == dt::bf16 ? "bfloat16" : "float16"; }
double to_dtype(double x, dt t) {
  const auto f = static_cast<float>(x);
  if (t == dt::bf16) return static_cast<double>(static_cast<float>(Eigen::bfloat16(f)));
  if (t == dt::f16) return static_cast<double>(static_cast<float>(Eigen::half(f)));
  return static_cast<double>(f);
}

// How an emulated kernel computes its sinusoid.
struct sin_kernel {
  sinusoid_layout layout = sinusoid_layout::interleaved;
  double denominator = 0;  // 0: d/2
  double base = 10000;
  bool float64 = false;    // the angle in double (Marian's numpy), else fp32 (torch)
  bool positions_bf16 = false;
  bool table_bf16 = false; // the table rounded to bf16 before the rows' dtype
};

// One token: its index in the sequence, the padding before it, and the row it reads in the kernel.
struct token {
  std::int64_t i = 0, k = 0, row = 0;
};

std::vector<double> sinusoid_rows(const std::vector<token>& toks, int d, const sin_kernel& k, dt t, std::int64_t zero_row = -1) {
  std::vector<double> out;
  const int half = d / 2;
  const double D = k.denominator > 0 ? k.denominator : d / 2.0;
  for (const token& tk : toks) {
    std::vector<double> s(static_cast<std::size_t>(half)), c(static_cast<std::size_t>(half));
    for (int b = 0; b < half; ++b) {
      double sv = 0, cv = 0;
      if (tk.row != zero_row) {
        if (k.float64) {
          const double a = static_cast<double>(tk.row) / std::pow(k.base, b / D);
          sv = std::sin(a), cv = std::cos(a);
        } else {
          const float emb = static_cast<float>(std::log(k.base) / D);
          const float w = std::exp(static_cast<float>(b) * -emb);
          float q = static_cast<float>(tk.row);
          if (k.positions_bf16) q = static_cast<float>(Eigen::bfloat16(q));
          const float a = q * w;
          sv = std::sin(a), cv = std::cos(a);
        }
      }
      if (k.table_bf16) sv = to_dtype(sv, dt::bf16), cv = to_dtype(cv, dt::bf16);
      s[static_cast<std::size_t>(b)] = to_dtype(sv, t);
      c[static_cast<std::size_t>(b)] = to_dtype(cv, t);
    }
    for (int col = 0; col < d; ++col) {
      const sinusoid_column sc = column_of(k.layout, d, col);
      out.push_back(sc.is_sin ? s[static_cast<std::size_t>(sc.band)] : c[static_cast<std::size_t>(sc.band)]);
    }
  }
  return out;
}

// The probe's positions as tokens of one unpadded sequence, reading row i + offset.
std::vector<token> tokens_of(const std::vector<std::int64_t>& positions, std::int64_t offset) {
  std::vector<token> t;
  for (const std::int64_t p : positions) t.push_back({p, 0, p + offset});
  return t;
}

// Two sequences of n tokens, the second left-padded by k: rows by the kernel's rule.
std::vector<token> padded_tokens(std::int64_t n, std::int64_t k, std::int64_t offset, bool skip_padding, std::int64_t padding_row) {
  std::vector<token> t;
  for (std::int64_t i = 0; i < n; ++i) t.push_back({i, 0, i + offset});
  for (std::int64_t i = 0; i < n; ++i)
    t.push_back({i, k, !skip_padding ? i + offset : i < k ? padding_row : i - k + offset});
  return t;
}

table_evidence evidence(const std::vector<token>& toks, std::vector<double> rows, int d, dt t, std::vector<std::int64_t> refused = {}) {
  table_evidence e;
  e.dtype = name(t);
  e.width = d;
  for (const token& tk : toks) {
    e.positions.push_back(tk.i);
    e.left_padding.push_back(tk.k);
  }
  e.rows = std::move(rows);
  e.refused = std::move(refused);
  return e;
}

table_claim paper(int d) {
  table_claim c;
  c.width = d;
  c.layout = sinusoid_layout::interleaved;
  return c;
}
table_claim fairseq(int d) {  // M2M100 / NLLB with pad_token_id 1
  table_claim c;
  c.width = d;
  c.layout = sinusoid_layout::concatenated;
  c.denominator = d / 2.0 - 1;
  c.offset = 2;
  c.padding = padding_rule::skipped;
  c.padding_row = 1;
  c.padding_row_zero = true;
  return c;
}

std::string first_class(const table_verdict& v) { return v.findings.empty() ? "" : v.findings.front().bug_class; }
std::string all_text(const table_verdict& v) {
  std::string s;
  for (const auto& f : v.findings) s += f.bug_class + ": " + f.sentence + "\n";
  return s;
}

// ---- correct tables pass -------------------------------------------------------------------------------------------

TEST(Table, EachFamilysSinusoidPassesInEveryDtype) {
  for (const dt t : {dt::f32, dt::bf16, dt::f16}) {
    // DistilBERT (sinusoidal_pos_embds): interleaved, the paper's frequencies in float64.
    {
      table_claim c = paper(128);
      c.rows = 512;
      const auto toks = tokens_of(make_table_probe(c).positions, 0);
      const auto v = judge_table(evidence(toks, sinusoid_rows(toks, 128, {sinusoid_layout::interleaved, 0, 10000, true}, t), 128, t,
                                          make_table_probe(c).past),
                                 c);
      EXPECT_TRUE(v.pass) << name(t) << " distilbert " << v.worst_ratio << "\n" << all_text(v);
    }
    // Marian: concatenated, the paper's frequencies.
    {
      table_claim c = paper(512);
      c.layout = sinusoid_layout::concatenated;
      c.rows = 1024;
      const auto p = make_table_probe(c);
      const auto toks = tokens_of(p.positions, 0);
      const auto v = judge_table(evidence(toks, sinusoid_rows(toks, 512, {sinusoid_layout::concatenated, 0, 10000, true}, t), 512, t, p.past), c);
      EXPECT_TRUE(v.pass) << name(t) << " marian " << v.worst_ratio << "\n" << all_text(v);
    }
    // M2M100: fairseq's rule in fp32 to 2^16, and a left-padded batch (padding on the zero row).
    {
      const table_claim c = fairseq(256);
      const auto p = make_table_probe(c);
      auto toks = tokens_of(p.positions, 2);
      for (const token& tk : padded_tokens(40, 3, 2, true, 1)) toks.push_back(tk);
      const auto v = judge_table(evidence(toks, sinusoid_rows(toks, 256, {sinusoid_layout::concatenated, 127}, t, 1), 256, t), c);
      EXPECT_TRUE(v.pass) << name(t) << " m2m100 " << v.worst_ratio << "\n" << all_text(v);
    }
  }
}

TEST(Table, AnFp32AngleAtLargePositionsPassesWithTheDriftWarningAndFailsUnderStrict) {
  const table_claim c = fairseq(256);
  const auto toks = tokens_of(make_table_probe(c).positions, 2);
  const auto e = evidence(toks, sinusoid_rows(toks, 256, {sinusoid_layout::concatenated, 127}, dt::f32), 256, dt::f32);
  const auto v = judge_table(e, c);
  ASSERT_TRUE(v.pass) << all_text(v);
  ASSERT_FALSE(v.findings.empty());
  EXPECT_EQ(v.findings.front().bug_class, classes::angle_drift_fp32);
  audit_options strict;
  strict.strict = true;
  const auto s = judge_table(e, c, strict);
  EXPECT_FALSE(s.pass);
  EXPECT_EQ(first_class(s), classes::angle_drift_fp32) << all_text(s);
}

// ---- the sinusoid's bugs are named -----------------------------------------------------------------------------------

TEST(Table, FairseqDenominatorUnderAPaperClaimIsNamed) {
  table_claim c = paper(128);
  const auto toks = tokens_of(make_table_probe(c).positions, 0);
  const auto v = judge_table(evidence(toks, sinusoid_rows(toks, 128, {sinusoid_layout::interleaved, 63}, dt::f32), 128, dt::f32), c);
  EXPECT_FALSE(v.pass);
  EXPECT_EQ(first_class(v), classes::sinusoid_frequencies_wrong) << all_text(v);
  EXPECT_NE(all_text(v).find("63 = d/2 - 1"), std::string::npos) << all_text(v);
  EXPECT_EQ(v.findings.size(), 1u) << all_text(v);
}

TEST(Table, ConcatenatedUnderAnInterleavedClaimIsLayoutWrong) {
  const table_claim c = paper(128);
  const auto toks = tokens_of(make_table_probe(c).positions, 0);
  const auto v = judge_table(evidence(toks, sinusoid_rows(toks, 128, {sinusoid_layout::concatenated}, dt::bf16), 128, dt::bf16), c);
  EXPECT_FALSE(v.pass);
  EXPECT_EQ(first_class(v), classes::sinusoid_layout_wrong) << all_text(v);
  EXPECT_EQ(v.findings.size(), 1u) << all_text(v);
}

TEST(Table, TheFairseqTableUnderAPaperClaimNamesBothItsLayoutAndItsFrequencies) {
  const table_claim c = paper(64);
  const auto toks = tokens_of(make_table_probe(c).positions, 0);
  const auto v = judge_table(evidence(toks, sinusoid_rows(toks, 64, {sinusoid_layout::concatenated, 31}, dt::f32), 64, dt::f32), c);
  ASSERT_EQ(v.findings.size(), 2u) << all_text(v);
  EXPECT_EQ(v.findings[0].bug_class, classes::sinusoid_layout_wrong);
  EXPECT_EQ(v.findings[1].bug_class, classes::sinusoid_frequencies_wrong);
}

TEST(Table, SinAndCosSwappedIsLayoutWrong) {
  table_claim c = paper(64);
  c.layout = sinusoid_layout::concatenated;
  const auto toks = tokens_of(make_table_probe(c).positions, 0);
  const auto v = judge_table(evidence(toks, sinusoid_rows(toks, 64, {sinusoid_layout::concatenated_cos_first}, dt::f32), 64, dt::f32), c);
  EXPECT_EQ(first_class(v), classes::sinusoid_layout_wrong) << all_text(v);
  EXPECT_NE(all_text(v).find("[cos | sin]"), std::string::npos) << all_text(v);
}

TEST(Table, AnotherBaseIsFittedAndNamed) {
  const table_claim c = paper(128);
  const auto toks = tokens_of(make_table_probe(c).positions, 0);
  const auto v = judge_table(evidence(toks, sinusoid_rows(toks, 128, {sinusoid_layout::interleaved, 0, 100000}, dt::f32), 128, dt::f32), c);
  EXPECT_EQ(first_class(v), classes::sinusoid_frequencies_wrong) << all_text(v);
  EXPECT_NE(all_text(v).find("base 100000"), std::string::npos) << all_text(v);
}

TEST(Table, M2m100WithoutItsOffsetOfTwoIsPositionsOffset) {
  const table_claim c = fairseq(256);
  const auto toks = tokens_of(make_table_probe(c).positions, 0);  // the kernel indexes from 0
  const auto v = judge_table(evidence(toks, sinusoid_rows(toks, 256, {sinusoid_layout::concatenated, 127}, dt::f32), 256, dt::f32), c);
  EXPECT_EQ(first_class(v), classes::positions_offset) << all_text(v);
  EXPECT_NE(all_text(v).find("offset 0"), std::string::npos) << all_text(v);
}

TEST(Table, FairseqLeftPaddingCountedIsNamed) {
  const table_claim c = fairseq(64);
  const auto toks = padded_tokens(48, 5, 2, /*skip_padding=*/false, 1);
  const auto v = judge_table(evidence(toks, sinusoid_rows(toks, 64, {sinusoid_layout::concatenated, 31}, dt::f32, 1), 64, dt::f32), c);
  EXPECT_EQ(first_class(v), classes::positions_offset) << all_text(v);
  EXPECT_NE(all_text(v).find("left padding is counted"), std::string::npos) << all_text(v);
}

TEST(Table, PositionsInBf16AreNamed) {
  const table_claim c = paper(64);
  const auto toks = tokens_of(make_table_probe(c).positions, 0);
  sin_kernel k;
  k.positions_bf16 = true;
  const auto v = judge_table(evidence(toks, sinusoid_rows(toks, 64, k, dt::f32), 64, dt::f32), c);
  EXPECT_EQ(first_class(v), classes::positions_low_precision) << all_text(v);
}

TEST(Table, ASinusoidTableHeldInBf16UnderFp32IsNamed) {
  const table_claim c = paper(64);
  const auto toks = tokens_of(make_table_probe(c).positions, 0);
  sin_kernel k;
  k.table_bf16 = true;
  const auto v = judge_table(evidence(toks, sinusoid_rows(toks, 64, k, dt::f32), 64, dt::f32), c);
  EXPECT_EQ(first_class(v), classes::cos_sin_low_precision) << all_text(v);
}

TEST(Table, WhispersEncoderAnsweringPastItsTableIsNamedWithWhatItComputed) {
  table_claim c = paper(64);  // Whisper's sinusoids: [sin | cos], fairseq's denominator, 1500 rows
  c.layout = sinusoid_layout::concatenated;
  c.denominator = 31;
  c.rows = 1500;
  const auto p = make_table_probe(c);
  auto toks = tokens_of(p.positions, 0);
  const auto good = judge_table(evidence(toks, sinusoid_rows(toks, 64, {sinusoid_layout::concatenated, 31}, dt::f32), 64, dt::f32, p.past), c);
  EXPECT_TRUE(good.pass) << all_text(good);
  for (const std::int64_t q : p.past) toks.push_back({q, 0, q});  // evaluated past the table instead of refused
  const auto v = judge_table(evidence(toks, sinusoid_rows(toks, 64, {sinusoid_layout::concatenated, 31}, dt::f32), 64, dt::f32), c);
  EXPECT_FALSE(v.pass);
  EXPECT_EQ(first_class(v), classes::positions_past_table) << all_text(v);
  EXPECT_NE(all_text(v).find("3 the sinusoid evaluated past the table"), std::string::npos) << all_text(v);
}

// ---- learned tables --------------------------------------------------------------------------------------------------

std::vector<double> weights_of(std::int64_t rows, int d, std::uint64_t seed) {
  std::mt19937_64 g(seed);
  std::normal_distribution<double> n(0, 0.02);
  std::vector<double> w(static_cast<std::size_t>(rows) * static_cast<std::size_t>(d));
  for (double& x : w) x = static_cast<double>(static_cast<float>(n(g)));  // an fp32 checkpoint
  return w;
}

std::vector<double> learned_rows(const std::vector<token>& toks, const table_claim& c, dt t, bool weights_bf16 = false,
                                 std::int64_t clamp_to = -1) {
  std::vector<double> out;
  for (const token& tk : toks) {
    std::int64_t r = tk.row;
    if (clamp_to >= 0 && r > clamp_to) r = clamp_to;
    for (int col = 0; col < c.width; ++col) {
      double x = c.weights[static_cast<std::size_t>(r) * static_cast<std::size_t>(c.width) + static_cast<std::size_t>(col)];
      if (weights_bf16) x = to_dtype(x, dt::bf16);
      out.push_back(to_dtype(x, t));
    }
  }
  return out;
}

table_claim opt_claim(int d, std::int64_t max_positions) {
  table_claim c;
  c.scheme = table_scheme::learned;
  c.width = d;
  c.rows = max_positions + 2;
  c.offset = 2;
  c.padding = padding_rule::skipped;
  c.padding_row = 1;
  c.weights = weights_of(c.rows, d, 32);
  return c;
}

TEST(Table, EachFamilysLearnedTablePassesInEveryDtype) {
  std::printf("seed 32 (weights_of)\n");
  const table_claim c = opt_claim(32, 512);
  for (const dt t : {dt::f32, dt::bf16, dt::f16}) {
    const auto p = make_table_probe(c);
    auto toks = tokens_of(p.positions, 2);
    for (const token& tk : padded_tokens(p.padded_length, p.left_padding, 2, true, 1)) toks.push_back(tk);
    const auto v = judge_table(evidence(toks, learned_rows(toks, c, t), 32, t, p.past), c);
    EXPECT_TRUE(v.pass) << name(t) << " " << v.worst_ratio << "\n" << all_text(v);
  }
}

TEST(Table, OptIndexedFromZeroIsPositionsOffset) {
  const table_claim c = opt_claim(32, 512);
  const auto toks = tokens_of(make_table_probe(c).positions, 0);
  const auto v = judge_table(evidence(toks, learned_rows(toks, c, dt::f32), 32, dt::f32), c);
  EXPECT_FALSE(v.pass);
  EXPECT_EQ(first_class(v), classes::positions_offset) << all_text(v);
  EXPECT_NE(all_text(v).find("offset 0"), std::string::npos) << all_text(v);
}

TEST(Table, RobertaLeftPaddingIgnoredIsNamed) {
  table_claim c = opt_claim(32, 512);  // RoBERTa: 514 rows, padding_idx 1, positions from padding_idx + 1
  c.rows = 514;
  c.weights = weights_of(c.rows, 32, 7);
  const auto toks = padded_tokens(40, 4, 2, /*skip_padding=*/false, 1);
  const auto v = judge_table(evidence(toks, learned_rows(toks, c, dt::f32), 32, dt::f32), c);
  EXPECT_EQ(first_class(v), classes::positions_offset) << all_text(v);
  EXPECT_NE(all_text(v).find("left padding is counted"), std::string::npos) << all_text(v);
}

TEST(Table, ALearnedTableClampedPastItsEndIsNamed) {
  table_claim c;  // Whisper's decoder: 448 learned rows, no offset
  c.scheme = table_scheme::learned;
  c.width = 16;
  c.rows = 448;
  c.weights = weights_of(448, 16, 9);
  const auto p = make_table_probe(c);
  auto toks = tokens_of(p.positions, 0);
  for (const std::int64_t q : p.past) toks.push_back({q, 0, q});
  const auto v = judge_table(evidence(toks, learned_rows(toks, c, dt::f32, false, 447), 16, dt::f32), c);
  EXPECT_FALSE(v.pass);
  EXPECT_EQ(first_class(v), classes::positions_past_table) << all_text(v);
  EXPECT_NE(all_text(v).find("3 clamped to the last row (row 447)"), std::string::npos) << all_text(v);
}

TEST(Table, TheTablesEndIsExactlyAtItsLastRow) {
  table_claim c;
  c.scheme = table_scheme::learned;
  c.width = 8;
  c.rows = 100;
  c.offset = 2;
  c.weights = weights_of(100, 8, 3);
  // Position 97 reads row 99, the last: inside. Position 98 reads row 100: past.
  const std::vector<token> last{{97, 0, 99}};
  EXPECT_TRUE(judge_table(evidence(last, learned_rows(last, c, dt::f32), 8, dt::f32), c).pass);
  const std::vector<token> past{{98, 0, 98 + 2 - 100}};  // wrapped to row 0
  const auto v = judge_table(evidence(past, learned_rows(past, c, dt::f32), 8, dt::f32), c);
  EXPECT_EQ(first_class(v), classes::positions_past_table) << all_text(v);
  EXPECT_NE(all_text(v).find("wrapped"), std::string::npos) << all_text(v);
  // Refused: right. Refusing the last row inside: not.
  EXPECT_TRUE(judge_table(evidence({}, {}, 8, dt::f32, {98}), c).pass);
  EXPECT_FALSE(judge_table(evidence({}, {}, 8, dt::f32, {97}), c).pass);
}

TEST(Table, ALearnedTableHeldInBf16IsNamed) {
  const table_claim c = opt_claim(32, 128);
  const auto toks = tokens_of(make_table_probe(c).positions, 2);
  const auto v = judge_table(evidence(toks, learned_rows(toks, c, dt::f32, /*weights_bf16=*/true), 32, dt::f32), c);
  EXPECT_EQ(first_class(v), classes::table_low_precision) << all_text(v);
}

// ---- the probe and bad input -----------------------------------------------------------------------------------------

TEST(TableProbe, AsksPositionZeroTheLastRowAndPastIt) {
  const table_claim c = opt_claim(8, 2048);
  const table_probe p = make_table_probe(c);
  EXPECT_EQ(p.positions.front(), 0);
  EXPECT_EQ(p.positions.back(), 2047);  // row 2049, the last of 2050
  ASSERT_EQ(p.past.size(), 3u);
  EXPECT_EQ(p.past.front(), 2048);
  table_claim s = fairseq(8);
  const table_probe q = make_table_probe(s);
  EXPECT_EQ(q.positions.back(), 65536);
  EXPECT_TRUE(q.past.empty());
}

TEST(Table, EvidenceThatDoesNotFitIsRefusedNamingWhat) {
  const table_claim c = paper(8);
  table_evidence e;
  e.dtype = "float32";
  e.width = 8;
  e.positions = {0, 1};
  e.rows.assign(8, 0.0);
  EXPECT_THROW((void)judge_table(e, c), std::invalid_argument);
  e.rows.assign(16, 0.0);
  e.width = 6;
  EXPECT_THROW((void)judge_table(e, c), std::invalid_argument);
  table_claim l;
  l.scheme = table_scheme::learned;
  l.width = 8;
  EXPECT_THROW(check_table_claim(l), std::invalid_argument);  // no length
  l.rows = 4;
  l.offset = 4;
  EXPECT_THROW(check_table_claim(l), std::invalid_argument);  // the offset past the table
}

}  // namespace
