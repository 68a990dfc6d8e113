// judge/src/table_past.cpp — the rows an implementation answered past its table's end (ropecheck/judge/table.hpp): an
// engine past its trained length must refuse; one that clamps to the last row, wraps around, evaluates the sinusoid
// past the end or reads outside the table computes wrong embeddings without an error. What was read is said in
// words for positions_past_table's sentence. Covered by tests/judge/table_test.cpp.
#include <cmath>
#include <optional>
#include <string>
#include <vector>

#include "ropecheck/judge/sentence.hpp"
#include "ropecheck/judge/table_allowance.hpp"
#include "table_internal.hpp"

namespace ropecheck::judge::detail {

namespace {

// Row n equals the claim's sinusoid evaluated at q (within the claim's allowance).
bool sinusoid_row_is(const table_context& t, std::size_t n, std::int64_t q) {
  const sinusoid_rule h = rule_of(t.c);
  const double* x = t.row(n);
  for (int col = 0; col < t.c.width; ++col) {
    const sinusoid_column sc = column_of(h.layout, t.c.width, col);
    const long double phi = static_cast<long double>(q) * std::exp(-(static_cast<long double>(sc.band) / h.denominator) *
                                                                   std::log(static_cast<long double>(h.base)));
    const double val = static_cast<double>(sc.is_sin ? std::sin(phi) : std::cos(phi));
    if (std::fabs(x[col] - val) > sinusoid_entry_allowance(t, q, sc.band, h.denominator, h.base, val, false)) return false;
  }
  return true;
}

bool zeros(const table_context& t, std::size_t n) {
  const double* x = t.row(n);
  for (int col = 0; col < t.c.width; ++col)
    if (x[col] != 0) return false;
  return true;
}

}  // namespace

std::string describe_past_rows(const table_context& t, const std::vector<std::size_t>& past) {
  const std::int64_t R = t.c.rows;
  std::size_t clamped = 0, wrapped = 0, extended = 0, zero = 0, other = 0;
  std::string other_text;
  for (const std::size_t n : past) {
    const std::int64_t q = claimed_row(t.c, t.e.positions[n], t.k_of(n));
    if (zeros(t, n)) {
      ++zero;
      continue;
    }
    if (t.c.scheme == table_scheme::sinusoidal) {
      if (sinusoid_row_is(t, n, R - 1)) ++clamped;
      else if (sinusoid_row_is(t, n, q % R)) ++wrapped;
      else if (sinusoid_row_is(t, n, q)) ++extended;
      else ++other;
      continue;
    }
    if (t.c.weights.empty()) {
      ++other;
      continue;
    }
    const auto r = matching_row(t, n, R - 1, 0);
    if (r && *r == R - 1) ++clamped;
    else if (r && *r == q % R) ++wrapped;
    else if (r) {
      ++other;
      if (other_text.empty()) other_text = fmt(" (position %lld read row %lld)", static_cast<long long>(t.e.positions[n]), static_cast<long long>(*r));
    } else {
      ++other;
    }
  }
  std::string s;
  const auto part = [&](std::size_t k, const std::string& what) {
    if (k) s += (s.empty() ? "" : "; ") + std::to_string(k) + " " + what;
  };
  part(clamped, fmt("clamped to the last row (row %lld)", static_cast<long long>(R - 1)));
  part(wrapped, fmt("wrapped around (row (p + offset) mod %lld)", static_cast<long long>(R)));
  part(extended, "the sinusoid evaluated past the table (a table this long was never trained or stored)");
  part(zero, "zeros");
  part(other, t.c.scheme == table_scheme::learned && !t.c.weights.empty() ? "no row of the table matches (read outside it?)" + other_text
                                                                           : "values of no row the claim can name");
  return s;
}

}  // namespace ropecheck::judge::detail
