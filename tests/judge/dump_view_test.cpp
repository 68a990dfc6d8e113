// tests/judge/dump_view_test.cpp — ropecheck/judge/dump_view.hpp: a dump judged where it lies, in its
// own storage type, gives the verdict of the same dump widened to doubles, field for field.
//
// The stored bytes are made here with Eigen's conversions (scalar_traits), never with the view's own
// decoding; every 16-bit pattern is checked against Eigen's widening. The verdicts compared are of
// judge_dumps.hpp's kernel dumps (correct ones and buggy ones, so the diagnosis runs), through each
// path of the view: same-type storage, mixed storage, the coordinate maps of a reversed claim and of
// DeepSeek's half-split outputs, HF's strided [heads, tokens, dim] layout, a partial diagnosis subset.
#include "ropecheck/judge/dump_view.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "judge_dumps.hpp"
#include "ropecheck/angle.hpp"
#include "ropecheck/scalar.hpp"

namespace {

using namespace ropecheck;
using namespace ropecheck::judge_test;
using judge::storage;

// The bits of v stored as s (v must be exact in s: the dumps' values are).
void append(std::vector<unsigned char>& out, double v, storage s) {
  auto put = [&](auto w) {
    unsigned char b[sizeof(w)];
    std::memcpy(b, &w, sizeof(w));
    out.insert(out.end(), b, b + sizeof(w));
  };
  switch (s) {
    case storage::f32: put(static_cast<float>(v)); break;
    case storage::f64: put(v); break;
    case storage::bf16: put(scalar_traits<bfloat16>::bits(scalar_traits<bfloat16>::narrow(v))); break;
    case storage::f16: put(scalar_traits<float16>::bits(scalar_traits<float16>::narrow(v))); break;
  }
}

// A dump's x and y stored as sx / sy, token-major or (hf_layout) as [heads][tokens][head_dim]; one
// byte of padding first, so no value is aligned.
struct stored_dump {
  std::vector<unsigned char> x, y;
  judge::dump_view view;
};
stored_dump store(const judge::dump& d, storage sx, storage sy, bool hf_layout = false) {
  stored_dump s;
  s.x.push_back(0), s.y.push_back(0);
  for (int h0 = 0; h0 < (hf_layout ? d.heads : 1); ++h0)
    for (int t = 0; t < d.tokens; ++t)
      for (int h = hf_layout ? h0 : 0; h < (hf_layout ? h0 + 1 : d.heads); ++h)
        for (int j = 0; j < d.head_dim; ++j) {
          const std::size_t i = (static_cast<std::size_t>(t) * d.heads + h) * d.head_dim + j;
          append(s.x, d.x[i], sx);
          append(s.y, d.y[i], sy);
        }
  judge::dump_view& v = s.view;
  v.positions = d.positions;
  v.position_rows = d.position_rows;
  v.tokens = d.tokens, v.heads = d.heads, v.head_dim = d.head_dim;
  v.dtype = d.dtype;
  v.x = {s.x.data() + 1, sx};
  v.y = {s.y.data() + 1, sy};
  v.layout = hf_layout ? judge::dump_layout{d.tokens, 0, d.head_dim, static_cast<std::int64_t>(d.tokens) * d.head_dim}
                       : judge::dump_layout::token_major(d.heads, d.head_dim);
  return s;
}

void expect_same_distance(const judge::distance& a, const judge::distance& b) {
  EXPECT_EQ(a.max_ulps, b.max_ulps);
  EXPECT_EQ(a.max_abs, b.max_abs);
  EXPECT_EQ(a.at_position, b.at_position);
  EXPECT_EQ(a.at_band, b.at_band);
  EXPECT_EQ(a.worst_ratio, b.worst_ratio);
  EXPECT_EQ(a.worst_position, b.worst_position);
  EXPECT_EQ(a.worst_band, b.worst_band);
}

// Every field of the verdict, exactly.
void expect_same_verdict(const judge::verdict& got, const judge::verdict& want) {
  EXPECT_EQ(got.pass, want.pass);
  EXPECT_EQ(got.reference, want.reference);
  EXPECT_EQ(got.max_error_ulps, want.max_error_ulps);
  EXPECT_EQ(got.max_error_abs, want.max_error_abs);
  EXPECT_EQ(got.tolerance, want.tolerance);
  EXPECT_EQ(got.worst_ratio, want.worst_ratio);
  EXPECT_EQ(got.tolerance_reason, want.tolerance_reason);
  expect_same_distance(got.from_exact, want.from_exact);
  expect_same_distance(got.from_framework, want.from_framework);
  EXPECT_EQ(got.framework, want.framework);
  EXPECT_EQ(got.elements, want.elements);
  ASSERT_EQ(got.per_position.size(), want.per_position.size());
  for (std::size_t t = 0; t < got.per_position.size(); ++t) {
    EXPECT_EQ(got.per_position[t].position, want.per_position[t].position) << "token " << t;
    EXPECT_EQ(got.per_position[t].max_ulps, want.per_position[t].max_ulps) << "token " << t;
    EXPECT_EQ(got.per_position[t].worst_ratio, want.per_position[t].worst_ratio) << "token " << t;
  }
  EXPECT_EQ(got.score_violation, want.score_violation);
  EXPECT_EQ(got.score_violation_m, want.score_violation_m);
  EXPECT_EQ(got.score_violation_n, want.score_violation_n);
  EXPECT_EQ(got.tokens_diagnosed, want.tokens_diagnosed);
  EXPECT_EQ(got.hf_inv_freq_source, want.hf_inv_freq_source);
  ASSERT_EQ(got.findings.size(), want.findings.size());
  for (std::size_t k = 0; k < got.findings.size(); ++k) {
    EXPECT_EQ(got.findings[k].bug_class, want.findings[k].bug_class);
    EXPECT_EQ(got.findings[k].sentence, want.findings[k].sentence);
    EXPECT_EQ(got.findings[k].confidence, want.findings[k].confidence);
  }
}

// The dump judged stored as (sx, sy) equals the dump judged widened.
void expect_view_judged_alike(const judge::dump& d, const rope_config& claim, storage sx, storage sy,
                              const judge::audit_options& opt = {}, bool hf_layout = false) {
  const stored_dump s = store(d, sx, sy, hf_layout);
  const judge::verdict want = judge::audit(d, claim, opt);
  const judge::verdict got = judge::audit(s.view, claim, opt);
  SCOPED_TRACE(std::string(judge::storage_name(sx)) + " x, " + judge::storage_name(sy) + " y");
  expect_same_verdict(got, want);
}

judge::dump offset_by_one(const rope_config& c, const std::string& dtype) {
  std::vector<std::int64_t> used = kPos;
  for (auto& p : used) ++p;
  return make_dump<float>(rope_geometry::of(c), hf_angle<float>(c), kPos, used, dtype);
}

// ---- the accessor ----

TEST(StoredValue, EveryBfloat16AndFloat16BitPatternWidensAsEigenDoes) {
  for (std::uint32_t b = 0; b < 65536; ++b) {
    const auto bits = static_cast<std::uint16_t>(b);
    const double bf = static_cast<double>(scalar_traits<bfloat16>::widen(scalar_traits<bfloat16>::from_bits(bits)));
    const double hf = static_cast<double>(scalar_traits<float16>::widen(scalar_traits<float16>::from_bits(bits)));
    const double got_bf = judge::stored_value<storage::bf16>(&bits, 0);
    const double got_hf = judge::stored_value<storage::f16>(&bits, 0);
    if (std::isnan(bf)) EXPECT_TRUE(std::isnan(got_bf)) << std::hex << b;
    else EXPECT_EQ(std::bit_cast<std::uint64_t>(got_bf), std::bit_cast<std::uint64_t>(bf)) << std::hex << b;
    if (std::isnan(hf)) EXPECT_TRUE(std::isnan(got_hf)) << std::hex << b;
    else EXPECT_EQ(std::bit_cast<std::uint64_t>(got_hf), std::bit_cast<std::uint64_t>(hf)) << std::hex << b;
  }
}

TEST(StoredValue, Float32AndFloat64ReadBitForBitAtAnyAlignment) {
  const float f[] = {std::ldexp(1.0f, -149), -0.0f, std::numeric_limits<float>::max(), 1.0f + std::ldexp(1.0f, -23),
                     -std::numeric_limits<float>::infinity()};
  const double d[] = {std::numeric_limits<double>::denorm_min(), -0.0, 0.1, std::numeric_limits<double>::infinity()};
  unsigned char buf[64];
  for (std::size_t shift = 0; shift < 8; ++shift) {
    std::memcpy(buf + shift, f, sizeof f);
    for (std::size_t i = 0; i < 5; ++i)
      EXPECT_EQ(std::bit_cast<std::uint64_t>(judge::stored_value<storage::f32>(buf + shift, i)),
                std::bit_cast<std::uint64_t>(static_cast<double>(f[i])));
    std::memcpy(buf + shift, d, sizeof d);
    for (std::size_t i = 0; i < 4; ++i)
      EXPECT_EQ(std::bit_cast<std::uint64_t>(judge::stored_value<storage::f64>(buf + shift, i)),
                std::bit_cast<std::uint64_t>(d[i]));
  }
}

// ---- the view-based judge equals the widened judge ----

TEST(DumpView, ACorrectDumpInEachStorageTypeIsJudgedAsItsWidenedDump) {
  const auto c = claimed_config();
  const auto g = rope_geometry::of(c);
  expect_view_judged_alike(make_dump<float>(g, hf_angle<float>(c), kPos, kPos, "float32"), c, storage::f32, storage::f32);
  expect_view_judged_alike(make_dump<bfloat16>(g, hf_angle<float>(c), kPos, kPos, "bfloat16"), c, storage::bf16, storage::bf16);
  expect_view_judged_alike(make_dump<float16>(g, hf_angle<float>(c), kPos, kPos, "float16"), c, storage::f16, storage::f16);
  expect_view_judged_alike(make_dump<double, double>(g, direct_angle<double>(c), kPos, kPos, "float64"), c, storage::f64,
                           storage::f64);
}

TEST(DumpView, AFailingDumpIsDiagnosedAsItsWidenedDumpInEveryStorageAndOnAPartialSubset) {
  const auto c = claimed_config();
  const auto d = offset_by_one(c, "float32");
  ASSERT_FALSE(judge::audit(d, c).pass);
  expect_view_judged_alike(d, c, storage::f32, storage::f32);
  expect_view_judged_alike(d, c, storage::f64, storage::f64);
  judge::audit_options small;
  small.diagnosis_tokens = 70;  // the subset (64 smallest positions + spread) is widened from the view
  small.threads = 2;
  const auto v = judge::audit(d, c, small);
  ASSERT_LT(v.tokens_diagnosed, d.tokens);
  expect_view_judged_alike(d, c, storage::f32, storage::f32, small);
  const auto b = make_dump<bfloat16>(rope_geometry::of(c), hf_angle<float>(c), kPos, [] {
    auto u = kPos;
    for (auto& p : u) p += 1;
    return u;
  }(), "bfloat16");
  expect_view_judged_alike(b, c, storage::bf16, storage::bf16);
  expect_view_judged_alike(b, c, storage::bf16, storage::bf16, small);
}

// x stored wider than y (an fp32 input, a bf16 output): the generic path, through stored_tensor::at.
TEST(DumpView, XAndYInDifferentStorageTypesAreJudgedAsTheWidenedDump) {
  const auto c = claimed_config();
  const auto d = make_dump<bfloat16>(rope_geometry::of(c), hf_angle<float>(c), kPos, kPos, "bfloat16");
  expect_view_judged_alike(d, c, storage::f32, storage::bf16);
  expect_view_judged_alike(offset_by_one(c, "float32"), c, storage::f64, storage::f32);
}

// The reversed claim judges the conjugated pairs (the view's sign maps), DeepSeek's half-split outputs
// the permuted y (its source map); on a pass and on the failure each hypothesis re-judges.
TEST(DumpView, TheCoordinateMapsOfAReversedClaimAndOfHalfSplitOutputsJudgeAsTheCopiesDid) {
  auto c = claimed_config();
  auto g = rope_geometry::of(c);
  g.direction = rotation_direction::reversed;
  const auto reversed_kernel = make_dump<float>(g, hf_angle<float>(c), kPos, kPos, "float32");
  auto r = c;
  r.direction = rotation_direction::reversed;
  expect_view_judged_alike(reversed_kernel, r, storage::f32, storage::f32);  // passes
  ASSERT_EQ(judge::audit(reversed_kernel, c).findings.front().bug_class, "rotation_reversed");
  expect_view_judged_alike(reversed_kernel, c, storage::f32, storage::f32);  // rotation_reversed on the whole view

  rope_config deepseek = claimed_config(96);
  deepseek.rotary_dim = 64;
  deepseek.pair_layout = layout::interleaved;
  deepseek.outputs = output_order::half_split;
  rope_config in_place = deepseek;
  in_place.outputs = output_order::in_place;
  const auto left_in_place = make_dump<float>(rope_geometry::of(in_place), hf_angle<float>(in_place), kPos, kPos, "float32");
  ASSERT_EQ(judge::audit(left_in_place, deepseek).findings.front().bug_class, "outputs_in_place");
  expect_view_judged_alike(left_in_place, deepseek, storage::f32, storage::f32);
  const auto half_in_place = make_dump<float16>(rope_geometry::of(in_place), hf_angle<float>(in_place), kPos, kPos, "float16");
  expect_view_judged_alike(half_in_place, deepseek, storage::f16, storage::f16);
}

TEST(DumpView, HfStridedHeadsTokensLayoutIsJudgedAsTheTokenMajorDump) {
  const auto c = claimed_config();
  expect_view_judged_alike(make_dump<float>(rope_geometry::of(c), hf_angle<float>(c), kPos, kPos, "float32"), c, storage::f32,
                           storage::f32, {}, true);
  expect_view_judged_alike(offset_by_one(c, "float32"), c, storage::f32, storage::f32, {}, true);
}

TEST(DumpView, ANaNOutputIsJudgedNonFiniteAsInTheWidenedDump) {
  const auto c = claimed_config();
  auto d = make_dump<float>(rope_geometry::of(c), hf_angle<float>(c), kPos, kPos, "float32");
  d.y[d.y.size() / 2 + 3] = std::numeric_limits<double>::quiet_NaN();
  d.y[7] = -std::numeric_limits<double>::infinity();
  ASSERT_EQ(judge::audit(d, c).findings.front().bug_class, "non_finite");
  expect_view_judged_alike(d, c, storage::f32, storage::f32);
  expect_view_judged_alike(d, c, storage::f64, storage::f64);
}

// The judge tells the view what it is done with: the judging each chunk it has read (every token once,
// from both workers), then the widening of this small dump each token in turn, so every token is heard
// twice; widening an ascending list hears the tokens up to each one taken. widen() gives the dump back.
TEST(DumpView, DoneWithHearsEveryTokenFromTheJudgingAndTheWideningAndWidenGivesBackTheDump) {
  const auto c = claimed_config();
  const auto d = make_dump<float>(rope_geometry::of(c), hf_angle<float>(c), kPos, kPos, "float32");
  stored_dump s = store(d, storage::f32, storage::f32);
  std::mutex m;
  std::vector<int> heard(static_cast<std::size_t>(d.tokens), 0);
  std::vector<std::pair<std::int64_t, std::int64_t>> ranges;
  s.view.done_with = [&](std::int64_t first, std::int64_t end) {
    const std::lock_guard lock(m);
    ASSERT_LT(first, end);
    ranges.emplace_back(first, end);
    for (std::int64_t t = first; t < end; ++t) ++heard[static_cast<std::size_t>(t)];
  };
  judge::audit_options two;
  two.threads = 2;
  (void)judge::audit(s.view, c, two);
  EXPECT_EQ(std::count(heard.begin(), heard.end(), 2), d.tokens);
  ranges.clear();
  const judge::dump some = judge::widen_tokens(s.view, {3, 10, 50});
  EXPECT_EQ(ranges, (std::vector<std::pair<std::int64_t, std::int64_t>>{{0, 4}, {4, 11}, {11, 51}}));
  EXPECT_EQ(some.positions, (std::vector<std::int64_t>{kPos[3], kPos[10], kPos[50]}));
  s.view.done_with = nullptr;
  const judge::dump w = judge::widen(s.view);
  EXPECT_EQ(w.x, d.x);
  EXPECT_EQ(w.y, d.y);
  EXPECT_EQ(w.positions, d.positions);
  EXPECT_EQ(w.dtype, d.dtype);
}

}  // namespace
