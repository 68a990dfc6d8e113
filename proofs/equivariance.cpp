// proofs/equivariance.cpp — attention without position is permutation-equivariant; a causal mask
// or RoPE breaks it. Proved by constant evaluation over exact rationals.
//
// Scores S(X) = (Q K^T) / sqrt(d_head) with Q = X W_q, K = X W_k, computed by attention.hpp's
// project() and matmul() (both constexpr) over support/exact.hpp's rational. d_head = 4, so the
// scale 1/sqrt(4) = 1/2 is exact and is kept. scaled_dot_product_attention itself is not used:
// its softmax needs exp and sqrt, which have no constant-expression rational form, and the
// theorems are about the scores. A masked score (-inf in attention.hpp) is std::nullopt here,
// which no finite score equals, as -inf equals no finite score.
//
// For a permutation pi of the N = 4 tokens, (P X) row i = X row pi(i), and
// (P S P^T)(i, j) = S(pi(i), pi(j)). All 24 permutations are enumerated by std::next_permutation.
// RoPE rotates row i of Q and K by position i (the sequence read from its start, as positional.hpp's
// sequence_positions): with rope.hpp's rotate_heads, one head per row. positional.hpp's
// rotate_rows does exactly that loop but is not constexpr, so the loop is written here.
#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "ropecheck/attention.hpp"
#include "ropecheck/rope.hpp"
#include "support/exact.hpp"

namespace {

using ropecheck::layout;
using ropecheck::matrix;
using ropecheck::rope_geometry;
using ropecheck::proofs::pythagorean_cos_sin;
using ropecheck::proofs::rational;

constexpr std::size_t tokens = 4, d_model = 3, d_head = 4;
using permutation = std::array<std::size_t, tokens>;
using scores = std::vector<std::optional<rational>>;  // tokens x tokens, row-major; nullopt = masked

constexpr pythagorean_cos_sin exact_cos_sin{};
constexpr rope_geometry geometry{static_cast<int>(d_head), static_cast<int>(d_head), layout::half_split};

// Four distinct tokens and one head's projections: small integers and halves.
constexpr matrix<rational> tokens_x() {
  return {tokens, d_model, {1, 2, -1, /**/ 0, -3, rational(1, 2), /**/ 2, 1, 4, /**/ -2, rational(5, 2), 1}};
}
constexpr ropecheck::attention_head<rational> head() {
  return {{d_model, d_head, {1, 0, -2, 3, /**/ 2, -1, 1, 0, /**/ rational(1, 2), 4, -1, 2}},
          {d_model, d_head, {-1, 2, 0, 1, /**/ 3, 1, rational(-3, 2), 2, /**/ 0, -2, 1, 5}},
          {d_model, 2, {1, 0, /**/ 0, 1, /**/ 1, 1}}};
}

constexpr matrix<rational> transpose(const matrix<rational>& a) {
  matrix<rational> t(a.cols, a.rows);
  for (std::size_t i = 0; i < a.rows; ++i)
    for (std::size_t j = 0; j < a.cols; ++j) t(j, i) = a(i, j);
  return t;
}

// P X: row i of the result is row pi(i) of x.
constexpr matrix<rational> permute_rows(const matrix<rational>& x, const permutation& pi) {
  matrix<rational> y(x.rows, x.cols);
  for (std::size_t i = 0; i < x.rows; ++i)
    for (std::size_t c = 0; c < x.cols; ++c) y(i, c) = x(pi[i], c);
  return y;
}

// Row i of m rotated by position first_position + i (rotate_rows of positional.hpp, constexpr).
constexpr void rotate_rows_by_index(matrix<rational>& m, std::int64_t first_position = 0) {
  for (std::size_t r = 0; r < m.rows; ++r) {
    const std::span<rational> row = m.row(r);
    ropecheck::rotate_heads<rational>(std::span<const rational>(row), row, 1, geometry,
                                      first_position + static_cast<std::int64_t>(r), exact_cos_sin);
  }
}

enum class position_scheme { none, causal_mask, rope };

// S(X) = (Q K^T) / 2, exact (1/sqrt(d_head) = 1/2); causal: key j hidden from query i for j > i;
// rope: Q and K rows rotated by positions first_position + row before the product.
constexpr scores attention_scores(const matrix<rational>& x, position_scheme scheme, std::int64_t first_position = 0) {
  ropecheck::projections<rational> p = ropecheck::project(x, head());
  if (scheme == position_scheme::rope) {
    rotate_rows_by_index(p.q, first_position);
    rotate_rows_by_index(p.k, first_position);
  }
  const matrix<rational> qk = ropecheck::matmul(p.q, transpose(p.k));
  scores s(tokens * tokens);
  for (std::size_t i = 0; i < tokens; ++i)
    for (std::size_t j = 0; j < tokens; ++j)
      if (scheme != position_scheme::causal_mask || j <= i) s[i * tokens + j] = qk(i, j) * rational(1, 2);
  return s;
}

// Whether S(P X) = P S(X) P^T for the permutation pi.
constexpr bool scores_commute_with(const permutation& pi, position_scheme scheme) {
  const scores s = attention_scores(tokens_x(), scheme);
  const scores s_of_px = attention_scores(permute_rows(tokens_x(), pi), scheme);
  for (std::size_t i = 0; i < tokens; ++i)
    for (std::size_t j = 0; j < tokens; ++j)
      if (s_of_px[i * tokens + j] != s[pi[i] * tokens + pi[j]]) return false;
  return true;
}

// How many of the 24 permutations satisfy S(P X) = P S(X) P^T.
constexpr int permutations_commuting(position_scheme scheme) {
  permutation pi{0, 1, 2, 3};
  int count = 0, seen = 0;
  do {
    ++seen;
    if (scores_commute_with(pi, scheme)) ++count;
  } while (std::next_permutation(pi.begin(), pi.end()));
  return seen == 24 ? count : -1;  // -1: the enumeration itself went wrong
}

constexpr bool projections_commute_with_every_permutation() {
  permutation pi{0, 1, 2, 3};
  const ropecheck::projections<rational> p = ropecheck::project(tokens_x(), head());
  do {
    const ropecheck::projections<rational> pp = ropecheck::project(permute_rows(tokens_x(), pi), head());
    if (pp.q != permute_rows(p.q, pi) || pp.k != permute_rows(p.k, pi) || pp.v != permute_rows(p.v, pi)) return false;
  } while (std::next_permutation(pi.begin(), pi.end()));
  return true;
}

// RoPE scores see only offsets: shifting every position by t leaves them unchanged.
constexpr bool rope_scores_are_shift_invariant() {
  const scores s = attention_scores(tokens_x(), position_scheme::rope, 0);
  for (std::int64_t t = -6; t <= 3; ++t)
    if (attention_scores(tokens_x(), position_scheme::rope, t) != s) return false;
  return true;
}

// Lemma: the enumeration visits 24 distinct permutations (so "every" below means all 24).
static_assert(permutations_commuting(position_scheme::none) >= 0, "std::next_permutation visits all 24 orders of 4 tokens");

// Theorem: the projections are row-wise, Q(P X) = P Q(X) (likewise K, V), for all 24 permutations.
static_assert(projections_commute_with_every_permutation(),
              "projecting permuted tokens gives the permuted projections, for every permutation");

// Theorem: without position, S(P X) = P S(X) P^T exactly, for all 24 permutations.
static_assert(permutations_commuting(position_scheme::none) == 24,
              "attention scores without position are permutation-equivariant: S(PX) = P S(X) P^T for all 24 permutations");

// Counterexample: with a causal mask some permutation breaks it; in fact every one but the identity
// (the mask pattern alone differs unless pi preserves order).
static_assert(permutations_commuting(position_scheme::causal_mask) < 24,
              "a causal mask breaks permutation equivariance: some permutation P has S(PX) != P S(X) P^T");
static_assert(permutations_commuting(position_scheme::causal_mask) == 1,
              "with a causal mask only the identity permutation commutes with the scores");

// Counterexample: with RoPE (row i rotated by position i) some permutation breaks it; for these
// tokens every one but the identity does.
static_assert(permutations_commuting(position_scheme::rope) < 24,
              "RoPE breaks permutation equivariance: some permutation P has S(PX) != P S(X) P^T");
static_assert(permutations_commuting(position_scheme::rope) == 1,
              "with RoPE only the identity permutation commutes with the scores of these tokens");

// What RoPE keeps instead: invariance under shifting every position (positions -6..6 reached).
static_assert(rope_scores_are_shift_invariant(),
              "RoPE scores are unchanged when every position is shifted by the same amount");

}  // namespace
