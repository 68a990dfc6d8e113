// Property 3: attention without position information is permutation-equivariant, and every
// positional scheme breaks that — which the suite must be able to find.
//
//   Attn(P X) = P Attn(X)            for every permutation P of the tokens (rows of X)
//   S(P X)    = P S(X) P^T           the scores
//
// Error model (attention.hpp's contract, u = u_T, gamma_n = n u / (1 - n u)). Permuting the rows
// of X permutes the rows of Q, K, V exactly (each row is its own dot products, in the same order),
// and each score s_ij is the dot product of the same two rows in the same order: so the scores,
// their row maxima and every e_ij = exp(s_ij - m_i) are the same numbers on both sides, only
// permuted — S(PX) = P S(X) P^T holds bit for bit. What a permutation reorders is the sums over
// the keys j: the softmax denominator D_i = sum_j e_ij and the output o_ik = sum_j w_ij v_jk.
// Let w*_ij = e_ij / D_i and o*_ik = sum_j w*_ij v_jk in exact arithmetic, from the computed e_ij;
// o* is the same on both sides because exact sums do not depend on order. On either side:
//   D~ = D (1 + delta), |delta| <= gamma_{N-1}      (N - 1 additions of positive terms)
//   w~ = e / D~ (1 + eps), |eps| <= u                so |w~ - w*| <= a w*,  a = (u + gamma_{N-1}) / (1 - gamma_{N-1})
//   o~ = sum_j w~_j v_j in any order:  |o~ - sum_j w~_j v_j| <= gamma_N sum_j |w~_j v_j|
// hence |o~ - o*| <= (a + gamma_N (1 + a)) sum_j w*_j |v_jk| <= (a + gamma_N (1 + a)) max_j |v_jk|,
// and the two sides differ by at most twice that. Results among the subnormals lose the relative
// bound: each of the <= 2N roundings per entry may be off by half the subnormal spacing instead,
// which adds 2 N denorm_min (1 + max |v|) for both sides together. Nothing here is tuned.
//
// Inputs: X = k / 64 with |k| <= 255 and W = k / 256 with |k| <= 64, exact in bf16 and every wider
// type, small enough that scores are O(1) (a saturated softmax would hide a position effect),
// N in 2..8 tokens, d in 4..16. The positional schemes shift scores by O(1), far above the bound;
// RapidCheck then shrinks a failure to a smallest input that still exceeds it, so a shrunk bf16 or
// fp16 counterexample may sit just above the bound — still a proof, since the bound is rigorous.
#include <gtest/gtest.h>
#include <rapidcheck.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <iomanip>
#include <iostream>
#include <limits>
#include <memory>
#include <numeric>
#include <sstream>
#include <string>
#include <vector>

#include "properties/framework.hpp"
#include "ropecheck/angle.hpp"
#include "ropecheck/attention.hpp"
#include "ropecheck/positional.hpp"
#include "ropecheck/rope.hpp"
#include "ropecheck/scalar.hpp"

namespace ropecheck {
namespace {

// One drawn case, held as integers so that it prints exactly and converts exactly to every T.
struct attention_case {
  int n = 0;                     // tokens
  int d = 0;                     // d_model = d_head = d_v
  std::vector<int> x;            // X = x / 64, n x d row-major
  std::vector<int> wq, wk, wv;   // W = w / 256, d x d row-major
  std::vector<int> perm;         // row i of PX is row perm[i] of X
};

void show_rows(const char* name, const std::vector<int>& v, int rows, int cols, std::ostream& os) {
  os << "\n      " << name << " = [";
  for (int r = 0; r < rows; ++r) {
    os << (r ? "; " : "");
    for (int c = 0; c < cols; ++c) os << (c ? " " : "") << v[static_cast<std::size_t>(r * cols + c)];
  }
  os << "]";
}

// RapidCheck prints a counterexample through showValue (found by argument-dependent lookup).
void showValue(const attention_case& c, std::ostream& os) {
  os << "N=" << c.n << " d=" << c.d << " perm=[";
  for (std::size_t i = 0; i < c.perm.size(); ++i) os << (i ? " " : "") << c.perm[i];
  os << "] (row i of PX is row perm[i] of X)";
  show_rows("64 X", c.x, c.n, c.d, os);
  show_rows("256 Wq", c.wq, c.d, c.d, os);
  show_rows("256 Wk", c.wk, c.d, c.d, os);
  show_rows("256 Wv", c.wv, c.d, c.d, os);
}

// Integers in [-k_max, k_max], shrinking towards 0 (RapidCheck's inRange shrinks towards its lower
// end): 0, 1, -1, 2, -2, ... Their spread grows with RapidCheck's size, so small values come first.
rc::Gen<int> centred(int k_max) {
  return rc::gen::map(rc::gen::inRange(0, 2 * k_max + 1), [](int z) { return z % 2 == 1 ? (z + 1) / 2 : -(z / 2); });
}

// The shape and the permutation ignore the size (resize to RapidCheck's nominal 100): every
// case may have 8 tokens and any permutation, from the first case on.
rc::Gen<int> shape_in(int lo, int hi) { return rc::gen::resize(100, rc::gen::inRange(lo, hi + 1)); }

rc::Gen<attention_case> gen_attention_case() {
  return rc::gen::exec([] {
    attention_case c;
    c.n = *shape_in(2, 8);
    c.d = *shape_in(4, 16);
    const auto nd = static_cast<std::size_t>(c.n * c.d);
    const auto dd = static_cast<std::size_t>(c.d * c.d);
    c.x = *rc::gen::container<std::vector<int>>(nd, centred(255));
    c.wq = *rc::gen::container<std::vector<int>>(dd, centred(64));
    c.wk = *rc::gen::container<std::vector<int>>(dd, centred(64));
    c.wv = *rc::gen::container<std::vector<int>>(dd, centred(64));
    // Fisher-Yates with j_i drawn from [i, n): all j_i = i is the identity, where shrinking heads,
    // so a shrunk counterexample is a permutation with as few swaps as the failure allows.
    c.perm.resize(static_cast<std::size_t>(c.n));
    std::iota(c.perm.begin(), c.perm.end(), 0);
    for (int i = 0; i + 1 < c.n; ++i)
      std::swap(c.perm[static_cast<std::size_t>(i)], c.perm[static_cast<std::size_t>(*shape_in(i, c.n - 1))]);
    return c;
  });
}

template <class T>
matrix<T> as_matrix(const std::vector<int>& k, int rows, int cols, long double scale) {
  matrix<T> m(static_cast<std::size_t>(rows), static_cast<std::size_t>(cols));
  for (std::size_t i = 0; i < k.size(); ++i) m.values[i] = scalar_traits<T>::narrow(k[i] / scale);  // exact
  return m;
}

template <class T>
matrix<T> permute_rows(const matrix<T>& x, const std::vector<int>& perm) {
  matrix<T> px(x.rows, x.cols);
  for (std::size_t i = 0; i < x.rows; ++i)
    for (std::size_t c = 0; c < x.cols; ++c) px(i, c) = x(static_cast<std::size_t>(perm[i]), c);
  return px;
}

// The ways position can enter one attention head.
enum class scheme { none, causal_mask, rope, sinusoidal, learned_absolute, alibi, t5_bias };

const char* to_string(scheme s) {
  switch (s) {
    case scheme::none: return "no position, no mask";
    case scheme::causal_mask: return "causal mask";
    case scheme::rope: return "RoPE (half-split, base 1e4, direct_angle<double>)";
    case scheme::sinusoidal: return "sinusoidal absolute (Vaswani 3.5)";
    case scheme::learned_absolute: return "learned absolute table";
    case scheme::alibi: return "ALiBi, symmetric -m|i-j|, slope 1/2";
    case scheme::t5_bias: return "T5 bidirectional bucket bias";
  }
  return "?";
}

template <class T>
struct head_run {
  attention_result<T> r;
  matrix<T> v;  // the values the output averaged: what the tolerance scales with
};

// Attention of the tokens X, in their order (token m at position m), under scheme s.
template <class T>
head_run<T> attend(scheme s, const matrix<T>& x, const attention_head<T>& w) {
  const std::size_t n = x.rows;
  const int d = static_cast<int>(x.cols);
  const auto positions = sequence_positions(n);
  const std::uint64_t table_seed = test::detail::suite_seed();
  matrix<T> xs = x;
  attention_options<T> opt;
  matrix<T> bias;
  switch (s) {
    case scheme::none: break;
    case scheme::causal_mask: opt.mask = attention_mask::causal; break;
    case scheme::sinusoidal: sinusoidal_encoding<T>(d).add_to(xs); break;
    case scheme::learned_absolute: ropecheck::learned_absolute<T>(8, d, table_seed).add_to(xs); break;
    case scheme::alibi:
      // Head 0 of 8 (slope 1/2); the symmetric form, so that no mask is needed and the position
      // bias alone breaks the symmetry. (It commutes with the reversal i -> N-1-i only.)
      bias = ropecheck::alibi<T>(8, alibi_form::symmetric).bias_matrix(0, n);
      opt.bias = bias.values;
      break;
    case scheme::t5_bias:
      bias = t5_relative_bias<T>(1, /*bidirectional=*/true, table_seed).bias_matrix(0, n);
      opt.bias = bias.values;
      opt.scale = 1.0L;  // T5 does not scale its scores
      break;
    case scheme::rope: break;
  }
  projections<T> p = project(xs, w);
  if (s == scheme::rope) {
    rope_config cfg;
    cfg.head_dim = d;
    cfg.rotary_dim = d - d % 2;
    cfg.pair_layout = layout::half_split;
    const direct_angle<double> cs(cfg);
    rotate_rows<T>(p.q, positions, rope_geometry::of(cfg), cs);
    rotate_rows<T>(p.k, positions, rope_geometry::of(cfg), cs);
  }
  auto r = scaled_dot_product_attention(p.q, p.k, p.v, opt);
  return {std::move(r), std::move(p.v)};
}

long double gamma_of(int n, long double u) { return n * u / (1.0L - n * u); }

template <class T>
std::string hex(T v) {
  std::ostringstream s;
  s << std::hexfloat << scalar_traits<T>::widen(v) << std::defaultfloat << " (" << scalar_traits<T>::widen(v) << ")";
  return s.str();
}

// Attn(PX) = P Attn(X) within the error model above, under scheme s. If `worst` is given, it
// receives the largest gap seen, in units of the bound (how much of the bound rounding used).
template <class T>
auto output_equivariance(scheme s, std::shared_ptr<long double> worst = nullptr) {
  return [s, worst] {
    const attention_case c = *gen_attention_case();
    const auto x = as_matrix<T>(c.x, c.n, c.d, 64.0L);
    const attention_head<T> w{as_matrix<T>(c.wq, c.d, c.d, 256.0L), as_matrix<T>(c.wk, c.d, c.d, 256.0L),
                              as_matrix<T>(c.wv, c.d, c.d, 256.0L)};
    const auto of_px = attend(s, permute_rows(x, c.perm), w);  // Attn(PX)
    const auto of_x = attend(s, x, w);                          // Attn(X), compared as P Attn(X)

    const long double u = unit_roundoff<T>();
    const int n = c.n;
    const long double a = (u + gamma_of(n - 1, u)) / (1.0L - gamma_of(n - 1, u));
    const long double per_side = a + gamma_of(n, u) * (1.0L + a);
    const long double tiny = scalar_traits<T>::widen(std::numeric_limits<T>::denorm_min());
    for (std::size_t k = 0; k < of_x.v.cols; ++k) {
      long double v_max = 0;
      for (const auto* v : {&of_x.v, &of_px.v})
        for (std::size_t j = 0; j < v->rows; ++j) v_max = std::max(v_max, std::fabs(scalar_traits<T>::widen((*v)(j, k))));
      const long double tol = 2.0L * per_side * v_max + 2.0L * n * tiny * (1.0L + v_max);
      for (std::size_t i = 0; i < static_cast<std::size_t>(n); ++i) {
        const T lhs = of_px.r.output(i, k);
        const T rhs = of_x.r.output(static_cast<std::size_t>(c.perm[i]), k);
        const long double gap = std::fabs(scalar_traits<T>::widen(lhs) - scalar_traits<T>::widen(rhs));
        if (worst && gap <= tol) *worst = std::max(*worst, gap / tol);
        if (!(gap <= tol)) {
          std::ostringstream m;
          m << "Attn(PX) != P Attn(X) in " << scalar_name<T>() << " with " << to_string(s) << ": output row " << i
            << " column " << k << ": Attn(PX) = " << hex(lhs) << ", (P Attn(X)) = " << hex(rhs) << ", gap "
            << static_cast<double>(gap) << " > tolerance " << static_cast<double>(tol) << " ("
            << static_cast<double>(gap / tol) << " times the error model's bound)";
          RC_FAIL(m.str());
        }
      }
    }
  };
}

// S(PX) = P S(X) P^T bit for bit: the same dot products in the same order (see the header).
template <class T>
auto score_equivariance() {
  return [] {
    const attention_case c = *gen_attention_case();
    const auto x = as_matrix<T>(c.x, c.n, c.d, 64.0L);
    const attention_head<T> w{as_matrix<T>(c.wq, c.d, c.d, 256.0L), as_matrix<T>(c.wk, c.d, c.d, 256.0L),
                              as_matrix<T>(c.wv, c.d, c.d, 256.0L)};
    const auto of_px = attend(scheme::none, permute_rows(x, c.perm), w);
    const auto of_x = attend(scheme::none, x, w);
    for (std::size_t i = 0; i < static_cast<std::size_t>(c.n); ++i)
      for (std::size_t j = 0; j < static_cast<std::size_t>(c.n); ++j) {
        const T lhs = of_px.r.scores(i, j);
        const T rhs = of_x.r.scores(static_cast<std::size_t>(c.perm[i]), static_cast<std::size_t>(c.perm[j]));
        if (scalar_traits<T>::bits(lhs) != scalar_traits<T>::bits(rhs)) {
          std::ostringstream m;
          m << "S(PX) != P S(X) P^T in " << scalar_name<T>() << " at (" << i << ", " << j << "): " << hex(lhs)
            << " vs " << hex(rhs);
          RC_FAIL(m.str());
        }
      }
  };
}

// ---------------------------------------------------------------------------------------------

template <class T>
class PermutationEquivariance : public ::testing::Test {};
template <class T>
class PositionBreaksPermutationEquivariance : public ::testing::Test {};
using ScalarTypes = ::testing::Types<float, double, long double, bfloat16, float16>;
struct ScalarNames {
  template <class T>
  static std::string GetName(int) {
    std::string s(scalar_name<T>());
    std::replace(s.begin(), s.end(), ' ', '_');
    return s;
  }
};
TYPED_TEST_SUITE(PermutationEquivariance, ScalarTypes, ScalarNames);
TYPED_TEST_SUITE(PositionBreaksPermutationEquivariance, ScalarTypes, ScalarNames);

template <class T>
std::string property_id(const char* what) {
  return std::string("equivariance/") + what + "/" + std::string(scalar_name<T>());
}

TYPED_TEST(PermutationEquivariance, attention_without_position_or_mask_commutes_with_every_permutation) {
  using T = TypeParam;
  const auto worst = std::make_shared<long double>(0.0L);
  ROPECHECK_EXPECT_PROPERTY(property_id<T>("output"), output_equivariance<T>(scheme::none, worst));
  std::cout << "[ropecheck] " << property_id<T>("output") << ": largest |Attn(PX) - P Attn(X)| was "
            << static_cast<double>(*worst) << " of the error model's bound\n";
}

TYPED_TEST(PermutationEquivariance, scores_without_position_or_mask_are_permuted_on_both_sides_bit_for_bit) {
  using T = TypeParam;
  ROPECHECK_EXPECT_PROPERTY(property_id<T>("scores"), score_equivariance<T>());
}

// The same property with a positional scheme switched on must fail, and the suite must say so
// with a shrunk counterexample: a property suite that cannot see position is no check of it.
template <class T>
void expect_the_suite_finds_a_counterexample(scheme s, const char* id_part) {
  const std::string id = property_id<T>(id_part);
  const auto outcome = test::check_property(id, output_equivariance<T>(s), /*quiet=*/true);
  EXPECT_FALSE(outcome.passed) << id << ": " << to_string(s) << " did not break equivariance in "
                               << outcome.successes << " cases";
  // A failure for another reason (an exception, giving up) would not be the counterexample sought.
  EXPECT_NE(outcome.description.find("Attn(PX) != P Attn(X)"), std::string::npos) << outcome.report();
  std::cout << "[ropecheck] " << id << ": the suite finds the counterexample, as it must (seed " << outcome.seed
            << ", after " << outcome.successes << " passing cases)\n  " << outcome.description
            << "\n  shrunk counterexample:\n"
            << outcome.counterexample << "  reproduce with: RC_PARAMS=\"" << outcome.reproduce << "\"\n";
}

TYPED_TEST(PositionBreaksPermutationEquivariance, a_causal_mask_breaks_it_and_the_suite_finds_a_counterexample) {
  expect_the_suite_finds_a_counterexample<TypeParam>(scheme::causal_mask, "causal_mask");
}
TYPED_TEST(PositionBreaksPermutationEquivariance, rope_breaks_it_and_the_suite_finds_a_counterexample) {
  expect_the_suite_finds_a_counterexample<TypeParam>(scheme::rope, "rope");
}
TYPED_TEST(PositionBreaksPermutationEquivariance, a_sinusoidal_encoding_breaks_it_and_the_suite_finds_a_counterexample) {
  expect_the_suite_finds_a_counterexample<TypeParam>(scheme::sinusoidal, "sinusoidal");
}
TYPED_TEST(PositionBreaksPermutationEquivariance, a_learned_absolute_table_breaks_it_and_the_suite_finds_a_counterexample) {
  expect_the_suite_finds_a_counterexample<TypeParam>(scheme::learned_absolute, "learned_absolute");
}
TYPED_TEST(PositionBreaksPermutationEquivariance, an_alibi_bias_breaks_it_and_the_suite_finds_a_counterexample) {
  expect_the_suite_finds_a_counterexample<TypeParam>(scheme::alibi, "alibi");
}
TYPED_TEST(PositionBreaksPermutationEquivariance, a_t5_relative_bias_breaks_it_and_the_suite_finds_a_counterexample) {
  expect_the_suite_finds_a_counterexample<TypeParam>(scheme::t5_bias, "t5_bias");
}

}  // namespace
}  // namespace ropecheck
