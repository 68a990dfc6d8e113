// tests/reference/dense_reference_test.cpp — rope_reference::dense_cos_sin (the dense path) checked
// against direct MPFR, against itself over shards, across instruction sets and on bad arguments.
//
//  * Accuracy: >= 10^6 (position, band) points (10^5 under AddressSanitizer) over configs covering
//    every scaling schedule, against cos_sin_mpfr (exact product, MPFR's own reduction, 256 bits):
//    sweeps from 0, windows straddling anchor multiples at random positions up to 2^58, random
//    windows below 2^31, the last positions below 2^31 and below 2^62. Asserted <= 2^-90 (the
//    contract), the measured maximum printed as log2.
//  * Sub-sweep identity: a sweep starting anywhere gives the bits of any longer sweep containing it.
//    This is what makes "the end of a 2^31-long sweep from 0" checkable without running one: the
//    positions 2^31 - L .. 2^31 - 1 of that sweep are, bit for bit, those of the short sweep started
//    near 2^31 that the accuracy test compares with MPFR.
//  * ISA identity: generic (Veltkamp/Dekker, no FMA) and AVX2+FMA give the same bits.
// Random draws print their seed; ROPECHECK_SEED overrides the fixed default.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <random>
#include <span>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "ropecheck/config.hpp"
#include "ropecheck/presets.hpp"
#include "ropecheck/reference/reference.hpp"

namespace {

using ropecheck::layout;
using ropecheck::rope_config;
using ropecheck::scaling_kind;
using ropecheck::reference::cos_sin_dd;
using ropecheck::reference::dd;
using ropecheck::reference::rope_reference;
using isa = rope_reference::dense_isa;

// The dense path's public contract (reference.hpp): absolute error <= 2^-90 on cos and on sin.
constexpr double dense_bound = 0x1p-90;
constexpr std::int64_t two31 = std::int64_t{1} << 31;
constexpr std::int64_t two62 = std::int64_t{1} << 62;

#if defined(__SANITIZE_ADDRESS__)
constexpr int point_scale = 10;  // ASan build: a tenth of the points (>= 10^5)
#else
constexpr int point_scale = 1;
#endif

std::uint64_t test_seed() {
  static const std::uint64_t seed = [] {
    const char* env = std::getenv("ROPECHECK_SEED");
    const std::uint64_t s = env != nullptr ? std::strtoull(env, nullptr, 0) : 0xde75'e013ULL;
    std::printf("[ropecheck] dense_reference_test seed = %llu (set ROPECHECK_SEED to reproduce)\n",
                static_cast<unsigned long long>(s));
    return s;
  }();
  return seed;
}

rope_config base_config(double base, int head_dim, int rotary_dim) {
  rope_config c;
  c.base = base;
  c.head_dim = head_dim;
  c.rotary_dim = rotary_dim;
  return c;
}

struct named_config {
  std::string name;
  rope_config cfg;
  std::int64_t seq_len = 0;
};

// Every scaling schedule, base 1e4 and 5e5, d 128, a partial rotary of 10 bands and an odd 7 bands.
std::vector<named_config> dense_configs() {
  std::vector<named_config> out;
  out.push_back({"none_base1e4_d128", base_config(10000.0, 128, 128)});
  out.push_back({"none_base5e5_d128", base_config(500000.0, 128, 128)});
  rope_config linear = base_config(10000.0, 128, 128);
  linear.scaling = scaling_kind::linear;
  linear.factor = 4.0;
  out.push_back({"linear_x4", linear});
  rope_config ntk = base_config(10000.0, 128, 128);
  ntk.scaling = scaling_kind::ntk;
  ntk.factor = 8.0;
  out.push_back({"ntk_x8", ntk});
  rope_config dyn = base_config(10000.0, 128, 128);
  dyn.scaling = scaling_kind::dynamic_ntk;
  dyn.factor = 2.0;
  dyn.max_position_embeddings = 4096;
  out.push_back({"dynamic_ntk_x2_seq16384", dyn, 16384});
  rope_config yarn = base_config(10000.0, 128, 128);
  yarn.scaling = scaling_kind::yarn;
  yarn.factor = 4.0;
  yarn.original_max_position_embeddings = 4096;
  yarn.max_position_embeddings = 16384;
  out.push_back({"yarn_x4", yarn});
  out.push_back({"llama3_8b", *ropecheck::find_preset("llama3-8b")});  // the preset itself, not a copy of it
  rope_config longrope = base_config(10000.0, 96, 96);
  longrope.scaling = scaling_kind::longrope;
  longrope.max_position_embeddings = 131072;
  longrope.original_max_position_embeddings = 4096;
  for (int i = 0; i < 48; ++i) {  // made-up, smooth, >= 1 like Phi-3's
    longrope.short_factor.push_back(1.0 + 0.015625 * i);
    longrope.long_factor.push_back(1.0 + 0.5 * i * i / 47.0);
  }
  out.push_back({"longrope_long", longrope, 200000});
  rope_config partial = base_config(10000.0, 80, 20);  // 10 bands: not a multiple of 4
  partial.pair_layout = layout::interleaved;
  out.push_back({"partial_80_20", partial});
  out.push_back({"odd_7_bands_base5e5", base_config(500000.0, 14, 14)});
  return out;
}

// A dense sweep's four arrays.
struct sweep {
  std::int64_t first = 0, count = 0;
  int bands = 0;
  std::vector<double> ch, cl, sh, sl;
  sweep(const rope_reference& ref, std::int64_t first_, std::int64_t count_, isa which = isa::automatic)
      : first(first_), count(count_), bands(ref.bands()) {
    const auto n = static_cast<std::size_t>(count * bands);
    ch.assign(n, -7.0), cl.assign(n, -7.0), sh.assign(n, -7.0), sl.assign(n, -7.0);
    ref.dense_cos_sin(first, count, {ch, cl, sh, sl}, which);
  }
  [[nodiscard]] std::size_t at(std::int64_t p, int b) const {
    return static_cast<std::size_t>((p - first) * bands + b);
  }
  [[nodiscard]] cos_sin_dd value(std::int64_t p, int b) const {
    const std::size_t i = at(p, b);
    return {{ch[i], cl[i]}, {sh[i], sl[i]}};
  }
};

double dd_distance(dd a, dd b) { return std::abs((a.hi - b.hi) + (a.lo - b.lo)); }

// The bits of `inner` are those of `outer` over inner's positions; "" or the first difference.
std::string first_difference(const sweep& outer, const sweep& inner) {
  for (std::int64_t p = inner.first; p < inner.first + inner.count; ++p)
    for (int b = 0; b < inner.bands; ++b) {
      const std::size_t i = inner.at(p, b), o = outer.at(p, b);
      const bool same = std::bit_cast<std::uint64_t>(inner.ch[i]) == std::bit_cast<std::uint64_t>(outer.ch[o]) &&
                        std::bit_cast<std::uint64_t>(inner.cl[i]) == std::bit_cast<std::uint64_t>(outer.cl[o]) &&
                        std::bit_cast<std::uint64_t>(inner.sh[i]) == std::bit_cast<std::uint64_t>(outer.sh[o]) &&
                        std::bit_cast<std::uint64_t>(inner.sl[i]) == std::bit_cast<std::uint64_t>(outer.sl[o]);
      if (!same) return "pos " + std::to_string(p) + " band " + std::to_string(b);
    }
  return "";
}

// The position windows of the accuracy test (each a [first, first + count) sweep).
std::vector<std::pair<std::int64_t, std::int64_t>> accuracy_windows(std::mt19937_64& rng) {
  const std::int64_t L = rope_reference::dense_anchor_interval();
  std::vector<std::pair<std::int64_t, std::int64_t>> w;
  w.emplace_back(0, 320 / point_scale);                                   // from 0
  w.emplace_back(two31 - 400 / point_scale, 400 / point_scale);           // the end below 2^31
  w.emplace_back(two62 - 3 * L, 3 * L);                                   // the end below 2^62
  std::uniform_int_distribution<std::int64_t> anchor(1, (std::int64_t{1} << 58) / L);
  std::uniform_int_distribution<std::int64_t> below31(0, two31 - 64);
  for (int i = 0; i < 24 / point_scale; ++i) w.emplace_back(anchor(rng) * L - L, 2 * L + 1);  // straddle
  for (int i = 0; i < 20 / point_scale; ++i) w.emplace_back(below31(rng), 30);
  return w;
}

TEST(DenseReference, MatchesMpfrOnEverySchedule) {
  std::mt19937_64 rng(test_seed());
  std::int64_t points = 0;
  double max_error = 0.0;
  std::string worst;
  for (const named_config& nc : dense_configs()) {
    const rope_reference ref(nc.cfg, nc.seq_len);
    double config_max = 0.0;
    for (const auto& [first, count] : accuracy_windows(rng)) {
      const sweep s(ref, first, count);
      for (std::int64_t p = first; p < first + count; ++p)
        for (int b = 0; b < ref.bands(); ++b) {
          const cos_sin_dd exact = ref.cos_sin_mpfr(p, b);
          const cos_sin_dd got = s.value(p, b);
          const double e = std::max(dd_distance(got.cos, exact.cos), dd_distance(got.sin, exact.sin));
          ++points;
          if (!(e <= config_max)) config_max = std::isnan(e) ? INFINITY : e;
          if (!(e <= max_error)) {
            max_error = std::isnan(e) ? INFINITY : e;
            worst = nc.name + " pos=" + std::to_string(p) + " band=" + std::to_string(b);
          }
        }
    }
    std::printf("[ropecheck] dense vs MPFR %-26s max error 2^%.1f\n", nc.name.c_str(),
                config_max > 0 ? std::log2(config_max) : -INFINITY);
  }
  std::printf("[ropecheck] dense vs MPFR: %lld points, max error 2^%.1f at %s (bound 2^-90)\n",
              static_cast<long long>(points), max_error > 0 ? std::log2(max_error) : -INFINITY, worst.c_str());
  EXPECT_GE(points, 1'000'000 / point_scale);
  EXPECT_LE(max_error, dense_bound) << worst << " seed " << test_seed();
}

// At an anchor the dense value IS the fast path's (the exact phase, no step): equality.
TEST(DenseReference, AnchorsAreTheFastPathBitForBit) {
  const std::int64_t L = rope_reference::dense_anchor_interval();
  EXPECT_EQ(L, 128);  // dense.cpp's budget is written for L = 128 (< 2^-93.0)
  for (const named_config& nc : dense_configs()) {
    const rope_reference ref(nc.cfg, nc.seq_len);
    for (std::int64_t a : {std::int64_t{0}, L, 7 * L, two31 - L, two62 - L}) {
      const sweep s(ref, a, 2);
      for (int b = 0; b < ref.bands(); ++b) {
        const cos_sin_dd fast = ref.cos_sin(a, b);
        const cos_sin_dd got = s.value(a, b);
        EXPECT_EQ(std::bit_cast<std::uint64_t>(got.cos.hi), std::bit_cast<std::uint64_t>(fast.cos.hi))
            << nc.name << " anchor " << a << " band " << b;
        EXPECT_EQ(std::bit_cast<std::uint64_t>(got.cos.lo), std::bit_cast<std::uint64_t>(fast.cos.lo));
        EXPECT_EQ(std::bit_cast<std::uint64_t>(got.sin.hi), std::bit_cast<std::uint64_t>(fast.sin.hi));
        EXPECT_EQ(std::bit_cast<std::uint64_t>(got.sin.lo), std::bit_cast<std::uint64_t>(fast.sin.lo));
      }
    }
  }
}

// dense(a, n) is the slice of dense(0, a + n) and of sweeps starting before a, for a at, just below
// and just above anchor multiples (and far from 0, where the long sweep starts shortly before a).
TEST(DenseReference, SubSweepsAreBitIdenticalToLongerSweeps) {
  const std::int64_t L = rope_reference::dense_anchor_interval();
  const std::vector<named_config> configs = dense_configs();
  for (const std::size_t which : {std::size_t{0}, std::size_t{6}, std::size_t{8}, std::size_t{9}}) {
    const named_config& nc = configs[which];
    const rope_reference ref(nc.cfg, nc.seq_len);
    const sweep from0(ref, 0, 6 * L + 8);
    for (std::int64_t a : {std::int64_t{0}, std::int64_t{1}, L - 1, L, L + 1, 2 * L - 1, 3 * L, 4 * L + 7})
      for (std::int64_t n : {std::int64_t{1}, L - 1, L, L + 1, 2 * L}) {
        const sweep part(ref, a, n);
        EXPECT_EQ(first_difference(from0, part), "") << nc.name << " dense(" << a << ", " << n << ") vs dense(0, ..)";
      }
    for (std::int64_t anchor : {two31, two62 - 2 * L, std::int64_t{123456789} * L})
      for (std::int64_t a : {anchor - 1, anchor, anchor + 1})
        for (std::int64_t back : {std::int64_t{1}, L - 1, L, L + 1, 3 * L + 5}) {
          const std::int64_t n = std::min<std::int64_t>(L + 3, two62 - a);
          const sweep longer(ref, a - back, back + n);
          const sweep part(ref, a, n);
          EXPECT_EQ(first_difference(longer, part), "")
              << nc.name << " dense(" << a << ", " << n << ") vs dense(" << a - back << ", ..)";
        }
  }
}

TEST(DenseReference, GenericAndAvx2FmaGiveTheSameBits) {
  if (!rope_reference::dense_avx2_fma_available())
    GTEST_SKIP() << "this CPU has no AVX2 + FMA: only the generic path can run";
  std::mt19937_64 rng(test_seed() + 1);
  std::uniform_int_distribution<std::int64_t> start(0, two62 - 1000);
  for (const named_config& nc : dense_configs()) {
    const rope_reference ref(nc.cfg, nc.seq_len);
    std::vector<std::int64_t> firsts = {0, 5, two31 - 100, two62 - 77};
    for (int i = 0; i < 4; ++i) firsts.push_back(start(rng));
    for (const std::int64_t first : firsts) {
      const std::int64_t n = std::min<std::int64_t>(77, two62 - first);
      const sweep generic(ref, first, n, isa::generic);
      const sweep avx(ref, first, n, isa::avx2_fma);
      const sweep automatic(ref, first, n, isa::automatic);
      EXPECT_EQ(first_difference(generic, avx), "") << nc.name << " first " << first;
      EXPECT_EQ(first_difference(generic, automatic), "") << nc.name << " first " << first;
    }
  }
}

TEST(DenseReference, ConcurrentCallsOnDisjointOutputsMatchSerial) {
  const rope_reference ref(base_config(500000.0, 128, 128));
  const std::int64_t first = two31 - 1000, count = 1000;
  const sweep serial(ref, first, count);
  const auto n = static_cast<std::size_t>(count * ref.bands());
  std::vector<double> ch(n), cl(n), sh(n), sl(n);
  const std::size_t half = n / 2;
  auto run = [&](std::int64_t f, std::int64_t c, std::size_t off) {
    const std::size_t len = static_cast<std::size_t>(c * ref.bands());
    ref.dense_cos_sin(f, c,
                      {std::span(ch).subspan(off, len), std::span(cl).subspan(off, len),
                       std::span(sh).subspan(off, len), std::span(sl).subspan(off, len)});
  };
  std::thread t1(run, first, count / 2, std::size_t{0});
  std::thread t2(run, first + count / 2, count / 2, half);
  t1.join();
  t2.join();
  EXPECT_TRUE(std::equal(ch.begin(), ch.end(), serial.ch.begin()) && std::equal(cl.begin(), cl.end(), serial.cl.begin()) &&
              std::equal(sh.begin(), sh.end(), serial.sh.begin()) && std::equal(sl.begin(), sl.end(), serial.sl.begin()));
}

TEST(DenseReference, BadArgumentsThrow) {
  const rope_reference ref(base_config(10000.0, 80, 20));  // 10 bands
  std::vector<double> a(30), b(30), c(30), d(30), short_one(29);
  const rope_reference::dense_block ok{a, b, c, d};
  EXPECT_THROW(ref.dense_cos_sin(-1, 1, ok), std::invalid_argument);
  EXPECT_THROW(ref.dense_cos_sin(0, -1, ok), std::invalid_argument);
  EXPECT_THROW(ref.dense_cos_sin(two62 - 2, 3, ok), std::invalid_argument);  // ends at 2^62 + 1
  EXPECT_NO_THROW(ref.dense_cos_sin(two62 - 3, 3, ok));                     // ends at 2^62: allowed
  EXPECT_THROW(ref.dense_cos_sin(two62 + 1, 0, ok), std::invalid_argument);
  EXPECT_NO_THROW(ref.dense_cos_sin(two62, 0, ok));
  EXPECT_THROW(ref.dense_cos_sin(std::numeric_limits<std::int64_t>::max(), 1, ok), std::invalid_argument);
  EXPECT_THROW(ref.dense_cos_sin(1, two62, ok), std::invalid_argument);
  EXPECT_NO_THROW(ref.dense_cos_sin(5, 3, ok));  // 3 * 10 = 30: exactly the size
  for (int i = 0; i < 4; ++i) {
    rope_reference::dense_block bad = ok;
    std::span<double>* parts[4] = {&bad.cos_hi, &bad.cos_lo, &bad.sin_hi, &bad.sin_lo};
    *parts[i] = short_one;
    EXPECT_THROW(ref.dense_cos_sin(5, 3, bad), std::invalid_argument) << "span " << i;
    EXPECT_NO_THROW(ref.dense_cos_sin(5, 2, bad)) << "span " << i;  // 20 <= 29
  }
  EXPECT_THROW(ref.dense_cos_sin(0, std::int64_t{1} << 60, ok), std::invalid_argument);  // no overflow
  EXPECT_NO_THROW(ref.dense_cos_sin(0, 0, {}));
  if (!rope_reference::dense_avx2_fma_available()) {
    EXPECT_THROW(ref.dense_cos_sin(0, 1, ok, isa::avx2_fma), std::runtime_error);
  }
}

}  // namespace
