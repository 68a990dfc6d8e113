// Must not compile: positions held in bf16 (the bf16-positions bug: 257 becomes 256).
#include "ropecheck/convention.hpp"

using namespace ropecheck;
using bf16_positions = rope_convention<layout::half_split, 128, 128, 10000.0, scaling_kind::none, 1.0, 4096, bfloat16>;

int bands = bf16_positions::rotary_dim / 2;
