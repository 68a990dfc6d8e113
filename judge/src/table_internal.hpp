// judge/src/table_internal.hpp — the pieces of the table judge (ropecheck/judge/table.hpp), internal to
// ropecheck::judge:
//   table_judge.cpp     judge_table: the rows against the claim (the MPFR reference or the weights), the rows
//                       answered past the table's end, the refusals inside it
//   table_sinusoid.cpp  the hypotheses that name a sinusoid's bug (layout, frequencies, offset, padding, precision)
//   table_learned.cpp   the row each position read from a learned table's weights, and what it says
//   table_probe.cpp     make_table_probe
#pragma once

#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ropecheck/judge/table.hpp"

namespace ropecheck::judge::detail {

// The row a token reads (a sinusoid: the position it is evaluated at) under a padding rule and offset: i its index in
// its sequence, k the padding at the sequence's start. A padding token of a skipping rule reads padding_row.
[[nodiscard]] inline std::int64_t row_read(padding_rule rule, std::int64_t offset, std::int64_t padding_row, std::int64_t i,
                                           std::int64_t k) {
  if (rule == padding_rule::counted) return i + offset;
  return i < k ? padding_row : i - k + offset;
}
[[nodiscard]] inline std::int64_t claimed_row(const table_claim& c, std::int64_t i, std::int64_t k) {
  return row_read(c.padding, c.offset, c.padding_row, i, k);
}

// x rounded to nearest even at `digits` significant bits (bf16 8, fp16 11; no exponent range).
[[nodiscard]] inline long double round_digits(long double x, int digits) {
  if (digits <= 0 || x == 0 || !std::isfinite(x)) return x;
  int ex = 0;
  const long double mant = std::frexp(x, &ex);
  return std::ldexp(std::nearbyint(std::ldexp(mant, digits)), ex - digits);
}

// What the judge needs of the evidence and the claim, once.
struct table_context {
  const table_evidence& e;
  const table_claim& c;
  double uT = 0, dmin = 0;
  int digits = 24;
  bool exact_angle = false;                // --strict: the angle's fp32 formation is not allowed
  std::vector<std::size_t> inside;         // evidence rows whose claimed row is inside the table
  [[nodiscard]] std::int64_t k_of(std::size_t n) const { return e.left_padding.empty() ? 0 : e.left_padding[n]; }
  [[nodiscard]] const double* row(std::size_t n) const { return e.rows.data() + n * static_cast<std::size_t>(e.width); }
};

// One sinusoid, as a hypothesis: the rule and the roundings an implementation might add.
struct sinusoid_rule {
  sinusoid_layout layout = sinusoid_layout::interleaved;
  double denominator = 1, base = 10000;
  std::int64_t offset = 0;
  padding_rule padding = padding_rule::counted;
  std::int64_t padding_row = -1;
  bool padding_row_zero = false;
  int position_digits = 0, freq_digits = 0, angle_digits = 0, value_digits = 0;  // 0: not rounded
};
[[nodiscard]] sinusoid_rule rule_of(const table_claim& c);

// The largest |row - rule| / allowance over the rows inside the table (long double predictions; the claim's
// allowance), stopping at the first above `stop` when stop > 0. worst_n / worst_col: where.
struct rule_fit {
  double worst = 0;          // over the cells not counted as misses
  std::size_t misses = 0;    // cells a precision hypothesis left out (at most 1%)
  std::size_t worst_n = 0;
  int worst_col = 0;
};
[[nodiscard]] rule_fit fit_rule(const table_context& t, const sinusoid_rule& h, double stop);

// The allowance of one entry (table_allowance.hpp section 9) of band `band` at row q, value v.
[[nodiscard]] double sinusoid_entry_allowance(const table_context& t, std::int64_t q, int band, double denominator, double base, double v,
                                              bool exact_angle);

// On a failing sinusoid verdict: the findings of the first hypothesis explaining every row inside the table.
void diagnose_sinusoid(const table_context& t, table_verdict& v);
// On a failing learned verdict: which row each position read, and what that says.
void diagnose_learned(const table_context& t, table_verdict& v);
// The learned table's values against the rows inside the table (the weights rounded once into the dtype).
void judge_learned_values(const table_context& t, table_verdict& v);
// The row of the learned table that row n equals within its allowance (first_try first; the weights rounded to
// `digits` bits when > 0), nullopt for none (table_learned.cpp; also read by table_past.cpp).
[[nodiscard]] std::optional<std::int64_t> matching_row(const table_context& t, std::size_t n, std::int64_t first_try, int digits);
// What the rows answered past the table's end are (sinusoid: clamped, wrapped, evaluated past the end, zeros;
// learned: the row read), in words.
[[nodiscard]] std::string describe_past_rows(const table_context& t, const std::vector<std::size_t>& past);

}  // namespace ropecheck::judge::detail
