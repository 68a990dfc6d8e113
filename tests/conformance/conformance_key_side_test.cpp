// The conformance suite's key side (kernel.hpp apply_k, run.hpp check_key_scores): queries rotated by the
// consumer's correct kernel (tests/package/consumer/rope_kernel.hpp, rope_theta 500000) against keys rotated by a
// key kernel of the adapter's own, read at the score. Each broken key side fails the check with the class the
// pair shows named first; a key side that is right (the same kernel, or another correct one) passes; an adapter
// without apply_k has its keys rotated by apply. Every outcome is printed (the figures: error/allowance ratios).
#include <gtest/gtest.h>

#include <algorithm>
#include <iostream>
#include <string>

#include "own_kernels.hpp"
#include "package/consumer/rope_kernel.hpp"
#include "ropecheck/conformance/run.hpp"

namespace ropecheck::conformance::testing {
namespace {

rope_config claimed_500k() {
  rope_config c;
  c.base = 500000.0;
  c.max_position_embeddings = 8192;
  return c;
}

// How the key kernel departs from the queries' (none: it is the queries' kernel).
enum class key_bug {
  none,
  ahead,          // keys rotated one position ahead (n + 1: the cache length after appending)
  base_10000,     // keys rotated with theta 10000 under the 500000 claim (a key path with its own constant)
  query_stride,   // key heads stepped by the query's head stride: head g at g * (Hq / Hk) mod Hk, so with four query
                  // heads and two key heads key head 0 is rotated twice and key head 1 never written
};

template <key_bug K, class T = float>
struct paired_kernel {
  using storage = T;
  using compute = float;
  static rope_config convention() { return claimed_500k(); }
  static void apply(std::span<const T> x, std::span<T> y, const call& c) {
    consumer::rope<T, float>(x.data(), y.data(), c.start(), c.tokens, c.heads, c.head_dim, 500000.0);
  }
  static void apply_k(std::span<const T> x, std::span<T> y, const call& c) {
    if constexpr (K == key_bug::none) apply(x, y, c);
    if constexpr (K == key_bug::ahead)
      consumer::rope<T, float>(x.data(), y.data(), c.start() + 1, c.tokens, c.heads, c.head_dim, 500000.0);
    if constexpr (K == key_bug::base_10000)
      consumer::rope<T, float>(x.data(), y.data(), c.start(), c.tokens, c.heads, c.head_dim, 10000.0);
    if constexpr (K == key_bug::query_stride) {
      const int query_heads = options().probe_heads, stride = query_heads / c.heads;
      for (int t = 0; t < c.tokens; ++t)
        for (int g = 0; g < c.heads; ++g) {
          const auto at = static_cast<std::size_t>((t * c.heads + (g * stride) % c.heads) * c.head_dim);
          consumer::rope<T, float>(x.data() + at, y.data() + at, c.positions[static_cast<std::size_t>(t)], 1, 1,
                                   c.head_dim, 500000.0);
        }
    }
  }
  static conformance::options options() {
    conformance::options o;
    o.kv_heads = 2;  // four query heads (probe_heads), two key heads: query heads 0, 1 read key head 0
    return o;
  }
};

// The consumer's kernel without apply_k: its keys are rotated by apply.
struct queries_only {
  using storage = float;
  static rope_config convention() { return claimed_500k(); }
  static void apply(std::span<const float> x, std::span<float> y, const call& c) {
    consumer::rope<float, float>(x.data(), y.data(), c.start(), c.tokens, c.heads, c.head_dim, 500000.0);
  }
};

bool first_is(const outcome& o, const std::string& cls) { return !o.bug_classes.empty() && o.bug_classes.front() == cls; }
bool has(const outcome& o, const std::string& cls) {
  return std::find(o.bug_classes.begin(), o.bug_classes.end(), cls) != o.bug_classes.end();
}

outcome checked(const kernel& k, const char* what) {
  const outcome o = check_key_scores(k, std::string("ConformanceKeySide.") + what);
  std::cout << "[" << what << "]\n" << o.message;
  return o;
}

TEST(ConformanceKeySide, keys_one_position_ahead_fail_as_key_positions_wrong) {
  const outcome o = checked(bind<paired_kernel<key_bug::ahead>>(), "ahead");
  EXPECT_EQ(o.status, status::failed);
  EXPECT_TRUE(first_is(o, "key_positions_wrong")) << o.message;
  EXPECT_TRUE(has(o, "positions_offset")) << o.message;
  EXPECT_NE(o.message.find("query_key_scores_match_reference: FAILED"), std::string::npos) << o.message;
  EXPECT_NE(o.message.find("replay: RC_PARAMS=\""), std::string::npos) << o.message;
}

TEST(ConformanceKeySide, keys_at_base_10000_under_a_500000_claim_fail_as_key_convention_wrong) {
  const outcome o = checked(bind<paired_kernel<key_bug::base_10000>>(), "base_10000");
  EXPECT_EQ(o.status, status::failed);
  EXPECT_TRUE(first_is(o, "key_convention_wrong")) << o.message;
  EXPECT_TRUE(has(o, "base_wrong")) << o.message;
  EXPECT_NE(o.message.find("10000"), std::string::npos) << o.message;
  EXPECT_NE(o.message.find("query_key_scores_match_reference: FAILED"), std::string::npos) << o.message;
}

TEST(ConformanceKeySide, keys_stepped_by_the_query_head_stride_fail_as_key_convention_wrong) {
  const outcome o = checked(bind<paired_kernel<key_bug::query_stride>>(), "query_stride");
  EXPECT_EQ(o.status, status::failed);
  EXPECT_TRUE(first_is(o, "key_convention_wrong")) << o.message;
  EXPECT_TRUE(has(o, "heads_wrong")) << o.message;
  // query heads 2 and 3 read the unwritten key head 1
  EXPECT_NE(o.message.find("against key head 1"), std::string::npos) << o.message;
}

// g++ 12 at -O2 inlines four adapter_name<A>() string moves into this body and warns that a memcpy reads or writes past a
// std::string's object (-Warray-bounds, -Wstringop-overflow, -Wstringop-overread: a false positive of its string inlining: the same code in the other
// tests of this file, one bind each, is clean); -Werror makes it fatal, so it is silenced for this test alone.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Warray-bounds"
#pragma GCC diagnostic ignored "-Wstringop-overflow"
#pragma GCC diagnostic ignored "-Wstringop-overread"
#endif
TEST(ConformanceKeySide, the_queries_kernel_as_key_side_passes) {
  for (const kernel& k : {bind<paired_kernel<key_bug::none>>(), bind<paired_kernel<key_bug::none, bfloat16>>(),
                          bind<paired_kernel<key_bug::none, float16>>(), bind<queries_only>()}) {
    const outcome o = checked(k, "correct");
    EXPECT_NE(o.status, status::failed) << o.message;
    EXPECT_TRUE(o.bug_classes.empty() || (o.bug_classes.front() != "key_positions_wrong" &&
                                          o.bug_classes.front() != "key_convention_wrong"))
        << o.message;
  }
}
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif

TEST(ConformanceKeySide, without_apply_k_the_keys_are_rotated_by_apply_and_the_heads_default_to_groups_of_two) {
  const outcome o = checked(bind<queries_only>(), "queries_only");
  EXPECT_NE(o.message.find("query heads 4, key heads 2, keys by apply"), std::string::npos) << o.message;
}

struct bad_grouping : paired_kernel<key_bug::none> {
  static conformance::options options() {
    conformance::options o;
    o.kv_heads = 3;
    return o;
  }
};

TEST(ConformanceKeySide, key_heads_that_do_not_divide_the_query_heads_are_an_error_naming_them) {
  const outcome o = check_key_scores(bind<bad_grouping>());
  EXPECT_EQ(o.status, status::failed);
  EXPECT_NE(o.message.find("options().kv_heads"), std::string::npos) << o.message;
  EXPECT_NE(o.message.find("divisor of probe_heads (4"), std::string::npos) << o.message;
}

}  // namespace
}  // namespace ropecheck::conformance::testing
