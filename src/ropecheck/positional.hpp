// ropecheck/positional.hpp — the positional schemes other than RoPE, and RoPE applied to Q and K.
//
// Each scheme is a small type whose contract cites the published rule it implements:
//   sinusoidal_encoding<T, C>  absolute, added to X            Vaswani et al. 2017, sec. 3.5
//   learned_absolute<T>        absolute, a table added to X    (GPT-2, BERT: wpe / position_embeddings)
//   alibi<T>                   a linear bias on the scores     Press, Smith, Lewis 2021 (ICLR 2022)
//   t5_relative_bias<T>        a bucketed learned score bias   Raffel et al. 2020; HF modeling_t5
//   rotate_rows<C>(...)        RoPE: rotate rows of Q and K    rope.hpp's kernel, one head per row
// All of them make attention depend on where a token sits, which is exactly what breaks the
// permutation equivariance of plain attention (tests/properties/equivariance_test.cpp).
//
// Positions are token indices, 0 for the first token. Tables filled "from a seed" use
// std::mt19937_64, whose output sequence the C++ standard fixes, so a seed gives the same table
// on every platform; their entries are multiples of 1/256 in [-1, 1], exact in every scalar.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <random>
#include <span>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "ropecheck/angle.hpp"
#include "ropecheck/attention.hpp"
#include "ropecheck/rope.hpp"
#include "ropecheck/scalar.hpp"

namespace ropecheck {

// Positions 0, 1, ..., n-1: a sequence read from its start.
[[nodiscard]] inline std::vector<std::int64_t> sequence_positions(std::size_t n) {
  std::vector<std::int64_t> p(n);
  for (std::size_t i = 0; i < n; ++i) p[i] = static_cast<std::int64_t>(i);
  return p;
}

namespace detail {

// A table entry drawn from the seeded generator: k/256 with k uniform-ish in [-256, 256] (the
// modulo's bias is irrelevant here); exact in bf16 (8 significant bits) and everything wider.
template <class T>
[[nodiscard]] T seeded_table_entry(std::mt19937_64& rng) {
  const auto k = static_cast<int>(rng() % 513u) - 256;
  return scalar_traits<T>::narrow(static_cast<long double>(k) / 256.0L);
}

inline void check_rows_match(std::size_t rows, std::size_t positions, const char* who) {
  if (rows != positions)
    throw std::invalid_argument(std::string(who) + ": " + std::to_string(rows) + " rows but " +
                                std::to_string(positions) + " positions");
}

}  // namespace detail

// ---------------------------------------------------------------------------------------------
// Sinusoidal absolute encoding, Vaswani et al. 2017 ("Attention Is All You Need"), sec. 3.5:
//   PE[m, 2i]   = sin(m / base^(2i/d))
//   PE[m, 2i+1] = cos(m / base^(2i/d)),   base = 10000
// interleaved as the paper writes it (tensor2tensor and fairseq concatenate [sin | cos] instead,
// and fairseq divides by half_dim - 1 rather than d/2: neither is this rule). An odd d ends on a sin.
// Contract: computed in Compute C (a hardware float): e = fl(2i / d), inv_freq = pow(base, -e),
// angle = fl(m * inv_freq), sin/cos by libm in C, then one rounding to T. With glibc's pow and
// sin/cos (< 1 ulp each) the angle is off by <= (e ln(base) + 2 + 1) u_C |angle| (+ u_C |m| when m
// itself rounds in C), and PE by that plus 2 u_C + u_T (tests/core/positional_test.cpp checks it against
// sinl/cosl in long double). Adding to X rounds once more, in T.
template <class T, class Compute = double>
class sinusoidal_encoding {
  static_assert(std::is_floating_point_v<Compute>, "sinusoidal_encoding computes in a hardware float type");

 public:
  explicit sinusoidal_encoding(int d_model, double base = 10000.0) : d_(d_model), base_(base) {
    if (d_model <= 0) throw std::invalid_argument("sinusoidal_encoding: d_model must be positive, got " + std::to_string(d_model));
    if (!(base > 1.0) || !std::isfinite(base))
      throw std::invalid_argument("sinusoidal_encoding: base must be finite and > 1");
  }

  [[nodiscard]] int d_model() const noexcept { return d_; }

  // The angle m * base^(-2i/d) of coordinate k = 2i or 2i+1, in Compute.
  [[nodiscard]] Compute angle(std::int64_t position, int k) const {
    const int i = k / 2;
    const Compute e = static_cast<Compute>(2 * i) / static_cast<Compute>(d_);
    const Compute inv_freq = std::pow(static_cast<Compute>(base_), -e);
    return static_cast<Compute>(position) * inv_freq;
  }

  // PE[position, k].
  [[nodiscard]] T value(std::int64_t position, int k) const {
    if (k < 0 || k >= d_)
      throw std::out_of_range("sinusoidal_encoding: coordinate " + std::to_string(k) + " outside [0, " +
                              std::to_string(d_) + ")");
    const Compute a = angle(position, k);
    const Compute v = (k % 2 == 0) ? std::sin(a) : std::cos(a);
    return convert<T>(v);
  }

  // x_m += PE[positions[m]] for every row m (each sum rounded in T).
  void add_to(matrix<T>& x, std::span<const std::int64_t> positions) const {
    detail::check_rows_match(x.rows, positions.size(), "sinusoidal_encoding::add_to");
    if (x.cols != static_cast<std::size_t>(d_))
      throw std::invalid_argument("sinusoidal_encoding::add_to: X has " + std::to_string(x.cols) +
                                  " columns, the encoding " + std::to_string(d_));
    for (std::size_t m = 0; m < x.rows; ++m)
      for (int k = 0; k < d_; ++k) {
        const auto col = static_cast<std::size_t>(k);
        x(m, col) = T(x(m, col) + value(positions[m], k));
      }
  }
  void add_to(matrix<T>& x) const { add_to(x, sequence_positions(x.rows)); }

 private:
  int d_;
  double base_;
};

// ---------------------------------------------------------------------------------------------
// Learned absolute position embedding (GPT-2's wpe, BERT's position_embeddings): a trained table
// [max_length, d_model] whose row m is added to the token at position m.
// Contract: at(m) is row m for 0 <= m < max_length; any other position throws std::out_of_range
// naming the position and the table length, and nothing ever reads outside the table (a real
// engine past its trained length either crashes or, worse, reads a neighbouring buffer).
template <class T>
class learned_absolute {
 public:
  // Filled from `seed` (see the header comment): deterministic on every platform.
  learned_absolute(std::int64_t max_length, int d_model, std::uint64_t seed) : length_(max_length), d_(d_model) {
    check_shape();
    std::mt19937_64 rng(seed);
    table_.reserve(static_cast<std::size_t>(length_) * static_cast<std::size_t>(d_));
    for (std::int64_t i = 0; i < length_ * d_; ++i) table_.push_back(detail::seeded_table_entry<T>(rng));
  }
  // Given data, row-major [max_length, d_model].
  learned_absolute(std::int64_t max_length, int d_model, std::vector<T> table)
      : length_(max_length), d_(d_model), table_(std::move(table)) {
    check_shape();
    if (table_.size() != static_cast<std::size_t>(length_) * static_cast<std::size_t>(d_))
      throw std::invalid_argument("learned_absolute: " + std::to_string(table_.size()) + " values for a " +
                                  std::to_string(length_) + " x " + std::to_string(d_) + " table");
  }

  [[nodiscard]] std::int64_t max_length() const noexcept { return length_; }
  [[nodiscard]] int d_model() const noexcept { return d_; }

  [[nodiscard]] std::span<const T> at(std::int64_t position) const {
    if (position < 0 || position >= length_)
      throw std::out_of_range("learned_absolute: position " + std::to_string(position) +
                              " is outside the table of length " + std::to_string(length_) + " (positions 0.." +
                              std::to_string(length_ - 1) + ")");
    return std::span<const T>(table_).subspan(static_cast<std::size_t>(position) * static_cast<std::size_t>(d_),
                                              static_cast<std::size_t>(d_));
  }

  // x_m += table[positions[m]] (each sum rounded in T). Checks every position before writing.
  void add_to(matrix<T>& x, std::span<const std::int64_t> positions) const {
    detail::check_rows_match(x.rows, positions.size(), "learned_absolute::add_to");
    if (x.cols != static_cast<std::size_t>(d_))
      throw std::invalid_argument("learned_absolute::add_to: X has " + std::to_string(x.cols) +
                                  " columns, the table " + std::to_string(d_));
    for (std::int64_t p : positions) (void)at(p);
    for (std::size_t m = 0; m < x.rows; ++m) {
      const auto e = at(positions[m]);
      for (std::size_t k = 0; k < x.cols; ++k) x(m, k) = T(x(m, k) + e[k]);
    }
  }
  void add_to(matrix<T>& x) const { add_to(x, sequence_positions(x.rows)); }

 private:
  void check_shape() const {
    if (length_ <= 0 || d_ <= 0)
      throw std::invalid_argument("learned_absolute: need max_length > 0 and d_model > 0, got " +
                                  std::to_string(length_) + " and " + std::to_string(d_));
  }
  std::int64_t length_;
  int d_;
  std::vector<T> table_;
};

// ---------------------------------------------------------------------------------------------
// ALiBi, Press, Smith & Lewis 2021, "Train Short, Test Long" (arXiv 2108.12409), sec. 3:
// head h (1-based) of H adds  -m_h (i - j)  to the score of query i and key j, with slopes
//   H a power of two:  m_h = 2^(-8h/H),  h = 1..H          (8 heads: 1/2, 1/4, ..., 1/256)
//   otherwise:         with n = 2^floor(log2 H), the n slopes of the rule for n, then the first
//                      H - n of the odd-indexed slopes of the rule for 2n: 2^(-8(2k-1)/(2n)), k = 1..H-n
// The second line is the reference code's get_slopes (ofirpress/attention_with_linear_biases,
// fairseq/models/transformer.py: get_slopes_power_of_2(n) + get_slopes(2n)[0::2][:H-n]) and
// HF's build_alibi_tensor (models/bloom/modeling_bloom.py: extra_powers = arange(1, 1+2r, 2)).
// 12 heads: 2^-1..2^-8, then 2^-0.5, 2^-1.5, 2^-2.5, 2^-3.5; 6 heads: 2^-2, 2^-4, 2^-6, 2^-8, 2^-1, 2^-3.
//
// Contract of alibi_slopes<T>(H): slope h is 2^e_h with e_h = -8 a / n exact (n a power of two),
// rounded once to T: exact when e_h is an integer; otherwise exp2l (< 1 ulp of long double) then
// one rounding, i.e. correctly rounded unless 2^e_h lies within 2^-64 relative of a midpoint of T.
// The reference computes start * ratio**i in double and drifts by up to 5 double ulps (16 heads:
// 2^-8 comes out as 0x1.0000000000005p-8); after torch.Tensor's rounding to float32 it equals
// this rule exactly (tests/core/positional_test.cpp).
template <class T>
[[nodiscard]] constexpr std::vector<T> alibi_slopes(int heads) {
  if (heads <= 0) throw std::invalid_argument("alibi_slopes: need heads > 0, got " + std::to_string(heads));
  int n = 1;
  while (2 * n <= heads) n *= 2;  // 2^floor(log2 H), exactly, without a floating log2
  // slope = 2^(-numerator / denominator), denominator a power of two
  const auto power_of_two = [](long long numerator, long long denominator) {
    if (numerator % denominator == 0) return scalar_traits<T>::narrow(std::ldexp(1.0L, static_cast<int>(-numerator / denominator)));
    return scalar_traits<T>::narrow(std::exp2(-static_cast<long double>(numerator) / static_cast<long double>(denominator)));
  };
  std::vector<T> slopes;
  slopes.reserve(static_cast<std::size_t>(heads));
  for (int h = 1; h <= n; ++h) slopes.push_back(power_of_two(8LL * h, n));
  for (int k = 1; k <= heads - n; ++k) slopes.push_back(power_of_two(8LL * (2 * k - 1), 2LL * n));
  return slopes;
}

enum class alibi_form : std::uint8_t {
  causal,     // -m (i - j), the published decoder form; keys j > i are for the causal mask to hide
  symmetric,  // -m |i - j|, the bidirectional (encoder) variant used where no mask is applied
};

namespace detail {
// [n_q, n_k] of scheme.bias(head, q_pos[i], k_pos[j]): the score-matrix form of a relative bias.
template <class Scheme>
[[nodiscard]] auto bias_matrix_of(const Scheme& scheme, int head, std::span<const std::int64_t> q_pos,
                                  std::span<const std::int64_t> k_pos) {
  matrix<typename Scheme::value_type> b(q_pos.size(), k_pos.size());
  for (std::size_t i = 0; i < q_pos.size(); ++i)
    for (std::size_t j = 0; j < k_pos.size(); ++j) b(i, j) = scheme.bias(head, q_pos[i], k_pos[j]);
  return b;
}
}  // namespace detail

template <class T>
class alibi {
 public:
  using value_type = T;
  explicit alibi(int heads, alibi_form form = alibi_form::causal) : slopes_(alibi_slopes<T>(heads)), form_(form) {}

  [[nodiscard]] int heads() const noexcept { return static_cast<int>(slopes_.size()); }
  [[nodiscard]] alibi_form form() const noexcept { return form_; }
  [[nodiscard]] T slope(int head) const { return slopes_.at(static_cast<std::size_t>(head)); }  // head 0-based

  // Bias of query position i and key position j: fl_T(m * fl_T(-distance)), computed in T as
  // frameworks do (slopes * arange); the distance is exact in T up to 2^digits (bf16: 256).
  // Rounding to nearest is symmetric, so this is -fl_T(m * distance), except that distance 0
  // gives +0 rather than -0.
  [[nodiscard]] T bias(int head, std::int64_t i, std::int64_t j) const {
    const std::int64_t distance = form_ == alibi_form::causal ? i - j : (i > j ? i - j : j - i);
    const T m = slope(head);
    return T(m * position_as<T>(-distance));
  }

  // [n_q, n_k] biases for queries at positions q_pos and keys at positions k_pos.
  [[nodiscard]] matrix<T> bias_matrix(int head, std::span<const std::int64_t> q_pos,
                                      std::span<const std::int64_t> k_pos) const {
    return detail::bias_matrix_of(*this, head, q_pos, k_pos);
  }
  [[nodiscard]] matrix<T> bias_matrix(int head, std::size_t n) const {
    const auto p = sequence_positions(n);
    return bias_matrix(head, p, p);
  }

 private:
  std::vector<T> slopes_;
  alibi_form form_;
};

// ---------------------------------------------------------------------------------------------
// T5 relative position buckets, Raffel et al. 2020 (JMLR 21, "Exploring the Limits of Transfer
// Learning"), sec. 2.1, as HF transformers computes them (models/t5/modeling_t5.py,
// T5Attention._relative_position_bucket, from Mesh TensorFlow):
//   r = key position - query position   (HF: memory_position - context_position)
//   bidirectional: num_buckets /= 2; bucket += num_buckets if r > 0; n = |r|
//   otherwise:     n = max(-r, 0)        (keys after the query all share bucket 0)
//   max_exact = num_buckets / 2;  n < max_exact -> bucket + n
//   else bucket + min(num_buckets - 1,
//        max_exact + long(log(float(n) / max_exact) / log(max_distance / max_exact) * (num_buckets - max_exact)))
// Contract: the float32 arithmetic of HF (torch.log in float32, math.log in double rounded to
// float32 when it meets the tensor, truncation toward zero), so buckets match HF's. For the
// defaults (32, 128) this equals exact arithmetic for every |r| <= 5000, including the exact
// boundaries r = 16, 32, 64 (bidirectional: 8 + 2 log2(r/8) is an integer there). Buckets are in
// [0, num_buckets), nondecreasing in n within a direction, and constant for n >= max_distance.
[[nodiscard]] constexpr int t5_relative_position_bucket(std::int64_t relative_position, bool bidirectional,
                                                     int num_buckets = 32, int max_distance = 128) {
  if (num_buckets < 4 || max_distance <= 0)
    throw std::invalid_argument("t5_relative_position_bucket: need num_buckets >= 4 and max_distance > 0");
  // |r| saturates long before int64's edge; clamp so that negating INT64_MIN cannot overflow.
  const std::int64_t r = relative_position < -std::numeric_limits<std::int64_t>::max()
                             ? -std::numeric_limits<std::int64_t>::max()
                             : relative_position;
  int bucket = 0;
  int buckets = num_buckets;
  std::int64_t n = 0;
  if (bidirectional) {
    buckets /= 2;
    if (r > 0) bucket += buckets;
    n = r < 0 ? -r : r;
  } else {
    n = r < 0 ? -r : 0;
  }
  const int max_exact = buckets / 2;
  if (n < max_exact) return bucket + static_cast<int>(n);
  const float log_ratio = std::log(static_cast<float>(n) / static_cast<float>(max_exact));
  const auto log_range = static_cast<float>(std::log(static_cast<double>(max_distance) / max_exact));
  const float scaled = log_ratio / log_range * static_cast<float>(buckets - max_exact);
  const auto large = static_cast<std::int64_t>(max_exact) + static_cast<std::int64_t>(scaled);
  return bucket + static_cast<int>(large < buckets - 1 ? large : buckets - 1);
}

// T5's learned bias: a table [num_buckets, heads] (HF: nn.Embedding(num_buckets, n_heads)); the
// score of query position i and key position j gets table[bucket(j - i)][head]. T5 does not
// scale scores by 1/sqrt(d) (attention_options::scale = 1 reproduces it).
template <class T>
class t5_relative_bias {
 public:
  using value_type = T;
  t5_relative_bias(int heads, bool bidirectional, std::uint64_t seed, int num_buckets = 32, int max_distance = 128)
      : heads_(heads), bidirectional_(bidirectional), num_buckets_(num_buckets), max_distance_(max_distance) {
    check();
    std::mt19937_64 rng(seed);
    for (int i = 0; i < num_buckets * heads; ++i) table_.push_back(detail::seeded_table_entry<T>(rng));
  }
  // Given data, row-major [num_buckets, heads].
  t5_relative_bias(int heads, bool bidirectional, std::vector<T> table, int num_buckets = 32, int max_distance = 128)
      : heads_(heads), bidirectional_(bidirectional), num_buckets_(num_buckets), max_distance_(max_distance),
        table_(std::move(table)) {
    check();
    if (table_.size() != static_cast<std::size_t>(num_buckets) * static_cast<std::size_t>(heads))
      throw std::invalid_argument("t5_relative_bias: table needs num_buckets * heads values");
  }

  [[nodiscard]] int heads() const noexcept { return heads_; }
  [[nodiscard]] bool bidirectional() const noexcept { return bidirectional_; }
  [[nodiscard]] int num_buckets() const noexcept { return num_buckets_; }
  [[nodiscard]] int max_distance() const noexcept { return max_distance_; }

  [[nodiscard]] int bucket(std::int64_t relative_position) const {
    return t5_relative_position_bucket(relative_position, bidirectional_, num_buckets_, max_distance_);
  }
  [[nodiscard]] T bias(int head, std::int64_t query_position, std::int64_t key_position) const {
    if (head < 0 || head >= heads_)
      throw std::out_of_range("t5_relative_bias: head " + std::to_string(head) + " of " + std::to_string(heads_));
    const int b = bucket(key_position - query_position);
    return table_[static_cast<std::size_t>(b) * static_cast<std::size_t>(heads_) + static_cast<std::size_t>(head)];
  }
  [[nodiscard]] matrix<T> bias_matrix(int head, std::span<const std::int64_t> q_pos,
                                      std::span<const std::int64_t> k_pos) const {
    return detail::bias_matrix_of(*this, head, q_pos, k_pos);
  }
  [[nodiscard]] matrix<T> bias_matrix(int head, std::size_t n) const {
    const auto p = sequence_positions(n);
    return bias_matrix(head, p, p);
  }

 private:
  void check() const {
    if (heads_ <= 0) throw std::invalid_argument("t5_relative_bias: need heads > 0");
    (void)t5_relative_position_bucket(0, bidirectional_, num_buckets_, max_distance_);  // validates the rest
  }
  int heads_;
  bool bidirectional_;
  int num_buckets_;
  int max_distance_;
  std::vector<T> table_;
};

// ---------------------------------------------------------------------------------------------
// RoPE for attention: rotate row m of Q or K (one token, one head of m.cols = geometry.head_dim
// coordinates) by positions[m], with rope.hpp's kernel in Compute and cos/sin from `cs` (e.g.
// direct_angle<double>(cfg)). Apply it to Q and K between project() and
// scaled_dot_product_attention(); V is never rotated. Contract: rotate_heads' for each row.
template <class Compute, class T, cos_sin_source CosSin>
void rotate_rows(matrix<T>& m, std::span<const std::int64_t> positions, const rope_geometry& g, const CosSin& cs) {
  detail::check_rows_match(m.rows, positions.size(), "rotate_rows");
  g.check();
  if (m.cols != static_cast<std::size_t>(g.head_dim))
    throw std::invalid_argument("rotate_rows: rows hold " + std::to_string(m.cols) + " values, head_dim is " +
                                std::to_string(g.head_dim));
  for (std::size_t r = 0; r < m.rows; ++r) {
    const std::span<T> row = m.row(r);
    rotate_heads<Compute, T>(std::span<const T>(row), row, 1, g, positions[r], cs);
  }
}

}  // namespace ropecheck
