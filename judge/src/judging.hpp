// judge/src/judging.hpp — the per-element verdict (internal to ropecheck::judge). Covered by
// tests/judge/judge_test.cpp (Diagnose.Correct*Passes, .HfReferenceJudgesAgainstHfsOwnAngles,
// .GgmlReferenceJudgesAgainstGgmlsChain, .ToleranceOverride, .NonFiniteThreadsAndSubsets).
//
// y* = rope_reference::rotate(p, x) per head (exact to ~2^-100), and y^fw the framework's convention
// computed exactly (HF: fp32 p * fp32 inv_freq; ggml: its fp32 chain of products; then exact
// cos/sin). Each rotated-pair component's error is |y - y*| / (af (|x_a| + |x_b|)), a pass-through
// coordinate's |y - x| / |x_j|; the allowance per element is judge::allowance's (error_model.hpp).
// Pass iff every element is within its allowance under the chosen reference (and finite).
// Multi-threaded by token ranges, merged in token order: the verdict does not depend on threads.
// The dump is read through a dump_view, in its own storage type (the element loop is instantiated per
// type), chunk by chunk over each worker's tokens (dump_view::done_with after each chunk).
#pragma once

#include <cstdint>

#include "ropecheck/judge/allowance.hpp"
#include "ropecheck/judge/dump_view.hpp"
#include "ropecheck/judge/judge.hpp"
#include "ropecheck/reference/reference.hpp"

namespace ropecheck::judge::detail {

struct judging_frame {
  const dump_view& full;  // every token, where it lies
  const rope_config& claimed;
  const audit_options& opt;
  const reference::rope_reference& ref;  // the claimed convention's exact reference
  const judge::allowance& AL;            // exact-angle allowance (the flat override applied here)
  std::int64_t seq_len = 0;
};

struct judgement {
  bool needed_angle_allowance = false;  // some element needed more than the fixed (cos/sin + rotation) part
  std::int64_t non_finite = 0;          // NaN or infinite outputs
};

// Judges every element; fills v's pass, reference, framework, distances, worst ratio, tolerance and
// its reason, elements, per_position, and the non_finite finding.
[[nodiscard]] judgement judge_elements(const judging_frame& f, verdict& v);

// The relative-offset identity of the implied scores over d (the diagnosis subset): <y_m, y_n> must
// equal af^2 <x_m, R(n - m) x_n> per head. Pairs: every token with the token of the smallest position
// and with its predecessor in position order; at most 4 heads. Fills v.score_violation{,_m,_n}.
void score_violation(const dump& d, const rope_config& claimed, const reference::rope_reference& ref, verdict& v);

// Judged against a framework's convention but within the exact allowance: correct mathematics that
// does not reproduce the framework's fp32 angles. Adds not_hf_convention / not_ggml_convention and
// returns true when so.
bool not_framework_convention(const judging_frame& f, const judgement& j, verdict& v);

// The verdict of the judging alone (pass, worst ratio, distances), without a diagnosis, of d judged in
// the frame f: its claim, reference, allowance and sequence length (not d's own), without progress. A
// hypothesis tested on a transformed dump, or on a subset of it, so sees the schedule the claim was
// judged with (judge.cpp).
[[nodiscard]] verdict judge_in_frame(const judging_frame& f, const dump& d);
[[nodiscard]] verdict judge_in_frame(const judging_frame& f, const dump_view& d);

}  // namespace ropecheck::judge::detail
