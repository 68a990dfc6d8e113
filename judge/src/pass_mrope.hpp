// judge/src/pass_mrope.hpp — M-RoPE in the judge (internal to ropecheck::judge; pass_mrope.cpp).
//
// A dump carries position rows [rows][tokens] (dump::position_rows). Text tokens have every row equal:
// M-RoPE is plain RoPE on them. Multimodal tokens (rows differ) are where the M-RoPE classes show:
//   mrope_rows_swapped    the dump passes when its rows are permuted (the engine fed h for t, ...)
//   mrope_text_positions  it passes when one row turns every band (image tokens at their text position)
//   mrope_section_wrong   it passes under another band-to-row split: the other kind with the claimed
//                         sections, or the contiguous / interleaved split fitted band by band from the
//                         implied angles (the row whose positions explain each band's angles best)
// Each hypothesis is re-judged with the claim's own allowance on the diagnosis subset; the one that
// passes is named, with its worst error/allowance and the claim's. When none passes but the text tokens
// fail too (a 1-D bug besides), a hypothesis is still named if it brings the multimodal tokens within
// what the text tokens reach under the claim. The 1-D classes are named from the text tokens, judged as
// plain RoPE (the claim with mrope none) by the whole 1-D judge.
#pragma once

#include <string>
#include <vector>

#include "judging.hpp"
#include "ropecheck/judge/judge.hpp"

namespace ropecheck::judge::detail {

struct mrope_frame {
  const judging_frame& jf;          // the full dump and the claim
  const dump& d;                    // the diagnosis subset
  bool pass = false;                // the verdict of the full dump
  bool needed_angle_allowance = false;
};

// Throws std::invalid_argument when the position rows do not fit the dump or the claim: sizes; rows
// that differ under a 1-D claim (names mrope and mrope_section); another row count than the claim's;
// positions not equal to row 0.
void check_position_rows(const dump& d, const rope_config& claimed);
// d with every row equal to its positions (text-only tokens under an M-RoPE claim).
[[nodiscard]] dump text_rows(const dump& d, const rope_config& claimed);
// Token indices whose rows are all equal (text) or not (multimodal).
[[nodiscard]] std::vector<int> text_tokens(const dump& d, bool text);

void diagnose_mrope(const mrope_frame& f, verdict& v);

// pass_mrope_fit.cpp: the contiguous split and the interleaved split (3 rows) whose band-to-row maps
// best explain the implied angles of the multimodal tokens `mm` of f.d: cost of band i on row r =
// sum over those tokens of wrap(arg g - q_r theta_i)^2, the split minimising the summed cost. Splits
// giving every band to one row are left out (that is mrope_text_positions). At most one of each kind.
[[nodiscard]] std::vector<rope_config> fitted_splits(const mrope_frame& f, const std::vector<int>& mm);

// A row for sentences: "the temporal row (row 0)", height, width for 3 rows (Qwen2-VL), else "row r".
[[nodiscard]] std::string row_name(int rows, int r);

}  // namespace ropecheck::judge::detail
