// ropecheck/angle_batch.hpp — every band's final cos/sin at a block of consecutive positions.
//
// cos_sin_block(s, first, count, cos_out, sin_out) writes exactly what s.cos_sin(p, b) returns
// (attention factor, casts and caches included), widened exactly to double, for every position p in
// [first, first + count) and band b, position-major with bands contiguous: element
// (p - first) * s.bands() + b. It exists for sweeps over every position (2^31 x 64 values), where
// re-forming everything per call and libm dominate. cos_sin_blocks<S> does the same for a sequence
// of blocks (one per thread), carrying the last row over to the next block.
//
// Contract: bit-identical to the scalar cos_sin for every strategy (tests/core/angle_batch_test.cpp
// compares bit patterns, so -0.0/+0.0, NaN and inf count). value_type must widen exactly to double
// (float, double, bfloat16, float16). first >= 0, count >= 0, each span holds >= count * bands().
//
// How, for the strategies of ropecheck/angle.hpp (a block_kernel each; any other strategy takes the
// generic loop over cos_sin):
//   - A row (all bands of one position) is a pure function of the position as the strategy holds it
//     (held_position: float(p), position_as<T>(p), convert<C>(position_as<S>(p))). Past 2^24
//     consecutive p share float(p) in runs of 2..129, so a row whose held position has the bit
//     pattern of the previous row's is copied, not recomputed: exact by construction, the same
//     function of the same input.
//   - Inside a row, everything that does not depend on the band is formed once (the held position,
//     ggml's chain of products through ggml_angle::fill_angles), and the fp32 products of all bands
//     come first in one loop the compiler may vectorise (the same products: ropecheck::core builds
//     with -ffp-contract=off -fno-fast-math, so no FMA contraction and no reassociation).
//   - sin/cos stay glibc's scalar sinf/cosf (g++ merges the pair into sincosf in cos_sin and here
//     alike; angle_batch_test checks that sincosf gives sinf's and cosf's bits). No vector libm
//     (libmvec): the contract is the scalar functions' bits, which it does not promise.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <limits>
#include <span>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "ropecheck/angle.hpp"
#include "ropecheck/scalar.hpp"

namespace ropecheck {

namespace batch_detail {

// A value of T widened exactly to double (T has at most 53 significand bits).
template <class T>
[[nodiscard]] inline double widen_exact(const T& x) {
  static_assert(scalar_traits<T>::digits <= 53, "cos_sin_block: value_type must widen exactly to double");
  return detail::trace_value<double>(x);
}

// convert<To>(f) of a float, without its long double round trip for the 16-bit types: a float
// widened to long double is exact, so convert's round-to-odd step gives back f itself and what is
// left is Eigen's float -> To (nearest even; a NaN becomes To's quiet NaN of its sign either way).
// Checked against convert on every float class in tests/core/angle_batch_test.cpp.
template <class To>
[[nodiscard]] inline To from_float(float f) {
  if constexpr (is_16bit_float_v<To>) return To(f);
  else return convert<To>(f);
}

template <class T>
[[nodiscard]] inline bool same_bits(const T& a, const T& b) {
  return scalar_traits<T>::bits(a) == scalar_traits<T>::bits(b);
}

}  // namespace batch_detail

// block_kernel<S>: how cos_sin_block computes S's rows. The primary template has none (fast ==
// false: the generic loop). A kernel has
//   value_type                   S::value_type
//   held_type / held(pos)        the position as S holds it; row(pos) depends on pos only through it
//   row(pos, cos, sin)           cos/sin of every band at pos, in value_type, each the exact value
//                                S::cos_sin(pos, b) returns
template <class S>
struct block_kernel {
  static constexpr bool fast = false;
};

// direct_angle<T>: p = position_as<T>(pos) once; angle T(p * inv_freq_b); T(cos_of(a) * af).
template <class T>
struct block_kernel<direct_angle<T>> {
  static constexpr bool fast = true;
  using value_type = T;
  using held_type = T;
  explicit block_kernel(const direct_angle<T>& s)
      : freq_(s.frequencies()), strategy_(s), angle_(freq_.inv_freq.size()) {}
  [[nodiscard]] held_type held(std::int64_t pos) const { return strategy_.held_position(pos); }
  void row(std::int64_t pos, std::span<T> c, std::span<T> s) {
    const T p = held(pos);
    const std::size_t n = angle_.size();
    const T* f = freq_.inv_freq.data();
    T* a = angle_.data();
    for (std::size_t b = 0; b < n; ++b) a[b] = T(p * f[b]);  // as direct_angle::angle_in_type
    const T af = freq_.attention_factor;
    for (std::size_t b = 0; b < n; ++b) {  // as direct_angle::cos_sin
      const T ab = a[b];  // one load: c[b] may alias a, and one value lets g++ merge cos/sin into sincos
      c[b] = T(cos_of(ab) * af);
      s[b] = T(sin_of(ab) * af);
    }
  }

 private:
  const frequency_schedule<T>& freq_;
  const direct_angle<T>& strategy_;
  std::vector<T> angle_;
};

// hf_angle<Model>: float(pos) once; fp32 products; cosf/sinf * fp32 attention factor; convert<Model>.
template <class Model>
struct block_kernel<hf_angle<Model>> {
  static constexpr bool fast = true;
  using value_type = Model;
  using held_type = float;
  explicit block_kernel(const hf_angle<Model>& s)
      : freq_(s.frequencies()), strategy_(s), angle_(freq_.inv_freq.size()) {}
  [[nodiscard]] held_type held(std::int64_t pos) const { return strategy_.held_position(pos); }
  void row(std::int64_t pos, std::span<Model> c, std::span<Model> s) {
    const float p = held(pos);
    const std::size_t n = angle_.size();
    const float* f = freq_.inv_freq.data();
    float* a = angle_.data();
    for (std::size_t b = 0; b < n; ++b) a[b] = p * f[b];  // as hf_angle::angle_fp32
    const float af = freq_.attention_factor;
    for (std::size_t b = 0; b < n; ++b) {  // as hf_angle::cos_sin
      const float ab = a[b];
      const float cb = std::cos(ab) * af;
      const float sb = std::sin(ab) * af;
      c[b] = batch_detail::from_float<Model>(cb);  // convert<Model>(cb), as hf_angle::cos_sin
      s[b] = batch_detail::from_float<Model>(sb);
    }
  }

 private:
  const frequency_schedule<float>& freq_;
  const hf_angle<Model>& strategy_;
  std::vector<float> angle_;
};

// storage_positions<S, C>: p = convert<C>(position_as<S>(pos)) once; then as direct_angle<C>.
template <class S, class C>
struct block_kernel<storage_positions<S, C>> {
  static constexpr bool fast = true;
  using value_type = C;
  using held_type = C;
  explicit block_kernel(const storage_positions<S, C>& s)
      : freq_(s.frequencies()), strategy_(s), angle_(freq_.inv_freq.size()) {}
  [[nodiscard]] held_type held(std::int64_t pos) const { return strategy_.held_position(pos); }
  void row(std::int64_t pos, std::span<C> c, std::span<C> s) {
    const C p = held(pos);
    const std::size_t n = angle_.size();
    const C* f = freq_.inv_freq.data();
    C* a = angle_.data();
    for (std::size_t b = 0; b < n; ++b) a[b] = C(p * f[b]);  // as storage_positions::angle_in_type
    const C af = freq_.attention_factor;
    for (std::size_t b = 0; b < n; ++b) {  // as storage_positions::cos_sin
      const C ab = a[b];
      c[b] = C(cos_of(ab) * af);
      s[b] = C(sin_of(ab) * af);
    }
  }

 private:
  const frequency_schedule<C>& freq_;
  const storage_positions<S, C>& strategy_;
  std::vector<C> angle_;
};

// ggml_angle: the chain of fp32 products once per row (fill_angles), then cosf/sinf * mscale.
template <>
struct block_kernel<ggml_angle> {
  static constexpr bool fast = true;
  using value_type = float;
  using held_type = float;
  explicit block_kernel(const ggml_angle& s)
      : strategy_(s), angle_(static_cast<std::size_t>(s.bands())) {}
  [[nodiscard]] held_type held(std::int64_t pos) const { return strategy_.held_position(pos); }
  void row(std::int64_t pos, std::span<float> c, std::span<float> s) {
    strategy_.fill_angles(pos, angle_);  // starts from held_position(pos)
    const float m = strategy_.attention_factor();
    const float* a = angle_.data();
    for (std::size_t b = 0; b < angle_.size(); ++b) {  // as ggml_angle::cos_sin
      const float ab = a[b];
      c[b] = std::cos(ab) * m;
      s[b] = std::sin(ab) * m;
    }
  }

 private:
  const ggml_angle& strategy_;
  std::vector<float> angle_;
};

// fast_sincos_angle: direct_angle<float>'s fp32 angle, then fast_cos/fast_sin * attention factor.
template <>
struct block_kernel<fast_sincos_angle> {
  static constexpr bool fast = true;
  using value_type = float;
  using held_type = float;
  explicit block_kernel(const fast_sincos_angle& s)
      : freq_(s.formed_angle().frequencies()), strategy_(s), angle_(freq_.inv_freq.size()) {}
  [[nodiscard]] held_type held(std::int64_t pos) const { return strategy_.held_position(pos); }
  void row(std::int64_t pos, std::span<float> c, std::span<float> s) {
    const float p = held(pos);
    const std::size_t n = angle_.size();
    const float* f = freq_.inv_freq.data();
    float* a = angle_.data();
    for (std::size_t b = 0; b < n; ++b) a[b] = p * f[b];  // as direct_angle<float>::angle_in_type
    const float af = freq_.attention_factor;
    for (std::size_t b = 0; b < n; ++b) {  // as fast_sincos_angle::cos_sin
      const float ab = a[b];
      c[b] = fast_cos(ab) * af;
      s[b] = fast_sin(ab) * af;
    }
  }

 private:
  const frequency_schedule<float>& freq_;
  const fast_sincos_angle& strategy_;
  std::vector<float> angle_;
};

// cached<CacheT, Inner>: Inner's row, each value rounded once into CacheT (as cached::cos_sin).
template <class CacheT, class Inner>
  requires block_kernel<Inner>::fast
struct block_kernel<cached<CacheT, Inner>> {
  static constexpr bool fast = true;
  using value_type = CacheT;
  using inner_value = typename Inner::value_type;
  using held_type = typename block_kernel<Inner>::held_type;
  explicit block_kernel(const cached<CacheT, Inner>& s)
      : inner_(s.inner()), c_(static_cast<std::size_t>(s.bands())), s_(c_.size()) {}
  [[nodiscard]] held_type held(std::int64_t pos) const { return inner_.held(pos); }
  void row(std::int64_t pos, std::span<CacheT> c, std::span<CacheT> s) {
    inner_.row(pos, c_, s_);
    for (std::size_t b = 0; b < c_.size(); ++b) {
      if constexpr (std::is_same_v<inner_value, float>) {  // convert<CacheT>(float), as cached::cos_sin
        c[b] = batch_detail::from_float<CacheT>(c_[b]);
        s[b] = batch_detail::from_float<CacheT>(s_[b]);
      } else {
        c[b] = convert<CacheT>(c_[b]);
        s[b] = convert<CacheT>(s_[b]);
      }
    }
  }

 private:
  block_kernel<Inner> inner_;
  std::vector<inner_value> c_, s_;
};

// True when cos_sin_block has a fast path for S (otherwise it loops over cos_sin).
template <class S>
inline constexpr bool has_block_kernel_v = block_kernel<S>::fast;

namespace batch_detail {
// The argument checks of cos_sin_block; returns the number of values the block writes.
inline std::size_t checked_block_size(int bands, std::int64_t first, std::int64_t count, std::size_t cos_size,
                                      std::size_t sin_size) {
  if (first < 0) throw std::invalid_argument("cos_sin_block: first is " + std::to_string(first) + ", must be >= 0");
  if (count < 0) throw std::invalid_argument("cos_sin_block: count is " + std::to_string(count) + ", must be >= 0");
  if (first > std::numeric_limits<std::int64_t>::max() - count)
    throw std::invalid_argument("cos_sin_block: first + count overflows int64");
  const auto b = static_cast<std::size_t>(bands);
  const auto rows = static_cast<std::size_t>(count);
  if (b != 0 && rows > std::numeric_limits<std::size_t>::max() / b)
    throw std::invalid_argument("cos_sin_block: count * bands overflows");
  if (cos_size < rows * b || sin_size < rows * b)
    throw std::invalid_argument("cos_sin_block: the spans hold " + std::to_string(std::min(cos_size, sin_size)) +
                                " values, the block needs " + std::to_string(rows * b));
  return rows * b;
}
}  // namespace batch_detail

// cos_sin_blocks<S>: cos_sin_block for a sequence of blocks of one strategy (one object per thread;
// s must outlive it). It keeps the kernel and the last row it wrote, so a block that starts where
// the previous one stopped, inside a run of equal held positions, copies that row instead of
// recomputing it. The reuse is keyed on the held position's bit pattern, so blocks may come in
// any order: every fill writes exactly what cos_sin_block writes.
template <angle_strategy S>
class cos_sin_blocks {
 public:
  explicit cos_sin_blocks(const S& s) : s_(s), state_(s) {}

  void fill(std::int64_t first, std::int64_t count, std::span<double> cos_out, std::span<double> sin_out) {
    const std::size_t n = batch_detail::checked_block_size(s_.bands(), first, count, cos_out.size(), sin_out.size());
    if (n == 0) return;
    const auto bands = static_cast<std::size_t>(s_.bands());
    const auto rows = static_cast<std::size_t>(count);
    double* co = cos_out.data();
    double* so = sin_out.data();
    if constexpr (has_block_kernel_v<S>) {
      state& st = state_;
      for (std::size_t i = 0; i < rows; ++i, co += bands, so += bands) {
        const std::int64_t pos = first + static_cast<std::int64_t>(i);
        const held_type h = st.kernel.held(pos);
        if (st.have_last && batch_detail::same_bits(h, st.last_held)) {  // the row of the last position
          const double* from_c = i > 0 ? co - bands : st.last_cos.data();
          const double* from_s = i > 0 ? so - bands : st.last_sin.data();
          std::memcpy(co, from_c, bands * sizeof(double));
          std::memcpy(so, from_s, bands * sizeof(double));
          continue;
        }
        st.kernel.row(pos, st.c, st.s);
        for (std::size_t b = 0; b < bands; ++b) {
          co[b] = batch_detail::widen_exact(st.c[b]);
          so[b] = batch_detail::widen_exact(st.s[b]);
        }
        st.last_held = h;
        st.have_last = true;
      }
      // The block's last row, for the next block (it holds st.last_held).
      std::memcpy(st.last_cos.data(), co - bands, bands * sizeof(double));
      std::memcpy(st.last_sin.data(), so - bands, bands * sizeof(double));
    } else {
      using V = typename S::value_type;
      for (std::size_t i = 0; i < rows; ++i, co += bands, so += bands) {
        const std::int64_t pos = first + static_cast<std::int64_t>(i);
        for (std::size_t b = 0; b < bands; ++b) {
          const cos_sin_pair<V> cs = s_.cos_sin(pos, static_cast<int>(b));
          co[b] = batch_detail::widen_exact(cs.cos);
          so[b] = batch_detail::widen_exact(cs.sin);
        }
      }
    }
  }

 private:
  struct no_state {
    explicit no_state(const S&) {}
  };
  template <class K>
  struct kernel_state {
    static_assert(std::is_same_v<typename K::value_type, typename S::value_type>);
    explicit kernel_state(const S& strategy)
        : kernel(strategy), c(static_cast<std::size_t>(strategy.bands())), s(c.size()), last_cos(c.size()),
          last_sin(c.size()) {}
    K kernel;
    std::vector<typename S::value_type> c, s;  // the row in value_type, before widening
    typename K::held_type last_held{};
    bool have_last = false;
    std::vector<double> last_cos, last_sin;  // the last row written, widened
  };
  using state = std::conditional_t<has_block_kernel_v<S>, kernel_state<block_kernel<S>>, no_state>;
  template <class K>
  static auto held_of(const kernel_state<K>&) -> typename K::held_type;
  static auto held_of(const no_state&) -> int;
  using held_type = decltype(held_of(std::declval<const state&>()));

  const S& s_;
  state state_;
};

template <angle_strategy S>
void cos_sin_block(const S& s, std::int64_t first, std::int64_t count, std::span<double> cos_out,
                   std::span<double> sin_out) {
  cos_sin_blocks<S>(s).fill(first, count, cos_out, sin_out);
}

}  // namespace ropecheck
