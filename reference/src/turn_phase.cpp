// reference/src/turn_phase.cpp — the fast path of the reference: exact phase, double-double sin/cos.
//
// Algorithm (for one position `pos` and one band with f = inv_freq / 2pi in 64.192 fixed point):
//  1. r = frac(|pos| * f) as a 192-bit fraction of a turn, EXACTLY: three 64x64->128 products; the
//     integer part of the product (and f's integer part) are whole turns and are discarded.
//     A negative pos gives frac(-x) = 1 - frac(x): the 192-bit two's complement.
//  2. k = round(r M) with M = 2048, t = r - k/M in [-1/(2M), 1/(2M)] turns, formed exactly on the
//     top 128 bits of r (dropping r's low 64 bits costs < 2^-128 turns).
//  3. t -> double-double (error < 2^-117 turns), x = 2pi t in double-double (|x| <= pi/2048 ~ 2^-9.35,
//     relative error <= 2^-104 incl. 2pi's own 2^-107, i.e. < 2^-113 rad).
//  4. sin x and cos x - 1 by their Taylor series on x = xh + xl: only xh^3 c3 and z^2 c4 (z = xh^2)
//     need double-double products; every other term is < 2^-53 of a double-double's low part and is
//     evaluated in double. Error <= 2^-105 each (per-term budget beside the code).
//  5. a = 2pi k/M from a first-quadrant table (512 double-double entries, each within 2^-107) folded by
//     the quadrant; cos(a + x) = ca + (ca (cos x - 1) - sa sin x) and likewise for sin. The fold
//     guarantees |ca|, |sa| >= 2^-8.4 or == 0, larger than the bracket, so the last sum is a
//     FastTwoSum. Error <= 2^-105.5 for the step plus 2^-107 for the table entry.
// Total: <= 2^-105 (kernel, scaled by |ca|,|sa| <= 1) + 2^-105.5 + 2^-107 + 2^-112 (phase and x)
// < 2^-103 absolute. The header states 2^-100 and the public contract 2^-90; tests/reference/
// measures it against MPFR at 256 bits over >10^5 positions including the adversarial regimes.
//
// The kernel is compiled twice (target_clones): with FMA, two_prod is one instruction; the default
// clone calls glibc's correctly rounded fma() and gives identical results, only slower.
#include "turn_phase.hpp"

#include <mpfr.h>

#include "double_double.hpp"
#include "mpfr_value.hpp"

namespace ropecheck::reference::detail {
namespace {

using u64 = std::uint64_t;
using u128 = unsigned __int128;
using i128 = __int128;

dd to_dd(mpfr_srcptr x) {
  const double hi = mpfr_get_d(x, MPFR_RNDN);
  mpfr_value rest(mpfr_get_prec(x));
  mpfr_sub_d(rest, x, hi, MPFR_RNDN);  // exact: x - hi has fewer significant bits than x
  return {hi, mpfr_get_d(rest, MPFR_RNDN)};
}

turn_table build_turn_table() {
  turn_table t{};
  constexpr mpfr_prec_t precision = 320;
  mpfr_value two_pi(precision), angle(precision), s(precision), c(precision);
  mpfr_const_pi(two_pi, MPFR_RNDN);
  mpfr_mul_2ui(two_pi, two_pi, 1, MPFR_RNDN);
  t.two_pi = to_dd(two_pi);
  for (int k = 0; k < turn_table_size; ++k) {
    mpfr_mul_ui(angle, two_pi, static_cast<unsigned long>(k), MPFR_RNDN);
    mpfr_div_2ui(angle, angle, turn_points_log2, MPFR_RNDN);
    mpfr_sin_cos(s, c, angle, MPFR_RNDN);
    t.point[k] = {{to_dd(c), to_dd(s)}};
  }
  return t;
}

// Taylor coefficients. c3 (sine) and c4 (cosine) multiply terms that need ~2^-62 relative accuracy
// and are double-double; every other coefficient multiplies terms whose double rounding is < 2^-106.
constexpr dd sin_c3{-0x1.5555555555555p-3, -0x1.5555555555555p-57};  // -1/6
constexpr double sin_c5 = 1.0 / 120.0;
constexpr double sin_c7 = -1.0 / 5040.0;
constexpr double sin_c9 = 1.0 / 362880.0;
constexpr dd cos_c4{0x1.5555555555555p-5, 0x1.5555555555555p-59};  // 1/24
constexpr double cos_c6 = -1.0 / 720.0;
constexpr double cos_c8 = 1.0 / 40320.0;

struct small_angle {
  dd sin;          // sin x
  dd cos_minus_1;  // cos x - 1, kept apart so that the table step does not lose it against 1
};

// sin x and cos x - 1 for x = xh + xl, |x| <= pi/2048 (+ 2^-110), |xl| <= 2 ulp(xh) <= 2^-61.
// Error <= 2^-105 absolute on each. Sizes used below: |xh| <= 2^-9.35, z = xh^2 <= 2^-18.7,
// |xh^3| <= 2^-27.7, z^2 <= 2^-37.4. Truncation: sin after x^9 (next term x^11/11! < 2^-128),
// cos after z^4 (next z^5/10! < 2^-115).
[[gnu::always_inline]] inline small_angle sin_cos_small(dd x) noexcept {
  const double xh = x.hi;
  const double xl = x.lo;
  const double zh = xh * xh;
  const double zl = __builtin_fma(xh, xh, -zh);  // z = xh^2 = zh + zl exactly

  // sin xh = xh + xh^3 Q, Q = c3 + c5 z + c7 z^2 + c9 z^3. xh^3 Q <= 2^-30: it is needed to 2^-106,
  // i.e. relative 2^-76: xh^3 as a double-double, c3 as a double-double, the rest of Q (<= 2^-25.6)
  // in double (rounding <= 2^-78 of it, < 2^-131 after the product).
  const double x3h = xh * zh;
  const double x3l = __builtin_fma(xh, zh, -x3h) + xh * zl;
  const double q_rest = sin_c3.lo + zl * sin_c5 + zh * (sin_c5 + zh * (sin_c7 + zh * sin_c9));
  const double ph = x3h * sin_c3.hi;  // xh^3 Q = ph + pl, relative 2^-100
  const double pl = __builtin_fma(x3h, sin_c3.hi, -ph) + (x3h * q_rest + x3l * sin_c3.hi);
  // sin(xh + xl) = sin xh + xl cos xh + O(xl^2 xh): cos xh to z^2 leaves xl z^3/720 < 2^-126.
  dd s = fast_two_sum(xh, ph);  // |ph| <= |xh|/6
  s.lo += pl + xl * (1.0 + zh * (-0.5 + zh * (1.0 / 24.0)));
  // Left unnormalised (|s.lo| <= 3 ulp(s.hi)): angle_sum only multiplies it by table values.
  const dd sin_x = s;

  // cos xh - 1 = -z/2 + z^2 K, K = c4 + c6 z + c8 z^2. z^2 K <= 2^-42 needs relative 2^-64:
  // z^2 and c4 double-double, the rest of K (<= 2^-27.3) in double.
  const double z2h = zh * zh;
  const double z2l = __builtin_fma(zh, zh, -z2h) + 2.0 * zh * zl;
  const double k_rest = cos_c4.lo + zh * (cos_c6 + zh * cos_c8);
  const double wh = z2h * cos_c4.hi;
  const double wl = __builtin_fma(z2h, cos_c4.hi, -wh) + (z2h * k_rest + z2l * cos_c4.hi);
  // cos(xh + xl) - cos xh = -xl sin xh + O(xl^2): sin xh to xh^3 leaves xl xh^5/120 < 2^-116.
  dd cm = fast_two_sum(-0.5 * zh, wh);  // |wh| <= z/24 <= |z/2|; -zh/2 is exact
  cm.lo += wl - 0.5 * zl - xl * xh * (1.0 - zh * (1.0 / 6.0));
  return {sin_x, cm};  // cm likewise unnormalised (|cm.lo| <= 3 ulp(cm.hi))
}

// a + (a * m + b * n) for the angle-addition step: a, b table values (|a|, |b| <= 1), m = cos x - 1,
// n = +-sin x. Precondition |a.hi| >= |a m + b n| or a.hi == 0, so the last sum is a FastTwoSum: with
// the quadrant fold every table point has |cos|, |sin| >= sin(2 pi/2048) > 2^-8.4 (or sin == 0 at
// j = 0), against |a m + b n| <= |x| + x^2/2 < 2^-9.3.
// Error <= 2^-105.5 absolute: the products' dropped lo*lo terms (< 2^-150), the rounding of `lo`
// (|lo| <= 2^-53 before the last rounding: <= 2^-106) and of the inner sum (< 2^-115).
[[gnu::always_inline]] inline dd angle_sum(dd a, dd m, dd b, dd n) noexcept {
  const dd am = two_prod(a.hi, m.hi);
  const dd bn = two_prod(b.hi, n.hi);
  const dd e = two_sum(am.hi, bn.hi);
  const dd f = fast_two_sum(a.hi, e.hi);
  const double inner = e.lo + (am.lo + bn.lo) + (a.lo + (a.hi * m.lo + a.lo * m.hi) + (b.hi * n.lo + b.lo * n.hi));
  return fast_two_sum(f.hi, f.lo + inner);
}

}  // namespace

const turn_table& shared_turn_table() {
  static const turn_table table = build_turn_table();
  return table;
}

__attribute__((target_clones("fma", "default")))
cos_sin_dd cos_sin_of_turns(const turn_table& table, const turn_frequency& f,
                            std::int64_t pos) noexcept {
  // 1. r = frac(|pos| * f) exactly, r = (r2 r1 r0) 2^-192. Unsigned negation covers INT64_MIN.
  const u64 m = pos < 0 ? u64{0} - static_cast<u64>(pos) : static_cast<u64>(pos);
  const u128 p0 = static_cast<u128>(m) * f.frac[0];
  const u128 p1 = static_cast<u128>(m) * f.frac[1];
  const u128 p2 = static_cast<u128>(m) * f.frac[2];
  u64 r0 = static_cast<u64>(p0);
  const u128 mid = (p0 >> 64) + static_cast<u64>(p1);
  u64 r1 = static_cast<u64>(mid);
  u64 r2 = static_cast<u64>(p1 >> 64) + static_cast<u64>(p2) + static_cast<u64>(mid >> 64);  // mod 1
  if (pos < 0) {  // frac(-x) = 1 - frac(x): two's complement of the 192-bit fraction
    r0 = ~r0 + 1;
    const u64 carry0 = r0 == 0 ? 1 : 0;
    r1 = ~r1 + carry0;
    const u64 carry1 = (carry0 != 0 && r1 == 0) ? 1 : 0;
    r2 = ~r2 + carry1;
  }

  // 2. k = round(r M), M = 2^11 points per turn; t = r - k/M on the top 128 bits of r:
  //    |t| <= 2^-12 turn, t = T 2^-128 with |T| <= 2^116. k = M wraps to 0 (a whole turn).
  constexpr int log2_points = turn_points_log2;
  const u64 top = r2 >> (64 - log2_points - 1);
  const u64 k = (top + 1) >> 1;
  const u128 r_top = (static_cast<u128>(r2) << 64) | r1;
  const auto t_fixed = static_cast<i128>(r_top - (static_cast<u128>(k) << (128 - log2_points)));

  // 3. t -> double-double: T = th 2^64 + tl with |th| <= 2^52 (an exact double); tl loses its low 11
  //    bits (< 2^-117 turn) to become an exact double too. |th 2^-64| >= |tl 2^-128| unless th == 0,
  //    so FastTwoSum is exact.
  const auto th = static_cast<std::int64_t>(t_fixed >> 64);
  const auto tl = static_cast<std::int64_t>(static_cast<u64>(t_fixed) >> 11);
  const dd t = fast_two_sum(static_cast<double>(th) * 0x1p-64, static_cast<double>(tl) * 0x1p-117);
  // x = 2 pi t, |x| <= pi/2048, relative 2^-104; not renormalised: |x.lo| <= 2 ulp(x.hi) <= 2^-62,
  // which the xl terms of sin_cos_small allow for.
  dd x = two_prod(t.hi, table.two_pi.hi);
  x.lo += t.hi * table.two_pi.lo + t.lo * table.two_pi.hi;
  const small_angle sc = sin_cos_small(x);

  // 4. Table point a = 2 pi k / M = q pi/2 + 2 pi j / M: the quadrant q permutes and negates the
  //    entry for j (cos(a) = (+-)cos or sin of the entry), without branches.
  const auto q = static_cast<unsigned>(k >> (log2_points - 2)) & 3U;
  const auto& e = table.point[k & (turn_table_size - 1)];
  const unsigned swap = q & 1U;
  static constexpr double cos_sign[4] = {1.0, -1.0, -1.0, 1.0};
  static constexpr double sin_sign[4] = {1.0, 1.0, -1.0, -1.0};
  const dd first = e.part[swap];        // cos entry, or sin entry for odd quadrants
  const dd second = e.part[swap ^ 1U];
  const dd ca{cos_sign[q] * first.hi, cos_sign[q] * first.lo};
  const dd sa{sin_sign[q] * second.hi, sin_sign[q] * second.lo};

  // 5. cos(a + x) = ca + (ca (cos x - 1) - sa sin x), sin(a + x) = sa + (sa (cos x - 1) + ca sin x).
  return {angle_sum(ca, sc.cos_minus_1, sa, dd_neg(sc.sin)), angle_sum(sa, sc.cos_minus_1, ca, sc.sin)};
}

}  // namespace ropecheck::reference::detail
