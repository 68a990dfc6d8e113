// tests/core/convention_test.cpp — conventions as types at run time: typed queries, keys and caches are
// rotated by the real kernels and agree bit for bit with the untyped kernels (convention.hpp
// promises no other arithmetic). What must not compile is in proofs/conventions.cpp and
// proofs/compile_fail/.
#include "ropecheck/convention.hpp"

#include <gtest/gtest.h>

#include <bit>
#include <cstdint>
#include <random>
#include <span>
#include <stdexcept>
#include <vector>

#include "ropecheck/angle.hpp"
#include "ropecheck/attention.hpp"
#include "ropecheck/kv_cache.hpp"
#include "ropecheck/rope.hpp"

namespace {

using namespace ropecheck;

using llama2 = rope_convention<layout::half_split, 128, 128, 10000.0>;
using llama2_int32 = rope_convention<layout::half_split, 128, 128, 10000.0, scaling_kind::none, 1.0, 4096, std::int32_t>;
using gptj_partial = rope_convention<layout::interleaved, 256, 64, 10000.0, scaling_kind::none, 1.0, 2048>;
using llama3_8b = rope_convention<layout::half_split, 128, 128, 500000.0, scaling_kind::llama3, 8.0, 131072,
                                  std::int64_t, 8192>;

constexpr int heads = 2;
constexpr std::uint32_t seed = 20240611;  // fixed: the data only need to be generic, not random

std::vector<float> random_values(std::size_t n, std::uint32_t s) {
  std::mt19937 gen(s);
  std::uniform_real_distribution<float> d(-2.0f, 2.0f);
  std::vector<float> v(n);
  for (auto& x : v) x = d(gen);
  return v;
}

// The untyped path: rotate_heads<float> token by token at each position.
template <class Conv, class Strategy>
std::vector<float> untyped_rotation(const Strategy& s, const std::vector<float>& raw, const std::vector<std::int64_t>& pos) {
  const auto geometry = rope_geometry::of(Conv::config());
  const std::size_t n = static_cast<std::size_t>(heads) * static_cast<std::size_t>(Conv::head_dim);
  std::vector<float> out(raw.size());
  for (std::size_t t = 0; t < pos.size(); ++t)
    rotate_heads<float>(std::span<const float>(raw).subspan(t * n, n), std::span<float>(out).subspan(t * n, n), heads,
                        geometry, pos[t], s);
  return out;
}

void expect_bitwise_equal(std::span<const float> a, std::span<const float> b) {
  ASSERT_EQ(a.size(), b.size());
  for (std::size_t i = 0; i < a.size(); ++i)
    ASSERT_EQ(std::bit_cast<std::uint32_t>(a[i]), std::bit_cast<std::uint32_t>(b[i])) << "at index " << i;
}

// The untyped score of head h: matmul(Q_h, K_h^T) over untyped rotated values.
matrix<float> untyped_score(const std::vector<float>& q, std::size_t nq, const std::vector<float>& k, std::size_t nk,
                            int head_dim, int h) {
  const auto hd = static_cast<std::size_t>(head_dim);
  matrix<float> qh(nq, hd), kt(hd, nk);
  for (std::size_t t = 0; t < nq; ++t)
    for (std::size_t j = 0; j < hd; ++j) qh(t, j) = q[(t * heads + static_cast<std::size_t>(h)) * hd + j];
  for (std::size_t s = 0; s < nk; ++s)
    for (std::size_t j = 0; j < hd; ++j) kt(j, s) = k[(s * heads + static_cast<std::size_t>(h)) * hd + j];
  return matmul(qh, kt);
}

template <class Conv, class Strategy>
void check_typed_equals_untyped(const Strategy& strategy, std::vector<std::int64_t> q_pos, std::vector<std::int64_t> k_pos) {
  const std::size_t n = static_cast<std::size_t>(heads) * static_cast<std::size_t>(Conv::head_dim);
  const auto raw_q = random_values(q_pos.size() * n, seed);
  const auto raw_k = random_values(k_pos.size() * n, seed + 1);
  using P = typename Conv::position_type;
  const std::vector<P> qp(q_pos.begin(), q_pos.end()), kp(k_pos.begin(), k_pos.end());

  const auto q = rotate_query<Conv, float>(strategy, std::span<const float>(raw_q), heads, std::span<const P>(qp));
  const auto k = rotate_key<Conv, float>(strategy, std::span<const float>(raw_k), heads, std::span<const P>(kp));
  const auto uq = untyped_rotation<Conv>(strategy, raw_q, q_pos);
  const auto uk = untyped_rotation<Conv>(strategy, raw_k, k_pos);
  expect_bitwise_equal(q.values(), uq);
  expect_bitwise_equal(k.values(), uk);
  ASSERT_EQ(q.tokens(), q_pos.size());
  for (std::size_t t = 0; t < q_pos.size(); ++t) EXPECT_EQ(static_cast<std::int64_t>(q.positions()[t]), q_pos[t]);

  const auto scores = score(q, k);
  ASSERT_EQ(scores.size(), static_cast<std::size_t>(heads));
  for (int h = 0; h < heads; ++h) {
    const auto expected = untyped_score(uq, q_pos.size(), uk, k_pos.size(), Conv::head_dim, h);
    expect_bitwise_equal(scores[static_cast<std::size_t>(h)].values, expected.values);
  }
}

TEST(convention, typed_query_and_key_are_the_untyped_kernel_bit_for_bit_half_split) {
  check_typed_equals_untyped<llama2>(hf_angle<float>(llama2::config()), {0, 1, 257, 4095}, {3, 4000, 17});
}

TEST(convention, typed_query_and_key_are_the_untyped_kernel_bit_for_bit_interleaved_partial_rotary) {
  check_typed_equals_untyped<gptj_partial>(direct_angle<float>(gptj_partial::config()), {5, 2047}, {0, 1, 2, 1000});
}

TEST(convention, typed_query_and_key_are_the_untyped_kernel_bit_for_bit_llama3_at_long_positions) {
  check_typed_equals_untyped<llama3_8b>(ggml_angle(llama3_8b::config()), {131071, 65536}, {0, 131070, 8191});
}

TEST(convention, the_position_type_changes_no_bit) {
  const std::size_t n = heads * 128;
  const auto raw = random_values(2 * n, seed + 2);
  const std::vector<std::int64_t> p64{12, 4095};
  const std::vector<std::int32_t> p32{12, 4095};
  const auto k64 = rotate_key<llama2, float, hf_angle<float>>(std::span<const float>(raw), heads, std::span<const std::int64_t>(p64));
  const auto k32 =
      rotate_key<llama2_int32, float, hf_angle<float>>(std::span<const float>(raw), heads, std::span<const std::int32_t>(p32));
  expect_bitwise_equal(k64.values(), k32.values());
  // and the two conventions may be scored together (compatible_conventions), with the same result
  const auto q = rotate_query<llama2, float, hf_angle<float>>(std::span<const float>(raw), heads, std::span<const std::int64_t>(p64));
  const auto a = score(q, k64), b = score(q, k32);
  for (int h = 0; h < heads; ++h) expect_bitwise_equal(a[h].values, b[h].values);
}

TEST(convention, a_position_outside_the_context_or_a_wrong_size_is_refused_at_run_time) {
  const std::size_t n = heads * 128;
  const auto raw = random_values(n, seed + 3);
  const std::vector<std::int64_t> past{4096}, negative{-1}, two{0, 1};
  const hf_angle<float> s(llama2::config());
  const auto query_at = [&](const std::vector<std::int64_t>& p) {
    return rotate_query<llama2, float>(s, std::span<const float>(raw), heads, std::span<const std::int64_t>(p));
  };
  const auto key_at = [&](const std::vector<std::int64_t>& p) {
    return rotate_key<llama2, float>(s, std::span<const float>(raw), heads, std::span<const std::int64_t>(p));
  };
  EXPECT_THROW((void)query_at(past), std::out_of_range);
  EXPECT_THROW((void)key_at(negative), std::out_of_range);
  EXPECT_THROW((void)key_at(two), std::invalid_argument);  // two positions, one token of values
  // a strategy built for another rotary_dim has another band count
  rope_config partial = llama2::config();
  partial.rotary_dim = 64;
  const hf_angle<float> wrong(partial);
  const auto key_with_wrong_strategy = [&] {
    return rotate_key<llama2, float>(wrong, std::span<const float>(raw), heads, std::span<const std::int64_t>(two).first(1));
  };
  EXPECT_THROW((void)key_with_wrong_strategy(), std::invalid_argument);
}

TEST(convention, a_typed_cache_holds_the_untyped_caches_keys_and_scores_them_like_typed_keys) {
  using cache_type = typed_kv_cache<llama2, float, float, hf_angle<float>>;
  cache_type cache(heads);
  kv_cache<float, float, hf_angle<float>> untyped(llama2::config(), heads);
  const std::size_t n = heads * 128;
  const auto raw = random_values(5 * n, seed + 4);
  const auto values = random_values(5 * n, seed + 5);
  cache.prefill(std::span<const float>(raw).first(3 * n), std::span<const float>(values).first(3 * n), 100);
  untyped.prefill(std::span<const float>(raw).first(3 * n), std::span<const float>(values).first(3 * n), 100);
  for (std::size_t t = 3; t < 5; ++t) {
    cache.append(std::span<const float>(raw).subspan(t * n, n), std::span<const float>(values).subspan(t * n, n),
                 static_cast<std::int64_t>(100 + t));
    untyped.append(std::span<const float>(raw).subspan(t * n, n), std::span<const float>(values).subspan(t * n, n),
                   static_cast<std::int64_t>(100 + t));
  }
  const auto keys = cache.keys();
  expect_bitwise_equal(keys.values(), untyped.keys());
  ASSERT_EQ(keys.tokens(), 5u);
  for (std::size_t t = 0; t < 5; ++t) EXPECT_EQ(keys.positions()[t], untyped.positions()[t]);
  expect_bitwise_equal(cache.values(), untyped.values());

  const std::vector<std::int64_t> qp{105};
  const auto q = rotate_query<llama2, float, hf_angle<float>>(std::span<const float>(raw).first(n), heads,
                                                              std::span<const std::int64_t>(qp));
  const auto via_cache = score(q, cache);
  const auto via_keys = score(q, keys);
  for (int h = 0; h < heads; ++h) expect_bitwise_equal(via_cache[h].values, via_keys[h].values);

  // kv_cache's position discipline is kept, and the context bounds every position
  EXPECT_THROW(cache.append(std::span<const float>(raw).first(n), std::span<const float>(values).first(n), 200),
               std::logic_error);
  EXPECT_THROW(cache.append_at(std::span<const float>(raw).first(n), std::span<const float>(values).first(n), 4096),
               std::out_of_range);
  EXPECT_THROW(cache.prefill(std::span<const float>(raw).first(2 * n), std::span<const float>(values).first(2 * n), 4095),
               std::out_of_range);
  // the untyped view carries the fingerprint of the convention's schedule
  EXPECT_EQ(cache.untyped().fingerprint(), schedule_fingerprint::of(llama2::config()));
}

}  // namespace
