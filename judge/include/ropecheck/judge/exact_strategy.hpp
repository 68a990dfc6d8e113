// ropecheck/judge/exact_strategy.hpp — the exact angle strategy: cos/sin from the MPFR reference,
// rounded once to T. What a perfect implementation in T would feed its rotation.
//
// Glue between the kernels and reference/: link ropecheck::reference to use it. The reference
// itself shares no code with the kernels; this adapter only rounds its results. Covered by
// tests/core/angle_test.cpp (AngleStrategy.exact_strategy_is_the_reference_rounded_once).
#pragma once

#include <cstdint>
#include <string>

#include "ropecheck/angle.hpp"
#include "ropecheck/reference/reference.hpp"

namespace ropecheck::judge {

template <class T>
class exact_angle {
 public:
  using value_type = T;
  // The reference must outlive the strategy.
  explicit exact_angle(const reference::rope_reference& ref) : ref_(&ref) {
    const auto af = ref.attention_factor();
    af_ = static_cast<long double>(af.hi) + static_cast<long double>(af.lo);
  }

  [[nodiscard]] long double angle(std::int64_t pos, int band) const { return ref_->angle(pos, band).value(); }
  // cos * af rounded once to T (the product formed in long double: 2^-64 relative, below any T
  // but long double, where it adds at most 1/2 ulp; the error model accounts for it).
  [[nodiscard]] cos_sin_pair<T> cos_sin(std::int64_t pos, int band) const {
    const auto cs = ref_->cos_sin(pos, band);
    return {scalar_traits<T>::narrow(cs.cos.value() * af_), scalar_traits<T>::narrow(cs.sin.value() * af_)};
  }
  // The reference's own values: exact position, the MPFR frequency and angle (as double-double),
  // cos/sin * af in long double (raw) and rounded once to T (final).
  // Always long double: the reference's values need its 64 bits (R = double is not offered).
  template <class R = long double>
    requires std::is_same_v<R, long double>
  [[nodiscard]] angle_trace trace(std::int64_t pos, int band) const {
    const auto cs = ref_->cos_sin(pos, band);
    const long double c = cs.cos.value() * af_, s = cs.sin.value() * af_;
    return {static_cast<long double>(pos), ref_->inv_freq(band).value(), ref_->angle(pos, band).value(), c, s,
            scalar_traits<T>::widen(scalar_traits<T>::narrow(c)), scalar_traits<T>::widen(scalar_traits<T>::narrow(s))};
  }
  [[nodiscard]] int bands() const { return ref_->bands(); }
  [[nodiscard]] std::string name() const { return "exact_" + std::string(scalar_name<T>()); }

 private:
  const reference::rope_reference* ref_;
  long double af_ = 1.0L;
};

}  // namespace ropecheck::judge
