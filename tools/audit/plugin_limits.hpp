// tools/audit/plugin_limits.hpp — what a kernel behind the plugin door accepts (plugin.h ABI 2:
// max_position, negative_positions, supports_inverse, position_rows; plugin_loader.hpp kernel_limits)
// applied to the probe and to the property run, as the conformance suite applies its adapters'
// options (conformance/src/judge_probe.cpp probe_for, conformance/src/driven.cpp driven,
// conformance/src/properties.cpp). Internal to the plugin audit; each piece is one call from
// plugin_probe.cpp / plugin_audit.cpp.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "plugin_loader.hpp"
#include "ropecheck/judge/probe.hpp"

namespace ropecheck::test {
struct driven_kernel;  // conformance/drivers/judged_binding.hpp
}

namespace ropecheck::audit {

// The probe a kernel with limits `l` is asked.
struct limited_probe {
  judge::probe_set set;  // the tokens asked (M-RoPE: positions row 0, set.position_rows every row)
  std::vector<std::int64_t> skipped;  // probe positions not asked (past max_position), ascending
  std::string note;                   // one sentence: which were skipped and why ("" when none)
};

// make_probe's set for `declared`, then:
//   * M-RoPE (declared.position_rows() > 1): multimodal tokens after the dense text tokens 0..63, laid
//     out as transformers lays out an image and a video (models/qwen2_vl/modeling_qwen2_vl.py,
//     Qwen2VLModel.get_rope_index: temporal st (+ frame), height st + row, width st + column; the text
//     after them continues past their largest position, which the probe's next text position 248 is):
//     an image of 1 x 8 x 8 patches at st = 64, a video of 2 x 4 x 4 at st = 72; a fourth row (XD-RoPE)
//     gets st + row + column (a probe choice: any pattern unlike the other rows tells the rows apart).
//     Text tokens have every row equal. Their inputs come from make_probe with another seed.
//   * max_position > 0: every token with a position (any row) past it is dropped (probe_for's rule).
// declared_by: where the kernel said its max_position, as the note names it (the plugin's field by default).
[[nodiscard]] limited_probe limit_probe(const judge::probe_set& probe, const rope_config& declared,
                                        const plugin::kernel_limits& l,
                                        std::string_view declared_by = "ropecheck_convention.max_position");

// "positions 65536..16777224 (12 of the probe's) were not asked: past the kernel's max_position 8191
// (ropecheck_convention.max_position)": skipped listed as ranges of consecutive probe positions, at most
// max_listed_runs of them (a longer list: its first runs, how many more and the last position; the caller keeps
// the full list in its JSON as positions_not_asked); the parenthesis is declared_by.
inline constexpr std::size_t max_listed_runs = 6;
[[nodiscard]] std::string skipped_note(const std::vector<std::int64_t>& skipped, std::int64_t max_position,
                                       std::string_view declared_by = "ropecheck_convention.max_position");

// Why `property` is not run on a kernel with limits `l` (nullopt: it runs): the inverse property
// when R(p)^T cannot be asked (neither supports_inverse nor negative_positions), as the conformance
// suite skips it.
[[nodiscard]] std::optional<std::string> property_skip(std::string_view property, const plugin::kernel_limits& l);

// The property run's options from the limits: max_position (within the dtype's own limit already
// set), negative_positions, has_inverse. (R(p)^T without supports_inverse is apply at -p, which the
// loader does: plugin_loader.hpp apply_rows_raw.)
void apply_limits(test::driven_kernel& k, const plugin::kernel_limits& l);

}  // namespace ropecheck::audit
