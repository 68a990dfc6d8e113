// Tests of ropecheck/angle_batch.hpp: cos_sin_block equals the scalar cos_sin bit for bit (bit
// patterns compared, so -0.0 vs +0.0, NaN and inf count) for every implementation the report
// registers (tools/sweep/strategies.hpp) plus hf_angle<float16>, on configs that exercise each
// step (Llama-3 scaling, YaRN with an attention factor != 1, linear, NTK, partial rotary with an odd
// number of bands, interleaved), over dense ranges at the regime edges, blocks that start inside a
// run of equal float(p), and random blocks (seed printed).
#include "ropecheck/angle_batch.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <limits>
#include <math.h>  // sincosf (glibc, a GNU extension)
#include <random>
#include <string>
#include <vector>

#include "ropecheck/presets.hpp"
#include "support/positions.hpp"

namespace ropecheck {
namespace {

constexpr std::int64_t last_position = (std::int64_t{1} << 31) - 1;

// The configs, each exercising one step of the strategies.
std::vector<named_config> block_configs() {
  std::vector<named_config> out;
  out.push_back({"llama3-8b", *find_preset("llama3-8b")});
  const rope_config yarn = *find_preset("qwen2.5-7b-yarn");  // YaRN x4: attention factor 0.1 ln 4 + 1
  out.push_back({"qwen2.5-7b-yarn", yarn});
  rope_config linear = *find_preset("llama2-7b");
  linear.scaling = scaling_kind::linear;
  linear.factor = 4.0;
  out.push_back({"linear-x4", linear});
  rope_config ntk = *find_preset("llama2-7b");
  ntk.scaling = scaling_kind::ntk;
  ntk.factor = 8.0;
  out.push_back({"ntk-x8", ntk});
  rope_config partial = *find_preset("llama2-7b");  // 13 bands: an odd count, no multiple of a vector width
  partial.head_dim = 64;
  partial.rotary_dim = 26;
  out.push_back({"partial-13-bands", partial});
  out.push_back({"gpt-j-6b-interleaved", *find_preset("gpt-j-6b")});
  return out;
}

// Builds each strategy type from a config (cached<> wraps its inner strategy).
template <class S>
struct maker {
  static S make(const rope_config& c) { return S(c); }
};
template <class CacheT, class Inner>
struct maker<cached<CacheT, Inner>> {
  static cached<CacheT, Inner> make(const rope_config& c) { return cached<CacheT, Inner>(maker<Inner>::make(c)); }
};

std::uint64_t bits(double x) { return std::bit_cast<std::uint64_t>(x); }

// Compares cos_sin_block(s, first, count) with s.cos_sin at every (p, b); the first mismatch is
// described in hex floats (replayable), with the number of mismatches.
// Through `blocks` when given (a sequence of blocks through one cos_sin_blocks), else cos_sin_block.
template <class S>
testing::AssertionResult block_equals_scalar(const S& s, std::int64_t first, std::int64_t count,
                                             cos_sin_blocks<S>* blocks = nullptr) {
  const auto bands = static_cast<std::size_t>(s.bands());
  std::vector<double> c(static_cast<std::size_t>(count) * bands), sn(c.size());
  if (blocks) blocks->fill(first, count, c, sn);
  else cos_sin_block(s, first, count, c, sn);
  std::size_t mismatches = 0;
  std::string first_mismatch;
  for (std::int64_t i = 0; i < count; ++i) {
    for (std::size_t b = 0; b < bands; ++b) {
      const auto want = s.cos_sin(first + i, static_cast<int>(b));
      const double wc = detail::trace_value<double>(want.cos), ws = detail::trace_value<double>(want.sin);
      const std::size_t k = static_cast<std::size_t>(i) * bands + b;
      if (bits(c[k]) == bits(wc) && bits(sn[k]) == bits(ws)) continue;
      if (mismatches++ == 0) {
        char buf[256];
        std::snprintf(buf, sizeof buf, "position %lld band %zu: block (%a, %a), scalar (%a, %a)",
                      static_cast<long long>(first + i), b, c[k], sn[k], wc, ws);
        first_mismatch = buf;
      }
    }
  }
  if (mismatches == 0) return testing::AssertionSuccess();
  return testing::AssertionFailure() << s.name() << " block [" << first << ", " << first + count << "): "
                                     << mismatches << " mismatches, first at " << first_mismatch;
}

// The same range cut into blocks of sizes 1, 2, 3, 7, 64, 129, 300 in turn, so that blocks start at
// every offset inside a run of equal held positions. Returns how many blocks started inside a run
// (their first position holds the same float as the one before), so a test can require some.
template <class S>
testing::AssertionResult split_blocks_equal_scalar(const S& s, std::int64_t first, std::int64_t count,
                                                   int* started_inside_a_run) {
  static constexpr std::int64_t sizes[] = {1, 2, 3, 7, 64, 129, 300};
  std::size_t k = 0;
  for (std::int64_t p = first; p < first + count; ++k) {
    const std::int64_t n = std::min(sizes[k % std::size(sizes)], first + count - p);
    if (p > 0 && static_cast<float>(p) == static_cast<float>(p - 1)) ++*started_inside_a_run;
    if (auto r = block_equals_scalar(s, p, n); !r) return r;
    p += n;
  }
  return testing::AssertionSuccess();
}

template <class S>
class CosSinBlock : public testing::Test {};

// Every instantiation of tools/sweep/strategies.hpp, and hf_angle<float16>.
using registry_strategies =
    testing::Types<hf_angle<float>, hf_angle<bfloat16>, hf_angle<float16>, direct_angle<float16>,
                   direct_angle<float>, direct_angle<double>, direct_angle<bfloat16>, ggml_angle,
                   storage_positions<bfloat16, float>, cached<bfloat16, hf_angle<float>>, fast_sincos_angle>;

class strategy_names {
 public:
  template <class S>
  static std::string GetName(int) {
    return maker<S>::make(rope_config{}).name();
  }
};
TYPED_TEST_SUITE(CosSinBlock, registry_strategies, strategy_names);

TYPED_TEST(CosSinBlock, every_registered_strategy_has_a_fast_path) {
  static_assert(has_block_kernel_v<TypeParam>, "a strategy of the report fell back to the generic loop");
}

TYPED_TEST(CosSinBlock, equals_scalar_cos_sin_bit_for_bit_at_the_regime_edges) {
  struct range {
    std::int64_t first, last;  // inclusive
  };
  const range ranges[] = {{0, 2000},
                          {256 - 256, 256 + 300},
                          {2048 - 300, 2048 + 300},
                          {65504 - 300, 65504 + 300},
                          {(std::int64_t{1} << 24) - 300, (std::int64_t{1} << 24) + 300},
                          {last_position - 3000, last_position}};
  for (const auto& nc : block_configs()) {
    SCOPED_TRACE(nc.name);
    const TypeParam s = maker<TypeParam>::make(nc.cfg);
    for (const range& r : ranges) EXPECT_TRUE(block_equals_scalar(s, r.first, r.last - r.first + 1));
  }
}

TYPED_TEST(CosSinBlock, equals_scalar_cos_sin_when_blocks_start_inside_a_run_of_equal_float_positions) {
  for (const auto& nc : block_configs()) {
    SCOPED_TRACE(nc.name);
    const TypeParam s = maker<TypeParam>::make(nc.cfg);
    int inside = 0;
    EXPECT_TRUE(split_blocks_equal_scalar(s, (std::int64_t{1} << 24) - 300, 601, &inside));
    EXPECT_TRUE(split_blocks_equal_scalar(s, last_position - 3000, 3001, &inside));
    EXPECT_TRUE(split_blocks_equal_scalar(s, 0, 700, &inside));
    // The equality case of the row reuse: a block whose first position holds the float the
    // previous one holds (2^30 + 1 holds 2^30), and one ending at a run's last position.
    EXPECT_TRUE(block_equals_scalar(s, (std::int64_t{1} << 30) + 1, 1));
    EXPECT_TRUE(block_equals_scalar(s, (std::int64_t{1} << 30) + 1, 64));
    EXPECT_TRUE(block_equals_scalar(s, (std::int64_t{1} << 30) - 64, 129));
    EXPECT_GT(inside, 20) << "the split blocks must start inside runs of equal float(p)";
  }
}

// One cos_sin_blocks carries the last row over: blocks that continue a run, go back into an earlier
// run, jump far and return; each must still equal the scalar cos_sin.
TYPED_TEST(CosSinBlock, a_sequence_of_blocks_through_one_cos_sin_blocks_equals_scalar_cos_sin) {
  constexpr std::int64_t g = std::int64_t{1} << 30;  // float(p) runs of 127/129 around here
  struct block {
    std::int64_t first, count;
  };
  const block sequence[] = {{g + 1, 63},   {g + 64, 1},  {g + 65, 200},  // consecutive, each starting inside a run
                            {g + 3, 5},    {g + 265, 1}, {g + 130, 70},  // back, forward, back into the same run
                            {0, 100},      {100, 157},   {(std::int64_t{1} << 24) + 1, 300},
                            {last_position - 300, 300},  {last_position, 1}, {last_position - 1, 1},
                            {g - 64, 129}, {g + 65, 1},
                            {g + 1, 200},  {g + 201, 10}};  // the last row (held g + 256), not the first (g), carries over
  for (const auto& nc : block_configs()) {
    SCOPED_TRACE(nc.name);
    const TypeParam s = maker<TypeParam>::make(nc.cfg);
    cos_sin_blocks<TypeParam> blocks(s);
    for (const block& b : sequence) EXPECT_TRUE(block_equals_scalar(s, b.first, b.count, &blocks));
  }
}

TYPED_TEST(CosSinBlock, equals_scalar_cos_sin_on_random_blocks) {
  const std::uint64_t seed = test::test_seed();
  std::mt19937_64 rng(seed ^ std::hash<std::string>{}(maker<TypeParam>::make(rope_config{}).name()));
  for (const auto& nc : block_configs()) {
    SCOPED_TRACE(nc.name + " (seed " + std::to_string(seed) + ")");
    const TypeParam s = maker<TypeParam>::make(nc.cfg);
    std::uniform_int_distribution<std::int64_t> len(1, 400);
    std::uniform_real_distribution<double> lg(0.0, 31.0);
    for (int k = 0; k < 24; ++k) {
      const std::int64_t n = len(rng);
      // log-uniform starts: every regime, small positions as often as the end of the range
      const auto first = std::min(static_cast<std::int64_t>(std::exp2(lg(rng))), last_position - n + 1);
      EXPECT_TRUE(block_equals_scalar(s, first, n)) << "seed " << seed;
    }
  }
}

// A strategy cos_sin_block has no kernel for: the generic loop over cos_sin. Its cos_sin depends on
// pos beyond float(pos), so a row copied by mistake would show.
struct user_strategy {
  using value_type = float;
  [[nodiscard]] cos_sin_pair<float> cos_sin(std::int64_t pos, int band) const {
    return {static_cast<float>(pos % 7) - static_cast<float>(band), band == 1 ? -0.0f : std::nanf("")};
  }
  [[nodiscard]] long double angle(std::int64_t pos, int) const { return static_cast<long double>(pos); }
  [[nodiscard]] int bands() const { return 3; }
  [[nodiscard]] std::string name() const { return "user"; }
};

TEST(CosSinBlockGeneric, a_strategy_without_a_kernel_takes_the_loop_over_cos_sin) {
  static_assert(!has_block_kernel_v<user_strategy>);
  const user_strategy s;
  EXPECT_TRUE(block_equals_scalar(s, 0, 50));
  EXPECT_TRUE(block_equals_scalar(s, (std::int64_t{1} << 30) - 10, 50));  // float(p) repeats, pos % 7 does not
  cos_sin_blocks<user_strategy> blocks(s);
  EXPECT_TRUE(block_equals_scalar(s, (std::int64_t{1} << 30) - 10, 5, &blocks));
  EXPECT_TRUE(block_equals_scalar(s, (std::int64_t{1} << 30) - 5, 5, &blocks));
}

TEST(CosSinBlockArguments, are_checked_and_an_empty_block_writes_nothing) {
  const hf_angle<float> s(rope_config{});
  std::vector<double> c(64 * 2, 7.0), sn(c.size(), 7.0);
  EXPECT_THROW(cos_sin_block(s, -1, 1, c, sn), std::invalid_argument);
  EXPECT_THROW(cos_sin_block(s, 0, -1, c, sn), std::invalid_argument);
  EXPECT_THROW(cos_sin_block(s, 0, 3, c, sn), std::invalid_argument);  // 3 rows of 64 in 128
  EXPECT_THROW(cos_sin_block(s, std::numeric_limits<std::int64_t>::max(), 2, c, sn), std::invalid_argument);
  // first + count == INT64_MAX: the last position there is, the equality case of the overflow check
  EXPECT_TRUE(block_equals_scalar(s, std::numeric_limits<std::int64_t>::max() - 2, 2));
  EXPECT_NO_THROW(cos_sin_block(s, 0, 2, c, sn));  // exactly the size needed: the equality case
  EXPECT_NO_THROW(cos_sin_block(s, 0, 0, std::span<double>(), std::span<double>()));
  std::vector<double> untouched(4, 7.0);
  cos_sin_block(s, 5, 0, untouched, untouched);
  for (double v : untouched) EXPECT_EQ(bits(v), bits(7.0));
}

// from_float<T>(f) (the kernels' float -> bf16/fp16) is convert<T>(f), bit for bit: a stride over
// every bit pattern, every rounding tie and its neighbours of both types (bf16: low 16 bits 0x8000;
// fp16 normal: low 13 bits 0x1000; fp16 subnormal and the overflow edge: dense), infinities, NaNs
// with payloads, signalling NaNs.
template <class T>
std::size_t from_float_mismatches(const std::vector<std::uint32_t>& patterns) {
  std::size_t bad = 0;
  for (const std::uint32_t u : patterns) {
    const float f = std::bit_cast<float>(u);
    if (scalar_traits<T>::bits(batch_detail::from_float<T>(f)) != scalar_traits<T>::bits(convert<T>(f))) ++bad;
  }
  return bad;
}
TEST(FromFloat, equals_convert_for_bfloat16_and_float16) {
  std::vector<std::uint32_t> u;
  for (std::uint64_t b = 0; b <= 0xffffffffu; b += 251) u.push_back(static_cast<std::uint32_t>(b));
  for (std::uint32_t hi = 0; hi < 0x10000u; ++hi)
    for (std::uint32_t lo : {0x0000u, 0x7fffu, 0x8000u, 0x8001u, 0xffffu}) u.push_back(hi << 16 | lo);
  for (std::uint32_t hi = 0; hi < (1u << 19); ++hi)
    for (std::uint32_t lo : {0x0fffu, 0x1000u, 0x1001u}) u.push_back(hi << 13 | lo);
  for (std::uint32_t b = 0x33000000u; b < 0x38800000u; b += 7) u.push_back(b);        // fp16 subnormals
  for (std::uint32_t b = 0x477fe000u; b < 0x47800100u; ++b) u.push_back(b);           // fp16's overflow edge
  for (std::uint32_t b : {0x7f800000u, 0x7f800001u, 0x7fa00000u, 0x7fc00000u, 0x7fc12345u, 0x7fffffffu}) {
    u.push_back(b);
    u.push_back(b | 0x80000000u);
  }
  for (std::size_t i = 0, n = u.size(); i < n; ++i) u.push_back(u[i] ^ 0x80000000u);  // both signs
  EXPECT_EQ(from_float_mismatches<bfloat16>(u), 0u) << u.size() << " patterns";
  EXPECT_EQ(from_float_mismatches<float16>(u), 0u) << u.size() << " patterns";
}

// The fast paths (and the scalar strategies: g++ merges cosf(a) and sinf(a) of one argument into a
// sincosf call) rely on glibc's sincosf returning sinf's and cosf's bits. Called through volatile
// pointers so the compiler cannot merge or fold the separate calls.
TEST(Libm, sincosf_gives_the_bits_of_sinf_and_cosf) {
  float (*volatile sin_f)(float) = ::sinf;
  float (*volatile cos_f)(float) = ::cosf;
  void (*volatile sincos_f)(float, float*, float*) = ::sincosf;
  std::vector<float> xs = {0.0f, -0.0f, INFINITY, -INFINITY, NAN, 1e-45f, -1e-45f, 1.17549435e-38f,
                           3.14159265f, 1.57079633f, 0.785398163f, 120.0f, 8388608.0f, 16777216.0f,
                           2147483648.0f, 3.40282347e38f};
  for (std::uint32_t b = 0; b < 0xffffffffu - 4099u; b += 4099u) xs.push_back(std::bit_cast<float>(b));
  const std::uint64_t seed = test::test_seed();
  std::mt19937 rng(static_cast<std::uint32_t>(seed));
  for (int i = 0; i < (1 << 20); ++i) xs.push_back(std::bit_cast<float>(static_cast<std::uint32_t>(rng())));
  // angles as the strategies form them: integer positions times frequencies in (0, 1]
  std::uniform_real_distribution<float> freq(0.0f, 1.0f);
  std::uniform_int_distribution<std::int64_t> pos(0, last_position);
  for (int i = 0; i < (1 << 20); ++i) xs.push_back(static_cast<float>(pos(rng)) * freq(rng));
  std::size_t mismatches = 0;
  float worst = 0.0f;
  for (const float x : xs) {
    float s = 0.0f, c = 0.0f;
    sincos_f(x, &s, &c);
    const float s1 = sin_f(x), c1 = cos_f(x);
    if (std::bit_cast<std::uint32_t>(s) != std::bit_cast<std::uint32_t>(s1) ||
        std::bit_cast<std::uint32_t>(c) != std::bit_cast<std::uint32_t>(c1)) {
      if (mismatches++ == 0) worst = x;
    }
  }
  EXPECT_EQ(mismatches, 0u) << "first at x = " << worst << " (seed " << seed << ", " << xs.size() << " inputs)";
}

// The same for double: direct_angle<double>'s cos_of/sin_of pair becomes one sincos call.
TEST(Libm, sincos_gives_the_bits_of_sin_and_cos) {
  double (*volatile sin_d)(double) = ::sin;
  double (*volatile cos_d)(double) = ::cos;
  void (*volatile sincos_d)(double, double*, double*) = ::sincos;
  std::vector<double> xs = {0.0, -0.0, INFINITY, -INFINITY, NAN, 5e-324, 3.141592653589793, 1e22, 1.7976931348623157e308};
  const std::uint64_t seed = test::test_seed();
  std::mt19937_64 rng(seed);
  for (int i = 0; i < (1 << 19); ++i) xs.push_back(std::bit_cast<double>(rng()));
  std::uniform_real_distribution<double> freq(0.0, 1.0);
  std::uniform_int_distribution<std::int64_t> pos(0, last_position);
  for (int i = 0; i < (1 << 19); ++i) xs.push_back(static_cast<double>(pos(rng)) * freq(rng));
  std::size_t mismatches = 0;
  double worst = 0.0;
  for (const double x : xs) {
    double s = 0.0, c = 0.0;
    sincos_d(x, &s, &c);
    if (bits(s) != bits(sin_d(x)) || bits(c) != bits(cos_d(x))) {
      if (mismatches++ == 0) worst = x;
    }
  }
  EXPECT_EQ(mismatches, 0u) << "first at x = " << worst << " (seed " << seed << ", " << xs.size() << " inputs)";
}

}  // namespace
}  // namespace ropecheck
