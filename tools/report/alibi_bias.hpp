// tools/report/alibi_bias.hpp — the report's ALiBi figure: how far the bias an engine adds to the scores is from
// the claim's exact bias, against the integer the engine multiplies the slope by (a key position or a distance),
// for the strategies engines use, each emulated in its own dtype's arithmetic (round to nearest even).
//
// Strategies (the name is the CSV's file stem, data/alibi_bias_<name>.csv):
//   tensor_fp32  HF BLOOM build_alibi_tensor (transformers models/bloom/modeling_bloom.py): slopes in fp32
//                (torch.pow of an fp32 base), arange_tensor = (attention_mask.cumsum(-1) - 1) * mask, an integer
//                tensor; alibi = slopes[..., None] * arange_tensor promotes to fp32: fp32(fp32(s) * n), the key
//                position form (+slope n). In an fp32 model the .to(dtype) keeps it.
//   tensor_bf16  the same tensor after build_alibi_tensor's .to(dtype) in a bf16 model: bf16(fp32(fp32(s) * n)).
//   kernel_fp32  the slope times an integer index inside the attention kernel, in fp32: flash-attention's
//                csrc/flash_attn/src/alibi.h apply_alibi (`alibi_slope_unscaled * col_idx`, float times int:
//                the key column, key position form) and vLLM's paged attention (csrc/attention/
//                attention_kernels.cuh: `qk += alibi_slope * (token_idx - seq_len + 1)`, float times int: the
//                distance to the last query, relative form). Both are fp32(fp32(s) * x); x is what differs.
//   kernel_bf16  the same product in bf16 arithmetic: bf16(bf16(s) * bf16(x)), HF Falcon's build_alibi_tensor
//                (models/falcon/modeling_falcon.py: `slopes[..., None].bfloat16() * arange_tensor`, a bf16 tensor
//                times an integer tensor promotes to bf16: the integer is cast to bf16, the product rounded to
//                bf16; 8 x 8 significant bits are exact in the fp32 the op computes in, so one rounding).
//
// The exact bias is s x in long double, s the claim's slope (claimed_slopes: a double within 2^-53 of the rule's
// value, or its bf16 rounding under slopes_bf16): s has 53 significant bits and x <= 2^20 has 21, so s x needs 74
// and long double's 64 leave a relative error <= 2^-64, 2^40 below fp32's rounding (2^-24), the finest strategy
// checked. MPFR is not needed: the reference shares no precision with fp32 or bf16.
//
// Positions x: 0, 1, then two per octave (2^k and round(2^(k + 1/2))) up to 2^20 (alibi_positions). Per x and
// strategy: the worst |bias~ - s x| over the heads held, its head, and how many heads give x and x - 1 the same
// bias~ (neighbouring keys indistinguishable; the exact biases differ by s). The reading aid is the bias spacing
// between neighbouring keys, the slope: an error >= s / 2 can swap or merge neighbours.
//
// Light header: no JSON.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "ropecheck/bias_claim.hpp"

namespace ropecheck::report {

enum class alibi_strategy : std::uint8_t { tensor_fp32, tensor_bf16, kernel_fp32, kernel_bf16 };
inline constexpr alibi_strategy alibi_strategies[] = {alibi_strategy::tensor_fp32, alibi_strategy::tensor_bf16,
                                                      alibi_strategy::kernel_fp32, alibi_strategy::kernel_bf16};
[[nodiscard]] std::string_view to_string(alibi_strategy s) noexcept;
[[nodiscard]] std::string_view source_of(alibi_strategy s) noexcept;  // one line: engine, file, function

// bf16 and fp32 round to nearest even of a finite double (fp32: one cast; bf16: bias_claim.hpp's round_to_bf16).
[[nodiscard]] double round_to_fp32(double v) noexcept;

// The bias strategy s gives slope `slope` (the claim's, in double) at integer x, as the engine computes it.
[[nodiscard]] double alibi_bias_by(alibi_strategy s, double slope, std::int64_t x) noexcept;

// 0, 1, then 2^k and round(2^(k + 1/2)) for k >= 0, up to and including 2^log2_max (sorted, unique).
[[nodiscard]] std::vector<std::int64_t> alibi_positions(int log2_max = 20);

struct alibi_bias_row {
  std::int64_t x = 0;
  double max_abs_error = 0;   // max over heads of |bias~(x) - s x|
  int worst_head = 0;         // the held head (0-based, within the kernel's heads) of that max
  double worst_slope = 0;     // its slope s
  int merged_heads = 0;       // heads with bias~(x) == bias~(x - 1) (x >= 1): neighbouring keys share a value
};

struct alibi_bias_series {
  alibi_strategy strategy{};
  std::vector<alibi_bias_row> rows;  // one per position
};

struct alibi_bias_result {
  bias_claim claim;
  std::vector<double> slopes;  // claimed_slopes(claim.alibi)
  std::vector<alibi_bias_series> series;  // in alibi_strategies' order
};

// Throws std::invalid_argument (validate) for an invalid claim, and for a T5 claim (no slope to measure).
[[nodiscard]] alibi_bias_result alibi_bias_errors(const bias_claim& claim, const std::vector<std::int64_t>& positions);

// Writers (deterministic bytes: shortest round-trip numbers, fixed order).
[[nodiscard]] std::string alibi_bias_csv(const alibi_bias_series& s, const alibi_bias_result& r);
[[nodiscard]] std::string alibi_bias_summary_json(const alibi_bias_result& r);  // the summary's "alibi_bias" block
[[nodiscard]] std::string alibi_bias_gnuplot(const alibi_bias_result& r);       // plots/alibi_bias.gp body
[[nodiscard]] std::string alibi_bias_html_section(const alibi_bias_result& r, const std::string& inline_svg);

// Writes <folder>/data/alibi_bias_<strategy>.csv, summary.json ({"claim", "alibi_bias"}), plots/alibi_bias.gp
// (+ .svg when plots and gnuplot is found; a missing gnuplot throws after the data is written, as write_report)
// and report.html. Returns the files written, relative to folder.
std::vector<std::filesystem::path> write_alibi_report(const alibi_bias_result& r, const std::filesystem::path& folder,
                                                      const std::string& command, bool plots = true,
                                                      const std::string& gnuplot = "gnuplot");

// The report command's ALiBi branch: the figure of `claim` at alibi_positions(20), a line per strategy (its worst
// error and where) on standard output, the files written to `folder`. Returns 0; throws as the functions above.
int run_alibi_report(const bias_claim& claim, const std::filesystem::path& folder, const std::string& command, bool plots);

}  // namespace ropecheck::report
