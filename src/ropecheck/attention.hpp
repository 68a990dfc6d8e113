// ropecheck/attention.hpp — scaled dot-product attention for one head, in any ropecheck scalar.
//
// The attention that positional schemes plug into, written so that every rounding is visible and
// each sum runs in one stated order (the error models of the tests depend on both):
//   Q = X Wq, K = X Wk, V = X Wv                     (or Q, K, V given directly)
//   S = (Q K^T) * scale + B,  scale = 1/sqrt(d_head)  (B an optional additive bias: ALiBi, T5)
//   S_ij = -inf where the causal mask hides key j from query i
//   P = softmax over each row of S, max-subtracted;   O = P V
// Matrices are row-major std::vector-backed; a row is one token. Every operation is rounded in T:
// for bfloat16/float16 that is eager 16-bit arithmetic, the way a framework computes in the model
// dtype. Eigen's bfloat16 * float is float, so nothing here ever mixes T with another type.
//
// Light header: the standard library and scalar.hpp (hence Eigen/Core) only.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "ropecheck/scalar.hpp"

namespace ropecheck {

// A dense rows x cols matrix, row-major. Constexpr so that exact-arithmetic proofs can use it.
template <class T>
struct matrix {
  std::size_t rows = 0;
  std::size_t cols = 0;
  std::vector<T> values;  // rows * cols entries, row-major

  constexpr matrix() = default;
  constexpr matrix(std::size_t r, std::size_t c) : rows(r), cols(c), values(r * c, T(0)) {}
  constexpr matrix(std::size_t r, std::size_t c, std::vector<T> v) : rows(r), cols(c), values(std::move(v)) {
    if (values.size() != rows * cols)
      throw std::invalid_argument("matrix: " + std::to_string(values.size()) + " values for a " +
                                  std::to_string(rows) + " x " + std::to_string(cols) + " matrix");
  }

  [[nodiscard]] constexpr T& operator()(std::size_t i, std::size_t j) { return values[i * cols + j]; }
  [[nodiscard]] constexpr const T& operator()(std::size_t i, std::size_t j) const { return values[i * cols + j]; }
  [[nodiscard]] constexpr std::span<T> row(std::size_t i) { return std::span<T>(values).subspan(i * cols, cols); }
  [[nodiscard]] constexpr std::span<const T> row(std::size_t i) const {
    return std::span<const T>(values).subspan(i * cols, cols);
  }

  friend constexpr bool operator==(const matrix&, const matrix&) = default;
};

// Product A B of [n, k] by [k, m]. Contract: entry (i, j) is the dot product of row i of A and
// column j of B summed left to right (l = 0, 1, ..., k-1), each product and each partial sum
// rounded in T; so |error| <= gamma_k sum_l |a_il b_lj| with gamma_k = k u_T / (1 - k u_T).
// Rows of A are processed independently: permuting the rows of A permutes the rows of A B exactly.
template <class T>
[[nodiscard]] constexpr matrix<T> matmul(const matrix<T>& a, const matrix<T>& b) {
  if (a.cols != b.rows)
    throw std::invalid_argument("matmul: inner dimensions differ (" + std::to_string(a.cols) + " vs " +
                                std::to_string(b.rows) + ")");
  matrix<T> c(a.rows, b.cols);
  for (std::size_t i = 0; i < a.rows; ++i)
    for (std::size_t j = 0; j < b.cols; ++j) {
      T sum = T(0);
      for (std::size_t l = 0; l < a.cols; ++l) {
        const T product = a(i, l) * b(l, j);  // named so that it rounds in T before the sum
        sum = T(sum + product);
      }
      c(i, j) = sum;
    }
  return c;
}

// exp in T, as frameworks evaluate it: libm in the hardware types, float then one rounding for
// the 16-bit types (what torch does for bf16/half exp).
template <class T>
[[nodiscard]] inline T exp_of(T x) {
  if constexpr (std::is_floating_point_v<T>) return std::exp(x);
  else if constexpr (is_16bit_float_v<T>) return T(std::exp(static_cast<float>(x)));
  else { using std::exp; return exp(x); }
}

enum class attention_mask : std::uint8_t {
  none,    // every query sees every key (encoders, the permutation-equivariant case)
  causal,  // query i sees keys j <= i + (n_keys - n_queries): bottom-right aligned, as with a KV cache
};

template <class T>
struct attention_options {
  attention_mask mask = attention_mask::none;
  // Additive score bias B, n_queries * n_keys values row-major (ALiBi, T5); empty for none.
  std::span<const T> bias = {};
  // Score scale; default 1/sqrt(d_head) rounded once to T. T5 uses 1 (it folds the scale into Wq).
  std::optional<long double> scale = std::nullopt;
};

template <class T>
struct attention_result {
  matrix<T> scores;   // [n_queries, n_keys]: (Q K^T) * scale + B, -inf where masked
  matrix<T> weights;  // [n_queries, n_keys]: softmax of each row of scores; exactly +0 where masked
  matrix<T> output;   // [n_queries, d_v]:    weights V
};

// Attention of given Q [n_q, d], K [n_k, d], V [n_k, d_v].
// Contract (all arithmetic in T, every operation rounded once):
//   scores   s_ij = fl(fl(dot(q_i, k_j)) * scale) (+ b_ij, one more rounding), dot summed over the
//            head dimension left to right (matmul's order); masked s_ij = -inf, not computed.
//   softmax  m_i = max_j s_ij (exact); e_ij = exp_of(s_ij - m_i) (masked: exactly 0);
//            D_i = sum_j e_ij left to right (j = 0..n_k-1); w_ij = fl(e_ij / D_i).
//            D_i >= 1 (the maximum contributes exp(0) = 1), so no row divides by zero; with
//            gamma_n = n u/(1 - n u): |D~_i - D_i| <= gamma_{n_k-1} D_i, hence
//            |sum_j w_ij - 1| <= (u + gamma_{n_k-1}) / (1 - gamma_{n_k-1}) (tests/core/attention_test.cpp).
//   output   o_ik = sum_j w_ij v_jk left to right: |error| <= gamma_{n_k} sum_j |w_ij v_jk|.
//   order    the key index j is the only index any sum runs over that a permutation of the tokens
//            reorders: scores of permuted inputs are exactly the permuted scores, and the output
//            moves only by the reordered softmax denominator and output sum (the error model of
//            tests/properties/equivariance_test.cpp).
// Throws std::invalid_argument on mismatched shapes, an empty K, a bias of the wrong size, or a
// causal mask with more queries than keys (its first rows would see no key at all). A bias may
// hold -inf (an explicit mask) as long as every row keeps one finite score; a row of -inf only
// gives NaN, as it does in torch.
template <class T>
[[nodiscard]] attention_result<T> scaled_dot_product_attention(const matrix<T>& q, const matrix<T>& k,
                                                               const matrix<T>& v,
                                                               const attention_options<T>& opt = {}) {
  const std::size_t nq = q.rows, nk = k.rows;
  if (q.cols != k.cols || v.rows != nk || nk == 0 || q.cols == 0)
    throw std::invalid_argument("scaled_dot_product_attention: need Q [n_q, d], K [n_k, d], V [n_k, d_v] with n_k, d > 0; got Q " +
                                std::to_string(q.rows) + "x" + std::to_string(q.cols) + ", K " + std::to_string(k.rows) +
                                "x" + std::to_string(k.cols) + ", V " + std::to_string(v.rows) + "x" + std::to_string(v.cols));
  if (!opt.bias.empty() && opt.bias.size() != nq * nk)
    throw std::invalid_argument("scaled_dot_product_attention: bias holds " + std::to_string(opt.bias.size()) +
                                " values, need n_q * n_k = " + std::to_string(nq * nk));
  const bool causal = opt.mask == attention_mask::causal;
  if (causal && nq > nk)
    throw std::invalid_argument("scaled_dot_product_attention: a causal mask needs n_q <= n_k");
  const std::size_t offset = causal ? nk - nq : 0;  // query i sits at key position i + offset

  const long double scale_exact = opt.scale ? *opt.scale : 1.0L / std::sqrt(static_cast<long double>(q.cols));
  const T scale = scalar_traits<T>::narrow(scale_exact);
  const T minus_inf = T(-std::numeric_limits<float>::infinity());

  attention_result<T> r{matrix<T>(nq, nk), matrix<T>(nq, nk), matrix<T>(nq, v.cols)};
  for (std::size_t i = 0; i < nq; ++i) {
    // Scores of row i and their maximum over the visible keys.
    T row_max = minus_inf;
    for (std::size_t j = 0; j < nk; ++j) {
      if (causal && j > i + offset) {
        r.scores(i, j) = minus_inf;
        continue;
      }
      T dot = T(0);
      for (std::size_t l = 0; l < q.cols; ++l) {
        const T product = q(i, l) * k(j, l);
        dot = T(dot + product);
      }
      T s = T(dot * scale);
      if (!opt.bias.empty()) s = T(s + opt.bias[i * nk + j]);
      r.scores(i, j) = s;
      if (s > row_max) row_max = s;
    }
    // Softmax: masked keys contribute an exact 0, never exp(-inf - m).
    T denominator = T(0);
    for (std::size_t j = 0; j < nk; ++j) {
      const bool hidden = causal && j > i + offset;
      const T e = hidden ? T(0) : exp_of(T(r.scores(i, j) - row_max));
      r.weights(i, j) = e;
      denominator = T(denominator + e);
    }
    for (std::size_t j = 0; j < nk; ++j) r.weights(i, j) = T(r.weights(i, j) / denominator);
    // Output row i: the weighted sum of the value rows, keys in order.
    for (std::size_t c = 0; c < v.cols; ++c) {
      T sum = T(0);
      for (std::size_t j = 0; j < nk; ++j) {
        const T product = r.weights(i, j) * v(j, c);
        sum = T(sum + product);
      }
      r.output(i, c) = sum;
    }
  }
  return r;
}

// The projections of one head: X [n, d_model] -> Q = X Wq, K = X Wk [n, d_head], V = X Wv [n, d_v].
template <class T>
struct attention_head {
  matrix<T> wq;  // [d_model, d_head]
  matrix<T> wk;  // [d_model, d_head]
  matrix<T> wv;  // [d_model, d_v]
};

template <class T>
struct projections {
  matrix<T> q, k, v;
};

// Q, K, V of the tokens X (matmul's contract for each).
template <class T>
[[nodiscard]] constexpr projections<T> project(const matrix<T>& x, const attention_head<T>& w) {
  return {matmul(x, w.wq), matmul(x, w.wk), matmul(x, w.wv)};
}

// Self-attention of the tokens X through one head: project, then scaled_dot_product_attention.
// Positional schemes enter as an additive change of X (sinusoidal, learned absolute), a rotation
// of Q and K between the two steps (RoPE: positional.hpp's rotate_rows), or a bias (ALiBi, T5).
template <class T>
[[nodiscard]] attention_result<T> self_attention(const matrix<T>& x, const attention_head<T>& w,
                                                 const attention_options<T>& opt = {}) {
  const projections<T> p = project(x, w);
  return scaled_dot_product_attention(p.q, p.k, p.v, opt);
}

}  // namespace ropecheck
