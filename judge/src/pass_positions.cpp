// judge/src/pass_positions.cpp — the position each token acts at, with the claimed frequencies.
//
// Per token, the position p' that best explains all bands' angles (windings of the slowest band
// enumerated, refined band by band, slow to fast, every angle difference reduced to (-pi, pi]).
// When every token is explained (rms residual < 0.1 rad):
//   p' = r p, not integers, for one r                  -> scaling_wrong (a linear factor)
//   all p' equal                                       -> positions_constant
//   p' - p the same k                                  -> positions_offset by k
//   p' = bf16(p) / fp16(p) at every token              -> positions_low_precision
//   some tokens elsewhere, by no common offset or grid -> positions_wrong (named, with the pattern)
// Only tokens whose position fp32 can resolve take part: where a careful fp32 implementation's
// allowed angle error (the allowance's angle term, (k_freq + k_pos + 1) u_f32 |p theta_i|) is above
// 0.05 rad in rms over the bands, half the 0.1 rad acceptance (positions near 2^24, |p theta_0| ~
// 1.7e7 rad: fp32 angles there are legitimately off by radians), a token neither confirms nor
// refutes a position hypothesis and is left out (the count is said).
#include <algorithm>
#include <cmath>
#include <optional>

#include "ropecheck/judge/classes.hpp"
#include "passes.hpp"

namespace ropecheck::judge::detail {
namespace {

double pos_of(const dump& d, int t) { return static_cast<double>(d.positions[static_cast<std::size_t>(t)]); }

// Every frequency scaled by one ratio r is indistinguishable from every position scaled by r:
// implied positions r p, not integers. That is a linear (position-interpolation) factor when it
// moves the largest position by at least half a token (|r - 1| max|p| >= 0.5, below that r p and p
// are the same position) and at least two tokens act at non-integer positions (off by > 0.1).
bool linear_factor(const context& c, const position_evidence& pe) {
  const dump& d = c.d;
  const auto& imp = pe.imp;
  std::vector<double> ratios;
  for (int t = 0; t < d.tokens; ++t)
    if (const auto p = d.positions[static_cast<std::size_t>(t)]; pe.used(t) && std::llabs(p) >= 8)
      ratios.push_back(imp[static_cast<std::size_t>(t)].p / static_cast<double>(p));
  const double r = median(ratios);
  bool uniform = ratios.size() >= 4 && std::isfinite(r) && std::fabs(r - 1) * c.pabs >= 0.5;
  int off_integer = 0;
  for (int t = 0; t < d.tokens && uniform; ++t) {
    if (!pe.used(t)) continue;
    const double p = pos_of(d, t), q = imp[static_cast<std::size_t>(t)].p;
    uniform = std::fabs(q - r * p) < 0.05 + 1e-6 * std::fabs(p);
    if (std::fabs(q - std::round(q)) > 0.1) ++off_integer;
  }
  if (!(uniform && off_integer >= 2)) return false;
  const rope_config& claimed = c.claimed;
  std::string what;
  if (claimed.scaling == scaling_kind::linear)
    what = fmt("linear scaling with factor %.6g, not the claimed %g", claimed.factor / r, claimed.factor);
  else if (claimed.scaling == scaling_kind::none)
    what = fmt("linear scaling (position interpolation) with factor %.6g, though the claim has no scaling", 1 / r);
  else
    what = fmt("the claimed %s schedule times %.6g in every band", std::string(to_string(claimed.scaling)).c_str(), r);
  add(c.v, classes::scaling_wrong,
      fmt("every frequency is %.6g times the claimed one (implied positions are %.6g p, not integers, at %d of %d "
          "tokens): %s",
          r, r, off_integer, pe.resolved, what.c_str()),
      0.96);
  return true;
}

// Every shifted token at grid(p) for a bf16 / fp16 grid.
bool low_precision(const context& c, const position_evidence& pe, int shifted, int first_t, int big_t) {
  const dump& d = c.d;
  const auto& imp = pe.imp;
  for (int digits : {8, 11}) {
    bool all = true;
    for (int t = 0; t < d.tokens && all; ++t)
      all = !pe.used(t) || std::fabs(imp[static_cast<std::size_t>(t)].p - round_to_digits(pos_of(d, t), digits)) < 0.5;
    if (!all) continue;
    const double pb = pos_of(d, big_t);
    const double qb = imp[static_cast<std::size_t>(big_t)].p;
    add(c.v, classes::positions_low_precision,
        fmt("positions are held in %s (%d significant bits): %d of %d tokens act at %s(p), e.g. %lld -> %.0f "
            "(%+.0f tokens); the first shifted position is %lld -> %.0f%s",
            grid_name(digits), digits, shifted, pe.resolved, grid_name(digits), static_cast<long long>(pb), qb, qb - pb,
            static_cast<long long>(d.positions[static_cast<std::size_t>(first_t)]),
            imp[static_cast<std::size_t>(first_t)].p, pe.left_out().c_str()),
        0.9);
    return true;
  }
  return false;
}

// Some tokens act at other positions, by no common offset or grid: a KV cache writing a few tokens
// at the wrong index, decode restarting at 0. Name the tokens and the pattern.
void some_tokens_wrong(const context& c, const position_evidence& pe, const std::vector<double>& dp, int shifted) {
  const dump& d = c.d;
  const auto& imp = pe.imp;
  int at_zero = 0, shown = 0;
  std::string examples;
  for (int t = 0; t < d.tokens; ++t) {
    if (std::fabs(dp[static_cast<std::size_t>(t)]) < 0.5) continue;
    if (std::fabs(imp[static_cast<std::size_t>(t)].p) < 0.5) ++at_zero;
    if (shown < 4) {
      examples += fmt("%s%lld -> %.0f", shown ? ", " : "", static_cast<long long>(d.positions[static_cast<std::size_t>(t)]),
                      imp[static_cast<std::size_t>(t)].p);
      ++shown;
    }
  }
  // The wrong tokens' common offset, and whether they are exactly the tokens from some position on
  // (a KV cache whose decode steps are off while the prefill is right).
  std::optional<long long> common;
  bool same = true;
  std::int64_t first_wrong = std::numeric_limits<std::int64_t>::max(), last_right = std::numeric_limits<std::int64_t>::min();
  for (int t = 0; t < d.tokens; ++t) {
    const auto tt = static_cast<std::size_t>(t);
    if (!pe.used(t)) continue;
    if (std::fabs(dp[tt]) < 0.5) {
      last_right = std::max(last_right, d.positions[tt]);
      continue;
    }
    first_wrong = std::min(first_wrong, d.positions[tt]);
    const long long k = std::llround(dp[tt]);
    if (!common) common = k;
    else if (*common != k) same = false;
  }
  std::string pattern;
  if (at_zero == shifted) pattern = ": every wrong one at position 0, as when decoding restarts at 0";
  else if (same && common && last_right < first_wrong)
    pattern = fmt(": every token from position %lld on is offset by %+lld and every one before is right, as "
                  "when a KV cache's decode positions are off by %+lld after the prefill",
                  static_cast<long long>(first_wrong), *common, *common);
  else if (same && common)
    pattern = fmt(": all of them by %+lld", *common);
  add(c.v, classes::positions_wrong,
      fmt("%d of %d tokens are rotated at other positions than claimed (claimed -> acting: %s%s)%s; the others "
          "are right (angle fit residual <= %.2g rad%s)",
          shifted, pe.resolved, examples.c_str(), shifted > shown ? ", ..." : "", pattern.c_str(), pe.worst_fit,
          pe.left_out().c_str()),
      0.9);
}

// Constant, offset, low-precision or some wrong positions; false when every token is right.
bool position_class(const context& c, const position_evidence& pe) {
  const dump& d = c.d;
  const auto& imp = pe.imp;
  double lo = std::numeric_limits<double>::infinity(), hi = -lo;
  std::vector<double> dp(static_cast<std::size_t>(d.tokens), 0.0), q, dq;  // dp: 0 for the tokens left out
  for (int t = 0; t < d.tokens; ++t) {
    if (!pe.used(t)) continue;
    const double p = imp[static_cast<std::size_t>(t)].p;
    lo = std::min(lo, p), hi = std::max(hi, p);
    dp[static_cast<std::size_t>(t)] = p - pos_of(d, t);
    dq.push_back(dp[static_cast<std::size_t>(t)]);
    q.push_back(p);
  }
  const double k = median(dq);
  double kdev = 0;
  for (double x : dq) kdev = std::max(kdev, std::fabs(x - k));
  if (c.pmax - c.pmin >= 1 && hi - lo < 0.5) {
    add(c.v, classes::positions_constant,
        fmt("every token is rotated as position %.0f (implied positions span %.2g tokens) although the claimed "
            "positions run %lld..%lld (angle fit residual <= %.2g rad%s)",
            std::round(median(q)), hi - lo, static_cast<long long>(c.pmin), static_cast<long long>(c.pmax), pe.worst_fit,
            pe.left_out().c_str()),
        0.95);
    return true;
  }
  // A position class substitutes integer positions: a token acting at a non-integer position
  // (off an integer by > 0.1 token; the implied positions are good to ~0.01 token even in bf16) is
  // no such class (a frequency error looks like that: r p).
  if (std::fabs(k - std::round(k)) > 0.1) return false;
  if (std::fabs(k) >= 0.5 && kdev < 0.5) {
    add(c.v, classes::positions_offset,
        fmt("positions are offset by %+lld: implied minus claimed position is %.4g at all %d tokens (max deviation "
            "%.2g tokens, angle fit residual <= %.2g rad%s)",
            static_cast<long long>(std::llround(k)), k, pe.resolved, kdev, pe.worst_fit, pe.left_out().c_str()),
        0.95);
    return true;
  }
  int shifted = 0, first_t = -1, big_t = -1;
  for (int t = 0; t < d.tokens; ++t)
    if (std::fabs(dp[static_cast<std::size_t>(t)]) >= 0.5) {
      ++shifted;
      if (first_t < 0 || d.positions[static_cast<std::size_t>(t)] < d.positions[static_cast<std::size_t>(first_t)]) first_t = t;
      if (big_t < 0 || std::fabs(dp[static_cast<std::size_t>(t)]) > std::fabs(dp[static_cast<std::size_t>(big_t)])) big_t = t;
    }
  if (shifted == 0) return false;
  for (int t = 0; t < d.tokens; ++t)
    if (pe.used(t) && std::fabs(dp[static_cast<std::size_t>(t)]) >= 0.5 &&
        std::fabs(imp[static_cast<std::size_t>(t)].p - std::round(imp[static_cast<std::size_t>(t)].p)) > 0.1)
      return false;
  if (low_precision(c, pe, shifted, first_t, big_t)) return true;
  some_tokens_wrong(c, pe, dp, shifted);
  return true;
}

}  // namespace

// Written as !(x > 0.05), the comparison the pass always made (a NaN resolves, as before).
bool fp32_resolves_position(double rms_allowed_error) { return !(rms_allowed_error > 0.05); }

position_evidence pass_positions(const context& c, const explanation& e) {
  const dump& d = c.d;
  const int ub = e.bands();
  position_evidence pe;
  pe.imp.resize(static_cast<std::size_t>(d.tokens));
  pe.resolvable.assign(static_cast<std::size_t>(d.tokens), 1);
  const judge::allowance fp32(e.cfg, "float32", reference_kind::exact, false);
  std::vector<double> a(static_cast<std::size_t>(ub)), w(static_cast<std::size_t>(ub));
  for (int t = 0; t < d.tokens; ++t) {
    const std::int64_t p = d.positions[static_cast<std::size_t>(t)];
    double allowed2 = 0;
    for (int i = 0; i < ub; ++i) {
      a[static_cast<std::size_t>(i)] = std::arg(e.at(t, i).g);
      w[static_cast<std::size_t>(i)] = e.at(t, i).ok ? 1.0 : 0.0;
      const double term = fp32.angle_term(p, i, std::fabs(static_cast<double>(p)) * e.th[static_cast<std::size_t>(i)]);
      allowed2 += term * term;
    }
    if (!fp32_resolves_position(std::sqrt(allowed2 / std::max(ub, 1)))) {
      pe.resolvable[static_cast<std::size_t>(t)] = 0;
      continue;
    }
    ++pe.resolved;
    pe.imp[static_cast<std::size_t>(t)] = implied_position(a, w, e.th, 2 * c.pabs + 1000);
    pe.worst_fit = std::max(pe.worst_fit, pe.imp[static_cast<std::size_t>(t)].resid);
  }
  pe.explain = pe.resolved > 0 && pe.worst_fit < 0.1;
  if (!pe.explain) return pe;
  pe.named = linear_factor(c, pe) || position_class(c, pe);
  return pe;
}

}  // namespace ropecheck::judge::detail
