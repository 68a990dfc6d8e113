// tests/support/rope_check.hpp — the one driver that compares a kernel's rotation with the
// reference's, for any storage/compute pairing and any cos/sin source (Boost.Math's "bindings"
// idea: one driver, many implementations).
#pragma once

#include <cmath>
#include <cstdio>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "ropecheck/error.hpp"
#include "ropecheck/reference/reference.hpp"
#include "ropecheck/rope.hpp"

namespace ropecheck::test {

// Values k/64, |k| <= 255: exactly representable in bf16 (8 significant bits) and so in every
// type checked, normal in all of them, so that inputs never carry a rounding of their own.
template <class T>
std::vector<T> random_vector(std::size_t n, std::mt19937_64& rng) {
  std::uniform_int_distribution<int> k(-255, 255);
  std::vector<T> v(n);
  for (auto& x : v) x = scalar_traits<T>::narrow(static_cast<long double>(k(rng)) / 64.0L);
  return v;
}

struct rotation_result {
  long double worst = 0;  // |y - y_ref| / (af (|x_a| + |x_b|)), the largest seen
  std::int64_t pos = 0;
  int coordinate = 0;
  long double got = 0, want = 0;
  [[nodiscard]] std::string describe() const {
    char buf[200];
    std::snprintf(buf, sizeof buf, "worst at position %lld coordinate %d: got %La want %La (normalised error %.3Lg)",
                  static_cast<long long>(pos), coordinate, got, want, worst);
    return buf;
  }
};

// Rotate random heads at each position with rotate_heads<C>(S...) and compare every coordinate
// with the reference's exact rotation of the same input.
template <class S, class C, class CosSin>
rotation_result check_rotation(const rope_config& kernel_cfg, const reference::rope_reference& ref, const CosSin& cs,
                               int heads, const std::vector<std::int64_t>& positions, std::uint64_t seed) {
  const rope_geometry g = rope_geometry::of(kernel_cfg);
  const rope_geometry rg = rope_geometry::of(ref.config());
  const auto hd = static_cast<std::size_t>(g.head_dim);
  const long double af = ref.attention_factor().value();
  std::mt19937_64 rng(seed);
  rotation_result r;
  std::vector<double> xd(hd);
  std::vector<reference::dd> want(hd);
  for (const std::int64_t p : positions) {
    const auto x = random_vector<S>(hd * static_cast<std::size_t>(heads), rng);
    std::vector<S> y(x.size());
    rotate_heads<C>(std::span<const S>(x), std::span<S>(y), heads, g, p, cs);
    for (int h = 0; h < heads; ++h) {
      for (std::size_t j = 0; j < hd; ++j) xd[j] = static_cast<double>(scalar_traits<S>::widen(x[h * hd + j]));
      ref.rotate(p, xd, want);
      // Normalise each coordinate's error by its (reference-layout) pair's magnitude.
      for (int band = 0; band < rg.bands(); ++band) {
        const auto [a, b] = rg.pair_of(band);
        const long double scale = af * (std::fabs(static_cast<long double>(xd[a])) + std::fabs(static_cast<long double>(xd[b])));
        for (const int j : {a, b}) {
          const long double got = scalar_traits<S>::widen(y[h * hd + static_cast<std::size_t>(j)]);
          const long double e = scaled_error(got, want[j].hi, want[j].lo, scale == 0 ? 1.0L : scale);
          if (e > r.worst) r = {e, p, j, got, want[j].value()};
        }
      }
      for (std::size_t j = static_cast<std::size_t>(rg.rotary_dim); j < hd; ++j) {
        const long double got = scalar_traits<S>::widen(y[h * hd + j]);
        if (got != want[j].value()) r = {INFINITY, p, static_cast<int>(j), got, want[j].value()};
      }
    }
  }
  return r;
}

}  // namespace ropecheck::test
