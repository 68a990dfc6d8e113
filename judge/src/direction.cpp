// judge/src/direction.cpp — which way the pairs turn. A reversed convention (nanochat:
// transformers models/nanochat/modeling_nanochat.py) turns by R(-p) = R(p)^T. With F = diag(1, -1) on
// each pair, F R(-p) F = R(p): negating the second coordinate of every pair in x and in y maps a
// reversed claim onto the forward one exactly. F is a sign change, so every element keeps its error and
// its allowance (both depend on |x_a| + |x_b| and |y - y*| only), and the diagnosis of the mapped dump
// is the diagnosis of the original (an offset stays an offset, a wrong base a wrong base).
//
// rotation_reversed is named when the dump fails its claim and passes it conjugated: the implementation
// turns the other way (sin's sign flipped, the conjugate used, a reversed rotate_half). Relative-offset and
// shift properties cannot see this (scores still depend on m - n, with its sign reversed); the judge can.
// Covered by tests/judge/judge_test.cpp (Diagnose.ReversedRotationIsNamedWhenTheSubsetMissesTheLargestPosition).
#include "direction.hpp"
#include "ropecheck/judge/classes.hpp"

#include <string>

#include "ropecheck/judge/sentence.hpp"
#include "ropecheck/rope.hpp"

namespace ropecheck::judge::detail {

dump conjugate_pairs(const dump& d, const rope_config& claimed) {
  dump m = d;
  const rope_geometry g = rope_geometry::of(claimed);
  const auto per_token = static_cast<std::size_t>(d.heads) * static_cast<std::size_t>(d.head_dim);
  for (std::size_t t = 0; t < static_cast<std::size_t>(d.tokens); ++t)
    for (std::size_t h = 0; h < static_cast<std::size_t>(d.heads); ++h) {
      const std::size_t off = t * per_token + h * static_cast<std::size_t>(d.head_dim);
      for (int i = 0; i < g.bands(); ++i) {
        const int b = g.pair_of(i).second;
        m.x[off + static_cast<std::size_t>(b)] = -d.x[off + static_cast<std::size_t>(b)];
        m.y[off + static_cast<std::size_t>(b)] = -d.y[off + static_cast<std::size_t>(b)];
      }
    }
  return m;
}

dump_view conjugate_pairs(const dump_view& d, const rope_config& claimed) {
  dump_view m = d;
  const auto hd = static_cast<std::size_t>(d.head_dim);
  if (m.x_sign.empty()) m.x_sign.assign(hd, 1.0);
  if (m.y_sign.empty()) m.y_sign.assign(hd, 1.0);
  const rope_geometry g = rope_geometry::of(claimed);
  for (int i = 0; i < g.bands(); ++i) {
    const auto b = static_cast<std::size_t>(g.pair_of(i).second);
    m.x_sign[b] = -m.x_sign[b];
    m.y_sign[b] = -m.y_sign[b];
  }
  return m;
}

namespace {

finding reversed_finding(const rope_config& claimed, const verdict& other) {
  const bool claim_reversed = claimed.direction == rotation_direction::reversed;
  return {classes::rotation_reversed,
          std::string("the rotation turns the other way: the outputs are R(") + (claim_reversed ? "+" : "-") +
              "p) x where the claim turns by R(" + (claim_reversed ? "-" : "+") + "p) (" +
              (claim_reversed ? "a forward rotate_half where the family rotates in reverse, e.g. nanochat's cat(x2, -x1)"
                              : "sin's sign flipped or the conjugate rotation") +
              "); judged with the opposite direction they pass (worst error/allowance " +
              judge::fmt("%.3g", other.worst_ratio) + "). Scores see m - n reversed",
          0.99};
}

}  // namespace

bool reversed_hypothesis(const judging_frame& f, const dump* subset, const rope_config& stated, verdict& v) {
  // The forward claim on the conjugated dump is the reversed claim on the dump itself.
  if (subset && !judge_in_frame(f, conjugate_pairs(*subset, f.claimed)).pass) return false;
  const verdict alt = judge_in_frame(f, conjugate_pairs(f.full, f.claimed));
  if (!alt.pass) return false;
  v.findings.push_back(reversed_finding(stated, alt));
  return true;
}

}  // namespace ropecheck::judge::detail
