// tools/judge/src/direction.cpp — which way the pairs turn. A reversed convention (nanochat:
// transformers models/nanochat/modeling_nanochat.py) turns by R(-p) = R(p)^T. With F = diag(1, -1) on
// each pair, F R(-p) F = R(p): negating the second coordinate of every pair in x and in y maps a
// reversed claim onto the forward one exactly. F is a sign change, so every element keeps its error and
// its allowance (both depend on |x_a| + |x_b| and |y - y*| only), and the diagnosis of the mapped dump
// is the diagnosis of the original (an offset stays an offset, a wrong base a wrong base).
//
// rotation_reversed is named when the dump fails its claim and passes it conjugated: the implementation
// turns the other way (sin's sign flipped, the conjugate used, a reversed rotate_half). Relative-offset and
// shift properties cannot see this (scores still depend on m - n, with its sign reversed); the judge can.
#include "direction.hpp"

#include "judging.hpp"

#include <string>

#include "ropecheck/judge/sentence.hpp"

namespace ropecheck::audit::detail {

dump conjugate_pairs(const dump& d, const rope_config& claimed) {
  dump m = d;
  const int bands = claimed.bands();
  const auto per_token = static_cast<std::size_t>(d.heads) * static_cast<std::size_t>(d.head_dim);
  for (std::size_t t = 0; t < static_cast<std::size_t>(d.tokens); ++t)
    for (std::size_t h = 0; h < static_cast<std::size_t>(d.heads); ++h) {
      const std::size_t off = t * per_token + h * static_cast<std::size_t>(d.head_dim);
      for (int i = 0; i < bands; ++i) {
        const int b = claimed.pair_layout == layout::interleaved ? 2 * i + 1 : i + bands;
        m.x[off + static_cast<std::size_t>(b)] = -d.x[off + static_cast<std::size_t>(b)];
        m.y[off + static_cast<std::size_t>(b)] = -d.y[off + static_cast<std::size_t>(b)];
      }
    }
  return m;
}

namespace {

finding reversed_finding(const rope_config& claimed, const verdict& other) {
  const bool claim_reversed = claimed.direction == rotation_direction::reversed;
  return {"rotation_reversed",
          std::string("the rotation turns the other way: the outputs are R(") + (claim_reversed ? "+" : "-") +
              "p) x where the claim turns by R(" + (claim_reversed ? "-" : "+") + "p) (" +
              (claim_reversed ? "a forward rotate_half where the family rotates in reverse, e.g. nanochat's cat(x2, -x1)"
                              : "sin's sign flipped or the conjugate rotation") +
              "); judged with the opposite direction they pass (worst error/allowance " +
              judge::fmt("%.3g", other.worst_ratio) + "). Scores see m - n reversed",
          0.99};
}

}  // namespace

verdict audit_reversed(const dump& d, const rope_config& claimed, const audit_options& opt) {
  rope_config forward = claimed;
  forward.direction = rotation_direction::forward;
  // M-RoPE dumps keep their own passes; the rotation_reversed test is 1-D, as in audit().
  verdict v = audit_forward_only(conjugate_pairs(d, claimed), forward, opt);
  if (v.pass || claimed.mrope != mrope_kind::none) return v;
  // The dump judged as it is, under the forward claim: an implementation that forgot the reversal.
  if (const verdict as_forward = judge_only(d, forward, opt); as_forward.pass) {
    v.findings.clear();
    v.findings.push_back(reversed_finding(claimed, as_forward));
  }
  return v;
}

bool reversed_hypothesis(const dump& d, const rope_config& claimed, const audit_options& opt, verdict& v) {
  if (claimed.direction != rotation_direction::forward) return false;
  // The forward claim on the conjugated dump is the reversed claim on the dump itself.
  const verdict alt = judge_only(conjugate_pairs(d, claimed), claimed, opt);
  if (!alt.pass) return false;
  v.findings.push_back(reversed_finding(claimed, alt));
  return true;
}

}  // namespace ropecheck::audit::detail
