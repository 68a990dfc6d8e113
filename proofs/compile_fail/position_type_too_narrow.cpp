// Must not compile: int16_t positions for a 131072-token context (positions past 32767 wrap).
#include <cstdint>

#include "ropecheck/convention.hpp"

using namespace ropecheck;
using long_context = rope_convention<layout::half_split, 128, 128, 500000.0, scaling_kind::none, 1.0, 131072, std::int16_t>;

long_context::position_type last_position = 131071;
