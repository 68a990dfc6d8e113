// proofs/support/exact.hpp — exact arithmetic for the compile-time proofs.
//
//   rational              p/q over __int128, usable in constant expressions
//   gaussian_integer      a + b i over __int128 (only to raise a Pythagorean triple to a power)
//   pythagorean_cos_sin   a cos_sin_source whose cos/sin are exact rationals: per band a
//                         primitive Pythagorean triple (a, b, c), and at position m
//                         cos + i sin = ((a + b i) / c)^m (the conjugate power for m < 0), so
//                         R(m) R(n) = R(m + n) holds exactly, not up to rounding.
//
// Why rationals rather than Gaussian integers as the scalar: the kernels' contract is stated for
// cos/sin of modulus 1, so R(m) must be orthogonal and R(-m) R(m) = I, not c^(2m) I. With integer
// cos/sin every identity would carry a power of c that the kernel cannot know about. Gaussian
// integers are used only to form the exact powers.
//
// Contract of rational:
//   representation  num / den with den > 0 and gcd(|num|, den) = 1, so == is equality of values
//                   and a value has exactly one representation
//   operations      + - * / == <=> and unary minus, exact; construction from any integer
//   overflow        every product and sum goes through __builtin_*_overflow; overflow (and a zero
//                   denominator) throws, and a throw is not a constant expression, so an
//                   overflowing proof fails the build instead of wrapping. Intermediates are kept
//                   small by cross-reduction (a/b * c/d reduces a with d and c with b first) and by
//                   adding over lcm(b, d) rather than b d.
//   range           the proofs keep every denominator a divisor of 5^24 13^12 (~1.4e30, below
//                   2^127 ~ 1.7e38): see the choice of triples in pythagorean_cos_sin.
#pragma once

#include <array>
#include <compare>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <stdexcept>
#include <type_traits>

#include "ropecheck/angle.hpp"  // cos_sin_pair

namespace ropecheck::proofs {

__extension__ typedef __int128 int128;  // __extension__: a GNU type, without -Wpedantic noise

namespace detail {

[[noreturn]] inline void overflow(const char* what) { throw std::overflow_error(what); }

constexpr int128 checked_mul(int128 a, int128 b) {
  int128 r = 0;
  if (__builtin_mul_overflow(a, b, &r)) overflow("rational: __int128 overflow in a product");
  return r;
}
constexpr int128 checked_add(int128 a, int128 b) {
  int128 r = 0;
  if (__builtin_add_overflow(a, b, &r)) overflow("rational: __int128 overflow in a sum");
  return r;
}
constexpr int128 checked_neg(int128 a) {
  int128 r = 0;
  if (__builtin_sub_overflow(int128(0), a, &r)) overflow("rational: __int128 overflow in a negation");
  return r;
}
constexpr int128 abs(int128 a) { return a < 0 ? checked_neg(a) : a; }
// gcd(|a|, |b|); gcd(0, 0) = 0. (std::gcd does not accept __int128 in strict C++20 mode.)
constexpr int128 gcd(int128 a, int128 b) {
  a = abs(a);
  b = abs(b);
  while (b != 0) {
    const int128 t = a % b;
    a = b;
    b = t;
  }
  return a;
}

}  // namespace detail

class rational {
 public:
  constexpr rational() = default;
  // Every integer is a rational (implicit: the kernels write T(0), and proofs write vectors of ints).
  template <class I>
    requires(std::is_integral_v<I> || std::is_same_v<I, int128>)
  constexpr rational(I n) : num_(static_cast<int128>(n)) {}  // NOLINT(google-explicit-constructor)
  constexpr rational(int128 num, int128 den) : num_(num), den_(den) { normalise(); }

  [[nodiscard]] constexpr int128 numerator() const { return num_; }
  [[nodiscard]] constexpr int128 denominator() const { return den_; }

  friend constexpr rational operator-(const rational& x) { return raw(detail::checked_neg(x.num_), x.den_); }
  friend constexpr rational operator+(const rational& x, const rational& y) {
    if (x.num_ == 0) return y;
    if (y.num_ == 0) return x;
    // Knuth's addition (TAOCP 4.5.1): with g = gcd(b, d), t = a (d/g) + c (b/g) shares with the
    // lcm only factors of g, so one gcd with g normalises the sum.
    const int128 g = detail::gcd(x.den_, y.den_);
    const int128 t = detail::checked_add(detail::checked_mul(x.num_, y.den_ / g),
                                         detail::checked_mul(y.num_, x.den_ / g));
    if (t == 0) return rational();
    const int128 g2 = g == 1 ? 1 : detail::gcd(t, g);
    return raw(t / g2, detail::checked_mul(x.den_ / g, y.den_ / g2));
  }
  friend constexpr rational operator-(const rational& x, const rational& y) { return x + (-y); }
  friend constexpr rational operator*(const rational& x, const rational& y) {
    if (x.num_ == 0 || y.num_ == 0) return rational();  // 0/1, the one representation of zero
    if (x.den_ == 1 && y.den_ == 1) return raw(detail::checked_mul(x.num_, y.num_), 1);
    const int128 g1 = detail::gcd(x.num_, y.den_), g2 = detail::gcd(y.num_, x.den_);
    // Both operands are reduced, so the cross-reduced product is reduced too.
    return raw(detail::checked_mul(x.num_ / g1, y.num_ / g2), detail::checked_mul(x.den_ / g2, y.den_ / g1));
  }
  friend constexpr rational operator/(const rational& x, const rational& y) {
    if (y.num_ == 0) throw std::domain_error("rational: division by zero");
    return x * rational(y.den_, y.num_);
  }
  constexpr rational& operator+=(const rational& y) { return *this = *this + y; }
  constexpr rational& operator-=(const rational& y) { return *this = *this - y; }
  constexpr rational& operator*=(const rational& y) { return *this = *this * y; }
  constexpr rational& operator/=(const rational& y) { return *this = *this / y; }

  // Normalised, so equal values have equal members.
  friend constexpr bool operator==(const rational&, const rational&) = default;
  friend constexpr std::strong_ordering operator<=>(const rational& x, const rational& y) {
    return detail::checked_mul(x.num_, y.den_) <=> detail::checked_mul(y.num_, x.den_);
  }

 private:
  static constexpr rational raw(int128 num, int128 den) {
    rational r;
    r.num_ = num;
    r.den_ = den;
    return r;
  }
  constexpr void normalise() {
    if (den_ == 0) throw std::domain_error("rational: zero denominator");
    if (den_ < 0) {
      num_ = detail::checked_neg(num_);
      den_ = detail::checked_neg(den_);
    }
    const int128 g = detail::gcd(num_, den_);
    num_ /= g;  // g >= 1: den_ > 0
    den_ /= g;
  }

  int128 num_ = 0;
  int128 den_ = 1;
};

// a + b i, exact, for powers of a Pythagorean triple's Gaussian integer.
struct gaussian_integer {
  int128 re = 1;
  int128 im = 0;
  friend constexpr gaussian_integer operator*(const gaussian_integer& x, const gaussian_integer& y) {
    using detail::checked_add, detail::checked_mul, detail::checked_neg;
    return {checked_add(checked_mul(x.re, y.re), checked_neg(checked_mul(x.im, y.im))),
            checked_add(checked_mul(x.re, y.im), checked_mul(x.im, y.re))};
  }
  friend constexpr bool operator==(const gaussian_integer&, const gaussian_integer&) = default;
};

// A primitive Pythagorean triple a^2 + b^2 = c^2: the exact rotation by the angle atan2(b, a).
struct pythagorean_triple {
  int a, b, c;
};

// The bands' triples. Their hypotenuses 5, 13, 25 = 5^2 and 65 = 5 * 13 share the primes 5 and 13
// on purpose: an inner product of two vectors rotated by m and n then has every denominator
// dividing lcm(5, 13, 25, 65)^(|m| + |n|) = 5^(2s) 13^s (s = |m| + |n|), which stays below 2^127
// up to s = 12, i.e. |m|, |n| <= 6. Distinct primes per band (5, 13, 17, 29) would overflow
// __int128 from s = 9 on. (33, 56, 65) is (3 + 4i)(5 + 12i) up to sign: its angle is the sum of
// the first two bands', so the bands' angles are not independent; none of the theorems needs
// them to be.
inline constexpr pythagorean_triple default_triples[] = {{3, 4, 5}, {5, 12, 13}, {7, 24, 25}, {33, 56, 65}};

// cos_sin_source (rope.hpp) with exact rational cos/sin, for up to 4 bands.
//   cos_sin(m, i) = (Re, Im) of ((a_i + b_i i) / c_i)^m, and of the conjugate power for m < 0.
// Exact: cos^2 + sin^2 = 1 and cos_sin(m) * cos_sin(n) = cos_sin(m + n) as complex numbers, for
// every m, n whose powers fit (|m| <= 24 for c = 65; the proofs use |m| <= 12).
// Positions in [-tabulated, tabulated] are computed once, when the (constexpr) source is built,
// so that proofs evaluating thousands of rotations do not recompute the powers each time.
class pythagorean_cos_sin {
 public:
  using value_type = rational;
  static constexpr std::int64_t tabulated = 12;

  constexpr pythagorean_cos_sin() {
    for (std::int64_t m = -tabulated; m <= tabulated; ++m)
      for (int i = 0; i < bands(); ++i) table_[index(m, i)] = power(m, i);
  }
  [[nodiscard]] constexpr cos_sin_pair<rational> cos_sin(std::int64_t pos, int band) const {
    if (band < 0 || band >= bands()) throw std::out_of_range("pythagorean_cos_sin: no such band");
    if (pos < -tabulated || pos > tabulated) return power(pos, band);
    return table_[index(pos, band)];
  }
  [[nodiscard]] static constexpr int bands() { return static_cast<int>(std::size(default_triples)); }

 private:
  static constexpr std::size_t index(std::int64_t pos, int band) {
    return static_cast<std::size_t>(pos + tabulated) * std::size(default_triples) + static_cast<std::size_t>(band);
  }
  static constexpr cos_sin_pair<rational> power(std::int64_t pos, int band) {
    const pythagorean_triple t = default_triples[band];
    const gaussian_integer step{t.a, pos < 0 ? -t.b : t.b};
    gaussian_integer z{};
    int128 scale = 1;
    for (std::int64_t k = 0, n = pos < 0 ? -pos : pos; k < n; ++k) {
      z = z * step;
      scale = detail::checked_mul(scale, t.c);
    }
    return {rational(z.re, scale), rational(z.im, scale)};
  }

  std::array<cos_sin_pair<rational>, (2 * tabulated + 1) * std::size(default_triples)> table_{};
};

}  // namespace ropecheck::proofs
