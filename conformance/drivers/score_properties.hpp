// conformance/drivers/score_properties.hpp — the property of queries and keys together: a query rotated
// by an implementation's rotate and a key by its key side (rope_under_test::rotate_k), compared where
// attention reads them, at the score. A key side rotating at other positions, with another base, layout or
// head mapping than the queries leaves each tensor plausible and the scores wrong (ropecheck/judge/scores.hpp).
#pragma once

#include <rapidcheck.h>

#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "generators.hpp"
#include "implementation.hpp"
#include "rope_properties.hpp"

namespace ropecheck::test {

// The largest |s - s*| / allowance over one query token at m and one key token at n, and where it is.
struct score_pair_excess {
  long double ratio = 0, err = 0, allowance = 0, got = 0, want = 0;
  int q_head = 0, k_head = 0;
};

// For every query head h and its key head g = h / (q_heads / kv_heads):
//   s  = <rotate(q, m)_h, rotate_k(k, n)_g>    over the rotary coordinates (pass-through ones are
//                                               rotation_matches_reference's)
//   s* = af <q_h, R(n - m) k_g>                 R by the MPFR reference, attention factor included, so
//                                               af^2 <q, R(n - m) k> = <R(m) q, R(n) k> exactly
// Allowance: the judge's derivation for the same identity (ropecheck/judge/scores.hpp, score_identity;
// error_model.hpp has no section of its own for it, its sections 1-4 bound each side): coordinate j of q'
// is within A_q(i) af (|q_a| + |q_b|) of exact (i its band, (a, b) its pair) and |k*_j| <= af (|k_a| + |k_b|),
// likewise for k', so
//   |s - s*| <= af^2 sum over bands i of 2 (|q_a| + |q_b|) (|k_a| + |k_b|) (A_q(i) + A_k(i) + A_q(i) A_k(i))
// with A_q(i) = bound(m, i) and A_k(i) = key_bound(n, i): each side's own bound, nothing tuned. Added: the
// two long double dot products (D u_ld of their sums of |terms| each) and the reference's double-double
// rotation (2^-100 relative, below one u_ld of the same sum).
inline score_pair_excess score_pair_ratio(const rope_under_test& impl, const std::vector<long double>& q,
                                          const std::vector<long double>& k, std::int64_t m, std::int64_t n) {
  const auto g = impl.geometry();
  const auto D = static_cast<std::size_t>(g.head_dim), rd = static_cast<std::size_t>(g.rotary_dim);
  std::vector<long double> qo(q.size()), ko(k.size());
  impl.rotate(q, qo, impl.q_heads, m, rotation_sense::forward);
  impl.key_rotate()(k, ko, impl.kv_heads, n, rotation_sense::forward);
  const long double af = impl.attention_factor();
  std::vector<long double> aq(static_cast<std::size_t>(g.bands())), ak(aq.size());
  for (int i = 0; i < g.bands(); ++i) {
    aq[static_cast<std::size_t>(i)] = impl.bound(m, i);
    ak[static_cast<std::size_t>(i)] = impl.key_bound()(n, i);
  }
  std::vector<double> kd(D);
  std::vector<reference::dd> rk(D);
  score_pair_excess worst;
  const int rep = impl.q_heads / impl.kv_heads;
  for (int h = 0; h < impl.q_heads; ++h) {
    const int kh = h / rep;
    const std::size_t qa = static_cast<std::size_t>(h) * D, ka = static_cast<std::size_t>(kh) * D;
    for (std::size_t j = 0; j < D; ++j) kd[j] = static_cast<double>(k[ka + j]);
    impl.ref->rotate(n - m, kd, rk);
    long double got = 0, want = 0, got_abs = 0, want_abs = 0;
    for (std::size_t j = 0; j < rd; ++j) {
      got += qo[qa + j] * ko[ka + j];
      got_abs += std::fabs(qo[qa + j] * ko[ka + j]);
      want += q[qa + j] * rk[j].value();
      want_abs += std::fabs(q[qa + j] * rk[j].value());
    }
    want *= af;
    long double allowance = 0;
    for (int i = 0; i < g.bands(); ++i) {
      const auto pq = pair_at(g, q, qa, i), pk = pair_at(g, k, ka, i);
      const long double A = aq[static_cast<std::size_t>(i)], B = ak[static_cast<std::size_t>(i)];
      allowance += 2 * pq.s * pk.s * (A + B + A * B);
    }
    allowance = af * af * allowance + static_cast<long double>(rd) * u_ld * (got_abs + 2 * af * want_abs);
    const long double err = std::fabs(got - want);
    const long double ratio = allowance > 0 ? err / allowance : (err > 0 ? INFINITY : 0);
    if (!(ratio <= worst.ratio)) worst = {std::isnan(ratio) ? INFINITY : ratio, err, allowance, got, want, h, kh};
  }
  return worst;
}

// The relative-offset identity across the two sides: for a query token at m and a key token at n, drawn
// independently over the implementation's range (so m < n half the time, and positions past 2^16 and to
// 2^24 or 2^31 a third of the time), every query head's score against its key head is the reference's.
inline auto query_key_scores_match_reference(const rope_under_test& impl) {
  return [&impl] {
    const auto g = impl.geometry();
    const std::int64_t max = draw_max(impl);
    const std::int64_t m = *gen::position(max), n = *gen::position(max);
    const auto q = *gen::exact_vector(static_cast<std::size_t>(impl.q_heads * g.head_dim));
    const auto k = *gen::exact_vector(static_cast<std::size_t>(impl.kv_heads * g.head_dim));
    const score_pair_excess w = score_pair_ratio(impl, q, k, m, n);
    if (!(w.ratio <= 1)) {
      char buf[400];
      std::snprintf(buf, sizeof buf,
                    "query at %lld, key at %lld (m - n = %lld): query head %d against key head %d (of %d query, %d key "
                    "heads): <R(m) q, R(n) k> = %La but the reference's af^2 <q, R(n - m) k> = %La; error %.3Lg > "
                    "allowance %.3Lg (ratio %.3Lg)",
                    static_cast<long long>(m), static_cast<long long>(n), static_cast<long long>(m - n), w.q_head,
                    w.k_head, impl.q_heads, impl.kv_heads, w.got, w.want, w.err, w.allowance, w.ratio);
      RC_FAIL(std::string(buf));
    }
  };
}

inline named_property query_key_score_property() {
  return {"query_key_scores_match_reference",
          [](const rope_under_test& i) { return std::function<void()>(query_key_scores_match_reference(i)); }};
}

}  // namespace ropecheck::test
