// tools/audit/cache_check.cpp — the optional cos/sin/inv_freq tensors of a dump against the exact
// reference of the claimed convention (see audit_input.hpp).
//
// cos/sin of width rotary_dim come in two column orders: HF's cat(freqs, freqs) (column j is band
// j mod r/2) and the interleaved repeat (column j is band j/2); the order with the smaller error is
// the one reported. Width r/2 is one column per band. Values are compared with af cos / af sin
// (HF multiplies its cache by the attention factor).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <vector>

#include "audit_input.hpp"
#include "ropecheck/reference/reference.hpp"
#include "ropecheck/judge/sentence.hpp"

namespace ropecheck::audit {
namespace {

// The dtype table is the judge's (judge::dtype_of, allowance.cpp): one table of names and digits.
int digits_of(const std::string& dt) { return judge::dtype_of(dt).digits; }

using judge::fmt;  // ropecheck/judge/sentence.hpp

}  // namespace

std::vector<cache_evidence> check_caches(const loaded_dump& in, const rope_config& claimed, std::int64_t seq_len) {
  std::vector<cache_evidence> out;
  const reference::rope_reference ref(claimed, seq_len);
  const int nb = ref.bands();
  const double af = static_cast<double>(ref.attention_factor().value());
  if (in.cos && in.sin) {
    const auto width = static_cast<int>(in.cos->shape.back());
    const int tokens = in.d.tokens;
    const double eps = std::ldexp(1.0, 1 - digits_of(in.cos->dtype));
    std::vector<std::vector<int>> orders;  // column -> band
    if (width == nb) {
      std::vector<int> o(static_cast<std::size_t>(width));
      for (int j = 0; j < width; ++j) o[static_cast<std::size_t>(j)] = j;
      orders.push_back(o);
    } else if (width == 2 * nb) {
      std::vector<int> cat(static_cast<std::size_t>(width)), rep(static_cast<std::size_t>(width));
      for (int j = 0; j < width; ++j) cat[static_cast<std::size_t>(j)] = j % nb, rep[static_cast<std::size_t>(j)] = j / 2;
      orders.push_back(cat);
      orders.push_back(rep);
    }
    if (orders.empty()) {
      out.push_back({"cos/sin", fmt("cos/sin have %d columns but the claimed rotary_dim %d needs %d or %d: not compared",
                                    width, claimed.rotary_dim, nb, 2 * nb),
                     std::numeric_limits<double>::quiet_NaN(), std::numeric_limits<double>::quiet_NaN()});
    } else {
      // Exact af cos / af sin once per (token, band).
      std::vector<double> ec(static_cast<std::size_t>(tokens) * nb), es(ec.size());
      std::vector<reference::dd> ang(static_cast<std::size_t>(nb));
      std::vector<reference::cos_sin_dd> cs(static_cast<std::size_t>(nb));
      for (int t = 0; t < tokens; ++t) {
        ref.all_bands(in.d.positions[static_cast<std::size_t>(t)], ang, cs);
        for (int b = 0; b < nb; ++b) {
          ec[static_cast<std::size_t>(t) * nb + b] = af * cs[static_cast<std::size_t>(b)].cos.hi;
          es[static_cast<std::size_t>(t) * nb + b] = af * cs[static_cast<std::size_t>(b)].sin.hi;
        }
      }
      double best = std::numeric_limits<double>::infinity();
      std::int64_t best_pos = 0;
      int best_band = 0;
      std::size_t best_order = 0;
      for (std::size_t k = 0; k < orders.size(); ++k) {
        double worst = 0;
        std::int64_t wp = 0;
        int wb = 0;
        for (int t = 0; t < tokens; ++t)
          for (int j = 0; j < width; ++j) {
            const int b = orders[k][static_cast<std::size_t>(j)];
            const std::size_t o = static_cast<std::size_t>(t) * static_cast<std::size_t>(width) + static_cast<std::size_t>(j);
            const std::size_t e = static_cast<std::size_t>(t) * nb + static_cast<std::size_t>(b);
            const double err = std::max(std::fabs(in.cos->values[o] - ec[e]), std::fabs(in.sin->values[o] - es[e]));
            if (err > worst) worst = err, wp = in.d.positions[static_cast<std::size_t>(t)], wb = b;
          }
        if (worst < best) best = worst, best_pos = wp, best_band = wb, best_order = k;
      }
      const char* order = width == nb ? "one column per band" : best_order == 0 ? "HF's cat(freqs, freqs) order" : "interleaved (repeated) order";
      out.push_back({"cos/sin",
                     fmt("cos/sin cache (%s, %d columns, %s): largest |error| against exact af cos/sin %.3g = %.3g "
                         "ulps of %s (at 1), at position %lld band %d",
                         in.cos->dtype.c_str(), width, order, best, best / eps, in.cos->dtype.c_str(),
                         static_cast<long long>(best_pos), best_band),
                     best, best / eps});
    }
  }
  if (in.inv_freq) {
    const auto n = static_cast<int>(in.inv_freq->shape[0]);
    const double eps = std::ldexp(1.0, 1 - digits_of(in.inv_freq->dtype));
    if (n != nb) {
      rope_config hd = claimed;
      hd.rotary_dim = 2 * n;
      out.push_back({"inv_freq", fmt("inv_freq has %d entries but the claimed rotary_dim %d has %d bands: the "
                                     "implementation's frequencies span rotary dim %d",
                                     n, claimed.rotary_dim, nb, 2 * n),
                     std::numeric_limits<double>::quiet_NaN(), std::numeric_limits<double>::quiet_NaN()});
    } else {
      double worst = 0;
      int wb = 0;
      for (int b = 0; b < nb; ++b) {
        const double exact = static_cast<double>(ref.inv_freq(b).value());
        const double rel = std::fabs(in.inv_freq->values[static_cast<std::size_t>(b)] / exact - 1);
        if (rel > worst) worst = rel, wb = b;
      }
      out.push_back({"inv_freq", fmt("inv_freq (%s, %d bands): largest relative error against the exact schedule "
                                     "%.3g = %.3g ulps of %s, band %d",
                                     in.inv_freq->dtype.c_str(), nb, worst, worst / eps, in.inv_freq->dtype.c_str(), wb),
                     worst, worst / eps});
    }
  }
  return out;
}

}  // namespace ropecheck::audit
