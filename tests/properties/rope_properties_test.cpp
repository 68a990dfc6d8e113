// Properties 1, 2 and 4 of the suite, for every correct implementation (every storage/compute
// pairing and angle strategy real kernels use) under every scaling rule and layout.
#include <gtest/gtest.h>
#include <rapidcheck.h>

#include <cctype>
#include <map>
#include <random>
#include <stdexcept>
#include <string>

#include "framework.hpp"
#include "rope_properties.hpp"
#include "rope_under_test.hpp"

namespace ropecheck::test {
namespace {

struct case_param {
  named_config nc;
  std::size_t index;
  std::string label;
  std::string impl_name;  // implementations(nc)[index].name, checked when the case runs
};
void PrintTo(const case_param& c, std::ostream* os) { *os << c.label; }

// Implementations are built once per config (each holds an MPFR reference).
const std::vector<rope_under_test>& implementations(const named_config& nc) {
  static std::map<std::string, std::vector<rope_under_test>> cache;
  auto it = cache.find(nc.name);
  if (it == cache.end()) it = cache.emplace(nc.name, correct_implementations(nc)).first;
  return it->second;
}

// Registered in every test process: the implementations' names come from the first config's list
// (correct_implementations builds the same list, in the same order, for every config; each case
// checks its own when it runs), so only the config a process runs builds its MPFR references.
std::vector<case_param> all_cases() {
  std::vector<case_param> out;
  const auto sweep = rule_sweep();
  std::vector<std::string> names;
  for (const auto& impl : implementations(sweep.front())) names.push_back(impl.name);
  for (const auto& nc : sweep) {
    for (std::size_t i = 0; i < names.size(); ++i) {
      std::string label = nc.name + "__" + names[i];
      for (auto& ch : label)
        if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
      out.push_back({nc, i, label, names[i]});
    }
  }
  return out;
}

class RopeKernelProperty : public ::testing::TestWithParam<case_param> {
 protected:
  const rope_under_test& impl() const {
    const auto& impls = implementations(GetParam().nc);
    if (GetParam().index >= impls.size() || impls[GetParam().index].name != GetParam().impl_name)
      throw std::logic_error(GetParam().label + ": the implementations of " + GetParam().nc.name +
                             " are not those of the first config (all_cases registers by its names)");
    return impls[GetParam().index];
  }
  std::string id(const char* property) const { return std::string(property) + "/" + GetParam().label; }
};

TEST_P(RopeKernelProperty, rotation_matches_the_mpfr_reference_within_the_error_model) {
  ROPECHECK_EXPECT_PROPERTY(id("rotation_matches_reference"), rotation_matches_reference(impl()));
}
TEST_P(RopeKernelProperty, rotation_preserves_the_norm_of_every_pair) {
  ROPECHECK_EXPECT_PROPERTY(id("rotation_preserves_norms"), rotation_preserves_norms(impl()));
}
TEST_P(RopeKernelProperty, inverse_rotation_undoes_the_rotation) {
  ROPECHECK_EXPECT_PROPERTY(id("inverse_rotation_undoes_rotation"), inverse_rotation_undoes_rotation(impl()));
}
TEST_P(RopeKernelProperty, rotations_compose_additively_including_negative_shifts) {
  ROPECHECK_EXPECT_PROPERTY(id("rotations_compose_additively"), rotations_compose_additively(impl()));
}
TEST_P(RopeKernelProperty, the_materialised_rotation_matrix_is_orthogonal) {
  // Each case checks the whole head_dim x head_dim matrix at one position (only the position is
  // drawn), so 20 positions per 100 cases of the other properties.
  ROPECHECK_EXPECT_PROPERTY_CASES(id("materialised_matrix_is_orthogonal"), 20, materialised_matrix_is_orthogonal(impl()));
}
TEST_P(RopeKernelProperty, scores_depend_only_on_the_relative_offset) {
  ROPECHECK_EXPECT_PROPERTY(id("relative_offset_identity_holds"), relative_offset_identity_holds(impl()));
}
TEST_P(RopeKernelProperty, scores_are_invariant_under_a_common_shift) {
  ROPECHECK_EXPECT_PROPERTY(id("scores_are_shift_invariant"), scores_are_shift_invariant(impl()));
}

INSTANTIATE_TEST_SUITE_P(AllConventions, RopeKernelProperty, ::testing::ValuesIn(all_cases()),
                         [](const auto& c) { return c.param.label; });  // not `info`: the macro's own

}  // namespace
}  // namespace ropecheck::test

namespace ropecheck::test {
namespace {

// Property 2's violation as a function of position, printed for the implementations people ship
// (Llama-3.1-8B convention), each row checked against its bound: |<R(m)q, R(n)k> - af<q, R(n-m)k>|
// relative to sum |q_j k_j|, at m = 2^j and n = m - 1000.
TEST(RelativeOffsetViolation, grows_with_position_as_the_error_model_says_and_stays_within_it) {
  const named_config nc{"llama3-8b", *find_preset("llama3-8b")};
  const auto impls = correct_implementations(nc);
  std::mt19937_64 rng(detail::suite_seed());
  std::uniform_int_distribution<int> k(-255, 255);
  std::vector<long double> q(128), kk(128);
  for (auto& v : q) v = k(rng) / 64.0L;
  for (auto& v : kk) v = k(rng) / 64.0L;
  std::printf("\n%-44s", "violation / sum|q k| at m =");
  for (int j = 10; j <= 30; j += 4) std::printf(" %9s", ("2^" + std::to_string(j)).c_str());
  std::printf("\n");
  for (const auto& impl : impls) {
    if (impl.name.find("mpfr") != std::string::npos) continue;
    std::printf("%-44s", impl.name.c_str());
    for (int j = 10; j <= 30; j += 4) {
      const std::int64_t m = std::int64_t{1} << j, n = m - 1000;
      if (m > impl.max_position) {
        std::printf(" %9s", "-");
        continue;
      }
      const auto lhs = rotated_score(impl, q, kk, m, n);
      const auto kr = rotated(impl, kk, 1, n - m);
      long double rhs = 0, scale = 0;
      for (std::size_t i = 0; i < q.size(); ++i) {
        rhs += q[i] * kr[i];
        scale += std::fabs(q[i] * kk[i]);
      }
      const long double v = std::fabs(lhs.score - impl.attention_factor() * rhs);
      std::printf(" %9.2Le", v / scale);
      // lhs.bound covers the left side; the right side at offset -1000 is small by comparison.
      EXPECT_LE(v, 2 * lhs.bound + 1e-3L * scale) << impl.name << " at m = 2^" << j;
    }
    std::printf("\n");
  }
}

}  // namespace
}  // namespace ropecheck::test
