// ropecheck/scalar_mpfr.hpp — the MPFR scalar (Boost.Multiprecision's mpfr backend) for kernels.
//
// Heavy: include it only in the translation units that instantiate kernels over MPFR. This type
// is a *kernel* scalar (an implementation under test at high precision); the reference in
// reference/ uses the MPFR C API directly and shares no code with it.
//
// Boost 1.74 fixes MPFR precision in decimal digits (template argument) and its default
// precision for variable-precision numbers is one global: ropecheck only uses the fixed-digits
// form, so nothing here depends on global state.
#pragma once

#include <boost/multiprecision/mpfr.hpp>

#include <string>
#include <string_view>

#include "ropecheck/scalar.hpp"

namespace ropecheck {

// 64 decimal digits: 213 bits (Boost rounds digits10 up to bits), well beyond long double's 64.
template <unsigned Digits10>
using mpfr_scalar = boost::multiprecision::number<boost::multiprecision::mpfr_float_backend<Digits10>,
                                                  boost::multiprecision::et_off>;
using mpfr_default = mpfr_scalar<64>;

template <unsigned Digits10>
struct scalar_traits<mpfr_scalar<Digits10>> {
  using type = mpfr_scalar<Digits10>;
  static constexpr std::string_view name = "mpfr";
  static constexpr int digits = std::numeric_limits<type>::digits;
  static long double widen(const type& x) { return x.template convert_to<long double>(); }  // rounds
  static type narrow(long double v) { return type(v); }  // exact: digits > 64
};

}  // namespace ropecheck
