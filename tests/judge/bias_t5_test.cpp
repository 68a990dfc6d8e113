// tests/judge/bias_t5_test.cpp — T5's bucketed bias at the score (judge/src/bias_t5.cpp): t5_windows' coverage
// and sharing, and judge_t5 on rows from an emulated T5 kernel written here (its own bucket code, following
// transformers models/t5/modeling_t5.py T5Attention._relative_position_bucket independently of positional.hpp),
// so these tests need no probe. Each bug is named with its class.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "bias_internal.hpp"
#include "ropecheck/judge/classes.hpp"
#include "ropecheck/scalar.hpp"

namespace ropecheck::judge_test {
namespace {

using namespace ropecheck::judge;
namespace jd = ropecheck::judge::detail;
using jd::key_window;

t5_claim claim_of(bool bidirectional, int nb = 32, int md = 128, int heads = 8) { return {nb, md, bidirectional, heads, {}}; }

// ---- t5_windows ---------------------------------------------------------------------------------------------

// The windows of one query cover every offset from -reach to +reach (0 when causal), each at most max_keys long,
// the first holding the query, each later one sharing exactly one boundary key with one given before it.
void expect_chained_cover(const t5_claim& c, int max_keys, std::int64_t max_position) {
  const std::vector<key_window> w = jd::t5_windows(c, max_keys, max_position);
  ASSERT_FALSE(w.empty());
  std::set<std::int64_t> queries;
  for (std::size_t i = 0; i < w.size(); ++i) {
    const key_window& k = w[i];
    queries.insert(k.m);
    EXPECT_LE(k.last - k.first + 1, max_keys);
    EXPECT_GE(k.first, 0);
    if (max_position > 0) {
      EXPECT_LE(k.last, max_position);
    }
    if (i == 0 || w[i - 1].m != k.m) {  // a query's first window holds the query (its keys span many buckets)
      EXPECT_TRUE(k.first <= k.m && k.m <= k.last) << "query " << k.m << "'s first window " << k.first << ".." << k.last;
    } else {  // each later one shares exactly one boundary key with a window given before it: the rows chain
      int shared = 0;
      for (std::size_t j = 0; j < i; ++j)
        if (w[j].m == k.m) shared += (w[j].first == k.last) + (w[j].last == k.first);
      EXPECT_EQ(shared, 1) << "window " << k.first << ".." << k.last << " of query " << k.m;
    }
  }
  for (std::int64_t m : queries) {
    std::set<std::int64_t> offsets;
    for (const key_window& k : w)
      if (k.m == m)
        for (std::int64_t n = k.first; n <= k.last; ++n) offsets.insert(n - m);
    const std::int64_t reach = 2 * c.max_distance;
    EXPECT_EQ(*offsets.begin(), -reach) << m;
    EXPECT_EQ(*offsets.rbegin(), c.bidirectional ? reach : 0) << m;
    EXPECT_EQ(static_cast<std::int64_t>(offsets.size()), (c.bidirectional ? 2 : 1) * reach + 1) << "contiguous, query " << m;
    // The boundaries at equality are among them: max_distance and the exact buckets' edge, on both sides.
    const int max_exact = (c.bidirectional ? c.num_buckets / 2 : c.num_buckets) / 2;
    for (std::int64_t off : {-static_cast<std::int64_t>(c.max_distance), -static_cast<std::int64_t>(max_exact)})
      EXPECT_TRUE(offsets.count(off) && (!c.bidirectional || offsets.count(-off))) << off;
  }
}

TEST(BiasT5, WindowsCoverEveryOffsetPastMaxDistanceAndChainOnOneKey) {
  expect_chained_cover(claim_of(true), 100, 0);
  expect_chained_cover(claim_of(false), 100, 0);
  expect_chained_cover(claim_of(true, 64, 256), 64, 0);
  expect_chained_cover(claim_of(false), 2, 0);  // the smallest window: one new key each
  // Queries: one just past the reach, 4096 and 65536 (bf16 positions break there), the limit's largest.
  std::set<std::int64_t> ms;
  for (const key_window& k : jd::t5_windows(claim_of(true), 128, 0)) ms.insert(k.m);
  EXPECT_EQ(ms, (std::set<std::int64_t>{256, 4096, 65536}));
  ms.clear();
  for (const key_window& k : jd::t5_windows(claim_of(true), 128, 8192)) ms.insert(k.m);
  EXPECT_EQ(ms, (std::set<std::int64_t>{256, 4096, 8192 - 256}));
  expect_chained_cover(claim_of(true), 128, 8192);
  expect_chained_cover(claim_of(true), 128, 512);  // exactly one query fits: m = 256, keys 0..512
  EXPECT_THROW((void)jd::t5_windows(claim_of(true), 128, 511), std::invalid_argument);
  EXPECT_THROW((void)jd::t5_windows(claim_of(true), 1, 0), std::invalid_argument);
}

// ---- an emulated T5 kernel ----------------------------------------------------------------------------------

struct kernel {
  int num_buckets = 32, max_distance = 128;
  bool bidirectional = true;
  bool sign_flipped = false;  // relative position m - n
  bool exact_log = false;     // log(n / max_exact) and log(max_distance / max_exact) in double
  bool no_bias = false;       // the bias dropped (a layer that does not get the first layer's)
  bool query_at_zero = false; // the cached decode's bias computed with the query at 0 (candle PR 899)
  bool positions_bf16 = false; // n - m formed from positions rounded to bf16
  // The learned table [num_buckets][heads] (null: a random one per seed) and what the kernel does with it.
  const std::vector<double>* table = nullptr;
  double table_scale = 1;      // multiplied into every entry (a port scaling the bias with q.k)
  bool heads_reversed = false; // head h reads column H - 1 - h
  bool table_bf16 = false;     // the table held in bf16 whatever T
};

// The bucket, written from HF's _relative_position_bucket: half the buckets per direction when bidirectional
// (positive offsets in the upper half), causal offsets clamped at 0 from -relative; exact below max_exact = half
// of those; beyond, max_exact + log(n / max_exact) / log(max_distance / max_exact) * (buckets - max_exact),
// truncated and clamped at buckets - 1; HF computes the first log on float32 tensors and the second with math.log.
int emulated_bucket(const kernel& k, std::int64_t rel) {
  if (k.sign_flipped) rel = -rel;
  int buckets = k.num_buckets, base = 0;
  std::int64_t d = 0;
  if (k.bidirectional) {
    buckets /= 2;
    base = rel > 0 ? buckets : 0;
    d = std::llabs(rel);
  } else {
    d = std::max<std::int64_t>(-rel, 0);
  }
  const int max_exact = buckets / 2;
  if (d < max_exact) return base + static_cast<int>(d);
  double scaled = 0;
  if (k.exact_log) {
    scaled = std::log(static_cast<double>(d) / max_exact) / std::log(static_cast<double>(k.max_distance) / max_exact) * (buckets - max_exact);
  } else {
    const float num = std::log(static_cast<float>(d) / static_cast<float>(max_exact));
    const auto den = static_cast<float>(std::log(static_cast<double>(k.max_distance) / max_exact));
    scaled = static_cast<double>(num / den * static_cast<float>(buckets - max_exact));
  }
  return base + std::min(max_exact + static_cast<int>(scaled), buckets - 1);
}

constexpr double kReadout = 1.0 / (1 << 22);  // the rows' per-key allowance (a read-out's share)

// Rows of `k` on `windows`: a random table per (bucket, head) in T, scores q.k + table rounded in T, an arbitrary
// constant per row and read-out noise within half the allowance.
template <class T>
bias_evidence emulate(const kernel& k, int heads, const std::vector<key_window>& windows, std::uint64_t seed,
                      const std::string& form = "attention", const std::string& dtype = "float32") {
  std::printf("[emulate] seed %llu, %s\n", static_cast<unsigned long long>(seed), form.c_str());
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> entry(-3, 3), constant(-50, 50), noise(-kReadout / 2, kReadout / 2);
  std::vector<T> table;
  for (int i = 0; i < k.num_buckets * heads; ++i) {
    const int h = k.heads_reversed ? heads - 1 - i % heads : i % heads;
    double x = k.table ? k.table->at(static_cast<std::size_t>(i - i % heads + h)) * k.table_scale : entry(rng);
    if (k.table_bf16) x = static_cast<double>(static_cast<Eigen::bfloat16>(static_cast<float>(x)));
    table.push_back(static_cast<T>(static_cast<float>(x)));
  }
  const T qk = static_cast<T>(0.375f);
  bias_evidence e;
  e.heads = heads;
  e.dtype = dtype;
  e.score_constant = 0.375;
  for (const key_window& w : windows)
    for (int h = 0; h < heads; ++h) {
      bias_row r;
      r.head = h;
      r.m = w.m;
      r.form = form;
      const double c = constant(rng);
      for (std::int64_t n = w.first; n <= w.last; ++n) {
        const std::int64_t m = k.query_at_zero ? 0 : w.m;
        const auto pos = [&](std::int64_t x) {
          return k.positions_bf16 ? static_cast<std::int64_t>(static_cast<float>(static_cast<Eigen::bfloat16>(static_cast<float>(x)))) : x;
        };
        const T bias = k.no_bias ? static_cast<T>(0.0f)
                                 : table[static_cast<std::size_t>(emulated_bucket(k, pos(n) - pos(m)) * heads + h)];
        const T s = static_cast<T>(static_cast<float>(qk) + static_cast<float>(bias));
        r.n.push_back(n);
        r.s.push_back(static_cast<double>(static_cast<float>(s)) + c + noise(rng));
        r.allowance.push_back(kReadout);
      }
      e.rows.push_back(std::move(r));
    }
  return e;
}

kernel kernel_of(const t5_claim& c) { return {c.num_buckets, c.max_distance, c.bidirectional}; }

std::string first_class(const bias_verdict& v) { return v.findings.empty() ? "" : v.findings.front().bug_class; }

void print(const char* what, const bias_verdict& v) {
  std::printf("[%s] pass %d, worst %.4g x allowance (head %d, m %lld, n %lld), %lld cells%s%s\n", what, v.pass, v.worst_ratio,
              v.worst_head, static_cast<long long>(v.worst_m), static_cast<long long>(v.worst_n), static_cast<long long>(v.cells),
              v.findings.empty() ? "" : ": ", v.findings.empty() ? "" : (v.findings.front().bug_class + ": " + v.findings.front().sentence).c_str());
}

template <class T>
bias_verdict judge_kernel(const t5_claim& claim, const kernel& k, std::uint64_t seed, const char* what) {
  const bias_evidence e = emulate<T>(k, claim.heads, jd::t5_windows(claim, 100, 0), seed);
  bias_verdict v = jd::judge_t5(e, claim, {});
  print(what, v);
  return v;
}

// ---- correct kernels pass -----------------------------------------------------------------------------------

// T5, UMT5, LongT5 and Pix2Struct all default to 32 buckets and max_distance 128 (transformers
// configuration_t5.py, configuration_umt5.py, configuration_longt5.py, configuration_pix2struct.py).
TEST(BiasT5, CorrectEncoderAndDecoderPassInFp32Bf16AndFp16) {
  for (bool bidir : {true, false}) {
    const t5_claim c = claim_of(bidir);
    EXPECT_TRUE((judge_kernel<float>(c, kernel_of(c), 11, "fp32").pass)) << bidir;
    EXPECT_TRUE((judge_kernel<Eigen::bfloat16>(c, kernel_of(c), 12, "bf16").pass)) << bidir;
    EXPECT_TRUE((judge_kernel<Eigen::half>(c, kernel_of(c), 13, "fp16").pass)) << bidir;
  }
  const t5_claim wide = claim_of(true, 64, 256);  // not a family's default: the rule, not the numbers
  EXPECT_TRUE((judge_kernel<float>(wide, kernel_of(wide), 14, "fp32 64/256").pass));
  EXPECT_TRUE((judge_kernel<Eigen::bfloat16>(wide, kernel_of(wide), 15, "bf16 64/256").pass));
}

// ---- each bug named ------------------------------------------------------------------------------------------

TEST(BiasT5, CausalBucketsUnderABidirectionalClaimAreNamed) {
  const t5_claim c = claim_of(true);
  kernel k = kernel_of(c);
  k.bidirectional = false;
  const bias_verdict v = judge_kernel<float>(c, k, 21, "causal under bidirectional");
  EXPECT_FALSE(v.pass);
  EXPECT_EQ(first_class(v), classes::t5_buckets_wrong);
  ASSERT_FALSE(v.findings.empty());
  EXPECT_NE(v.findings.front().sentence.find("causal"), std::string::npos);
}

TEST(BiasT5, BidirectionalBucketsUnderACausalClaimAreNamed) {
  const t5_claim c = claim_of(false);
  kernel k = kernel_of(c);
  k.bidirectional = true;
  const bias_verdict v = judge_kernel<Eigen::bfloat16>(c, k, 22, "bidirectional under causal");
  EXPECT_FALSE(v.pass);
  EXPECT_EQ(first_class(v), classes::t5_buckets_wrong);
  ASSERT_FALSE(v.findings.empty());
  EXPECT_NE(v.findings.front().sentence.find("32 buckets, max_distance 128, bidirectional"), std::string::npos);
}

TEST(BiasT5, OtherNumBucketsAndMaxDistanceAreFitted) {
  const t5_claim c = claim_of(true);
  kernel k = kernel_of(c);
  k.num_buckets = 16;
  bias_verdict v = judge_kernel<float>(c, k, 23, "num_buckets 16 under 32");
  EXPECT_EQ(first_class(v), classes::t5_buckets_wrong);
  ASSERT_FALSE(v.findings.empty());
  EXPECT_NE(v.findings.front().sentence.find("16 buckets, max_distance 128"), std::string::npos);
  k = kernel_of(c);
  k.max_distance = 64;
  v = judge_kernel<Eigen::bfloat16>(c, k, 24, "max_distance 64 under 128");
  EXPECT_EQ(first_class(v), classes::t5_buckets_wrong);
  ASSERT_FALSE(v.findings.empty());
  EXPECT_NE(v.findings.front().sentence.find("32 buckets, max_distance 64,"), std::string::npos);
}

// The relative position taken as m - n. Bidirectional, it swaps the two halves of the table: the same partition of
// the offsets, a relabelling of learned entries that scores alone cannot tell from the claim (it passes: the
// judge sees no table). Causal, every key the query sees falls in bucket 0: the bias is gone, and named so.
TEST(BiasT5, SignFlippedIsNamedWhereTheScoresShowIt) {
  t5_claim c = claim_of(true);
  kernel k = kernel_of(c);
  k.sign_flipped = true;
  EXPECT_TRUE((judge_kernel<float>(c, k, 25, "sign flipped, bidirectional").pass));
  c = claim_of(false);
  k = kernel_of(c);
  k.sign_flipped = true;
  const bias_verdict v = judge_kernel<float>(c, k, 27, "sign flipped, causal");
  EXPECT_FALSE(v.pass);
  EXPECT_EQ(first_class(v), classes::bias_missing);
  ASSERT_FALSE(v.findings.empty());
  EXPECT_NE(v.findings.front().sentence.find("m - n"), std::string::npos);
}

TEST(BiasT5, BiasDroppedIsBiasMissing) {
  for (bool bidir : {true, false}) {
    const t5_claim c = claim_of(bidir);
    kernel k = kernel_of(c);
    k.no_bias = true;
    const bias_verdict v = judge_kernel<Eigen::bfloat16>(c, k, 26, "bias dropped");
    EXPECT_FALSE(v.pass);
    EXPECT_EQ(first_class(v), classes::bias_missing) << bidir;
  }
}

// candle PR 899 ("Fix T5 kv cache"): the position bias of a cached decode step did not take the cache into
// account. The prefill's rows are right, the decode's act as if the query were at 0: every cached key is after
// it, all in causal bucket 0 — a constant row, which the prefill's rows tell from a missing bias.
TEST(BiasT5, DecodeQueryAtZeroIsKeyPositionsWrong) {
  const t5_claim c = claim_of(false);
  const std::vector<key_window> w = jd::t5_windows(c, 100, 0);
  bias_evidence e = emulate<float>(kernel_of(c), c.heads, w, 31, "prefill");
  kernel k = kernel_of(c);
  k.query_at_zero = true;
  const bias_evidence d = emulate<float>(k, c.heads, w, 32, "decode");
  e.rows.insert(e.rows.end(), d.rows.begin(), d.rows.end());
  const bias_verdict v = jd::judge_t5(e, c, {});
  print("decode query at 0", v);
  EXPECT_FALSE(v.pass);
  EXPECT_EQ(first_class(v), classes::key_positions_wrong);
  // The prefill alone passes.
  EXPECT_TRUE(jd::judge_t5(emulate<float>(kernel_of(c), c.heads, w, 31, "prefill"), c, {}).pass);
}

// ---- boundaries -----------------------------------------------------------------------------------------------

// HF's float32 log against the exact one: where they part at the probe's offsets the exact-log kernel is named;
// where they do not, it passes (the same partition is the same attention).
TEST(BiasT5, ExactLogsAreNamedWhereTheyDifferFromHfsFloat32) {
  // The defaults: no probe offset differs, the exact-log kernel passes.
  for (bool bidir : {true, false}) {
    const t5_claim c = claim_of(bidir);
    kernel k = kernel_of(c);
    k.exact_log = true;
    int differ = 0;
    for (std::int64_t off = -2 * c.max_distance; off <= (bidir ? 2 * c.max_distance : 0); ++off)
      differ += emulated_bucket(k, off) != emulated_bucket(kernel_of(c), off) ? 1 : 0;
    std::printf("[exact logs] 32/128 %s: %d offsets differ\n", bidir ? "bidirectional" : "causal", differ);
    EXPECT_EQ(differ, 0);
    EXPECT_TRUE((judge_kernel<float>(c, k, 41, "exact logs 32/128").pass));
  }
  // Nor at any power-of-two configuration (8..256 buckets, max_distance to 4096: searched, none). The first two
  // (num_buckets, max_distance) where they part: the exact-log kernel is named there.
  int found = 0;
  for (int nb = 8; nb <= 64 && found < 2; nb *= 2)
    for (int md = nb; md <= 1024 && found < 2; ++md)
      for (bool bidir : {true, false}) {
        const t5_claim c = claim_of(bidir, nb, md);
        kernel k = kernel_of(c);
        k.exact_log = true;
        std::vector<std::int64_t> differ;
        for (std::int64_t off = -2 * md; off <= (bidir ? 2 * md : 0); ++off)
          if (emulated_bucket(k, off) != emulated_bucket(kernel_of(c), off)) differ.push_back(off);
        if (differ.empty() || found >= 2) continue;
        ++found;
        std::printf("[exact logs] %d/%d %s: offsets %lld.. differ (%zu)\n", nb, md, bidir ? "bidirectional" : "causal",
                    static_cast<long long>(differ.front()), differ.size());
        const bias_verdict v = judge_kernel<float>(c, k, 42, "exact logs");
        EXPECT_FALSE(v.pass);
        EXPECT_EQ(first_class(v), classes::t5_buckets_wrong);
        ASSERT_FALSE(v.findings.empty());
        EXPECT_NE(v.findings.front().sentence.find("exact (double) logs"), std::string::npos);
      }
  EXPECT_GT(found, 0) << "no configuration where HF's float32 log parts from the exact one";
}

// One bucket's two keys differing by exactly their allowances pass; one step more fails.
TEST(BiasT5, AllowanceHoldsAtEquality) {
  const t5_claim c = claim_of(false, 32, 128, 2);
  const std::vector<key_window> w = jd::t5_windows(c, 1000, 0);
  ASSERT_EQ(w.front().m, 256);
  bias_evidence e = emulate<float>(kernel_of(c), c.heads, {w.front()}, 51);
  bias_row& r = e.rows.front();
  // Offsets -200 and -201 share the saturated bucket 31.
  const auto at = [&](std::int64_t off) { return static_cast<std::size_t>(r.m + off - r.n.front()); };
  ASSERT_EQ(t5_bucket(c, r.m, r.m - 200), t5_bucket(c, r.m, r.m - 201));
  for (std::size_t j = 0; j < r.n.size(); ++j)  // bucket 31's keys (the first, offset -256, its reference) at 1
    if (t5_bucket(c, r.m, r.n[j]) == 31) r.s[j] = 1;
  r.s[at(-200)] = 1 + 2 * kReadout;  // exactly the two keys' allowances from the reference
  ASSERT_EQ(t5_bucket(c, r.m, r.n.front()), 31);
  bias_verdict v = jd::judge_t5(e, c, {});
  EXPECT_TRUE(v.pass) << v.worst_ratio;
  r.s[at(-200)] = std::nextafter(r.s[at(-200)], 1e9);
  v = jd::judge_t5(e, c, {});
  EXPECT_FALSE(v.pass);
  EXPECT_GT(v.worst_ratio, 1);
}

TEST(BiasT5, PositionsInBf16AreNamed) {
  for (bool bidir : {true, false}) {
    const t5_claim c = claim_of(bidir);
    kernel k = kernel_of(c);
    k.positions_bf16 = true;
    EXPECT_EQ(first_class(judge_kernel<float>(c, k, 41, "bf16 positions")), classes::positions_low_precision) << bidir;
  }
}

// ---- the learned table given (judge/src/bias_t5_table.cpp) -----------------------------------------------------

std::vector<double> random_table(int nb, int heads, std::uint64_t seed) {
  std::printf("[table] seed %llu\n", static_cast<unsigned long long>(seed));
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> entry(-3, 3);
  std::vector<double> t;
  for (int i = 0; i < nb * heads; ++i) t.push_back(static_cast<double>(static_cast<float>(entry(rng))));  // fp32 weights
  return t;
}

template <class T>
bias_verdict judge_table(t5_claim claim, const kernel& k, const std::vector<double>& table, const std::string& dtype,
                         std::uint64_t seed, const char* what) {
  claim.table = table;
  validate(bias_claim{bias_scheme::t5, {}, claim});
  const bias_evidence e = emulate<T>(k, claim.heads, jd::t5_windows(claim, 100, 0), seed, "attention", dtype);
  bias_verdict v = jd::judge_t5(e, claim, {});
  print(what, v);
  return v;
}

TEST(BiasT5Table, TheTablesValuesPassInFp32Bf16AndFp16) {
  for (bool bidir : {true, false}) {
    const t5_claim c = claim_of(bidir);
    const std::vector<double> t = random_table(32, 8, 21);
    kernel k = kernel_of(c);
    k.table = &t;
    EXPECT_TRUE((judge_table<float>(c, k, t, "float32", 22, "fp32 table").pass)) << bidir;
    EXPECT_TRUE((judge_table<Eigen::bfloat16>(c, k, t, "bfloat16", 23, "bf16 table").pass)) << bidir;
    EXPECT_TRUE((judge_table<Eigen::half>(c, k, t, "float16", 24, "fp16 table").pass)) << bidir;
  }
}

TEST(BiasT5Table, EachWayOfMisusingTheTableIsNamed) {
  const t5_claim c = claim_of(true);
  const std::vector<double> t = random_table(32, 8, 31), other = random_table(32, 8, 32);
  kernel k = kernel_of(c);
  k.table = &t;
  kernel negated = k, scaled = k, reversed = k, bf16 = k, another = k;
  negated.table_scale = -1;
  scaled.table_scale = 1 / std::sqrt(64.0);
  reversed.heads_reversed = true;
  bf16.table_bf16 = true;
  another.table = &other;
  EXPECT_EQ(first_class(judge_table<float>(c, negated, t, "float32", 33, "negated")), classes::bias_sign_wrong);
  const bias_verdict s = judge_table<float>(c, scaled, t, "float32", 34, "scaled");
  EXPECT_EQ(first_class(s), classes::bias_scaled);
  EXPECT_NE(s.findings.at(0).sentence.find("1/sqrt(64)"), std::string::npos);
  EXPECT_EQ(first_class(judge_table<float>(c, reversed, t, "float32", 35, "heads reversed")), classes::heads_wrong);
  EXPECT_EQ(first_class(judge_table<float>(c, bf16, t, "float32", 36, "bf16 table")), classes::bias_low_precision);
  const bias_verdict a = judge_table<float>(c, another, t, "float32", 37, "another layer's table");
  EXPECT_FALSE(a.pass);
  EXPECT_EQ(first_class(a), classes::unexplained);
  // The partition comes first: a causal kernel given the table is still t5_buckets_wrong.
  kernel causal = k;
  causal.bidirectional = false;
  EXPECT_EQ(first_class(judge_table<float>(c, causal, t, "float32", 38, "causal, table given")), classes::t5_buckets_wrong);
}

TEST(BiasT5Table, ATableOfTheWrongSizeIsRefusedNamingTheField) {
  t5_claim c = claim_of(true);
  c.table.assign(32 * 8 - 1, 0.5);
  try {
    validate(bias_claim{bias_scheme::t5, {}, c});
    ADD_FAILURE() << "no throw";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("t5_table: 255 values, need num_buckets x heads = 32 x 8"), std::string::npos) << e.what();
  }
  c.table.assign(32 * 8, 0.5);
  EXPECT_NO_THROW(validate(bias_claim{bias_scheme::t5, {}, c}));
  c.table[3] = NAN;
  EXPECT_THROW(validate(bias_claim{bias_scheme::t5, {}, c}), std::invalid_argument);
}

}  // namespace
}  // namespace ropecheck::judge_test
