// tests/certify/certify_test.cpp — tools/certify: the sweep (engine.hpp), shards and merge
// (certificate.hpp), the verdict, and agreement with the report's independent measurement.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include <cmath>

// Both engines' headers are called engine.hpp: reach each by its folder.
#include "../../tools/certify/certificate.hpp"
#include "../../tools/certify/engine.hpp"
#include "../../tools/report/engine.hpp"
#include "ropecheck/presets.hpp"
#include "ropecheck/reference/reference.hpp"

namespace ropecheck::certify {
namespace {

rope_config llama3() { return *find_preset("llama3-8b"); }

certify_request request(std::int64_t n, std::vector<std::string> impls, int threads = 1) {
  certify_request q;
  q.config_name = "llama3-8b";
  q.config = llama3();
  q.max_position = n;
  q.implementations = std::move(impls);
  q.threads = threads;
  return q;
}

std::string certificate_of(certify_request q) { return finalize(run_certify(q).partial).json; }

std::string merged(certify_request q, int shards, int threads) {
  std::vector<partial_certificate> parts;
  std::vector<std::string> names;
  q.threads = threads;
  q.shard_count = shards;
  for (int k = shards; k >= 1; --k) {  // any order
    q.shard_index = k;
    const std::string text = partial_json(run_certify(q).partial);
    names.push_back("part " + std::to_string(k));
    parts.push_back(read_partial(text, names.back()));
  }
  return finalize(merge_partials(parts, names)).json;
}

TEST(ShardRange, SlicesAreContiguousDisjointAndComplete) {
  for (const std::int64_t n : {std::int64_t{1}, std::int64_t{2}, std::int64_t{7}, std::int64_t{4095}, (std::int64_t{1} << 31) - 1})
    for (const int count : {1, 2, 3, 4, 7, 64}) {
      std::int64_t next = 0;
      for (int k = 1; k <= count; ++k) {
        const position_range r = shard_range(n, k, count);
        EXPECT_EQ(r.first, next) << n << " " << k << "/" << count;
        EXPECT_GE(r.last, r.first - 1);
        next = r.last + 1;
      }
      EXPECT_EQ(next, n + 1) << n << " /" << count;
    }
  // More shards than positions (N + 1 == count, and one more): empty slices, still complete.
  EXPECT_EQ(shard_range(2, 3, 3).first, 2);
  EXPECT_EQ(shard_range(2, 3, 3).last, 2);
  EXPECT_EQ(shard_range(2, 1, 4).last, -1);  // empty: [0, -1]
}

// The acceptance property: sharded and merged == unsharded, byte for byte, for any shard count
// and any thread count (including shards smaller than a block, and a shard boundary inside a run
// of equal float positions is not reachable at this N; the halo row crosses every boundary).
TEST(Certify, ShardedAndMergedIsByteIdenticalForAnyShardAndThreadCount) {
  const certify_request q = request(3000, {"hf_float", "bf16_positions", "direct_double"});
  const std::string one = certificate_of(q);
  certify_request q2 = q;
  q2.threads = 2;
  EXPECT_EQ(certificate_of(q2), one);
  q2.threads = 3;
  EXPECT_EQ(certificate_of(q2), one);
  for (const int shards : {1, 2, 3, 5, 12})
    for (const int threads : {1, 2}) EXPECT_EQ(merged(q, shards, threads), one) << shards << " shards, " << threads << " threads";
}

TEST(Certify, VerdictsAreTheJudgesCorrectConventionsPassBugsFail) {
  const certify_run run = run_certify(request(8191, {}, 2));
  const certificate c = finalize(run.partial);
  ASSERT_EQ(c.result.summary.size(), run.partial.inputs.implementations.size());
  for (std::size_t i = 0; i < c.result.summary.size(); ++i) {
    const std::string& name = run.partial.inputs.implementations[i].name;
    const bool bug = name == "bf16_positions" || name == "cos_sin_cache_bf16" || name == "fast_sincos" ||
                     name == "eager_bf16" || name == "direct_float16";
    EXPECT_EQ(c.result.summary[i].find(bug ? ": FAIL" : ": PASS") != std::string::npos, true) << c.result.summary[i];
  }
  EXPECT_FALSE(c.result.pass);
  EXPECT_NE(c.json.find("\"verdict\": \"fail\""), std::string::npos);
  const certificate good = finalize(run_certify(request(8191, {"hf_float", "hf_bf16", "ggml_float"}, 2)).partial);
  EXPECT_TRUE(good.result.pass);
  EXPECT_NE(good.json.find("\"verdict\": \"pass\""), std::string::npos);
}

// bf16 holds 256 and rounds 257 to 256: the applied pair at 256 equals 257's. p = N has no p + 1
// within the certificate, so at N = 256 nothing is equal; at N = 257 it is 256.
TEST(Certify, FirstEqualAdjacentPositionNeedsItsNextPositionInRange) {
  auto first_equal = [](std::int64_t n) {
    const certify_run r = run_certify(request(n, {"bf16_positions"}));
    std::int64_t f = -1;
    for (const auto& b : r.partial.stats[0]) first_of(f, b.first_equal_next);
    return f;
  };
  EXPECT_EQ(first_equal(256), -1);
  EXPECT_EQ(first_equal(257), 256);
}

// A shard that ends at 256 must still compare 256 with 257 (the halo row): N = 513 in 2 shards is
// [0, 256] and [257, 513]; without the halo the first equal pair would be found at 259 instead.
TEST(Certify, ShardEndingBeforeAnEqualPairComparesAcrossTheBoundary) {
  certify_request q = request(513, {"bf16_positions"});
  q.shard_count = 2;
  q.shard_index = 1;
  const certify_run first = run_certify(q);
  ASSERT_EQ(first.partial.range.last, 256);
  std::int64_t f = -1;
  for (const auto& b : first.partial.stats[0]) first_of(f, b.first_equal_next);
  EXPECT_EQ(f, 256);
  EXPECT_EQ(merged(request(513, {"bf16_positions"}), 2, 1), certificate_of(request(513, {"bf16_positions"})));
}

// Thresholds at a band's own worst value: the angle's is strict (>), the tokens' inclusive (>=).
TEST(Certify, ThresholdsAtEqualityAngleStrictTokensInclusive) {
  certify_request q = request(4095, {"hf_float"});
  const certify_run base = run_certify(q);
  const band_stats& b0 = base.partial.stats[0][5];
  q.angle_threshold_rad = b0.angle.value;
  const certify_run at_angle = run_certify(q);
  EXPECT_EQ(at_angle.partial.stats[0][5].first_angle_over, -1);
  // The token figure of band 5 at its worst position is angle / theta_5 as the engine divides it.
  const reference::rope_reference ref(q.config, q.max_position + 1, 256);
  const double t5 = static_cast<double>(ref.inv_freq(5).value());
  q.angle_threshold_rad = 1e-3;
  q.position_threshold_tokens = b0.angle.value / t5;
  const certify_run at_tokens = run_certify(q);
  const std::int64_t f = at_tokens.partial.stats[0][5].first_tokens_over;
  EXPECT_GE(f, 0);
  EXPECT_LE(f, b0.angle.position);
  q.position_threshold_tokens = std::nextafter(b0.angle.value / t5, 1e300);
  EXPECT_EQ(run_certify(q).partial.stats[0][5].first_tokens_over, -1);
}

// The certificate's worst applied angle per band against the report's exhaustive sweep, which
// measures the same quantity on its own path (per-position all_bands reference, atan2 on every gross
// value). bf16 positions, eager bf16 and fp16 overflow make most values gross (errors up to pi, inf):
// the diamond-key shortcut must give the same maxima.
TEST(Certify, AgreesWithTheReportsExhaustiveSweepBandByBand) {
  const std::int64_t n = 70000;
  const std::vector<std::string> impls{"hf_float", "ggml_float", "hf_bf16", "direct_double", "bf16_positions", "eager_bf16",
                                       "direct_float16"};
  const certify_run c = run_certify(request(n, impls, 2));
  report::report_request rq;
  rq.config = llama3();
  rq.max_position = n;
  rq.exhaustive = true;
  rq.implementations = impls;
  rq.threads = 2;
  rq.judge = false;
  const report::report_result r = report::run_report(rq);
  ASSERT_EQ(r.series.size(), impls.size());
  for (std::size_t i = 0; i < impls.size(); ++i)
    for (std::size_t b = 0; b < c.partial.stats[i].size(); ++b) {
      const auto& heat = r.series[i].band_position_heat[b];
      const double report_max = *std::max_element(heat.begin(), heat.end());
      const double mine = c.partial.stats[i][b].angle.value;
      // Both are the applied angle's error to ~2^-50 relative (engine.hpp of each).
      // Both measure to ~2^-50 relative; for double values the report works in long double with the
      // reference rounded to it: its cross product is off by up to ~3 x 2^-64 |z| absolute (2^-61 here),
      // which certify's compensated products resolve (engine.hpp of each).
      const double absolute = impls[i] == "direct_double" ? 0x1p-61 : 0x1p-90;
      if (std::isinf(report_max)) EXPECT_EQ(mine, report_max) << impls[i] << " band " << b;
      else EXPECT_NEAR(mine, report_max, 0x1p-40 * report_max + absolute) << impls[i] << " band " << b;
    }
}

TEST(Merge, RefusesMissingDuplicateAndForeignShards) {
  certify_request q = request(1000, {"hf_float"});
  q.shard_count = 3;
  std::vector<partial_certificate> parts;
  for (int k = 1; k <= 3; ++k) {
    q.shard_index = k;
    parts.push_back(run_certify(q).partial);
  }
  const std::vector<std::string> names{"a.json", "b.json", "c.json"};
  EXPECT_NO_THROW((void)merge_partials(parts, names));
  auto message = [&](const std::vector<partial_certificate>& ps) {
    try {
      (void)merge_partials(ps, names);
    } catch (const std::invalid_argument& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(message({parts[0], parts[1]}).find("shards 3 of 3 are missing"), std::string::npos);
  EXPECT_NE(message({parts[0], parts[1], parts[1]}).find("shard 2/3 is given twice (b.json and c.json)"), std::string::npos);
  certify_request other = q;
  other.max_position = 1001;
  other.shard_index = 3;
  EXPECT_NE(message({parts[0], parts[1], run_certify(other).partial}).find("c.json has other inputs"), std::string::npos);
  certify_request four = q;
  four.shard_count = 4;
  four.shard_index = 4;
  EXPECT_NE(message({parts[0], parts[1], run_certify(four).partial}).find("is a shard of 4"), std::string::npos);
  // A partial alone is not a certificate.
  EXPECT_THROW((void)finalize(parts[0]), std::invalid_argument);
}

TEST(ReadPartial, RejectsWhatItDoesNotUnderstand) {
  certify_request q = request(100, {"hf_float"});
  q.shard_count = 2;
  const std::string text = partial_json(run_certify(q).partial);
  EXPECT_NO_THROW((void)read_partial(text, "p.json"));
  auto error_of = [](const std::string& t) {
    try {
      (void)read_partial(t, "p.json");
    } catch (const std::invalid_argument& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  auto replaced = [&](const std::string& from, const std::string& to) {
    std::string t = text;
    const auto at = t.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    return at == std::string::npos ? t : t.replace(at, from.size(), to);
  };
  EXPECT_NE(error_of(replaced("\"format_version\": 1", "\"format_version\": 2")).find("format_version 2 is not 1"), std::string::npos);
  EXPECT_NE(error_of(replaced("\"kind\": \"partial\"", "\"kind\": \"certificate\"")).find("merge reads partials"), std::string::npos);
  EXPECT_NE(error_of(replaced("\"max_position\": 100", "\"max_position\": 101")).find("inputs_sha256 does not match"), std::string::npos);
  EXPECT_NE(error_of(replaced("\"band\": 0,", "\"band\": 0, \"extra\": 1,")).find("unknown key 'extra'"), std::string::npos);
  EXPECT_NE(error_of("{").find("not JSON"), std::string::npos);
}

TEST(Certify, BadRequestsNameTheField) {
  auto error_of = [](certify_request q) {
    try {
      (void)run_certify(q);
    } catch (const std::invalid_argument& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(error_of(request(100, {"no_such"})).find("unknown implementation 'no_such'"), std::string::npos);
  EXPECT_NE(error_of(request(std::int64_t{1} << 31, {"hf_float"})).find("max_position must be in [1, 2^31 - 1]"), std::string::npos);
  certify_request q = request(100, {"hf_float"});
  q.shard_index = 3;
  q.shard_count = 2;
  EXPECT_NE(error_of(q).find("shard 3/2"), std::string::npos);
  // 2^31 - 1 itself is accepted (the request resolves; nothing is run here).
  EXPECT_EQ(resolve_inputs(request((std::int64_t{1} << 31) - 1, {"hf_float"})).max_position, (std::int64_t{1} << 31) - 1);
}

}  // namespace
}  // namespace ropecheck::certify
