// judge/src/pass_frequencies.cpp — the frequencies in use, when positions alone do not explain
// the angles (run on the chosen pairing).
//
// Dense positions: per band a line fit of the angles against p (unwrapped token by token in
// increasing p, each step reduced to (-pi, pi] around the current fit) gives theta'_i:
//   theta'_i = bf16/fp16(fp32 theta_i) in >= 90% of the informative bands -> inv_freq_low_precision
//   another scaling rule / factor / none fits every band to 1e-3          -> scaling_wrong
//   the claimed rule with other parameters (pass_scaling_fit.cpp)          -> scaling_wrong
//   the claimed base over head_dim                                         -> rotary_dim_wrong
//   base^(-2i/d) with base from theta'_1/theta'_0                          -> base_wrong (or
//                                   dynamic_ntk_not_reset when it is a dynamic claim's larger base)
// Sparse or few positions (nothing to unwrap): the same hypotheses and a scan of bases 1e2..1e9 are
// judged against the wrapped angles |wrap(arg g - p theta_hyp)| (median over up to 512 tokens).
// Fits within 1e-3 of the claim are left to pass_drift.
#include <algorithm>
#include <cmath>
#include <exception>

#include "ropecheck/judge/classes.hpp"
#include "passes.hpp"
#include "ropecheck/schedule.hpp"

namespace ropecheck::judge::detail {
namespace {

struct frame {
  const context& c;
  const explanation& e;
  std::vector<int> sample;  // up to 512 tokens for the wrapped-angle hypotheses
};

const std::vector<double> kFactors{1.5, 2.0, 3.0, 4.0, 6.0, 8.0, 10.0, 16.0, 20.0, 32.0, 40.0, 64.0};

double wrapped_residual(const frame& F, const std::vector<double>& hyp) {
  const int ub = F.e.bands();
  std::vector<double> r;
  r.reserve(F.sample.size() * static_cast<std::size_t>(ub));
  for (int t : F.sample) {
    const double p = static_cast<double>(F.c.d.positions[static_cast<std::size_t>(t)]);
    for (int i = 0; i < ub && i < static_cast<int>(hyp.size()); ++i)
      if (F.e.at(t, i).ok) r.push_back(std::fabs(wrap(std::arg(F.e.at(t, i).g) - p * hyp[static_cast<std::size_t>(i)])));
  }
  return r.empty() ? std::numeric_limits<double>::infinity() : median(r);
}

// The largest |wrap(arg g - p theta_i)| / fp32 drift bound over the sampled cells (infinity when no
// cell can be judged).
double worst_drift_ratio(const frame& F, const std::vector<double>& hyp) {
  const int ub = F.e.bands();
  double worst = 0;
  int used = 0;
  for (int t : F.sample) {
    const double p = static_cast<double>(F.c.d.positions[static_cast<std::size_t>(t)]);
    for (int i = 0; i < ub && i < static_cast<int>(hyp.size()); ++i) {
      if (!F.e.at(t, i).ok) continue;
      const double phi = p * hyp[static_cast<std::size_t>(i)];
      const double err = std::fabs(wrap(std::arg(F.e.at(t, i).g) - phi));
      worst = std::max(worst, err / fp32_drift_bound(F.c, std::fabs(phi)));
      ++used;
    }
  }
  return used > 0 ? worst : std::numeric_limits<double>::infinity();
}

// The claimed dynamic NTK length that gives base b (HF's dynamic rule solved for the length).
double dynamic_length(const frame& F, double b) {
  const rope_config& cl = F.c.claimed;
  const double dd = static_cast<double>(F.e.P.rd), s = cl.factor, L = static_cast<double>(cl.max_position_embeddings);
  return L * (std::pow(b / cl.base, (dd - 2) / dd) + s - 1) / s;
}

// Under a dynamic NTK claim at a length past max_position_embeddings, what a fitted rope_theta b means: the
// effective base it gives at this length, the claim's, and the length whose dynamic base that is (HF's
// _compute_dynamic_ntk_parameters scales every base by one factor at a given length); "" under any other claim.
// A key cached under an earlier, shorter call's base reads here as rope_theta below the claim's.
std::string dynamic_effective_base(const frame& F, double b) {
  const rope_config& cl = F.c.claimed;
  const double L = static_cast<double>(cl.max_position_embeddings), n = static_cast<double>(F.c.seq_len);
  if (cl.scaling != scaling_kind::dynamic_ntk || !(n > L) || !(L > 0)) return {};
  const double dd = static_cast<double>(F.e.P.rd), s = cl.factor;
  const double scale = std::pow(s * n / L - (s - 1), dd / (dd - 2));
  const double eff = b * scale, len = dynamic_length(F, eff);
  const std::string whose = len < L + 0.5 ? fmt("rope_theta unscaled, the base of a sequence of at most %lld tokens",
                                               static_cast<long long>(cl.max_position_embeddings))
                                           : fmt("the dynamic base of a sequence of ~%.0f tokens", len);
  return fmt(" (under the claim's dynamic NTK at length %lld that is an effective base %.7g where the claim's is %.7g: %s)",
             static_cast<long long>(F.c.seq_len), eff, cl.base * scale, whose.c_str());
}

// Scan bases 10^2..10^9 (the claimed scaling kept), refine the best, accept it when its residual is
// small and no base more than 1% away comes within 3x of it.
bool scan_base(const frame& F) {
  const rope_config& claimed = F.c.claimed;
  const int ub = F.e.bands();
  if (ub < 4 || F.sample.empty()) return false;
  auto thetas_for = [&](double b) {
    rope_config hc = F.e.cfg;
    hc.base = b;
    try {
      return compute_frequencies<double>(hc, F.c.seq_len).inv_freq;
    } catch (const std::exception&) {
      return std::vector<double>{};
    }
  };
  std::vector<std::pair<double, double>> grid;  // (base, residual)
  for (int k = 0; k <= 2100; ++k) {
    const double b = std::pow(10.0, 2.0 + 7.0 * k / 2100.0);
    grid.emplace_back(b, wrapped_residual(F, thetas_for(b)));
  }
  auto best = std::min_element(grid.begin(), grid.end(), [](auto& l, auto& r) { return l.second < r.second; });
  double b0 = best->first, r0 = best->second;
  for (double step = 1e-3; step >= 1e-7; step /= 10)  // local refinement in log(base)
    for (bool moved = true; moved;) {
      moved = false;
      for (double f : {1 + step, 1 / (1 + step)}) {
        const double rr = wrapped_residual(F, thetas_for(b0 * f));
        if (rr < r0) b0 *= f, r0 = rr, moved = true;
      }
    }
  double rival = std::numeric_limits<double>::infinity();
  for (const auto& [b, rr] : grid)
    if (std::fabs(std::log(b / b0)) > 0.01) rival = std::min(rival, rr);
  if (!(r0 < 0.05 && rival > 3 * r0 + 0.02)) return false;
  double shown = b0;
  const double mag = std::pow(10.0, std::floor(std::log10(b0)) - 2);
  if (wrapped_residual(F, thetas_for(std::round(b0 / mag) * mag)) <= r0 + 0.01) shown = std::round(b0 / mag) * mag;
  if (std::fabs(shown / claimed.base - 1) < 1e-6) return false;
  if (claimed.scaling == scaling_kind::dynamic_ntk && b0 > claimed.base * (1 + 1e-4)) {
    add(F.c.v, classes::dynamic_ntk_not_reset,
        fmt("dynamic NTK was not reset: scanning bases against the wrapped angles finds base %.6g (median "
            "residual %.2g rad, no base 1%% away within %.2g), the dynamic base of a sequence of ~%.0f tokens, "
            "but this sequence is %lld tokens long",
            b0, r0, rival, dynamic_length(F, b0), static_cast<long long>(F.c.seq_len)),
        0.85);
    return true;
  }
  add(F.c.v, classes::base_wrong,
      fmt("base is %.10g not %.10g: scanning bases 1e2..1e9 against the wrapped angles of %zu tokens x %d "
          "bands, base %.6g leaves a median residual of %.2g rad and no base 1%% or more away comes within "
          "%.2g rad%s",
          shown, claimed.base, F.sample.size(), ub, b0, r0, rival, dynamic_effective_base(F, b0).c_str()),
      0.85);
  return true;
}

// Discrete hypotheses against the wrapped angles (no unwrapping needed): theta over head_dim,
// inv_freq on the bf16/fp16 grid, scaling missing / of another type / with another factor.
// Accepted when the best leaves < 0.05 rad and the claim leaves 3x that plus 0.02 rad, or when it
// alone puts every angle within the fp32 drift bound and the claim does not (worst_drift_ratio).
bool scan_hypotheses(const frame& F) {
  const rope_config& claimed = F.c.claimed;
  const int ub = F.e.bands();
  if (F.sample.empty() || ub < 2) return false;
  struct hyp {
    std::string cls, what;
    std::vector<double> th;
  };
  std::vector<hyp> hs;
  auto frequencies_of = [&](rope_config hc) -> std::vector<double> {
    try {
      validate(hc);
      auto t = compute_frequencies<double>(hc, F.c.seq_len).inv_freq;
      t.resize(static_cast<std::size_t>(ub));
      return t;
    } catch (const std::exception&) {
      return {};
    }
  };
  if (claimed.rotary_dim < F.c.d.head_dim && F.e.P.rd == claimed.rotary_dim) {
    rope_config hc = F.e.cfg;
    hc.rotary_dim = F.c.d.head_dim;
    hs.push_back({classes::rotary_dim_wrong,
                  fmt("frequencies follow base^(-2i/%d) (head_dim) instead of base^(-2i/%d) (rotary_dim)",
                      F.c.d.head_dim, claimed.rotary_dim),
                  frequencies_of(hc)});
  }
  for (int digits : {8, 11}) {
    std::vector<double> g(F.e.th.size());
    for (std::size_t i = 0; i < F.e.th.size(); ++i) g[i] = round_to_digits(round_to_digits(F.e.th[i], 24), digits);
    hs.push_back({classes::inv_freq_low_precision, fmt("inv_freq is held in %s", grid_name(digits)), g});
  }
  if (claimed.scaling != scaling_kind::none) {
    rope_config hc = with_scaling(F.e.cfg, scaling_kind::none);
    hs.push_back({classes::scaling_wrong, fmt("no scaling is applied although the claim has %s scaling with factor %g",
                                       std::string(to_string(claimed.scaling)).c_str(), claimed.factor),
                  frequencies_of(hc)});
    for (double f : kFactors) {
      if (f == claimed.factor) continue;
      hc = F.e.cfg;
      hc.factor = f;
      hs.push_back({classes::scaling_wrong, fmt("%s scaling with factor %g, not the claimed %g",
                                         std::string(to_string(claimed.scaling)).c_str(), f, claimed.factor),
                    frequencies_of(hc)});
    }
  }
  const double r_claim = wrapped_residual(F, F.e.th);
  const hyp* best = nullptr;
  double r_best = std::numeric_limits<double>::infinity();
  for (const auto& h : hs)
    if (!h.th.empty())
      if (const double r = wrapped_residual(F, h.th); r < r_best) r_best = r, best = &h;
  if (best && r_best < 0.05 && r_claim > 3 * r_best + 0.02) {
    add(F.c.v, best->cls,
        fmt("%s: against the wrapped angles of %zu tokens x %d bands that leaves a median residual of %.2g rad, "
            "the claim %.2g rad",
            best->what.c_str(), F.sample.size(), ub, r_best, r_claim),
        0.85);
    return true;
  }
  // A median residual of a few hundredths of a radian is too little to tell apart from noise in
  // general, but not when the outputs are precise enough: a hypothesis that puts every angle within
  // the fp32 drift bound (what a careful fp32 implementation of it may be off by) where the claim
  // does not, and that no hypothesis of another class matches as well, is named. One decode step
  // (a single position) with inv_freq in bf16 is off by 0.01 rad at position 300: seen this way only.
  std::vector<std::pair<double, const hyp*>> fits;  // (largest error / drift bound, hypothesis)
  for (const auto& h : hs)
    if (!h.th.empty()) fits.emplace_back(worst_drift_ratio(F, h.th), &h);
  std::sort(fits.begin(), fits.end(), [](const auto& l, const auto& r) { return l.first < r.first; });
  const double claim_ratio = worst_drift_ratio(F, F.e.th);
  if (fits.empty() || !within_fp32_drift(fits[0].first, 1) || within_fp32_drift(claim_ratio, 1)) return false;
  for (std::size_t k = 1; k < fits.size(); ++k)
    if (within_fp32_drift(fits[k].first, 1) && fits[k].second->cls != fits[0].second->cls) return false;
  add(F.c.v, fits[0].second->cls,
      fmt("%s: every angle of %zu tokens x %d bands is within the fp32 drift bound of it (largest error/bound "
          "%.3g), the claim's reaches %.3g times that bound",
          fits[0].second->what.c_str(), F.sample.size(), ub, fits[0].first, claim_ratio),
      0.75);
  return true;
}

struct band_fits {
  std::vector<double> fit, rel, noise;  // per band: slope, slope/theta - 1, slope's relative noise
  double max_rel = 0, max_line_rms = 0;
  int max_rel_band = 0;
};

band_fits fit_lines(const frame& F, const std::vector<int>& order) {
  const dump& d = F.c.d;
  const int ub = F.e.bands();
  band_fits B;
  B.fit.resize(static_cast<std::size_t>(ub)), B.rel.resize(static_cast<std::size_t>(ub)), B.noise.resize(static_cast<std::size_t>(ub));
  const double p_span = std::max(1.0, static_cast<double>(F.c.pmax - F.c.pmin));
  for (int i = 0; i < ub; ++i) {
    const auto b = static_cast<std::size_t>(i);
    std::vector<std::pair<double, double>> pts;
    for (int t : order)
      if (F.e.at(t, i).ok) pts.emplace_back(static_cast<double>(d.positions[static_cast<std::size_t>(t)]), std::arg(F.e.at(t, i).g));
    const line L = fit_band(pts, F.e.th[b]);
    B.fit[b] = L.slope;
    B.rel[b] = L.slope / F.e.th[b] - 1;
    B.max_line_rms = std::max(B.max_line_rms, L.rms);
    // Relative uncertainty of the fitted slope: the angle noise (the line's rms residual: the
    // outputs' own rounding, large in bf16) over the angle range the band covers.
    B.noise[b] = 3 * L.rms / (p_span * F.e.th[b]);
    if (std::fabs(B.rel[b]) > B.max_rel) B.max_rel = std::fabs(B.rel[b]), B.max_rel_band = i;
  }
  return B;
}

// Low-precision inv_freq: theta'_i = grid(fp32 theta_i). A band is informative when its grid offset
// stands out of its fit noise; the class needs 90% of the informative bands (at least 4, or all when
// fewer exist) to sit on the grid and every band to agree within its noise.
bool inv_freq_grid(const frame& F, const band_fits& B) {
  const int ub = F.e.bands();
  for (int digits : {8, 11}) {
    int match = 0, informative = 0, consistent = 0;
    for (int i = 0; i < ub; ++i) {
      const auto b = static_cast<std::size_t>(i);
      const double t32 = round_to_digits(F.e.th[b], 24);
      const double rg = round_to_digits(t32, digits) / F.e.th[b] - 1;
      const double slack = 2e-6 + 0.02 * std::fabs(rg) + B.noise[b];
      const bool on = std::fabs(B.rel[b] - rg) <= slack;
      if (on) ++consistent;
      if (std::fabs(rg) > 1e-5 && std::fabs(rg) > 2 * B.noise[b]) {
        ++informative;
        if (on) ++match;
      }
    }
    if (informative >= std::min(4, ub) && match * 10 >= informative * 9 && consistent * 10 >= ub * 9) {
      add(F.c.v, classes::inv_freq_low_precision,
          fmt("inv_freq is held in %s: fitted frequencies equal %s(fp32 theta_i) in %d of %d bands whose grid "
              "offset exceeds the fit's noise (%d of %d bands agree within it; relative frequency error up to "
              "%.3g, band %d; at position %lld that is %.3g tokens)",
              grid_name(digits), grid_name(digits), match, informative, consistent, ub, B.max_rel, B.max_rel_band,
              static_cast<long long>(F.c.pmax), B.max_rel * static_cast<double>(F.c.pmax)),
          0.88);
      return true;
    }
  }
  return false;
}

// Largest relative disagreement of a hypothesis with the fitted frequencies over the precisely
// fitted bands (frequency_mismatch, pass_scaling_fit.cpp: the one measure every hypothesis is judged by).
double mismatch(const band_fits& B, int ub, const std::vector<double>& hyp) {
  std::vector<double> h(hyp.begin(), hyp.begin() + std::min<std::ptrdiff_t>(ub, static_cast<std::ptrdiff_t>(hyp.size())));
  return frequency_mismatch(B.fit, B.noise, h);
}

// The bands mismatch() judges on.
int precise_bands(const band_fits& B, int ub) {
  int n = 0;
  for (int i = 0; i < ub; ++i) n += B.noise[static_cast<std::size_t>(i)] < 5e-4 ? 1 : 0;
  return n;
}

// Scaling: missing, of another type, or with another factor (the claimed base kept). Returns the
// smallest mismatch and its label.
std::pair<double, std::string> best_scaling(const frame& F, const band_fits& B) {
  const rope_config& claimed = F.c.claimed;
  double mis_s = std::numeric_limits<double>::infinity();
  std::string found;
  auto consider = [&](rope_config hc, const std::string& label) {
    try {
      validate(hc);
      const double m = mismatch(B, F.e.bands(), thetas(reference::rope_reference(hc, F.c.seq_len)));
      if (m < mis_s) mis_s = m, found = label;
    } catch (const std::exception&) {
      // a hypothesis the rules cannot evaluate (e.g. llama3 without an original length)
    }
  };
  if (claimed.scaling != scaling_kind::none) {
    const rope_config none = with_scaling(F.e.cfg, scaling_kind::none);
    consider(none, "no scaling at all (plain base^(-2i/d))");
  }
  for (scaling_kind k : {scaling_kind::linear, scaling_kind::ntk, scaling_kind::yarn, scaling_kind::llama3}) {
    if (k == claimed.scaling) continue;
    rope_config hc = with_scaling(F.e.cfg, k);
    if (hc.factor <= 1) continue;
    if (hc.original_max_position_embeddings <= 0)
      hc.original_max_position_embeddings =
          static_cast<std::int64_t>(std::llround(static_cast<double>(hc.max_position_embeddings) / hc.factor));
    consider(hc, fmt("%s scaling with factor %g", std::string(to_string(k)).c_str(), hc.factor));
  }
  if (claimed.scaling != scaling_kind::none)
    for (double f : kFactors) {
      if (f == claimed.factor) continue;
      rope_config hc = F.e.cfg;
      hc.factor = f;
      consider(hc, fmt("%s scaling with factor %g", std::string(to_string(claimed.scaling)).c_str(), f));
    }
  return {mis_s, found};
}

// The fitted frequencies against the named schedules (scaling, head_dim, base); the wrapped-angle
// scans when none fits; unexplained when nothing does (only if `may_leave_unexplained`). True when a
// finding was added.
bool named_schedule(const frame& F, const band_fits& B, bool may_leave_unexplained) {
  const context& c = F.c;
  const rope_config& claimed = c.claimed;
  const int ub = F.e.bands();
  double mis_hd = std::numeric_limits<double>::infinity();
  if (claimed.rotary_dim < c.d.head_dim && F.e.P.rd == claimed.rotary_dim) {
    rope_config hdc = claimed;
    hdc.rotary_dim = c.d.head_dim;
    mis_hd = mismatch(B, ub, thetas(reference::rope_reference(hdc)));
  }
  const double ratio = B.fit[1] / B.fit[0];
  const double b_est = std::pow(ratio, -static_cast<double>(F.e.P.rd) / 2);
  double mis_b = std::numeric_limits<double>::infinity(), b_show = b_est;
  if (std::isfinite(b_est) && b_est > 1) {
    const double mag = std::pow(10.0, std::floor(std::log10(b_est)) - 2);
    if (std::fabs(std::round(b_est / mag) * mag / b_est - 1) < 1e-4) b_show = std::round(b_est / mag) * mag;
    rope_config bc = F.e.cfg;
    bc.base = b_show;
    mis_b = mismatch(B, ub, thetas(reference::rope_reference(bc)));
  }
  const auto [mis_s, scaling_found] = best_scaling(F, B);
  const int np = precise_bands(B, ub);
  const std::string agree = np == ub ? fmt("all %d bands", ub) : fmt("all %d bands fitted precisely enough to judge (of %d)", np, ub);
  if (mis_s < 1e-3 && mis_s < mis_b) {
    add(c.v, classes::scaling_wrong,
        fmt("the frequencies follow %s, not the claimed %s scaling with factor %g: %s agree to %.2g "
            "(the claimed schedule is off by up to %.3g relative, band %d)",
            scaling_found.c_str(), std::string(to_string(claimed.scaling)).c_str(), claimed.factor, agree.c_str(), mis_s,
            B.max_rel, B.max_rel_band),
        0.96);
  } else if (mis_hd < 1e-3) {
    add(c.v, classes::rotary_dim_wrong,
        fmt("frequencies follow base^(-2i/%d) (head_dim) instead of base^(-2i/%d) (rotary_dim): %s agree "
            "to %.2g, the claimed schedule is off by up to %.3g relative (band %d)",
            c.d.head_dim, claimed.rotary_dim, agree.c_str(), mis_hd, B.max_rel, B.max_rel_band),
        0.93);
  } else if (mis_b < 1e-3 && claimed.scaling == scaling_kind::dynamic_ntk && b_est > claimed.base * (1 + 1e-4)) {
    // Dynamic NTK raises the base with the sequence length and must fall back when a shorter
    // sequence follows; frequencies of a larger base than this sequence's are a stale update.
    add(c.v, classes::dynamic_ntk_not_reset,
        fmt("dynamic NTK was not reset: the frequencies follow base %.6g (fitted, %s agree to %.2g), "
            "the dynamic base of a sequence of ~%.0f tokens, but this sequence is %lld tokens long and needs "
            "base %.6g (max_position_embeddings %lld, factor %g)",
            b_est, agree.c_str(), mis_b, dynamic_length(F, b_est), static_cast<long long>(c.seq_len),
            static_cast<double>(ropecheck::detail::ntk_base_in<double>(claimed, c.seq_len)),
            static_cast<long long>(claimed.max_position_embeddings), claimed.factor),
        0.95);
  } else if (mis_b < 1e-3 && std::fabs(b_show / claimed.base - 1) >= 1e-6) {
    add(c.v, classes::base_wrong,
        fmt("base is %.10g not %.10g: fitted theta_1/theta_0 = %.6g gives base %.6g, and with it %s "
            "agree to %.2g (the claimed base is off by up to %.3g relative in band %d)",
            b_show, claimed.base, ratio, b_est, agree.c_str(), mis_b, B.max_rel, B.max_rel_band),
        0.95);
  } else if (pass_scaling_fit(c, F.e, fitted_frequencies{B.fit, B.noise, B.max_rel, B.max_rel_band})) {
    // the claimed rule's shape with other parameters (pass_scaling_fit.cpp): named there
  } else if (!scan_hypotheses(F) && !scan_base(F)) {
    // No schedule fits (a base equal to the claimed one fitted to the precise bands is none either):
    // not base_wrong, whose model is one base for every band.
    if (!may_leave_unexplained) return false;
    residual_unexplained(c, F.e,
                         fmt("the line fits differ from the claimed frequencies by up to %.3g relative (band %d, "
                             "line-fit residual up to %.2g rad) and no other base (best fit %.6g), scaling rule or "
                             "scanned base fits every band",
                             B.max_rel, B.max_rel_band, B.max_line_rms, b_est));
  }
  return true;
}

}  // namespace

frequency_evidence pass_frequencies(const context& c, const explanation& e, frequency_mode mode) {
  const bool may_leave_unexplained = mode == frequency_mode::name_or_unexplained;
  const dump& d = c.d;
  const int ub = e.bands();
  const std::vector<int> order = by_position(d);
  int distinct_positions = 0;
  for (std::size_t k = 0; k < order.size(); ++k)
    if (k == 0 || d.positions[static_cast<std::size_t>(order[k])] != d.positions[static_cast<std::size_t>(order[k - 1])])
      ++distinct_positions;
  const bool few_positions = distinct_positions < 3;
  frame F{c, e, {}};
  for (int k = 0; k < d.tokens; k += std::max(1, d.tokens / 512)) F.sample.push_back(k);

  const band_fits B = fit_lines(F, order);
  frequency_evidence out{false, B.max_rel, B.max_rel_band};
  if (!few_positions && B.max_rel > 1e-5 && B.max_rel < 0.05 && inv_freq_grid(F, B)) {
    out.named = true;
  } else if (!few_positions && B.max_rel > 1e-3 && ub >= 2 && B.fit[0] > 0 && B.fit[1] > 0) {
    out.named = named_schedule(F, B, may_leave_unexplained);
  } else if (few_positions) {
    out.named = scan_hypotheses(F) || scan_base(F);
    if (!out.named && may_leave_unexplained)
      add(c.v, classes::unexplained,
          fmt("only %d distinct positions: too few to fit frequencies, and no single base explains the angles; "
              "dump positions 0..63 and some large ones for a diagnosis",
              distinct_positions),
          0.2);
    out.named = out.named || may_leave_unexplained;
  }
  return out;
}

}  // namespace ropecheck::judge::detail
