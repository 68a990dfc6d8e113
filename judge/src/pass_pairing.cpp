// judge/src/pass_pairing.cpp — which (layout, rotary dim) rotates rigidly across heads.
//
// Candidates: the claimed layout and the other one over the claimed rotary dim, and over head_dim.
// Score: with >= 2 heads, the median rigid-fit residual (one rotation for every head); with one head
// every pairing fits exactly, so the score is how far the pair magnitude ratios |g| spread around
// their median (a rotation keeps them equal: af for every pair; a wrong pairing mixes coordinates of
// different pairs and spreads them), as a median relative deviation. Over the claimed rotary dim, a
// candidate 10x better than the claimed one (whose own score is above 0.03) is the pairing in use.
// A pairing over more coordinates than the claimed rotary dim is evidence only when the extra
// coordinates are not copied unchanged: copied ones fit a "rotation" by angle 0 over any pairing.
// So the head_dim candidates are considered only when most (more than half) of the values past the
// claimed rotary dim changed; one of them is then the pairing in use when it fits (score <= 0.03) or
// is 10x better than the best over the claimed rotary dim, since it explains every coordinate.
// Changed pass-through values (more than 10% of them) that no wider pairing explains are named by
// pass_through_check.
#include <algorithm>
#include <cmath>

#include "ropecheck/judge/classes.hpp"
#include "passes.hpp"

namespace ropecheck::judge::detail {
namespace {

void score(const dump& d, pairing& c) {
  std::vector<double> r, mags;
  const int b = c.bands();
  for (int t = 0; t < d.tokens; ++t)
    if (d.positions[static_cast<std::size_t>(t)] != 0)
      for (int i = 0; i < b; ++i)
        if (const cell& e = c.at(t, i); e.ok) {
          r.push_back(std::sqrt(e.resid));
          mags.push_back(std::abs(e.g));
        }
  if (d.heads >= 2) {
    if (!r.empty()) c.score = median(r);
  } else if (!mags.empty()) {
    const double m = median(mags);
    std::vector<double> dev;
    for (double x : mags) dev.push_back(std::fabs(x - m));
    c.score = m > 0 ? median(dev) / m : std::numeric_limits<double>::infinity();
  }
}

std::string pairs_of(layout l) { return l == layout::interleaved ? "(2i, 2i+1)" : "(i, i+r/2)"; }

// Pass-through coordinates (claimed rotary_dim..head_dim-1) changed by more than u_T relative (a
// copy, or a 16-bit store of one, changes nothing).
struct pass_through {
  std::size_t changed = 0, total = 0;
  [[nodiscard]] bool copied() const { return changed <= total / 10; }
  [[nodiscard]] bool mostly_changed() const { return changed * 2 > total; }
};

pass_through count_pass_through(const context& c) {
  const dump& d = c.d;
  const auto hd = static_cast<std::size_t>(d.head_dim);
  const std::size_t n = static_cast<std::size_t>(d.tokens) * static_cast<std::size_t>(d.heads) * hd;
  pass_through pt;
  for (std::size_t o = 0; o < n; o += hd)
    for (std::size_t j = static_cast<std::size_t>(c.claimed.rotary_dim); j < hd; ++j, ++pt.total)
      if (std::fabs(d.y[o + j] - d.x[o + j]) > c.uT * std::fabs(d.x[o + j])) ++pt.changed;
  return pt;
}

// Pass-through coordinates must be copied.
void pass_through_check(const context& c, const pass_through& pt) {
  if (!pt.copied())
    add(c.v, classes::rotary_dim_wrong,
        fmt("coordinates %d..%d should pass through unchanged but %zu of %zu values changed", c.claimed.rotary_dim,
            c.d.head_dim - 1, pt.changed, pt.total),
        0.9);
}

}  // namespace

pairing_choice pass_pairing(const context& c, std::vector<cell> claimed_cells) {
  const dump& d = c.d;
  const rope_config& claimed = c.claimed;
  pairing_choice out;
  auto& cands = out.cands;
  const layout other = claimed.pair_layout == layout::interleaved ? layout::half_split : layout::interleaved;
  const pass_through pt = count_pass_through(c);
  for (layout l : {claimed.pair_layout, other})
    cands.push_back({l, claimed.rotary_dim, l == claimed.pair_layout ? std::move(claimed_cells) : gains(d, l, claimed.rotary_dim)});
  const bool wider = claimed.rotary_dim < d.head_dim && pt.mostly_changed();
  if (wider)
    for (layout l : {claimed.pair_layout, other}) cands.push_back({l, d.head_dim, gains(d, l, d.head_dim)});
  for (auto& p : cands) score(d, p);
  std::size_t& best = out.best;
  if (cands[1].score < cands[0].score / 10 && cands[0].score > 0.03) best = 1;
  if (wider) {
    const std::size_t h = cands[3].score < cands[2].score ? 3 : 2;
    if (cands[h].score <= 0.03 || cands[h].score < cands[best].score / 10) best = h;
  }
  const pairing& P = cands[best];
  if (best != 0) {
    if (P.lay != claimed.pair_layout)
      add(c.v, classes::layout_swapped,
          fmt("pairs are %s (%s), not the claimed %s (%s): %s %.2g, against %.2g for the claimed pairing",
              std::string(to_string(P.lay)).c_str(), pairs_of(P.lay).c_str(),
              std::string(to_string(claimed.pair_layout)).c_str(), pairs_of(claimed.pair_layout).c_str(),
              d.heads >= 2 ? "the same rotation explains every head with median residual"
                           : "every pair keeps its length ratio (one head), median relative spread",
              P.score, cands[0].score),
          0.95);
    if (P.rd != claimed.rotary_dim)
      add(c.v, classes::rotary_dim_wrong,
          fmt("all %d coordinates are rotated (pairs over rotary dim %d, median residual %.2g), not the claimed rotary "
              "dim %d (residual %.2g; %zu of %zu values past it changed)",
              P.rd, P.rd, P.score, claimed.rotary_dim, cands[0].score, pt.changed, pt.total),
          0.93);
  }
  if (P.rd < d.head_dim) pass_through_check(c, pt);
  return out;
}

}  // namespace ropecheck::judge::detail
