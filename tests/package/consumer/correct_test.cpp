// The consumer's correct kernel in every type it instantiates: every test passes (at most a drift warning).
#include <ropecheck/conformance.hpp>

#include "adapters.hpp"

ROPECHECK_CONFORMANCE(correct, rope_adapter<float>, rope_adapter<double, double>, rope_adapter<ropecheck::bfloat16>,
                      rope_adapter<ropecheck::float16>);
