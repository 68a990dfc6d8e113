// proofs/algebra.cpp — the algebra of rope.hpp's kernels, proved by constant evaluation.
//
// Every theorem below runs THE kernel templates that run at run time (rotate_heads,
// permute_interleaved_to_half_split, permute_half_split_to_interleaved, matmul) over exact
// rationals with exact cos/sin (support/exact.hpp), so "==" is equality of real numbers and a
// theorem that compiles holds for every position in its range, every geometry listed, and the
// fixed vectors given. The range is |m|, |n| <= 6 (compositions reach |m + n| <= 12): what keeps
// every denominator inside __int128 (exact.hpp explains why); overflow would fail the build, not
// wrap. If this file compiles, its theorems hold; proofs/README.md is the index.
//
// proofs.mutated_kernel_breaks_the_build (proofs/CMakeLists.txt) compiles this file against a
// copy of rope.hpp with a sign flipped and requires it to fail on the orthogonality or
// composition messages below.
#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "ropecheck/attention.hpp"
#include "ropecheck/rope.hpp"
#include "support/exact.hpp"

namespace {

using ropecheck::layout;
using ropecheck::matrix;
using ropecheck::rope_geometry;
using ropecheck::rotation_sense;
using ropecheck::proofs::int128;
using ropecheck::proofs::pythagorean_cos_sin;
using ropecheck::proofs::rational;
using vec = std::vector<rational>;

constexpr pythagorean_cos_sin exact_cos_sin{};
constexpr std::int64_t first_position = -6, last_position = 6;

// Full and partial rotary (rotary_dim 6 of 8: coordinates 6 and 7 pass through), both layouts.
constexpr std::array<rope_geometry, 4> geometries{{{8, 8, layout::interleaved},
                                                   {8, 8, layout::half_split},
                                                   {8, 6, layout::interleaved},
                                                   {8, 6, layout::half_split}}};
constexpr int heads = 2;
constexpr std::size_t head_dim = 8;

// Fixed exact vectors for two heads: small integers, halves, zeros and signs.
constexpr vec q_vector() { return {3, -1, 2, rational(1, 2), 0, -4, 1, 5, -2, 7, rational(-3, 2), 1, 6, 0, -1, 2}; }
constexpr vec k_vector() { return {1, 4, -2, 3, rational(5, 2), -1, 0, -3, 2, -2, 1, 1, -5, rational(1, 2), 3, 4}; }

// y = R(m) x for each of the `heads` heads of x: the run-time kernel, Compute = Storage = rational.
constexpr vec rotate(const vec& x, const rope_geometry& g, std::int64_t m, int n_heads = heads,
                     rotation_sense sense = rotation_sense::forward) {
  vec y(x.size());
  ropecheck::rotate_heads<rational>(std::span<const rational>(x), std::span<rational>(y), n_heads, g, m,
                                    exact_cos_sin, sense);
  return y;
}

// The identity of size d, flattened: d "heads" of head_dim d, head j being e_j.
constexpr vec basis_vectors(std::size_t d) {
  vec e(d * d, 0);
  for (std::size_t j = 0; j < d; ++j) e[j * d + j] = 1;
  return e;
}

// R(m) for one head, materialised column by column: the kernel rotates the d basis vectors as d
// heads in one call (cos/sin looked up once per band), and head j of the result is R(m) e_j,
// column j of the matrix.
constexpr matrix<rational> rotation_matrix(const rope_geometry& g, std::int64_t m,
                                           rotation_sense sense = rotation_sense::forward) {
  const auto d = static_cast<std::size_t>(g.head_dim);
  const vec columns = rotate(basis_vectors(d), g, m, g.head_dim, sense);
  matrix<rational> r(d, d);
  for (std::size_t j = 0; j < d; ++j)
    for (std::size_t i = 0; i < d; ++i) r(i, j) = columns[j * d + i];
  return r;
}

constexpr matrix<rational> transpose(const matrix<rational>& a) {
  matrix<rational> t(a.cols, a.rows);
  for (std::size_t i = 0; i < a.rows; ++i)
    for (std::size_t j = 0; j < a.cols; ++j) t(j, i) = a(i, j);
  return t;
}

constexpr matrix<rational> identity(std::size_t n) {
  matrix<rational> e(n, n);
  for (std::size_t i = 0; i < n; ++i) e(i, i) = 1;
  return e;
}

// <x, y> over coordinates [first, first + count).
constexpr rational dot(const vec& x, const vec& y, std::size_t first, std::size_t count) {
  rational s = 0;
  for (std::size_t i = first; i < first + count; ++i) s += x[i] * y[i];
  return s;
}

// -------------------------------------------------------------------------------------------
// The exact source: its cos/sin lie on the unit circle and compose as complex numbers, so any
// failure below is the kernel's.

constexpr bool source_is_on_the_unit_circle() {
  for (std::int64_t m = first_position; m <= last_position; ++m)
    for (int i = 0; i < pythagorean_cos_sin::bands(); ++i) {
      const auto t = exact_cos_sin.cos_sin(m, i);
      if (t.cos * t.cos + t.sin * t.sin != 1) return false;
    }
  return true;
}

constexpr bool source_composes_as_complex_numbers() {
  for (std::int64_t a = first_position; a <= last_position; ++a)
    for (std::int64_t b = first_position; b <= last_position; ++b)
      for (int i = 0; i < pythagorean_cos_sin::bands(); ++i) {
        const auto x = exact_cos_sin.cos_sin(a, i), y = exact_cos_sin.cos_sin(b, i), z = exact_cos_sin.cos_sin(a + b, i);
        if (x.cos * y.cos - x.sin * y.sin != z.cos || x.sin * y.cos + x.cos * y.sin != z.sin) return false;
      }
  return true;
}

// Lemma: the exact source is what the kernel accepts, and a type without cos_sin is not.
static_assert(ropecheck::cos_sin_source<pythagorean_cos_sin>, "the exact Pythagorean table is a cos/sin source");
static_assert(!ropecheck::cos_sin_source<rational>, "a scalar without cos_sin(pos, band) is not a cos/sin source");
// Lemma: cos^2 + sin^2 = 1 exactly, for every band and every position in [-6, 6].
static_assert(source_is_on_the_unit_circle(), "the exact source's cos and sin lie on the unit circle");
// Lemma: (cos a + i sin a)(cos b + i sin b) = cos(a + b) + i sin(a + b) exactly.
static_assert(source_composes_as_complex_numbers(), "the exact source at a + b is the complex product of a and b");

// -------------------------------------------------------------------------------------------
// The exact scalar: arithmetic that leaves __int128 is not a constant expression, so an
// overflowing proof fails the build (both directions asserted).

template <auto F, int = (F(), 0)>
constexpr bool is_constant_expression(int) { return true; }
template <auto F>
constexpr bool is_constant_expression(long) { return false; }

constexpr int128 two_to_the_100 = int128(1) << 100;
static_assert(rational(1, 3) + rational(1, 6) == rational(1, 2), "rational sums are exact and normalised");
static_assert(rational(-4, -6) == rational(2, 3) && rational(2, -4) == rational(-1, 2),
              "the sign lives in the numerator and the fraction is in lowest terms");
static_assert(rational(2, 3) * rational(9, 4) / rational(3, 2) == 1, "rational products and quotients are exact");
static_assert(rational(-1, 3) < rational(-1, 4) && !(rational(1, 4) < rational(1, 4)), "rationals are ordered");
static_assert(is_constant_expression<[] { return rational(two_to_the_100) * rational(1 << 20); }>(0),
              "a product below 2^127 is a constant expression");
static_assert(!is_constant_expression<[] { return rational(two_to_the_100) * rational(two_to_the_100); }>(0),
              "a product past 2^127 is not a constant expression: overflow fails the build, it never wraps");
static_assert(!is_constant_expression<[] { return rational(1, two_to_the_100 * 2) + rational(1, two_to_the_100 * 2 - 1); }>(0),
              "a sum whose denominator passes 2^127 is not a constant expression");
static_assert(!is_constant_expression<[] { return rational(1) / rational(0); }>(0),
              "division by zero is not a constant expression");

// -------------------------------------------------------------------------------------------
// Orthogonality: R(m)^T R(m) = I on the materialised matrix, and |R(m) x|^2 = |x|^2 exactly.

constexpr bool rotation_matrix_is_orthogonal() {
  for (const auto& g : geometries)
    for (std::int64_t m = first_position; m <= last_position; ++m) {
      const matrix<rational> r = rotation_matrix(g, m);
      // R square, so R^T R = I also gives R R^T = I.
      if (ropecheck::matmul(transpose(r), r) != identity(static_cast<std::size_t>(g.head_dim))) return false;
    }
  return true;
}

constexpr bool rotation_preserves_norms() {
  for (const auto& g : geometries)
    for (std::int64_t m = first_position; m <= last_position; ++m)
      for (const vec& x : {q_vector(), k_vector()}) {
        const vec y = rotate(x, g, m);
        for (std::size_t h = 0; h < heads; ++h)
          if (dot(y, y, h * head_dim, head_dim) != dot(x, x, h * head_dim, head_dim)) return false;
      }
  return true;
}

static_assert(rotation_matrix_is_orthogonal(), "R(m)^T R(m) = I: the rotation matrix is orthogonal for every position m");
static_assert(rotation_preserves_norms(), "rotation preserves the sum of squares of every head exactly");

// -------------------------------------------------------------------------------------------
// Composition: R(a) R(b) = R(a + b) for negative a or b too; R(-m) R(m) = I; the inverse sense
// is R(-m) = R(m)^T; the kernel may write in place.

constexpr bool rotations_compose() {
  for (const auto& g : geometries) {
    const auto d = static_cast<std::size_t>(g.head_dim);
    std::vector<matrix<rational>> r;  // r[p + 12] = R(p), p in [-12, 12]
    for (std::int64_t p = 2 * first_position; p <= 2 * last_position; ++p) r.push_back(rotation_matrix(g, p));
    for (std::int64_t b = first_position; b <= last_position; ++b) {
      const vec rb = rotate(basis_vectors(d), g, b, g.head_dim);  // head j: R(b) e_j
      for (std::int64_t a = first_position; a <= last_position; ++a) {
        const vec rab = rotate(rb, g, a, g.head_dim);  // head j: R(a) R(b) e_j, column j of R(a) R(b)
        for (std::size_t j = 0; j < d; ++j)
          for (std::size_t i = 0; i < d; ++i)
            if (rab[j * d + i] != r[static_cast<std::size_t>(a + b - 2 * first_position)](i, j)) return false;
      }
    }
  }
  return true;
}

constexpr bool negative_position_inverts() {
  for (const auto& g : geometries)
    for (std::int64_t m = first_position; m <= last_position; ++m) {
      const auto d = static_cast<std::size_t>(g.head_dim);
      if (ropecheck::matmul(rotation_matrix(g, -m), rotation_matrix(g, m)) != identity(d)) return false;
    }
  return true;
}

constexpr bool inverse_sense_is_the_transpose() {
  for (const auto& g : geometries)
    for (std::int64_t m = first_position; m <= last_position; ++m) {
      const matrix<rational> inverse = rotation_matrix(g, m, rotation_sense::inverse);
      if (inverse != rotation_matrix(g, -m) || inverse != transpose(rotation_matrix(g, m))) return false;
      for (const vec& x : {q_vector(), k_vector()})
        if (rotate(rotate(x, g, m), g, m, heads, rotation_sense::inverse) != x) return false;
    }
  return true;
}

constexpr bool in_place_rotation_equals_out_of_place() {
  for (const auto& g : geometries)
    for (std::int64_t m = first_position; m <= last_position; ++m) {
      vec x = q_vector();
      ropecheck::rotate_heads<rational>(std::span<const rational>(x), std::span<rational>(x), heads, g, m, exact_cos_sin);
      if (x != rotate(q_vector(), g, m)) return false;
    }
  return true;
}

static_assert(rotations_compose(), "rotation by m then by n equals rotation by m + n, for negative m and n too");
static_assert(negative_position_inverts(), "rotation by -m undoes rotation by m: R(-m) R(m) = I");
static_assert(inverse_sense_is_the_transpose(),
              "the inverse sense rotates by -m, which is the transpose, and undoes the forward rotation");
static_assert(in_place_rotation_equals_out_of_place(), "rotating in place (y aliasing x) gives the out-of-place result");

// -------------------------------------------------------------------------------------------
// Relative offset: <R(m) q, R(n) k> = <q, R(n - m) k> per head, exactly, in both layouts, full
// and partial rotary (pass-through coordinates add the same q_j k_j on both sides).

constexpr bool scores_depend_only_on_the_offset() {
  for (const auto& g : geometries)
    for (const auto& [q, k] : {std::pair{q_vector(), k_vector()}, std::pair{k_vector(), q_vector()}}) {
      std::vector<vec> rq, rk, offset_k;  // rq[m + 6] = R(m) q, rk[n + 6] = R(n) k, offset_k[d + 12] = R(d) k
      for (std::int64_t m = first_position; m <= last_position; ++m) rq.push_back(rotate(q, g, m));
      for (std::int64_t n = first_position; n <= last_position; ++n) rk.push_back(rotate(k, g, n));
      for (std::int64_t d = 2 * first_position; d <= 2 * last_position; ++d) offset_k.push_back(rotate(k, g, d));
      for (std::int64_t m = first_position; m <= last_position; ++m)
        for (std::int64_t n = first_position; n <= last_position; ++n)
          for (std::size_t h = 0; h < heads; ++h)
            if (dot(rq[static_cast<std::size_t>(m - first_position)], rk[static_cast<std::size_t>(n - first_position)],
                    h * head_dim, head_dim) !=
                dot(q, offset_k[static_cast<std::size_t>(n - m - 2 * first_position)], h * head_dim, head_dim))
              return false;
    }
  return true;
}

// The converse direction: the score does depend on the offset (else the identity is vacuous).
constexpr bool scores_change_with_the_offset() {
  for (const auto& g : geometries) {
    const vec q = q_vector(), k = k_vector();
    if (dot(q, rotate(k, g, 1), 0, head_dim) == dot(q, k, 0, head_dim)) return false;
  }
  return true;
}

static_assert(scores_depend_only_on_the_offset(),
              "the score of q at m and k at n equals the score of q at 0 and k at n - m, in both layouts and with partial rotary");
static_assert(scores_change_with_the_offset(), "the score of q and k changes when the offset changes");

// -------------------------------------------------------------------------------------------
// Layout equivalence. P = permute_interleaved_to_half_split (HF's convert_llama_weights_to_hf):
// half_split(P x) = P interleaved(x) on vectors, and scores with P W_q, P W_k under half-split
// equal scores with W_q, W_k under interleaved.

constexpr vec permute(const vec& x, int rotary_dim, std::size_t cols = 1) {
  vec y(x.size());
  ropecheck::permute_interleaved_to_half_split<rational>(std::span<const rational>(x), std::span<rational>(y), heads,
                                                         static_cast<int>(head_dim), rotary_dim, cols);
  return y;
}
constexpr vec unpermute(const vec& x, int rotary_dim) {
  vec y(x.size());
  ropecheck::permute_half_split_to_interleaved<rational>(std::span<const rational>(x), std::span<rational>(y), heads,
                                                         static_cast<int>(head_dim), rotary_dim);
  return y;
}

constexpr bool permutations_are_inverse() {
  for (const int r : {8, 6, 4, 2})
    for (const vec& x : {q_vector(), k_vector()})
      if (unpermute(permute(x, r), r) != x || permute(unpermute(x, r), r) != x) return false;
  return true;
}

constexpr bool half_split_of_permuted_is_permuted_interleaved() {
  for (const int r : {8, 6})
    for (std::int64_t m = 2 * first_position; m <= 2 * last_position; ++m)
      for (const vec& x : {q_vector(), k_vector()}) {
        const rope_geometry interleaved{8, r, layout::interleaved}, half_split{8, r, layout::half_split};
        if (rotate(permute(x, r), half_split, m) != permute(rotate(x, interleaved, m), r)) return false;
      }
  return true;
}

// The permutation is needed: without it the layouts disagree (else the theorem above is vacuous).
constexpr bool layouts_differ_without_the_permutation() {
  const vec x = q_vector();
  return rotate(x, {8, 8, layout::half_split}, 1) != rotate(x, {8, 8, layout::interleaved}, 1);
}

// Weights [heads * head_dim, d_model] (torch's [out, in]); a token u gives q = W_q u.
constexpr std::size_t d_model = 3;
constexpr vec w_q_values() {
  vec w(heads * head_dim * d_model);
  for (std::size_t i = 0; i < w.size(); ++i) w[i] = rational(static_cast<int>((i * 7 + 3) % 11) - 5, 1 + static_cast<int>(i % 2));
  return w;
}
constexpr vec w_k_values() {
  vec w(heads * head_dim * d_model);
  for (std::size_t i = 0; i < w.size(); ++i) w[i] = rational(static_cast<int>((i * 5 + 1) % 9) - 4, 1 + static_cast<int>(i % 3 == 0));
  return w;
}
constexpr vec project(const vec& w, const vec& token) {
  const matrix<rational> wm(heads * head_dim, d_model, w), u(d_model, 1, token);
  return ropecheck::matmul(wm, u).values;
}

constexpr bool permuted_weights_give_the_same_scores() {
  const vec u{2, -1, 3}, v{rational(1, 2), 4, -2};  // the query's and the key's token
  for (const int r : {8, 6}) {
    const rope_geometry interleaved{8, r, layout::interleaved}, half_split{8, r, layout::half_split};
    const vec wq = w_q_values(), wk = w_k_values();
    const vec q = project(wq, u), k = project(wk, v);
    const vec pq = project(permute(wq, r, d_model), u), pk = project(permute(wk, r, d_model), v);
    std::vector<vec> q_int, k_int, q_half, k_half;  // indexed by position + 6
    for (std::int64_t m = first_position; m <= last_position; ++m) {
      q_int.push_back(rotate(q, interleaved, m));
      k_int.push_back(rotate(k, interleaved, m));
      q_half.push_back(rotate(pq, half_split, m));
      k_half.push_back(rotate(pk, half_split, m));
    }
    for (std::size_t m = 0; m < q_int.size(); ++m)
      for (std::size_t n = 0; n < k_int.size(); ++n)
        for (std::size_t h = 0; h < heads; ++h)
          if (dot(q_half[m], k_half[n], h * head_dim, head_dim) != dot(q_int[m], k_int[n], h * head_dim, head_dim))
            return false;
  }
  return true;
}

static_assert(permutations_are_inverse(), "the half-split permutation and its inverse undo each other");
static_assert(half_split_of_permuted_is_permuted_interleaved(),
              "half-split rotation of P x equals P times the interleaved rotation of x");
static_assert(layouts_differ_without_the_permutation(), "without the permutation the two layouts rotate differently");
static_assert(permuted_weights_give_the_same_scores(),
              "scores with P W_q and P W_k under half-split equal scores with W_q and W_k under interleaved");

}  // namespace
