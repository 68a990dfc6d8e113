// tools/report/table_figure.hpp — the report's figure for an absolute sinusoid (table_claim.hpp): how far the rows an
// engine adds to the tokens are from the exact sinusoid, against position, for the strategies engines use, each
// emulated in its own dtype's arithmetic (round to nearest even):
//   float64_fp32  the angle in float64, the table stored in fp32: transformers models/marian/modeling_marian.py
//                 MarianSinusoidalPositionalEmbedding._init_weight and models/distilbert/modeling_distilbert.py
//                 _create_sinusoidal_embeddings (numpy float64, then torch.FloatTensor)
//   fp32          the frequency, the angle and sin/cos in fp32, stored fp32: models/m2m_100/modeling_m2m_100.py
//                 M2M100SinusoidalPositionalEmbedding.get_embedding (also XGLM's, Speech2Text's), models/whisper/
//                 modeling_whisper.py sinusoids; a sinusoid computed on the fly in fp32 does the same arithmetic
//   fp32_bf16     that fp32 table cast to bf16 (a bf16 model: the buffer's or the embedding weight's dtype)
//   fp32_fp16     the same in fp16
// The reference is the MPFR sinusoid (reference.hpp sinusoid_cos_sin), which shares no code or precision with them.
// Per position q (0, 1, then 2^k and round(2^(k + 1/2)) up to the table's last position, or --max-position): the
// worst |value~ - value| over the columns and its column, and the same in "tokens" for the slowest band: its angle
// error |value~ - value| over its frequency, the position an engine's row can no longer tell apart.
// Light header: no JSON.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "ropecheck/table_claim.hpp"

namespace ropecheck::report {

enum class table_strategy : std::uint8_t { float64_fp32, fp32, fp32_bf16, fp32_fp16 };
inline constexpr table_strategy table_strategies[] = {table_strategy::float64_fp32, table_strategy::fp32, table_strategy::fp32_bf16,
                                                      table_strategy::fp32_fp16};
[[nodiscard]] std::string_view to_string(table_strategy s) noexcept;
[[nodiscard]] std::string_view source_of(table_strategy s) noexcept;

// The value a strategy gives column (band, sin or cos) of the claim at position q.
[[nodiscard]] double table_value_by(table_strategy s, const table_claim& c, std::int64_t q, int band, bool is_sin) noexcept;

struct table_row {
  std::int64_t q = 0;
  double max_abs_error = 0;  // over the columns
  int worst_column = 0;
  double slow_band_tokens = 0;  // the slowest band's error over its frequency (tokens)
};
struct table_series {
  table_strategy strategy{};
  std::vector<table_row> rows;
};
struct table_figure {
  table_claim claim;
  std::vector<table_series> series;
};

// Throws std::invalid_argument for a learned claim (its values are its weights: nothing against position to measure).
[[nodiscard]] table_figure table_errors(const table_claim& c, std::int64_t max_position);

// Writes <folder>/data/table_<strategy>.csv, summary.json, plots/table.gp (+ .svg with gnuplot) and report.html, a line
// per strategy on standard output. Returns 0.
int run_table_report(const table_claim& c, const std::string& family, std::int64_t max_position, const std::filesystem::path& folder,
                     const std::string& command, bool plots);

}  // namespace ropecheck::report
