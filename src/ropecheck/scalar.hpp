// ropecheck/scalar.hpp — the scalar types kernels are checked in, behind one traits layer.
//
// Types: float, double, long double (x87 80-bit), Eigen::bfloat16, Eigen::half; the MPFR type
// lives in scalar_mpfr.hpp so that Boost.Multiprecision and MPFR stay out of this header.
//
// For each type, scalar_traits<T> gives: name, digits (significand bits incl. the hidden one),
// unit roundoff u = 2^-digits, its bit pattern, exact widening to long double (every type here but
// MPFR widens exactly), and correctly rounded narrowing from long double.
//
// Eigen's bfloat16/half round after every operation (bf16 * bf16 is computed in float and rounded
// back), which is how eager frameworks compute in bf16. But they convert *implicitly* to float, so
// `bf16 * float` is float: kernels below always cast both operands to the compute type first.
#pragma once

#include <Eigen/Core>

#include <bit>
#include <cmath>
#include <concepts>
#include <cstdint>
#include <limits>
#include <string_view>
#include <type_traits>

namespace ropecheck {

using bfloat16 = Eigen::bfloat16;
using float16 = Eigen::half;

template <class T>
struct scalar_traits;  // specialised for every supported scalar

namespace detail {

// Round a long double to a type of <= 24 significand bits with a single rounding: first round to
// float with round-to-odd (truncate, then set the last bit if anything was lost), then to nearest
// even. Float keeps >= 2 more bits than bf16 or half, which makes the two-step result correct;
// Eigen's own constructor from double goes double -> float -> bf16 with two nearest roundings.
[[nodiscard]] inline float round_to_odd_float(long double v) noexcept {
  float f = static_cast<float>(v);
  if (!std::isfinite(f) || static_cast<long double>(f) == v) return f;
  if (std::fabs(static_cast<long double>(f)) > std::fabs(v)) f = std::nextafter(f, 0.0f);
  return std::bit_cast<float>(std::bit_cast<std::uint32_t>(f) | 1u);
}

template <class Eigen16>
[[nodiscard]] inline Eigen16 narrow_16(long double v) noexcept {
  return Eigen16(round_to_odd_float(v));  // Eigen's float -> bf16/half is round-to-nearest-even
}

}  // namespace detail

template <>
struct scalar_traits<float> {
  static constexpr std::string_view name = "float";
  static constexpr int digits = 24;
  using bits_type = std::uint32_t;
  static constexpr bits_type bits(float x) noexcept { return std::bit_cast<bits_type>(x); }
  static constexpr float from_bits(bits_type b) noexcept { return std::bit_cast<float>(b); }
  static constexpr long double widen(float x) noexcept { return x; }
  static constexpr float narrow(long double v) noexcept { return static_cast<float>(v); }
};

template <>
struct scalar_traits<double> {
  static constexpr std::string_view name = "double";
  static constexpr int digits = 53;
  using bits_type = std::uint64_t;
  static constexpr bits_type bits(double x) noexcept { return std::bit_cast<bits_type>(x); }
  static constexpr double from_bits(bits_type b) noexcept { return std::bit_cast<double>(b); }
  static constexpr long double widen(double x) noexcept { return x; }
  static constexpr double narrow(long double v) noexcept { return static_cast<double>(v); }
};

template <>
struct scalar_traits<long double> {
  static_assert(std::numeric_limits<long double>::digits == 64,
                "ropecheck assumes x87 80-bit long double (64-bit significand)");
  static constexpr std::string_view name = "long double";
  static constexpr int digits = 64;
  // 80 significant bits: the significand and the sign/exponent word, padding dropped.
  using bits_type = unsigned __int128;
  static bits_type bits(long double x) noexcept {
    unsigned char raw[sizeof(long double)];
    __builtin_memcpy(raw, &x, sizeof raw);
    bits_type b = 0;
    for (int i = 9; i >= 0; --i) b = (b << 8) | raw[i];
    return b;
  }
  static long double from_bits(bits_type b) noexcept {
    unsigned char raw[sizeof(long double)] = {};
    for (int i = 0; i < 10; ++i) raw[i] = static_cast<unsigned char>(b >> (8 * i));
    long double x;
    __builtin_memcpy(&x, raw, sizeof x);
    return x;
  }
  static constexpr long double widen(long double x) noexcept { return x; }
  static constexpr long double narrow(long double v) noexcept { return v; }
};

template <>
struct scalar_traits<bfloat16> {
  static constexpr std::string_view name = "bfloat16";
  static constexpr int digits = 8;
  using bits_type = std::uint16_t;
  static bits_type bits(bfloat16 x) noexcept { return Eigen::numext::bit_cast<bits_type>(x); }
  static bfloat16 from_bits(bits_type b) noexcept { return Eigen::numext::bit_cast<bfloat16>(b); }
  static long double widen(bfloat16 x) noexcept { return static_cast<float>(x); }
  static bfloat16 narrow(long double v) noexcept { return detail::narrow_16<bfloat16>(v); }
};

template <>
struct scalar_traits<float16> {
  static constexpr std::string_view name = "float16";
  static constexpr int digits = 11;
  using bits_type = std::uint16_t;
  static bits_type bits(float16 x) noexcept { return Eigen::numext::bit_cast<bits_type>(x); }
  static float16 from_bits(bits_type b) noexcept { return Eigen::numext::bit_cast<float16>(b); }
  static long double widen(float16 x) noexcept { return static_cast<float>(x); }
  static float16 narrow(long double v) noexcept { return detail::narrow_16<float16>(v); }
};

// A scalar ropecheck can instantiate kernels with.
template <class T>
concept rope_scalar = requires(T a, long double v) {
  { scalar_traits<T>::name } -> std::convertible_to<std::string_view>;
  { scalar_traits<T>::digits } -> std::convertible_to<int>;
  { scalar_traits<T>::narrow(v) } -> std::same_as<T>;
  { a * a } -> std::convertible_to<T>;
  { a + a } -> std::convertible_to<T>;
  { a - a } -> std::convertible_to<T>;
};

// Unit roundoff u = 2^-digits: the largest relative error of one correctly rounded operation.
template <class T>
[[nodiscard]] constexpr long double unit_roundoff() noexcept {
  return std::ldexp(1.0L, -scalar_traits<T>::digits);
}

// Machine epsilon 2^(1-digits): the gap between 1 and the next value.
template <class T>
[[nodiscard]] constexpr long double epsilon() noexcept {
  return std::ldexp(1.0L, 1 - scalar_traits<T>::digits);
}

template <class T>
[[nodiscard]] constexpr std::string_view scalar_name() noexcept {
  return scalar_traits<T>::name;
}

// Elementary functions in T, as frameworks evaluate them: hardware types call libm in T; the
// 16-bit types compute in float and round once (what torch does for bf16/half sin and cos);
// anything else (the MPFR type) is found by argument-dependent lookup.
template <class T>
inline constexpr bool is_16bit_float_v = std::is_same_v<T, bfloat16> || std::is_same_v<T, float16>;

template <class T>
[[nodiscard]] inline T sin_of(T x) {
  if constexpr (std::is_floating_point_v<T>) return std::sin(x);
  else if constexpr (is_16bit_float_v<T>) return T(std::sin(static_cast<float>(x)));
  else { using std::sin; return sin(x); }
}
template <class T>
[[nodiscard]] inline T cos_of(T x) {
  if constexpr (std::is_floating_point_v<T>) return std::cos(x);
  else if constexpr (is_16bit_float_v<T>) return T(std::cos(static_cast<float>(x)));
  else { using std::cos; return cos(x); }
}

}  // namespace ropecheck
