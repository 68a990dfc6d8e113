// Property 6 of the suite: a position-aware KV cache (ropecheck/kv_cache.hpp) keeps every key at
// the position the caller meant, through prefill, decode and eviction, and only under the schedule
// its keys were rotated with.
//
// Implementations: kv_cache<S, C, judge::exact_angle<C>> for the storage/compute pairings real engines
// use. The exact strategy isolates the cache's bookkeeping from angle error (angle strategies have
// properties of their own), so every bound here is the rotation arithmetic of error_model.hpp.
//
// Draws: the schedule (every rule and layout of presets.hpp's rule_sweep), positions log-uniform up
// to 2^20 with regime edges and powers of two (generators.hpp), token counts, and a seed for the
// key/value/query coordinates. Coordinates are k/64, |k| <= 255 (exact in bf16), made from the
// drawn seed rather than drawn one by one: a case holds thousands of them, shrinking them would
// cost minutes and say nothing, while the positions and the schedule are what a counterexample
// must show.
#include <gtest/gtest.h>
#include <rapidcheck.h>

#include "framework.hpp"
#include "kv_cache_properties.hpp"

namespace ropecheck::test {
namespace {

using namespace kv_properties;

template <class S, class C>
struct pairing {
  using storage = S;
  using compute = C;
};

template <class P>
class KvCacheProperty : public ::testing::Test {
 protected:
  // Not S and C: the tests' own `using S = ...` would shadow them (-Wshadow).
  using storage_t = typename P::storage;
  using compute_t = typename P::compute;
  static std::string id(const char* property) {
    return std::string("kv_cache/") + property + "/" + std::string(scalar_name<storage_t>()) + "_" +
           std::string(scalar_name<compute_t>());
  }
};
// Eager arithmetic in fp32 and fp64; 16-bit storage with fp32 compute, as fused GPU kernels do.
using Pairings = ::testing::Types<pairing<float, float>, pairing<double, double>, pairing<bfloat16, float>,
                                  pairing<float16, float>>;
TYPED_TEST_SUITE(KvCacheProperty, Pairings);

TYPED_TEST(KvCacheProperty, incremental_decode_stores_the_keys_of_a_full_prefill_bit_for_bit_and_scores_match_keys_rotated_directly) {
  using S = typename TestFixture::storage_t;
  using C = typename TestFixture::compute_t;
  ROPECHECK_EXPECT_PROPERTY(TestFixture::id("incremental_decode_equals_prefill"),
                            (incremental_decode_equals_full_prefill<S, C>()));
}

TYPED_TEST(KvCacheProperty, decode_scores_equal_the_exact_scores_at_the_relative_offsets_the_caller_intended) {
  using S = typename TestFixture::storage_t;
  using C = typename TestFixture::compute_t;
  ROPECHECK_EXPECT_PROPERTY(TestFixture::id("decode_scores_follow_intended_offsets"),
                            (decode_scores_follow_the_intended_offsets<S, C, exact_cache<S, C>>(make_cache<S, C>)));
}

// The detection properties: the same property over a miscounting engine must FAIL, and its
// counterexample is printed as evidence.
template <class S, class C>
void expect_position_bug_detected(position_bug bug, const std::string& id) {
  using buggy = miscounting_cache<S, C, judge::exact_angle<C>>;
  const auto outcome = check_property(
      id,
      decode_scores_follow_the_intended_offsets<S, C, buggy>([bug](const schedule_under_test& s) {
        return buggy(make_cache<S, C>(s), bug);
      }),
      /*quiet=*/true);
  EXPECT_FALSE(outcome.passed) << id << ": the position bug went unnoticed: " << outcome.report();
  std::cout << "[ropecheck] " << id << " (expected to fail): " << outcome.report() << '\n';
}

TYPED_TEST(KvCacheProperty, an_engine_that_rotates_decoded_keys_one_position_ahead_is_detected) {
  expect_position_bug_detected<typename TestFixture::storage_t, typename TestFixture::compute_t>(
      position_bug::one_ahead, TestFixture::id("detects_decode_one_position_ahead"));
}

TYPED_TEST(KvCacheProperty, an_engine_that_restarts_decode_at_position_zero_is_detected) {
  expect_position_bug_detected<typename TestFixture::storage_t, typename TestFixture::compute_t>(
      position_bug::restart_at_zero, TestFixture::id("detects_decode_restarted_at_zero"));
}

TYPED_TEST(KvCacheProperty, evicting_tokens_and_renumbering_survivors_by_re_rotation_equals_rotating_their_raw_keys_at_the_new_positions) {
  using S = typename TestFixture::storage_t;
  using C = typename TestFixture::compute_t;
  long double worst = 0;
  ROPECHECK_EXPECT_PROPERTY(TestFixture::id("eviction_equals_rotation_at_new_position"),
                            (eviction_equals_rotation_at_the_new_position<S, C>(&worst)));
  const long double bound = rerotation_bound<S, C>(1.0L);
  std::printf("[ropecheck] %s/%s re-rotation after eviction: worst %.3Lg per unit of |k_a|+|k_b|, %.2Lf of the "
              "bound at af = 1 (%.3Lg)\n",
              scalar_name<S>().data(), scalar_name<C>().data(), worst, worst / bound, bound);
}

TYPED_TEST(KvCacheProperty, a_cache_built_under_one_schedule_is_refused_under_another) {
  using C = typename TestFixture::compute_t;
  ROPECHECK_EXPECT_PROPERTY(TestFixture::id("refused_under_another_schedule"), (cache_is_refused_under_another_schedule<C>()));
}

}  // namespace
}  // namespace ropecheck::test
