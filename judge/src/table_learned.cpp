// judge/src/table_learned.cpp — a learned table's rows (ropecheck/judge/table.hpp): the values against the weights the
// user gave (each rounded once into the rows' dtype, table_allowance.hpp 9), and on a failure the row each position
// read: one offset for every token (positions_offset), the padding counted or skipped against the claim
// (positions_offset), the weights held in bf16/fp16 (table_low_precision), other rows (positions_wrong).
// Covered by tests/judge/table_test.cpp.
#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "ropecheck/judge/classes.hpp"
#include "ropecheck/judge/sentence.hpp"
#include "ropecheck/judge/table_allowance.hpp"
#include "table_internal.hpp"

namespace ropecheck::judge::detail {
namespace {

// |x - w| / allowance over a row (w rounded to `digits` first when digits > 0), stopping above `stop`.
double row_ratio(const table_context& t, const double* x, std::int64_t r, int digits, double stop) {
  const double* w = t.c.weights.data() + static_cast<std::size_t>(r) * static_cast<std::size_t>(t.c.width);
  double worst = 0;
  for (int col = 0; col < t.c.width; ++col) {
    const double wv = digits > 0 ? static_cast<double>(round_digits(w[col], digits)) : w[col];
    const double ratio = std::fabs(x[col] - wv) / table_rounding_share(wv, t.uT, t.dmin);
    worst = std::max(worst, std::isnan(ratio) ? INFINITY : ratio);
    if (worst > stop) return worst;
  }
  return worst;
}

}  // namespace

// The row of the table the row n equals (within the allowance; the claimed row first), nullopt for none.
std::optional<std::int64_t> matching_row(const table_context& t, std::size_t n, std::int64_t first_try, int digits) {
  const double* x = t.row(n);
  if (first_try >= 0 && first_try < t.c.rows && row_ratio(t, x, first_try, digits, 1.0) <= 1) return first_try;
  for (std::int64_t r = 0; r < t.c.rows; ++r)
    if (r != first_try && row_ratio(t, x, r, digits, 1.0) <= 1) return r;
  return std::nullopt;
}

void judge_learned_values(const table_context& t, table_verdict& v) {
  if (t.c.weights.empty()) return;
  for (const std::size_t n : t.inside) {
    const std::int64_t q = claimed_row(t.c, t.e.positions[n], t.k_of(n));
    const double* x = t.row(n);
    const double* w = t.c.weights.data() + static_cast<std::size_t>(q) * static_cast<std::size_t>(t.c.width);
    for (int col = 0; col < t.c.width; ++col) {
      const double r = std::fabs(x[col] - w[col]) / table_rounding_share(w[col], t.uT, t.dmin);
      ++v.cells;
      if (r > v.worst_ratio || std::isnan(r)) {
        v.worst_ratio = std::isnan(r) ? INFINITY : r;
        v.worst_position = t.e.positions[n];
        v.worst_column = col;
      }
    }
  }
}

void diagnose_learned(const table_context& t, table_verdict& v) {
  if (t.c.weights.empty()) return;
  // The weights as the kernel may hold them: as given, then rounded to bf16 or fp16 (when the rows keep more).
  std::vector<int> precisions{0};
  for (const int d : {8, 11})
    if (d < t.digits) precisions.push_back(d);
  for (const int digits : precisions) {
    std::vector<std::int64_t> read(t.inside.size(), -1);
    bool all = true;
    for (std::size_t i = 0; i < t.inside.size() && all; ++i) {
      const std::size_t n = t.inside[i];
      const auto r = matching_row(t, n, claimed_row(t.c, t.e.positions[n], t.k_of(n)), digits);
      if (!r) all = false;
      else read[i] = *r;
    }
    if (!all) continue;
    if (digits > 0)
      v.findings.push_back({classes::table_low_precision,
                            fmt("every row is the table's row rounded to %s (%d bits) where the rows' %s keeps it finer", digits == 8 ? "bf16" : "fp16",
                                digits, t.e.dtype.c_str()),
                            0.8});
    // One offset for every token, or the padding rule swapped.
    std::map<std::int64_t, std::int64_t> deltas;
    bool padding_counted = true, padding_skipped = true;
    for (std::size_t i = 0; i < t.inside.size(); ++i) {
      const std::size_t n = t.inside[i];
      const std::int64_t p = t.e.positions[n], k = t.k_of(n);
      const std::int64_t claimed = claimed_row(t.c, p, k);
      if (!(t.c.padding == padding_rule::skipped && p < k)) ++deltas[read[i] - claimed];
      padding_counted = padding_counted && read[i] == row_read(padding_rule::counted, t.c.offset, t.c.padding_row, p, k);
      const std::int64_t prow = t.c.padding_row >= 0 ? t.c.padding_row : std::max<std::int64_t>(0, t.c.offset - 1);
      padding_skipped = padding_skipped && (p < k ? true : read[i] == row_read(padding_rule::skipped, t.c.offset, prow, p, k));
    }
    bool padded = false;
    for (const std::size_t n : t.inside) padded = padded || t.k_of(n) > 0;
    if (deltas.size() == 1 && deltas.begin()->first != 0) {
      const std::int64_t d = deltas.begin()->first;
      v.findings.push_back({classes::positions_offset,
                            fmt("every token reads row p + %lld (offset %lld), not the claim's p + %lld: %s", static_cast<long long>(t.c.offset + d),
                                static_cast<long long>(t.c.offset + d), static_cast<long long>(t.c.offset),
                                d < 0 ? "indexed without the table's offset (OPT's and BART's + 2, RoBERTa's padding_idx + 1)"
                                      : "positions shifted past the claim's"),
                            0.85});
    } else if (padded && t.c.padding == padding_rule::skipped && padding_counted) {
      v.findings.push_back({classes::positions_offset,
                            fmt("left padding is counted as positions: a real token after k padding tokens reads row k + p + %lld, where the "
                                "claim skips padding (create_position_ids_from_input_ids, the mask's cumsum)",
                                static_cast<long long>(t.c.offset)),
                            0.85});
    } else if (padded && t.c.padding == padding_rule::counted && padding_skipped) {
      v.findings.push_back({classes::positions_offset,
                            "left padding is skipped (positions from the first real token), where the claim counts every token from the "
                            "sequence's start",
                            0.85});
    } else if (!(deltas.size() == 1 && deltas.begin()->first == 0)) {
      std::size_t wrong = 0;
      std::int64_t first_p = -1, first_read = -1, first_claimed = -1;
      for (std::size_t i = 0; i < t.inside.size(); ++i) {
        const std::size_t n = t.inside[i];
        const std::int64_t claimed = claimed_row(t.c, t.e.positions[n], t.k_of(n));
        if (read[i] == claimed) continue;
        if (wrong++ == 0) first_p = t.e.positions[n], first_read = read[i], first_claimed = claimed;
      }
      v.findings.push_back({classes::positions_wrong,
                            fmt("%zu of %zu tokens read another row of the table (position %lld read row %lld, not %lld)", wrong, t.inside.size(),
                                static_cast<long long>(first_p), static_cast<long long>(first_read), static_cast<long long>(first_claimed)),
                            0.7});
    }
    return;
  }
}

}  // namespace ropecheck::judge::detail
