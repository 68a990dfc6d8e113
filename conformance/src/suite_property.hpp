// conformance/src/suite_property.hpp — one property run the suite's way on a user's kernel (internal): the
// suite's seed, RC_PARAMS' parameters and reproduce entries, the adapter's max_success, RapidCheck silent,
// and the drift rule of `ropecheck audit --plugin` (conformance/drivers/drift_run.hpp).
#pragma once

#include <string>

#include "drift_run.hpp"
#include "driven.hpp"

namespace ropecheck::conformance::detail {

// `id` names the property in reproduce strings (the GoogleTest test id when there is one).
[[nodiscard]] test::drift_outcome run_suite_property(const test::named_property& p, const test::driven_kernel& d,
                                                     const resolved& r, const std::string& id);

// A failed run in lines: the property's message, the shrunk counterexample (nonzero coordinates), and the
// replay line when there is a reproduce string.
[[nodiscard]] std::string failure_lines(const test::property_outcome& o, const std::string& test_id);

}  // namespace ropecheck::conformance::detail
