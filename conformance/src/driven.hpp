// conformance/src/driven.hpp — a user's kernel (ropecheck::conformance::kernel) with its options
// resolved: the convention it claims, the environment's overrides, and the binding the property
// drivers run (internal to the library).
#pragma once

#include <cstdint>
#include <string>

#include "judged_binding.hpp"
#include "ropecheck/conformance/kernel.hpp"
#include "ropecheck/judge/judge.hpp"

namespace ropecheck::conformance::detail {

struct resolved {
  rope_config declared;
  options opts;                      // with ROPECHECK_REFERENCE / ROPECHECK_STRICT applied
  judge::reference_kind reference = judge::reference_kind::exact;
  std::int64_t max_position = 0;     // the last position the kernel is asked for
  std::uint64_t seed = 0;
};

// Throws std::invalid_argument naming the adapter and what is wrong (convention() threw, a bad
// environment override, an option out of range).
[[nodiscard]] resolved resolve(const kernel& k);

// The kernel as the property drivers see it (one token per call; the inverse as apply at -p when
// the adapter does not honour call::inverse).
[[nodiscard]] test::driven_kernel driven(const kernel& k, const resolved& r);

// Where the test binary is, for replay lines ("<exe> --gtest_filter=...").
[[nodiscard]] std::string executable_path();

}  // namespace ropecheck::conformance::detail
