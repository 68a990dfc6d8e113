// judge/src/output_order.hpp — judging a claim with half-split outputs (DeepSeek's
// rope_interleave): see output_order.cpp.
#pragma once

#include "ropecheck/judge/dump_view.hpp"
#include "ropecheck/judge/judge.hpp"

namespace ropecheck::judge::detail {

// d with y permuted from the half-split output order back to the input's interleaved order.
[[nodiscard]] dump to_input_order(const dump& d, int rotary_dim);
// The same as a view: y read through the permutation (no copy).
[[nodiscard]] dump_view to_input_order(const dump_view& d, int rotary_dim);

// The verdict for claimed.outputs == half_split (audit() calls it first).
[[nodiscard]] verdict audit_half_split_outputs(const dump_view& d, const rope_config& claimed, const audit_options& opt);

}  // namespace ropecheck::judge::detail
