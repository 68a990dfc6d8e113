// tests/properties/rope_under_test.hpp — ropecheck's own kernels as implementations under test.
//
// The notion itself (struct rope_under_test) is conformance/drivers/implementation.hpp, shared with
// the plugin door and the installed conformance suite; this header binds rotate_heads<C>(S...) with
// each angle strategy to it, with the error model's bound for that pairing, so the drivers check
// ropecheck's kernels in every storage/compute pairing and strategy and the deliberately broken
// kernels of mutation_test.cpp.
#pragma once

#include <cmath>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "implementation.hpp"
#include "ropecheck/judge/error_model.hpp"
#include "ropecheck/angle.hpp"
#include "ropecheck/error.hpp"
#include "ropecheck/judge/exact_strategy.hpp"
#include "ropecheck/presets.hpp"
#include "ropecheck/reference/reference.hpp"
#include "ropecheck/rope.hpp"

namespace ropecheck::test {

// How a strategy's cos/sin may be off (section 3-4 of the error model).
struct cos_sin_model {
  std::function<long double(int band)> k_freq;  // inv_freq relative error, units of u_angle
  long double u_angle = 0;                       // unit roundoff of the type the angle is formed in
  int position_digits = 64;                      // significand bits of the type positions are held in
  long double freq_floor = 0;                    // absolute error of a subnormal inv_freq
  long double u_cos_sin = 0;                     // unit roundoff of the type cos/sin are evaluated in
  long double extra = 0;                         // later roundings of cos/sin (a cast, a cache), absolute
  bool exact = false;                            // cos/sin are the reference's, rounded once (no angle error)
};

// |c~ - af cos(phi)| bound at (pos, band), in absolute terms (capped: cos/sin never err by more
// than 2 af + the roundings, whatever the angle).
inline long double cos_sin_bound(const cos_sin_model& m, const reference::rope_reference& ref, std::int64_t pos,
                                 int band) {
  const long double af = ref.attention_factor().value();
  if (m.exact) return m.u_cos_sin * af * 2;  // rounded once, af formed in long double
  const long double phi = std::fabs(ref.angle(pos, band).value());
  const bool pos_rounds = std::fabs(static_cast<long double>(pos)) > std::ldexp(1.0L, m.position_digits);
  const long double angle = (m.k_freq(band) + (pos_rounds ? 1 : 0) + 1) * m.u_angle * phi +
                            m.freq_floor * std::fabs(static_cast<long double>(pos));
  const long double b = af * (angle + 4 * m.u_cos_sin) + m.extra * af;
  return std::min(b, 2 * af + m.extra * af + 4 * m.u_cos_sin * af);
}

// Bind rotate_heads<C>(S...) with strategy `cs` to the interface.
template <class S, class C, class Strategy>
rope_under_test bind_kernel(const std::string& strategy_name, const named_config& nc, Strategy cs,
                            cos_sin_model model, std::int64_t max_position = (std::int64_t{1} << 31) - 1) {
  rope_under_test r;
  r.name = std::string(scalar_name<S>()) + "/" + std::string(scalar_name<C>()) + " " + strategy_name;
  r.declared = nc.cfg;
  r.seq_len = nc.seq_len;
  r.max_position = max_position;
  r.wide_compute = scalar_traits<C>::digits >= 53;  // a type trait of the compute type, not its name
  r.ref = std::make_shared<const reference::rope_reference>(nc.cfg, nc.seq_len);
  r.to_storage = [](long double v) { return scalar_traits<S>::widen(scalar_traits<S>::narrow(v)); };
  const auto strategy = std::make_shared<Strategy>(std::move(cs));
  const rope_geometry g = rope_geometry::of(nc.cfg);
  r.rotate = [strategy, g](std::span<const long double> x, std::span<long double> y, int heads, std::int64_t pos,
                           rotation_sense sense) {
    std::vector<S> xs(x.size()), ys(x.size());
    for (std::size_t j = 0; j < x.size(); ++j) xs[j] = scalar_traits<S>::narrow(x[j]);
    rotate_heads<C>(std::span<const S>(xs), std::span<S>(ys), heads, g, pos, *strategy, sense);
    for (std::size_t j = 0; j < y.size(); ++j) y[j] = scalar_traits<S>::widen(ys[j]);
  };
  const auto ref = r.ref;
  r.bound = [ref, model](std::int64_t pos, int band) {
    const long double af = ref->attention_factor().value();
    return judge::rotation_bound<C, S>(cos_sin_bound(model, *ref, pos, band), af) / af;
  };
  return r;
}

// The angle model of a strategy that forms everything in T (direct_angle<T>).
template <class T>
cos_sin_model direct_model(const named_config& nc) {
  return {[nc](int b) { return judge::k_freq_direct<T>(nc.cfg, b, nc.seq_len); }, unit_roundoff<T>(),
          scalar_traits<T>::digits, ulp_of<T>(0.0L), unit_roundoff<T>(), 0, false};
}

// HF's fp32 path, cos/sin cast to Model afterwards.
template <class Model>
cos_sin_model hf_model(const named_config& nc) {
  return {[nc](int b) { return judge::k_freq_hf(nc.cfg, b, nc.seq_len); }, unit_roundoff<float>(), 24,
          ulp_of<float>(0.0L), unit_roundoff<float>(),
          std::is_same_v<Model, float> ? 0.0L : unit_roundoff<Model>(), false};
}

inline cos_sin_model ggml_model(const named_config& nc) {
  return {[nc](int b) { return judge::k_freq_ggml(nc.cfg, b, nc.seq_len); }, unit_roundoff<float>(), 24,
          ulp_of<float>(0.0L), unit_roundoff<float>(), 0, false};
}

template <class T>
cos_sin_model exact_model() {
  cos_sin_model m;
  m.exact = true;
  m.u_cos_sin = unit_roundoff<T>();
  return m;
}

// The MPFR kernel (tests/properties/mpfr_kernel.cpp keeps Boost.Multiprecision out of this header).
rope_under_test bind_mpfr_kernel(const named_config& nc);

}  // namespace ropecheck::test

namespace ropecheck::plugin {
class loaded_plugin;  // tools/audit/plugin_loader.hpp
}

namespace ropecheck::test {

// A foreign kernel behind the C plugin interface (src/ropecheck/plugin.h): the convention it
// declares, the MPFR reference of that convention, its apply() as the rotation, and the error
// bound of HF's fp32 path stored in the plugin's dtype (what a correct kernel of that convention
// and dtype is allowed). Defined in tools/audit/plugin_audit.cpp (library ropecheck_plugin_audit),
// which keeps dlopen and the loader out of this header.
rope_under_test bind_plugin(const plugin::loaded_plugin& p);

// Every correct implementation of `nc` that real engines correspond to: eager arithmetic in each
// type, 16-bit storage with fp32 compute (fused kernels), HF's path in fp32 and bf16, ggml's,
// the exact strategy, and MPFR.
inline std::vector<rope_under_test> correct_implementations(const named_config& nc) {
  std::vector<rope_under_test> v;
  const auto& c = nc.cfg;
  v.push_back(bind_kernel<float, float>("direct_float", nc, direct_angle<float>(c, nc.seq_len), direct_model<float>(nc)));
  v.push_back(bind_kernel<double, double>("direct_double", nc, direct_angle<double>(c, nc.seq_len), direct_model<double>(nc)));
  v.push_back(bind_kernel<long double, long double>("direct_long_double", nc, direct_angle<long double>(c, nc.seq_len),
                                                    direct_model<long double>(nc)));
  v.push_back(bind_kernel<bfloat16, bfloat16>("direct_bfloat16", nc, direct_angle<bfloat16>(c, nc.seq_len),
                                              direct_model<bfloat16>(nc)));
  v.push_back(bind_kernel<float16, float16>("direct_float16", nc, direct_angle<float16>(c, nc.seq_len),
                                            direct_model<float16>(nc), 65504));
  v.push_back(bind_kernel<float, float>("hf_float", nc, hf_angle<float>(c, nc.seq_len), hf_model<float>(nc)));
  v.push_back(bind_kernel<bfloat16, float>("hf_float", nc, hf_angle<float>(c, nc.seq_len), hf_model<float>(nc)));
  v.push_back(bind_kernel<float16, float>("hf_float", nc, hf_angle<float>(c, nc.seq_len), hf_model<float>(nc)));
  v.push_back(bind_kernel<bfloat16, bfloat16>("hf_bfloat16", nc, hf_angle<bfloat16>(c, nc.seq_len), hf_model<bfloat16>(nc)));
  v.push_back(bind_kernel<float, float>("ggml_float", nc, ggml_angle(c, nc.seq_len), ggml_model(nc)));
  {
    auto ref = std::make_shared<const reference::rope_reference>(c, nc.seq_len);
    auto r = bind_kernel<float, float>("exact_float", nc, judge::exact_angle<float>(*ref), exact_model<float>());
    r.ref = ref;  // the strategy points into this reference: keep it alive with the binding
    v.push_back(std::move(r));
  }
  v.push_back(bind_mpfr_kernel(nc));
  return v;
}

}  // namespace ropecheck::test
