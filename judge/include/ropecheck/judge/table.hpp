// ropecheck/judge/table.hpp — the residual-stream schemes judged by their rows (docs/tables.md): a sinusoid (any of
// the layouts, denominators and offsets table_claim.hpp names) or a learned table, read back as the vectors an
// implementation adds to the tokens at given positions, including positions past the table's end.
//
// The evidence is one thing for every door (`audit --table` on a dump, Python's check_table): per token its index in
// its sequence, the padding before it, and the row the implementation gave; and the positions it refused. The verdict
// compares each row with the claim's (the sinusoid's exact values from the MPFR reference; a learned table's weight
// row) against the error model's allowance (table_allowance.hpp, section 9) and, on a failure, names the first
// hypothesis that explains every row: sinusoid_layout_wrong, sinusoid_frequencies_wrong, positions_offset (left
// padding counted or not among them), positions_past_table (rows answered past the end: clamped, wrapped or
// unknown), a precision class (positions_low_precision, angle_low_precision, cos_sin_low_precision for a sinusoid
// held in bf16/fp16, table_low_precision for a learned table's). Covered by tests/judge/table_test.cpp.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ropecheck/judge/judge.hpp"
#include "ropecheck/table_claim.hpp"

namespace ropecheck::judge {

struct table_evidence {
  std::string dtype;                       // the rows' dtype ("float32", "bfloat16", "float16", "float64")
  int width = 0;
  std::vector<std::int64_t> positions;     // per row: the token's index in its sequence (0 for the first token)
  std::vector<std::int64_t> left_padding;  // per row: the padding tokens at its sequence's start (empty: none)
  std::vector<double> rows;                // [positions.size()][width], widened exactly
  std::vector<std::int64_t> refused;       // positions asked alone and refused with an error (past the table: right)
};

struct table_verdict {
  bool pass = false;
  double worst_ratio = 0;           // the largest |row - claim| / allowance over the rows inside the table
  std::int64_t worst_position = 0;  // its token position
  int worst_column = 0;
  std::int64_t cells = 0;           // entries judged
  std::int64_t past_rows = 0;       // rows answered for positions past the table (each a failure)
  std::vector<finding> findings;    // most important first (a pass may carry angle_drift_fp32)
  std::string tolerance_reason;     // the allowance in words (table_allowance.hpp, section 9)
};

// The probe of a table claim: the positions an implementation is asked for (docs/tables.md): 0 .. 63, the offset's
// boundary, a geometric run to the last row (or to 2^16 for a sinusoid without end), the last row itself, and,
// for a table with an end, three positions past it (asked one by one: each must be refused).
struct table_probe {
  std::vector<std::int64_t> positions;  // inside the table, increasing
  std::vector<std::int64_t> past;       // past the table's end (empty: no end)
  std::int64_t padded_length = 0;       // the ids form: one batch of two sequences of this many tokens,
  std::int64_t left_padding = 0;        //   the second left-padded by this many (a claim that counts positions
                                        //   from the ids; 0 otherwise)
};
[[nodiscard]] table_probe make_table_probe(const table_claim& c);

// The verdict of the evidence against the claim. Throws std::invalid_argument when the evidence does not fit
// (rows not width x positions, a width other than the claim's, left_padding of another length).
[[nodiscard]] table_verdict judge_table(const table_evidence& e, const table_claim& claimed, const audit_options& opt = {});

}  // namespace ropecheck::judge
