// judge/src/pass_scaling_fit.cpp — parameter fits inside a scaling rule: when the claimed rule (or
// linear scaling) explains the shape of the fitted per-band frequencies but not the numbers, find the
// parameter values that do (run by pass_frequencies.cpp's named_schedule before `unexplained`).
//
// Each hypothesis is a convention the reference computes: a rope_config evaluated through the rule
// itself (compute_frequencies<double>, ropecheck/schedule.hpp), compared with the line fits by
// frequency_mismatch (the largest relative disagreement over the precisely fitted bands):
//   one parameter of the claimed rule scanned over its range, the others kept as claimed:
//     factor (also below 1: the factor inverted, frequencies multiplied by s instead of divided),
//     original_max_position_embeddings, beta_fast, beta_slow (YaRN), low/high_freq_factor (Llama 3);
//   linear scaling with any factor (a claim of another rule);
//   the claimed rule with its interpolation weight exchanged for the extrapolation weight in the
//     bands where it blends the two (Llama 3: smooth -> 1 - smooth; YaRN: ramp -> 1 - ramp);
//   LongRoPE: the other factor list at the call's sequence length (short for long, or long for short).
// How each rule is defined: transformers src/transformers/modeling_rope_utils.py
// _compute_yarn_parameters (find_correction_range, linear_ramp_factor: low = floor(corr(beta_fast)),
// high = ceil(corr(beta_slow)), inv_freq = interp (1 - extrapolation_factor) + extrap
// extrapolation_factor), _compute_llama3_parameters (wavelength thresholds original/low_freq_factor
// and original/high_freq_factor, smooth_factor = (original/wavelen - low)/(high - low) in the medium
// band), _compute_linear_scaling_rope_parameters (inv_freq / factor); ggml ggml/src/ggml-cpu/ops.cpp
// rope_yarn (theta_interp = freq_scale theta_extrap, mscale *= 1 + 0.1 logf(1/freq_scale)) and
// ggml_rope_yarn_corr_dims. ropecheck's own copies: src/ropecheck/schedule.hpp compute_native.
// A scan's accepted values form a range (YaRN's edges are floored/ceiled, so a plateau of lengths
// gives the same frequencies); the value named is the nicest in it (a power of two, then the fewest
// significant digits), re-evaluated through the rule and accepted only if it fits itself.
#include <algorithm>
#include <cmath>
#include <exception>
#include <functional>
#include <limits>
#include <optional>

#include "passes.hpp"
#include "ropecheck/judge/classes.hpp"
#include "ropecheck/schedule.hpp"

namespace ropecheck::judge::detail {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// The tolerance the schedule hypotheses of pass_frequencies.cpp use: a hypothesis fits when every
// precisely fitted band (slope noise < 5e-4) agrees to better than 1e-3 relative. The same number
// here, so a fit is never named outside the error model the discrete hypotheses are judged by.
constexpr double kFitTolerance = 1e-3;
constexpr double kPreciseNoise = 5e-4;
// "Clearly better than the claim": the claim must leave at least 10x the fit's mismatch.
constexpr double kClearlyBetter = 10;

std::string rule_name(scaling_kind k) {
  switch (k) {
    case scaling_kind::yarn: return "YaRN";
    case scaling_kind::llama3: return "Llama-3";
    case scaling_kind::linear: return "linear scaling";
    default: return std::string(to_string(k)) + " scaling";
  }
}

struct fit_frame {
  const context& c;
  const explanation& e;
  const fitted_frequencies& F;
  // The hypothesis' frequencies through the rule itself, empty when the rule cannot evaluate it.
  [[nodiscard]] std::vector<double> frequencies(const rope_config& hc) const {
    try {
      auto t = compute_frequencies<double>(hc, c.seq_len).inv_freq;
      t.resize(static_cast<std::size_t>(e.bands()));
      return t;
    } catch (const std::exception&) {
      return {};
    }
  }
  [[nodiscard]] double mismatch_of(const rope_config& hc) const {
    const auto t = frequencies(hc);
    return t.empty() ? kInf : frequency_mismatch(F.fit, F.noise, t);
  }
};

struct hypothesis {
  std::string what;   // e.g. "YaRN with original_max_position_embeddings 4096 (claimed 32768)"
  double mis = kInf;  // its frequency_mismatch
  rope_config cfg;    // the convention (for its attention factor)
  bool ggml_magnitude = false;  // its magnitude may also be ggml's 1 + 0.1 ln(s) (factor < 1)
};

// One parameter scanned: values v = from * ratio^k up to `to`, each evaluated by `mis`; the best is
// refined locally (multiplicative steps 1e-3..1e-7, as pass_frequencies.cpp's scan_base) and the
// contiguous range of grid values within kFitTolerance around it kept.
struct scan_result {
  double best = 0, best_mis = kInf, lo = 0, hi = 0;
};
scan_result scan(double from, double to, double ratio, const std::function<double(double)>& mis) {
  std::vector<std::pair<double, double>> grid;
  for (double v = from; v <= to * (1 + 1e-12); v *= ratio) grid.emplace_back(v, mis(v));
  scan_result r;
  std::size_t kb = 0;
  for (std::size_t k = 0; k < grid.size(); ++k)
    if (grid[k].second < r.best_mis) r.best_mis = grid[k].second, r.best = grid[k].first, kb = k;
  if (!std::isfinite(r.best_mis)) return r;
  for (double step = 1e-3; step >= 1e-7; step /= 10)
    for (bool moved = true; moved;) {
      moved = false;
      for (double f : {1 + step, 1 / (1 + step)})
        if (const double m = mis(r.best * f); m < r.best_mis) r.best *= f, r.best_mis = m, moved = true;
    }
  std::size_t a = kb, b = kb;
  while (a > 0 && grid[a - 1].second < kFitTolerance) --a;
  while (b + 1 < grid.size() && grid[b + 1].second < kFitTolerance) ++b;
  r.lo = std::min(grid[a].first, r.best), r.hi = std::max(grid[b].first, r.best);
  return r;
}

// The nicest value that still fits: a power of two in [lo, hi] (one grid step wider) near the best, else the best
// rounded to the fewest significant digits (1..6) that keeps it within kFitTolerance; integers only
// when `integer`. Returns the value and its mismatch (the best itself when nothing nicer fits).
std::pair<double, double> nicest(const scan_result& r, bool integer, const std::function<double(double)>& mis) {
  std::vector<double> tries;
  double p2 = std::exp2(std::round(std::log2(r.best)));
  for (double q : {p2, p2 / 2, p2 * 2})
    // [lo, hi] are grid points (2% apart at most): a plateau may reach one grid step further.
    if (q >= r.lo / 1.02 && q <= r.hi * 1.02 && (!integer || q >= 1)) tries.push_back(q);
  for (int digits = 1; digits <= 6; ++digits) {
    const double mag = std::pow(10.0, std::floor(std::log10(r.best)) - (digits - 1));
    const double q = std::round(r.best / mag) * mag;
    if (!integer || q == std::round(q)) tries.push_back(q);
  }
  for (double q : tries)
    if (q > 0)
      if (const double m = mis(q); m < kFitTolerance) return {q, m};
  return {integer ? std::round(r.best) : r.best, mis(integer ? std::round(r.best) : r.best)};
}

// Scan one parameter of the claimed rule; adds the hypothesis when its nicest value fits.
void fit_parameter(const fit_frame& X, std::vector<hypothesis>& out, const std::string& name, double claimed_value,
                   double from, double to, bool integer, const std::function<void(rope_config&, double)>& set) {
  auto mis = [&](double v) {
    if (integer) v = std::round(v);
    rope_config hc = X.e.cfg;
    set(hc, v);
    return X.mismatch_of(hc);
  };
  const scan_result r = scan(from, to, 1.01, mis);
  if (!(r.best_mis < kFitTolerance)) return;
  const auto [v, m] = nicest(r, integer, mis);
  if (!(m < kFitTolerance) || v == claimed_value) return;
  rope_config hc = X.e.cfg;
  set(hc, v);
  const std::string range =
      r.hi / r.lo > 1.02 ? fmt("; values about %.4g..%.4g give the same frequencies", std::min(r.lo, v), std::max(r.hi, v))
                         : std::string();
  out.push_back({fmt("%s with %s %.10g (claimed %.10g%s)", rule_name(X.c.claimed.scaling).c_str(), name.c_str(), v,
                     claimed_value, range.c_str()),
                 m, hc, false});
}

// The factor of `rule` scanned over 1/64..64 (a factor below 1 multiplies the frequencies: the
// claimed factor inverted when it is 1/claimed). validate() accepts any factor > 0, so these are the
// rule's own frequencies; a YaRN factor of exactly 1 with an original length reads as "absent"
// (schedule.hpp effective_factor_in), so 1 itself is left out.
void fit_factor(const fit_frame& X, std::vector<hypothesis>& out, scaling_kind rule) {
  const rope_config& claimed = X.c.claimed;
  auto mis = [&](double s) {
    if (s == 1.0) return kInf;
    rope_config hc = with_scaling(X.e.cfg, rule);
    hc.factor = s;
    return X.mismatch_of(hc);
  };
  const scan_result r = scan(1.0 / 64, 64, 1.002, mis);
  if (!(r.best_mis < kFitTolerance)) return;
  const auto [s, m] = nicest(r, false, mis);
  if (!(m < kFitTolerance) || (rule == claimed.scaling && s == claimed.factor)) return;
  rope_config hc = with_scaling(X.e.cfg, rule);
  hc.factor = s;
  std::string what;
  if (rule == claimed.scaling && std::fabs(s * claimed.factor - 1) < 1e-9)
    what = fmt("%s with factor %g (claimed %g: inverted, the frequencies are multiplied by %g instead of divided)",
               rule_name(rule).c_str(), s, claimed.factor, claimed.factor);
  else if (rule == claimed.scaling)
    what = fmt("%s with factor %.6g (claimed %g)", rule_name(rule).c_str(), s, claimed.factor);
  else
    what = fmt("%s with factor %.6g (claimed %s with factor %g)", rule_name(rule).c_str(), s,
               rule_name(claimed.scaling).c_str(), claimed.factor);
  out.push_back({what, m, hc, rule == scaling_kind::yarn && s < 1});
}

// The claimed rule with its blend weight exchanged (w -> 1 - w) in the bands where it blends the
// interpolated x/s and the extrapolated x: f' = x + x/s - f there (f = (1 - w) x/s + w x). Llama 3's
// smooth_factor inverted, or YaRN's ramp used as the interpolation weight (ggml's rope_yarn_ramp
// returns the extrapolation weight).
void fit_blend_inverted(const fit_frame& X, std::vector<hypothesis>& out) {
  const rope_config& claimed = X.c.claimed;
  if (claimed.scaling != scaling_kind::llama3 && claimed.scaling != scaling_kind::yarn) return;
  const rope_config plain = with_scaling(X.e.cfg, scaling_kind::none);
  const auto x = X.frequencies(plain);
  const auto f = X.frequencies(X.e.cfg);
  if (x.empty() || f.empty()) return;
  const double s = ropecheck::detail::effective_factor_in<double>(X.e.cfg);
  std::vector<double> h = f;
  int first = -1, last = -1;
  for (std::size_t i = 0; i < f.size(); ++i) {
    const double lo = std::min(x[i], x[i] / s), hi = std::max(x[i], x[i] / s);
    if (f[i] > lo * (1 + 1e-12) && f[i] < hi * (1 - 1e-12)) {
      h[i] = x[i] + x[i] / s - f[i];
      if (first < 0) first = static_cast<int>(i);
      last = static_cast<int>(i);
    }
  }
  if (first < 0) return;
  const double m = frequency_mismatch(X.F.fit, X.F.noise, h);
  const std::string what =
      claimed.scaling == scaling_kind::llama3
          ? fmt("Llama-3 smoothing inverted in bands %d..%d (smooth_factor replaced by 1 - smooth_factor)", first, last)
          : fmt("YaRN ramp inverted in bands %d..%d (the interpolation and extrapolation weights exchanged)", first, last);
  out.push_back({what, m, X.e.cfg, false});
}

// "bands a..b (n of N fitted precisely enough)".
std::string bands_explained(const fitted_frequencies& F) {
  int first = -1, last = -1, n = 0;
  for (std::size_t i = 0; i < F.noise.size(); ++i)
    if (F.noise[i] < kPreciseNoise) {
      if (first < 0) first = static_cast<int>(i);
      last = static_cast<int>(i), ++n;
    }
  return fmt("every band fitted precisely enough (%d of %zu, bands %d..%d)", n, F.noise.size(), first, last);
}

// When the fitted convention's own attention factor is the outputs' magnitude, the
// attention_factor_wrong finding pass_magnitude.cpp added is a consequence of the same bug: say so
// and put it after the fit (confidence 0.5). The magnitude test is pass_magnitude.cpp's (within
// max(5e-3, 8 u_T) of the factor).
void explain_magnitude(const fit_frame& X, const hypothesis& h) {
  std::vector<double> mags;
  for (int t = 0; t < X.c.d.tokens; ++t)
    for (int i = 0; i < X.e.bands(); ++i)
      if (X.e.at(t, i).ok) mags.push_back(std::abs(X.e.at(t, i).g));
  if (mags.empty()) return;
  const double m_med = median(mags);
  std::vector<std::pair<double, std::string>> afs{
      {ropecheck::detail::attention_factor_in<double>(h.cfg, X.c.seq_len), "the rule's"}};
  if (h.ggml_magnitude)  // ggml ops.cpp rope_yarn: mscale *= 1 + 0.1 logf(1 / freq_scale), freq_scale = 1/s
    afs.emplace_back(1 + 0.1 * std::log(h.cfg.factor), "ggml's 1 + 0.1 ln(factor)");
  for (const auto& [af, whose] : afs) {
    if (std::fabs(m_med / af - 1) > std::max(5e-3, 8 * X.c.uT)) continue;
    for (auto& f : X.c.v.findings)
      if (f.bug_class == classes::attention_factor_wrong) {
        f.sentence += fmt("; the fitted schedule's own attention factor (%s, %.6g) explains this magnitude", whose.c_str(), af);
        f.confidence = std::min(f.confidence, 0.5);
      }
    return;
  }
}

// LongRoPE: the claim's other factor list at this sequence length. transformers picks long_factor when
// seq_len > original_max_position_embeddings and short_factor otherwise (modeling_rope_utils.py
// _compute_longrope_parameters; src/ropecheck/schedule.hpp, case longrope, evaluates the same rule); a kernel that
// always applies one list, or picks by another length, has the other list's frequencies in the calls it gets wrong.
void fit_longrope_lists(const fit_frame& X, std::vector<hypothesis>& out) {
  const rope_config& claimed = X.c.claimed;
  if (claimed.scaling != scaling_kind::longrope) return;
  if (claimed.short_factor == claimed.long_factor && !claimed.unused_factor.empty() && claimed.unused_factor != claimed.short_factor) {
    // vLLM's reading: one list for every position, chosen once by max_model_len (config_json_vllm.hpp); the kernel
    // may apply the other one (the lists swapped, or chosen by another length).
    rope_config hc = X.e.cfg;
    hc.short_factor = hc.long_factor = claimed.unused_factor;
    const double m = X.mismatch_of(hc);
    if (!(m < kFitTolerance)) return;
    out.push_back({"LongRoPE with the other factor list for every position, where vLLM's reading of the claim (one list "
                   "per engine, chosen by max_model_len against original_max_position_embeddings) takes this one (the "
                   "short and long lists swapped, or chosen by another length)",
                   m, hc, false});
    return;
  }
  if (claimed.short_factor == claimed.long_factor) return;
  const std::int64_t L = claimed.trained_length();
  const bool long_here = X.c.seq_len > L;
  rope_config hc = X.e.cfg;
  if (long_here) hc.long_factor = hc.short_factor;
  else hc.short_factor = hc.long_factor;
  const double m = X.mismatch_of(hc);
  if (!(m < kFitTolerance)) return;
  out.push_back({fmt("LongRoPE with the %s factors at sequence length %lld, where the %s ones apply (short up to "
                     "original_max_position_embeddings %lld, long above it)",
                     long_here ? "short" : "long", static_cast<long long>(X.c.seq_len), long_here ? "long" : "short",
                     static_cast<long long>(L)),
                 m, hc, false});
}

}  // namespace

double frequency_mismatch(const std::vector<double>& fit, const std::vector<double>& noise, const std::vector<double>& hyp) {
  double m = 0;
  int used = 0;
  const std::size_t ub = std::min({fit.size(), noise.size(), hyp.size()});
  for (std::size_t i = 0; i < ub; ++i) {
    if (noise[i] >= kPreciseNoise) continue;
    ++used;
    m = std::max(m, std::fabs(fit[i] / hyp[i] - 1));
  }
  return used >= std::max(2, static_cast<int>(fit.size()) / 4) ? m : kInf;
}

bool scaling_fit_accepted(double fit_mismatch, double claim_mismatch) {
  return fit_mismatch < kFitTolerance && claim_mismatch >= kFitTolerance && claim_mismatch > kClearlyBetter * fit_mismatch;
}

bool pass_scaling_fit(const context& c, const explanation& e, const fitted_frequencies& F) {
  const rope_config& claimed = c.claimed;
  if (claimed.scaling == scaling_kind::dynamic_ntk) return false;
  const fit_frame X{c, e, F};
  const double claim_mis = frequency_mismatch(F.fit, F.noise, e.th);
  if (!(claim_mis >= kFitTolerance)) return false;
  std::vector<hypothesis> hs;
  fit_longrope_lists(X, hs);
  if (claimed.scaling != scaling_kind::longrope) fit_factor(X, hs, scaling_kind::linear);
  if (claimed.scaling == scaling_kind::yarn || claimed.scaling == scaling_kind::llama3) {
    fit_factor(X, hs, claimed.scaling);
    fit_parameter(X, hs, "original_max_position_embeddings", static_cast<double>(claimed.trained_length()), 16, 1 << 24,
                  true, [](rope_config& h, double v) { h.original_max_position_embeddings = static_cast<std::int64_t>(v); });
    fit_blend_inverted(X, hs);
  }
  if (claimed.scaling == scaling_kind::yarn) {
    fit_parameter(X, hs, "beta_fast", claimed.beta_fast, claimed.beta_slow, 4096, false,
                  [](rope_config& h, double v) { h.beta_fast = v; });
    fit_parameter(X, hs, "beta_slow", claimed.beta_slow, 1.0 / 256, claimed.beta_fast, false,
                  [](rope_config& h, double v) { h.beta_slow = v; });
  }
  if (claimed.scaling == scaling_kind::llama3) {
    fit_parameter(X, hs, "low_freq_factor", claimed.low_freq_factor, 1.0 / 64, claimed.high_freq_factor, false,
                  [](rope_config& h, double v) { h.low_freq_factor = v; });
    fit_parameter(X, hs, "high_freq_factor", claimed.high_freq_factor, claimed.low_freq_factor, 1024, false,
                  [](rope_config& h, double v) { h.high_freq_factor = v; });
  }
  std::stable_sort(hs.begin(), hs.end(), [](const hypothesis& l, const hypothesis& r) { return l.mis < r.mis; });
  if (hs.empty() || !scaling_fit_accepted(hs[0].mis, claim_mis)) return false;
  std::string also;
  for (std::size_t k = 1; k < hs.size() && k < 4; ++k)
    if (scaling_fit_accepted(hs[k].mis, claim_mis)) also += fmt("; also consistent: %s (%.2g)", hs[k].what.c_str(), hs[k].mis);
  add(c.v, classes::scaling_wrong,
      fmt("%s: %s agrees with it to %.2g through the rule itself (the claim is off by up to %.3g relative, band %d)%s",
          hs[0].what.c_str(), bands_explained(F).c_str(), hs[0].mis, F.claim_max_rel, F.claim_max_rel_band, also.c_str()),
      0.94);
  explain_magnitude(X, hs[0]);
  return true;
}

}  // namespace ropecheck::judge::detail
