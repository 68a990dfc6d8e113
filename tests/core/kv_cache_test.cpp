// Tests of ropecheck/kv_cache.hpp: keys stored rotated at their positions and values raw; the
// position discipline of append / append_at / prefill; eviction that renumbers survivors by
// re-rotation; and the refusal to use a cache under another schedule. The randomised versions of
// these properties are in tests/properties/kv_cache_test.cpp.
#include "ropecheck/kv_cache.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "ropecheck/judge/error_model.hpp"
#include "ropecheck/error.hpp"
#include "ropecheck/judge/exact_strategy.hpp"
#include "ropecheck/presets.hpp"
#include "ropecheck/reference/reference.hpp"
#include "support/positions.hpp"
#include "support/rope_check.hpp"

namespace ropecheck {
namespace {

using reference::rope_reference;

rope_config small_config() {
  rope_config c;  // Llama-2's convention on 32 coordinates, so that every test is quick
  c.head_dim = c.rotary_dim = 32;
  return c;
}

// The message of the std::logic_error `f` throws, or "" when it throws none.
template <class F>
std::string logic_error_of(F&& f) {
  try {
    f();
  } catch (const std::logic_error& e) {
    return e.what();
  }
  return "";
}

template <class S, class C, class A>
std::vector<S> rotated(const kv_cache<S, C, A>& cache, std::span<const S> raw, std::int64_t pos) {
  std::vector<S> y(raw.size());
  rotate_heads<C>(raw, std::span<S>(y), cache.heads(), cache.geometry(), pos, cache.strategy());
  return y;
}

template <class T>
bool bitwise_equal_spans(std::span<const T> a, std::span<const T> b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (!bitwise_equal(a[i], b[i])) return false;
  return true;
}

TEST(KvCache, stores_keys_rotated_at_their_position_and_values_bit_for_bit_raw) {
  const rope_config cfg = small_config();
  kv_cache<float, float, hf_angle<float>> cache(cfg, 2);
  std::mt19937_64 rng(test::test_seed());
  std::vector<std::vector<float>> raw_keys, raw_values;
  for (std::int64_t p = 0; p < 5; ++p) {
    raw_keys.push_back(test::random_vector<float>(64, rng));
    raw_values.push_back(test::random_vector<float>(64, rng));
    EXPECT_EQ(cache.next_position(), p);
    cache.append(raw_keys.back(), raw_values.back(), p);
  }
  ASSERT_EQ(cache.size(), 5u);
  EXPECT_EQ(cache.next_position(), 5);
  for (std::size_t t = 0; t < 5; ++t) {
    EXPECT_EQ(cache.positions()[t], static_cast<std::int64_t>(t));
    EXPECT_TRUE(bitwise_equal_spans(cache.key(t), std::span<const float>(rotated(cache, std::span<const float>(raw_keys[t]),
                                                                                 static_cast<std::int64_t>(t)))))
        << "token " << t;
    EXPECT_TRUE(bitwise_equal_spans(cache.value(t), std::span<const float>(raw_values[t]))) << "token " << t;
  }
  // Position 0 rotates by the identity (af = 1): the first key is its raw key.
  EXPECT_TRUE(bitwise_equal_spans(cache.key(0), std::span<const float>(raw_keys[0])));
}

TEST(KvCache, a_gap_or_a_repeat_in_append_positions_throws_naming_both_positions) {
  kv_cache<float, float, direct_angle<float>> cache(small_config(), 1);
  const std::vector<float> k(32, 0.5f), v(32, 0.25f);
  // A fresh cache expects position 0: decode that forgot the prompt is caught at once.
  const std::string fresh = logic_error_of([&] { cache.append(k, v, 3); });
  EXPECT_NE(fresh.find("position 3"), std::string::npos) << fresh;
  EXPECT_NE(fresh.find("expects position 0"), std::string::npos) << fresh;

  cache.prefill(std::vector<float>(4 * 32, 0.5f), std::vector<float>(4 * 32, 0.25f), 0);
  const std::string gap = logic_error_of([&] { cache.append(k, v, 5); });
  EXPECT_NE(gap.find("position 5"), std::string::npos) << gap;
  EXPECT_NE(gap.find("last cached position 3"), std::string::npos) << gap;
  EXPECT_NE(gap.find("a gap"), std::string::npos) << gap;
  const std::string repeat = logic_error_of([&] { cache.append(k, v, 3); });
  EXPECT_NE(repeat.find("position 3"), std::string::npos) << repeat;
  EXPECT_NE(repeat.find("a repeat"), std::string::npos) << repeat;
  // "decode restarted at 0"
  EXPECT_NE(logic_error_of([&] { cache.append(k, v, 0); }), "");
  EXPECT_EQ(cache.size(), 4u) << "a refused append must not store anything";

  cache.append(k, v, 4);
  cache.append_at(k, v, 100);  // an explicit position is the caller's business
  EXPECT_EQ(cache.positions().back(), 100);
  EXPECT_EQ(cache.next_position(), 101);
  EXPECT_NE(logic_error_of([&] { cache.prefill(std::vector<float>(32, 0.5f), std::vector<float>(32, 0.25f), 7); }), "");
}

TEST(KvCache, prefill_equals_the_same_tokens_appended_one_by_one_bit_for_bit) {
  for (const auto& nc : rule_sweep()) {
    std::mt19937_64 rng(test::test_seed());
    const int heads = 2;
    const auto n = static_cast<std::size_t>(heads * nc.cfg.head_dim);
    const auto keys = test::random_vector<bfloat16>(6 * n, rng);
    const auto values = test::random_vector<bfloat16>(6 * n, rng);
    kv_cache<bfloat16, float, hf_angle<float>> prefilled(nc.cfg, heads, nc.seq_len), appended(nc.cfg, heads, nc.seq_len);
    const std::int64_t first = 65500;  // around fp16's largest finite value
    prefilled.prefill(keys, values, first);
    appended.append_at(std::span(keys).subspan(0, n), std::span(values).subspan(0, n), first);
    for (std::size_t t = 1; t < 6; ++t)
      appended.append(std::span(keys).subspan(t * n, n), std::span(values).subspan(t * n, n),
                      first + static_cast<std::int64_t>(t));
    EXPECT_TRUE(bitwise_equal_spans(prefilled.keys(), appended.keys())) << nc.name;
    EXPECT_TRUE(bitwise_equal_spans(prefilled.values(), appended.values())) << nc.name;
    EXPECT_TRUE(std::ranges::equal(prefilled.positions(), appended.positions())) << nc.name;
  }
}

TEST(KvCache, rejects_keys_and_values_of_the_wrong_size_and_a_strategy_of_another_width) {
  kv_cache<float, float, direct_angle<float>> cache(small_config(), 2);
  const std::vector<float> short_key(63), value(64);
  EXPECT_THROW(cache.append(short_key, value, 0), std::invalid_argument);
  EXPECT_THROW(cache.prefill(std::vector<float>(100), std::vector<float>(100), 0), std::invalid_argument);
  rope_config wide = small_config();
  wide.head_dim = wide.rotary_dim = 64;
  EXPECT_THROW((kv_cache<float, float, direct_angle<float>>(small_config(), 1, direct_angle<float>(wide))),
               std::invalid_argument);
  EXPECT_THROW((kv_cache<float, float, direct_angle<float>>(small_config(), 0)), std::invalid_argument);
}

// ---------------------------------------------------------------------------------------------
// Eviction.

TEST(KvCacheEviction, renumbers_survivors_contiguously_from_the_first_position_and_moves_values_untouched) {
  const rope_config cfg = small_config();
  kv_cache<double, double, direct_angle<double>> cache(cfg, 1);
  std::mt19937_64 rng(test::test_seed());
  const auto keys = test::random_vector<double>(10 * 32, rng);
  const auto values = test::random_vector<double>(10 * 32, rng);
  cache.prefill(keys, values, 0);
  const auto sink_key = std::vector<double>(cache.key(0).begin(), cache.key(1).end());
  // StreamingLLM: keep the attention sinks 0 and 1, drop 2..5, keep the recent window 6..9.
  const std::vector<std::size_t> drop{5, 2, 3, 4, 3};
  cache.evict(drop);
  ASSERT_EQ(cache.size(), 6u);
  EXPECT_TRUE(std::ranges::equal(cache.positions(), std::vector<std::int64_t>{0, 1, 2, 3, 4, 5}));
  EXPECT_EQ(cache.next_position(), 6);
  // Sinks did not move: their keys are bit-for-bit what they were (no identity "re-rotation").
  EXPECT_TRUE(bitwise_equal_spans(std::span<const double>(cache.keys()).subspan(0, 64), std::span<const double>(sink_key)));
  const std::size_t survivors[] = {0, 1, 6, 7, 8, 9};
  for (std::size_t i = 0; i < 6; ++i)
    EXPECT_TRUE(bitwise_equal_spans(cache.value(i), std::span<const double>(values).subspan(survivors[i] * 32, 32))) << i;

  // Decoding continues at the renumbered position; the old one is now a gap.
  const std::vector<double> k(32, 0.5), v(32, 0.25);
  EXPECT_NE(logic_error_of([&] { cache.append(k, v, 10); }), "");
  cache.append(k, v, 6);

  // Dropping the first token keeps the cache's origin: the survivors start where it started.
  kv_cache<double, double, direct_angle<double>> late(cfg, 1);
  late.prefill(keys, values, 1000);
  const std::vector<std::size_t> first_two{0, 1};
  late.evict(first_two);
  EXPECT_EQ(late.positions().front(), 1000);
  EXPECT_EQ(late.next_position(), 1008);
  EXPECT_THROW(late.evict(std::vector<std::size_t>{8}), std::out_of_range);
}

// A re-rotated key against the reference's exact rotation of its raw key at the new position.
// Bound (derived in tests/properties/kv_cache_test.cpp): sqrt2 (B1 + af B2) + 2 B1 B2 per unit of
// |k_a| + |k_b|, B1 the first rotation's bound, B2 the re-rotation's.
template <class S, class C>
void expect_rerotation_within_bound(const named_config& nc) {
  const rope_reference ref(nc.cfg, nc.seq_len);
  const judge::exact_angle<C> cs(ref);
  const int heads = 2;
  const rope_geometry g = rope_geometry::of(nc.cfg);
  const auto n = static_cast<std::size_t>(heads * g.head_dim);
  kv_cache<S, C, judge::exact_angle<C>> cache(nc.cfg, heads, cs, nc.seq_len);
  std::mt19937_64 rng(test::test_seed());
  const std::int64_t first = 131000;
  const int tokens = 12;
  const auto keys = test::random_vector<S>(tokens * n, rng);
  cache.prefill(keys, std::vector<S>(keys.size(), S(0.0f)), first);
  const std::vector<std::size_t> drop{3, 4, 5, 6, 7, 8, 9};  // a gap of 7 tokens in the middle
  cache.evict(drop);
  const long double af = ref.attention_factor().value();
  const long double cs_exact = (unit_roundoff<C>() + std::ldexp(1.0L, -62)) * af;  // exact_angle: one rounding
  const long double cs_unit = af == 1.0L ? cs_exact : 3 * unit_roundoff<C>() + std::ldexp(1.0L, -61);
  const long double b1 = judge::rotation_bound<C, S>(cs_exact, af), b2 = judge::rotation_bound<C, S>(cs_unit, 1.0L);
  const long double bound = std::sqrt(2.0L) * (b1 + af * b2) + 2 * b1 * b2;
  const std::size_t survivors[] = {0, 1, 2, 10, 11};
  std::vector<double> x(static_cast<std::size_t>(g.head_dim));
  std::vector<reference::dd> want(x.size());
  long double worst = 0;
  for (std::size_t i = 0; i < 5; ++i) {
    const std::int64_t p = cache.positions()[i];
    EXPECT_EQ(p, first + static_cast<std::int64_t>(i));
    for (int h = 0; h < heads; ++h) {
      const std::size_t off = survivors[i] * n + static_cast<std::size_t>(h * g.head_dim);
      for (std::size_t j = 0; j < x.size(); ++j) x[j] = static_cast<double>(scalar_traits<S>::widen(keys[off + j]));
      ref.rotate(p, x, want);
      const auto got = cache.key(i).subspan(static_cast<std::size_t>(h * g.head_dim), x.size());
      for (int band = 0; band < g.bands(); ++band) {
        const auto [a, b] = g.pair_of(band);
        const long double scale = std::fabs(static_cast<long double>(x[a])) + std::fabs(static_cast<long double>(x[b]));
        for (const int j : {a, b}) {
          const long double e = scaled_error(scalar_traits<S>::widen(got[j]), want[j].hi, want[j].lo, scale == 0 ? 1 : scale);
          worst = std::max(worst, e);
          EXPECT_LE(e, bound) << nc.name << " token " << i << " coordinate " << j;
        }
      }
    }
  }
  std::printf("[ropecheck] %-26s %s/%s re-rotation worst %.3Lg of bound %.3Lg (per unit of |k_a|+|k_b|)\n",
              nc.name.c_str(), scalar_name<S>().data(), scalar_name<C>().data(), worst, bound);
}

TEST(KvCacheEviction, a_re_rotated_key_is_the_raw_key_rotated_at_its_new_position_within_two_rotation_bounds) {
  for (const auto& nc : rule_sweep()) {
    expect_rerotation_within_bound<double, double>(nc);
    expect_rerotation_within_bound<float, float>(nc);
    expect_rerotation_within_bound<bfloat16, float>(nc);
  }
}

TEST(KvCacheEviction, re_rotation_does_not_apply_the_yarn_attention_factor_twice) {
  const auto sweep = rule_sweep();
  const auto yarn = *std::ranges::find_if(sweep, [](const named_config& c) { return c.name == "yarn_x4"; });
  const rope_reference ref(yarn.cfg);
  ASSERT_GT(ref.attention_factor().value(), 1.1L);
  kv_cache<double, double, judge::exact_angle<double>> cache(yarn.cfg, 1, judge::exact_angle<double>(ref));
  std::vector<double> keys(3 * 128, 0.0), values(3 * 128, 0.0);
  keys[2 * 128] = 1.0;  // the last token's key: e_0
  cache.prefill(keys, values, 0);
  cache.evict(std::vector<std::size_t>{0});
  // |R k| = af |k| for the pair holding e_0, whatever the position.
  const auto [a, b] = cache.geometry().pair_of(0);
  const double norm = std::hypot(cache.key(1)[a], cache.key(1)[b]);
  EXPECT_NEAR(norm, static_cast<double>(ref.attention_factor().value()), 8 * unit_roundoff<double>())
      << "re-rotation multiplied the key by the attention factor again";
}

// ---------------------------------------------------------------------------------------------
// Schedule identity.

TEST(ScheduleFingerprint, fields_the_rule_does_not_read_do_not_count) {
  rope_config a = small_config();
  rope_config b = a;
  b.factor = 8.0;  // not read by the default rule
  b.beta_fast = 16.0;
  EXPECT_EQ(schedule_fingerprint::of(a), schedule_fingerprint::of(b));
  // Dynamic NTK gives the base schedule at every length up to its threshold.
  a.scaling = b.scaling = scaling_kind::dynamic_ntk;
  a.factor = b.factor = 2.0;
  EXPECT_EQ(schedule_fingerprint::of(a, 0), schedule_fingerprint::of(b, a.max_position_embeddings));
  EXPECT_NE(schedule_fingerprint::of(a, 0), schedule_fingerprint::of(b, a.max_position_embeddings + 1));
}

TEST(ScheduleFingerprint, a_cache_is_refused_under_another_schedule_with_a_sentence_naming_the_field) {
  const rope_config cfg = small_config();
  kv_cache<float, float, hf_angle<float>> cache(cfg, 1);
  EXPECT_NO_THROW(cache.check_schedule(schedule_fingerprint::of(cfg)));

  struct change {
    const char* field;
    rope_config cfg;
    std::int64_t seq_len = 0;
  };
  std::vector<change> changes;
  rope_config c = cfg;
  c.base = 500000.0;
  changes.push_back({"rope_theta (base) is 500000", c});
  c = cfg;
  c.pair_layout = layout::interleaved;
  changes.push_back({"layout is interleaved", c});
  c = cfg;
  c.scaling = scaling_kind::linear;
  c.factor = 4.0;
  changes.push_back({"scaling is linear", c});
  c = cfg;
  c.rotary_dim = 16;
  changes.push_back({"rotary_dim is 16", c});
  for (const auto& ch : changes) {
    const std::string msg = logic_error_of([&] { cache.check_schedule(schedule_fingerprint::of(ch.cfg, ch.seq_len)); });
    EXPECT_NE(msg.find(ch.field), std::string::npos) << msg;
  }

  // Dynamic NTK not reset after a long sequence: the cache of the long prompt, a short prompt.
  rope_config dyn = cfg;
  dyn.scaling = scaling_kind::dynamic_ntk;
  dyn.factor = 2.0;
  kv_cache<float, float, hf_angle<float>> long_prompt(dyn, 1, 20000);
  const std::string msg = logic_error_of([&] { long_prompt.check_schedule(schedule_fingerprint::of(dyn, 100)); });
  EXPECT_NE(msg.find("the dynamic NTK sequence length is 4096 in the schedule in use but the keys were rotated with 20000"),
            std::string::npos)
      << msg;
  rope_config dyn4 = dyn;
  dyn4.factor = 4.0;
  const std::string both = logic_error_of([&] { long_prompt.check_schedule(schedule_fingerprint::of(dyn4, 20000)); });
  EXPECT_NE(both.find("scaling factor is 4"), std::string::npos) << both;
}

}  // namespace
}  // namespace ropecheck
