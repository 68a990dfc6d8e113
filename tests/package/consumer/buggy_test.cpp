// The consumer's kernel with each bug engines ship: the check script (tests/package/check_package.cmake)
// reads this binary's JUnit XML and requires the right tests to fail with the right bug class.
#include <ropecheck/conformance.hpp>

#include "adapters.hpp"

using consumer::bug;
ROPECHECK_CONFORMANCE(bf16_positions, rope_adapter<float, float, bug::bf16_positions>);
ROPECHECK_CONFORMANCE(fast_sincos, rope_adapter<float, float, bug::fast_sincos>);
ROPECHECK_CONFORMANCE(hard_coded_base, rope_adapter<float, float, bug::hard_coded_base>);
ROPECHECK_CONFORMANCE(decode_ahead, rope_adapter<float, float, bug::decode_ahead>);
