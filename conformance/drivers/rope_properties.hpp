// conformance/drivers/rope_properties.hpp — the property drivers, one function per property, each
// returning a RapidCheck testable for one implementation under test.
//
// Every bound below is the error model's (judge/include/ropecheck/judge/error_model.hpp) bound beta(pos, band) for the
// implementation, composed by the triangle inequality; nothing is tuned. The interchange type is
// long double: scores and norms are formed in it, and its own rounding (u_ld = 2^-64) is charged.
#pragma once

#include <rapidcheck.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include "generators.hpp"
#include "implementation.hpp"
#include "ropecheck/error.hpp"

namespace ropecheck::test {

constexpr long double u_ld = 0x1p-64L;

// Where an implementation's positions are drawn: up to 2^24 for 32-bit-or-narrower compute,
// 2^31 for double and wider (its wide_compute), never past its own contract.
inline std::int64_t draw_max(const rope_under_test& impl) {
  return std::min(impl.max_position, impl.wide_compute ? (std::int64_t{1} << 31) : (std::int64_t{1} << 24));
}

inline std::vector<long double> rotated(const rope_under_test& impl, const std::vector<long double>& x, int heads,
                                        std::int64_t pos, rotation_sense sense = rotation_sense::forward) {
  std::vector<long double> y(x.size());
  impl.rotate(x, y, heads, pos, sense);
  return y;
}

inline std::string hex_case(const char* what, std::int64_t pos, int band, int j, long double got, long double want,
                            long double err, long double bound) {
  char buf[320];
  std::snprintf(buf, sizeof buf, "%s: position %lld band %d coordinate %d: got %La want %La; error %.3Lg > bound %.3Lg",
                what, static_cast<long long>(pos), band, j, got, want, err, bound);
  return buf;
}

// Per band of one head: the pair, its magnitude s = |x_a| + |x_b| and its norm.
struct pair_view {
  int a, b;
  long double s, norm;
};
inline pair_view pair_at(const rope_geometry& g, const std::vector<long double>& x, std::size_t off, int band) {
  const auto [a, b] = g.pair_of(band);
  const long double xa = x[off + a], xb = x[off + b];
  return {a, b, std::fabs(xa) + std::fabs(xb), std::hypot(xa, xb)};
}

// ---------------------------------------------------------------------------------------------
// Property 4: the rotation agrees with the MPFR reference within the error model, at positions
// log-uniform up to the implementation's range and around the regime edges.
inline auto rotation_matches_reference(const rope_under_test& impl) {
  return [&impl] {
    const auto g = impl.geometry();
    const int heads = *rc::gen::inRange(1, 3);
    const std::int64_t pos = *gen::position(draw_max(impl));
    const auto x = *gen::exact_vector(static_cast<std::size_t>(heads * g.head_dim));
    const auto y = rotated(impl, x, heads, pos);
    const long double af = impl.attention_factor();
    std::vector<double> xd(static_cast<std::size_t>(g.head_dim));
    std::vector<reference::dd> want(xd.size());
    for (int h = 0; h < heads; ++h) {
      const std::size_t off = static_cast<std::size_t>(h * g.head_dim);
      for (std::size_t j = 0; j < xd.size(); ++j) xd[j] = static_cast<double>(x[off + j]);
      impl.ref->rotate(pos, xd, want);
      for (int band = 0; band < g.bands(); ++band) {
        const auto p = pair_at(g, x, off, band);
        const long double bound = impl.bound(pos, band) * af * p.s + 2 * u_ld * af * p.s;
        for (const int j : {p.a, p.b}) {
          const long double err = std::fabs(signed_difference(y[off + j], want[j].hi, want[j].lo));
          if (err > bound) RC_FAIL(hex_case("rotation differs from the reference", pos, band, j, y[off + j], want[j].value(), err, bound));
        }
      }
      for (std::size_t j = static_cast<std::size_t>(g.rotary_dim); j < xd.size(); ++j)
        if (y[off + j] != x[off + j]) RC_FAIL(hex_case("pass-through coordinate changed", pos, -1, static_cast<int>(j), y[off + j], x[off + j], 0, 0));
    }
  };
}

// ---------------------------------------------------------------------------------------------
// Property 1: orthogonality.

// |R x| = af |x| for every pair: | |y_pair| - af |x_pair| | <= |y_pair - y*_pair| <= sqrt2 beta af s.
inline auto rotation_preserves_norms(const rope_under_test& impl) {
  return [&impl] {
    const auto g = impl.geometry();
    const std::int64_t pos = *gen::position(draw_max(impl));
    const auto x = *gen::exact_vector(static_cast<std::size_t>(g.head_dim));
    const auto y = rotated(impl, x, 1, pos);
    const long double af = impl.attention_factor();
    for (int band = 0; band < g.bands(); ++band) {
      const auto px = pair_at(g, x, 0, band), py = pair_at(g, y, 0, band);
      const long double bound = std::sqrt(2.0L) * impl.bound(pos, band) * af * px.s + 4 * u_ld * af * px.norm;
      const long double err = std::fabs(py.norm - af * px.norm);
      if (err > bound) RC_FAIL(hex_case("norm not preserved", pos, band, px.a, py.norm, af * px.norm, err, bound));
    }
  };
}

// R(-m) R(m) = af^2 I: the inverse sense undoes the rotation.
inline auto inverse_rotation_undoes_rotation(const rope_under_test& impl) {
  return [&impl] {
    const auto g = impl.geometry();
    const std::int64_t pos = *gen::position(draw_max(impl));
    const auto x = *gen::exact_vector(static_cast<std::size_t>(g.head_dim));
    const auto y = rotated(impl, x, 1, pos);
    const auto z = rotated(impl, y, 1, pos, rotation_sense::inverse);
    const long double af = impl.attention_factor();
    for (int band = 0; band < g.bands(); ++band) {
      const auto px = pair_at(g, x, 0, band), py = pair_at(g, y, 0, band);
      const long double beta = impl.bound(pos, band);
      // error of y, carried through R^T (norm af), plus R^T's own error on y.
      const long double bound = af * std::sqrt(2.0L) * beta * af * px.s + beta * af * py.s + 4 * u_ld * af * af * px.s;
      for (const int j : {px.a, px.b}) {
        const long double err = std::fabs(z[j] - af * af * x[j]);
        if (err > bound) RC_FAIL(hex_case("R(-m) R(m) x != af^2 x", pos, band, j, z[j], af * af * x[j], err, bound));
      }
    }
  };
}

// R(b) R(a) = af R(a + b), b of either sign (rotate at a, then by -k, equals rotating at a - k).
inline auto rotations_compose_additively(const rope_under_test& impl) {
  return [&impl] {
    const auto g = impl.geometry();
    const std::int64_t max = draw_max(impl);
    const std::int64_t a = *gen::position(max);
    const std::int64_t b_abs = *gen::position(max);
    // (drawn either way, so the case sequence does not depend on the kernel's contract)
    const bool negative = *rc::gen::arbitrary<bool>() && impl.negative_positions;
    const std::int64_t b = negative ? -std::min(b_abs, a) : std::min(b_abs, max - a);
    const auto x = *gen::exact_vector(static_cast<std::size_t>(g.head_dim));
    const auto y = rotated(impl, x, 1, a);
    const auto z = rotated(impl, y, 1, b);
    const auto w = rotated(impl, x, 1, a + b);
    const long double af = impl.attention_factor();
    for (int band = 0; band < g.bands(); ++band) {
      const auto px = pair_at(g, x, 0, band), py = pair_at(g, y, 0, band);
      const long double bound = af * std::sqrt(2.0L) * impl.bound(a, band) * af * px.s +
                                impl.bound(b, band) * af * py.s + af * impl.bound(a + b, band) * af * px.s +
                                8 * u_ld * af * af * px.s;
      for (const int j : {px.a, px.b}) {
        const long double err = std::fabs(z[j] - af * w[j]);
        if (err > bound) RC_FAIL(hex_case("R(b) R(a) != af R(a+b)", a + b, band, j, z[j], af * w[j], err, bound));
      }
    }
  };
}

// R(m)^T R(m) = af^2 I on the materialised matrix (columns R e_j).
inline auto materialised_matrix_is_orthogonal(const rope_under_test& impl) {
  return [&impl] {
    const auto g = impl.geometry();
    const std::int64_t pos = *gen::position(draw_max(impl));
    const auto n = static_cast<std::size_t>(g.head_dim);
    // All columns R e_j in one call: the identity as n "heads" of one token, so cos/sin are
    // formed once per band as in a real multi-head kernel.
    std::vector<long double> identity(n * n, 0.0L);
    for (std::size_t j = 0; j < n; ++j) identity[j * n + j] = 1.0L;
    const auto columns = rotated(impl, identity, static_cast<int>(n), pos);
    std::vector<std::vector<long double>> col(n);
    for (std::size_t j = 0; j < n; ++j) col[j].assign(columns.begin() + static_cast<std::ptrdiff_t>(j * n),
                                                      columns.begin() + static_cast<std::ptrdiff_t>((j + 1) * n));
    const long double af = impl.attention_factor();
    std::vector<long double> beta(n, 0.0L);  // bound of the band each coordinate belongs to
    for (int band = 0; band < g.bands(); ++band) {
      const auto [a, b] = g.pair_of(band);
      beta[static_cast<std::size_t>(a)] = beta[static_cast<std::size_t>(b)] = impl.bound(pos, band);
    }
    // R^T R accumulated row by row over each row's nonzero entries (a rotation has at most two
    // per row; a broken kernel may have more, and is then merely slower): every entry of the
    // n x n product is still checked.
    std::vector<long double> gram(n * n, 0.0L);
    std::vector<std::size_t> nz;
    for (std::size_t k = 0; k < n; ++k) {
      nz.clear();
      for (std::size_t j = 0; j < n; ++j)
        if (col[j][k] != 0.0L) nz.push_back(j);
      for (const std::size_t i : nz)
        for (const std::size_t j : nz) gram[i * n + j] += col[i][k] * col[j][k];
    }
    for (std::size_t i = 0; i < n; ++i)
      for (std::size_t j = i; j < n; ++j) {
        const long double dot = gram[i * n + j];
        const long double want = i == j ? (i < static_cast<std::size_t>(g.rotary_dim) ? af * af : 1.0L) : 0.0L;
        // |<c_i, c_j> - <c_i*, c_j*>| <= |e_i| |c_j| + |c_i*| |e_j|, |e| <= sqrt2 beta af per column.
        const long double bi = std::sqrt(2.0L) * beta[i] * af, bj = std::sqrt(2.0L) * beta[j] * af;
        const long double bound = bi * (af + bj) + af * bj + 4 * u_ld * af * af;
        if (std::fabs(dot - want) > bound)
          RC_FAIL(hex_case("R^T R != af^2 I", pos, static_cast<int>(i), static_cast<int>(j), dot, want, std::fabs(dot - want), bound));
      }
  };
}

// ---------------------------------------------------------------------------------------------
// Property 2: relative offset.

// <y, z> for one head, with the bound on its difference from the exact <R(m) q, R(n) k>.
struct score_with_bound {
  long double score = 0, bound = 0;
};

// Query rotated by `qi`, key by `ki` (the same implementation, except when a property mixes
// conventions on purpose).
inline score_with_bound rotated_score(const rope_under_test& qi, const rope_under_test& ki,
                                      const std::vector<long double>& q, const std::vector<long double>& k,
                                      std::int64_t m, std::int64_t n) {
  const auto g = qi.geometry();
  const auto y = rotated(qi, q, 1, m), z = rotated(ki, k, 1, n);
  const long double af = qi.attention_factor();
  score_with_bound r;
  long double abs_sum = 0;
  for (std::size_t j = 0; j < y.size(); ++j) {
    r.score += y[j] * z[j];
    abs_sum += std::fabs(y[j] * z[j]);
  }
  for (int band = 0; band < g.bands(); ++band) {
    const auto pq = pair_at(g, q, 0, band), pk = pair_at(g, k, 0, band);
    const long double eq = std::sqrt(2.0L) * qi.bound(m, band) * af * pq.s;
    const long double ek = std::sqrt(2.0L) * ki.bound(n, band) * af * pk.s;
    r.bound += eq * af * pk.norm + ek * af * pq.norm + eq * ek;
  }
  r.bound += 2 * static_cast<long double>(y.size()) * u_ld * abs_sum;  // the long double dot product
  return r;
}

inline score_with_bound rotated_score(const rope_under_test& impl, const std::vector<long double>& q,
                                      const std::vector<long double>& k, std::int64_t m, std::int64_t n) {
  return rotated_score(impl, impl, q, k, m, n);
}

// <R(m) q, R(n) k> = af <q, R(n - m) k>, the query rotated by `qi`, the key by `ki`, the right
// side in the query's convention. Positions up to `max`.
inline auto relative_offset_identity_holds_for(const rope_under_test& qi, const rope_under_test& ki, std::int64_t max) {
  return [&qi, &ki, max] {
    const auto g = qi.geometry();
    const std::int64_t m = *gen::position(max), n = *gen::position(max);
    const auto q = *gen::exact_vector(static_cast<std::size_t>(g.head_dim));
    const auto k = *gen::exact_vector(static_cast<std::size_t>(g.head_dim));
    const auto lhs = rotated_score(qi, ki, q, k, m, n);
    // Right side af <q, R(n - m) k>; for a kernel without negative positions and n < m, the same
    // number as af <R(m - n) q, k> (R(-d) = R(d)^T), with the roles of q and k in the bound swapped.
    const bool rotate_key = n >= m || qi.negative_positions;
    const auto& fixed = rotate_key ? q : k;
    const auto turned = rotated(qi, rotate_key ? k : q, 1, rotate_key ? n - m : m - n);
    const long double af = qi.attention_factor();
    long double rhs = 0, abs_sum = 0, rhs_bound = 0;
    for (std::size_t j = 0; j < q.size(); ++j) {
      rhs += fixed[j] * turned[j];
      abs_sum += std::fabs(fixed[j] * turned[j]);
    }
    for (int band = 0; band < g.bands(); ++band) {
      const auto pf = pair_at(g, fixed, 0, band), pt = pair_at(g, rotate_key ? k : q, 0, band);
      rhs_bound += af * pf.norm * std::sqrt(2.0L) * qi.bound(rotate_key ? n - m : m - n, band) * af * pt.s;
    }
    rhs_bound += af * 2 * static_cast<long double>(q.size()) * u_ld * abs_sum;
    const long double err = std::fabs(lhs.score - af * rhs), bound = lhs.bound + rhs_bound;
    if (err > bound) {
      char buf[256];
      std::snprintf(buf, sizeof buf, "<R(%lld) q, R(%lld) k> = %La but af <q, R(%lld) k> = %La; violation %.3Lg > bound %.3Lg",
                    static_cast<long long>(m), static_cast<long long>(n), lhs.score, static_cast<long long>(n - m),
                    af * rhs, err, bound);
      RC_FAIL(std::string(buf));
    }
  };
}

inline auto relative_offset_identity_holds(const rope_under_test& impl) {
  return relative_offset_identity_holds_for(impl, impl, draw_max(impl));
}

// score(m + s, n + s) = score(m, n).
inline auto scores_are_shift_invariant(const rope_under_test& impl) {
  return [&impl] {
    const auto g = impl.geometry();
    const std::int64_t max = draw_max(impl);
    const std::int64_t m = *gen::position(max), n = *gen::position(max);
    const std::int64_t s = std::min(*gen::position(max), max - std::max(m, n));
    const auto q = *gen::exact_vector(static_cast<std::size_t>(g.head_dim));
    const auto k = *gen::exact_vector(static_cast<std::size_t>(g.head_dim));
    const auto a = rotated_score(impl, q, k, m, n);
    const auto b = rotated_score(impl, q, k, m + s, n + s);
    const long double err = std::fabs(a.score - b.score), bound = a.bound + b.bound;
    if (err > bound) {
      char buf[256];
      std::snprintf(buf, sizeof buf, "score(%lld, %lld) = %La but score(%lld, %lld) = %La; violation %.3Lg > bound %.3Lg",
                    static_cast<long long>(m), static_cast<long long>(n), a.score, static_cast<long long>(m + s),
                    static_cast<long long>(n + s), b.score, err, bound);
      RC_FAIL(std::string(buf));
    }
  };
}

// The properties every implementation is run through, in the order the mutation table reports.
struct named_property {
  const char* name;
  std::function<std::function<void()>(const rope_under_test&)> make;
  // Cases per 100 of max_success when the whole suite is run against one implementation (0: all):
  // the materialised matrix checks a whole head_dim x head_dim matrix per case, so 20.
  int cases = 0;
};
inline std::vector<named_property> rope_properties() {
  return {
      {"rotation_matches_reference", [](const rope_under_test& i) { return std::function<void()>(rotation_matches_reference(i)); }},
      {"rotation_preserves_norms", [](const rope_under_test& i) { return std::function<void()>(rotation_preserves_norms(i)); }},
      {"inverse_rotation_undoes_rotation", [](const rope_under_test& i) { return std::function<void()>(inverse_rotation_undoes_rotation(i)); }},
      {"rotations_compose_additively", [](const rope_under_test& i) { return std::function<void()>(rotations_compose_additively(i)); }},
      {"materialised_matrix_is_orthogonal", [](const rope_under_test& i) { return std::function<void()>(materialised_matrix_is_orthogonal(i)); }, 20},
      {"relative_offset_identity_holds", [](const rope_under_test& i) { return std::function<void()>(relative_offset_identity_holds(i)); }},
      {"scores_are_shift_invariant", [](const rope_under_test& i) { return std::function<void()>(scores_are_shift_invariant(i)); }},
  };
}

}  // namespace ropecheck::test
