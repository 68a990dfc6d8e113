// judge/src/table_judge.cpp — judge_table (ropecheck/judge/table.hpp): the rows inside the table against the claim
// (a sinusoid's exact values from the MPFR reference, which shares no code or precision with what it checks; a
// learned table's weights), the rows answered past its end, the positions refused inside it. The diagnosis is
// table_sinusoid.cpp's and table_learned.cpp's.
#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>
#include <vector>

#include "ropecheck/judge/allowance.hpp"
#include "ropecheck/judge/bias_allowance.hpp"
#include "ropecheck/judge/classes.hpp"
#include "ropecheck/judge/sentence.hpp"
#include "ropecheck/judge/table_allowance.hpp"
#include "ropecheck/reference/reference.hpp"
#include "table_internal.hpp"

namespace ropecheck::judge {
namespace detail {

double sinusoid_entry_allowance(const table_context& t, std::int64_t q, int band, double denominator, double base, double v,
                                bool exact_angle) {
  return table_angle_share(q, band, denominator, base, exact_angle) + table_rounding_share(v, t.uT, t.dmin);
}

sinusoid_rule rule_of(const table_claim& c) {
  sinusoid_rule h;
  h.layout = c.layout;
  h.denominator = c.effective_denominator();
  h.base = c.base;
  h.offset = c.offset;
  h.padding = c.padding;
  h.padding_row = c.padding_row;
  h.padding_row_zero = c.padding_row_zero;
  return h;
}

}  // namespace detail

namespace {

using detail::table_context;

void check_evidence(const table_evidence& e, const table_claim& c) {
  const std::size_t n = e.positions.size();
  if (e.width <= 0) throw std::invalid_argument("table evidence: the rows' width must be positive");
  if (e.width != c.width)
    throw std::invalid_argument("table evidence: rows of width " + std::to_string(e.width) + ", the claim's table is " +
                                std::to_string(c.width) + " wide");
  if (e.rows.size() != n * static_cast<std::size_t>(e.width))
    throw std::invalid_argument("table evidence: " + std::to_string(e.rows.size()) + " values for " + std::to_string(n) +
                                " positions of width " + std::to_string(e.width) + " (rows must be positions x width)");
  if (!e.left_padding.empty() && e.left_padding.size() != n)
    throw std::invalid_argument("table evidence: left_padding has " + std::to_string(e.left_padding.size()) + " entries for " +
                                std::to_string(n) + " positions");
  for (std::size_t i = 0; i < n; ++i) {
    if (e.positions[i] < 0) throw std::invalid_argument("table evidence: position " + std::to_string(e.positions[i]) + " is negative");
    if (!e.left_padding.empty() && e.left_padding[i] < 0)
      throw std::invalid_argument("table evidence: left_padding " + std::to_string(e.left_padding[i]) + " is negative");
  }
  for (const std::int64_t p : e.refused)
    if (p < 0) throw std::invalid_argument("table evidence: refused position " + std::to_string(p) + " is negative");
}

// The sinusoid's values of every row inside the table against the MPFR reference.
void judge_sinusoid_values(const table_context& t, table_verdict& v, double& worst_exact) {
  const table_claim& c = t.c;
  const double D = c.effective_denominator();
  const int half = c.width / 2;
  std::vector<reference::cos_sin_dd> cs(static_cast<std::size_t>(half));
  for (const std::size_t n : t.inside) {
    const std::int64_t q = detail::claimed_row(c, t.e.positions[n], t.k_of(n));
    const bool zero = c.padding == padding_rule::skipped && c.padding_row_zero && t.e.positions[n] < t.k_of(n);
    if (!zero)
      for (int b = 0; b < half; ++b) cs[static_cast<std::size_t>(b)] = reference::sinusoid_cos_sin(q, c.base, b, D);
    const double* x = t.row(n);
    for (int col = 0; col < c.width; ++col) {
      const sinusoid_column sc = column_of(c.layout, c.width, col);
      const reference::dd ref = zero ? reference::dd{} : (sc.is_sin ? cs[static_cast<std::size_t>(sc.band)].sin : cs[static_cast<std::size_t>(sc.band)].cos);
      const double err = std::fabs(static_cast<double>(static_cast<long double>(x[col]) - ref.value()));
      const double a = zero ? t.dmin / 2 : detail::sinusoid_entry_allowance(t, q, sc.band, D, c.base, ref.hi, false);
      const double ae = zero ? t.dmin / 2 : detail::sinusoid_entry_allowance(t, q, sc.band, D, c.base, ref.hi, true);
      const double r = (t.exact_angle ? err / ae : err / a), re = err / ae;
      ++v.cells;
      worst_exact = std::max(worst_exact, re);
      if (r > v.worst_ratio || std::isnan(r)) {
        v.worst_ratio = std::isnan(r) ? INFINITY : r;
        v.worst_position = t.e.positions[n];
        v.worst_column = col;
      }
    }
  }
}

void add(table_verdict& v, const char* cls, std::string sentence, double confidence) {
  v.findings.push_back({cls, std::move(sentence), confidence});
}

}  // namespace

table_verdict judge_table(const table_evidence& e, const table_claim& claimed, const audit_options& opt) {
  check_table_claim(claimed);
  check_evidence(e, claimed);
  table_context t{e, claimed, 0, 0, 24, false, {}};
  const dtype_info dt = dtype_of(e.dtype);
  t.digits = dt.digits;
  t.uT = dt.u();
  t.dmin = denorm_min_of_digits(dt.digits);
  t.exact_angle = opt.strict;
  table_verdict v;
  std::vector<std::size_t> past;
  std::int64_t non_finite = 0;
  for (std::size_t n = 0; n < e.positions.size(); ++n) {
    const double* x = t.row(n);
    for (int col = 0; col < e.width; ++col) non_finite += std::isfinite(x[col]) ? 0 : 1;
    const std::int64_t q = detail::claimed_row(claimed, e.positions[n], t.k_of(n));
    if (claimed.rows > 0 && q >= claimed.rows)
      past.push_back(n);
    else
      t.inside.push_back(n);
  }
  double worst_exact = 0;
  if (claimed.scheme == table_scheme::sinusoidal) {
    judge_sinusoid_values(t, v, worst_exact);
    v.tolerance_reason = "error_model table section (table_allowance.hpp 9): the frequency and the angle formed in fp32 (" +
                         std::string(opt.strict ? "not allowed: --strict" : "allowed") + "), sin/cos in fp32, one rounding into " + e.dtype;
  } else {
    detail::judge_learned_values(t, v);
    worst_exact = v.worst_ratio;
    v.tolerance_reason = claimed.weights.empty()
                             ? "a learned table without its weights: no values judged, only the table's end"
                             : "error_model table section (table_allowance.hpp 9): the weights rounded once into " + e.dtype;
  }
  // Refusals inside the table: the table is shorter than the claim's (or the implementation fails where it must not).
  std::vector<std::int64_t> refused_inside;
  for (const std::int64_t p : e.refused)
    if (claimed.rows == 0 || claimed.row_of(p) < claimed.rows) refused_inside.push_back(p);
  v.past_rows = static_cast<std::int64_t>(past.size());
  const bool values_pass = v.worst_ratio <= 1 && non_finite == 0;
  v.pass = values_pass && past.empty() && refused_inside.empty();
  if (non_finite > 0)
    add(v, classes::non_finite, fmt("%lld entries of the rows are NaN or infinite", static_cast<long long>(non_finite)), 1.0);
  if (!past.empty()) {
    std::int64_t first = e.positions[past.front()];
    for (const std::size_t n : past) first = std::min(first, e.positions[n]);
    add(v, classes::positions_past_table,
        fmt("%lld rows answered for positions past the table's end (its %lld rows hold positions 0..%lld at offset %lld; from position "
            "%lld on) without an error: %s",
            static_cast<long long>(past.size()), static_cast<long long>(claimed.rows), static_cast<long long>(claimed.last_position()),
            static_cast<long long>(claimed.offset), static_cast<long long>(first), detail::describe_past_rows(t, past).c_str()),
        // First when the rows inside the table pass; after the diagnosis of rows that fail there (an offset that also
        // moves the end: OPT indexed from 0 answers position 128 from its row 128), which is the cause.
        values_pass ? 0.99 : 0.5);
  }
  if (!refused_inside.empty()) {
    std::string list;
    for (std::size_t i = 0; i < refused_inside.size() && i < 6; ++i) list += (i ? ", " : "") + std::to_string(refused_inside[i]);
    if (refused_inside.size() > 6) list += ", ... (" + std::to_string(refused_inside.size()) + " in all)";
    add(v, classes::unexplained,
        "refused position(s) " + list + " inside the claim's table (" +
            (claimed.rows > 0 ? "rows 0.." + std::to_string(claimed.rows - 1) + " at offset " + std::to_string(claimed.offset)
                              : std::string("a sinusoid without end")) +
            "): the table is shorter than claimed, or the call fails where it must answer",
        0.5);
  }
  bool strict_drift = false;
  if (non_finite == 0 && v.worst_ratio > 1 && opt.strict && claimed.scheme == table_scheme::sinusoidal) {
    table_context loose = t;
    loose.exact_angle = false;
    const detail::rule_fit f = detail::fit_rule(loose, detail::rule_of(claimed), 0);
    if (f.worst <= 1) {
      strict_drift = true;
      add(v, classes::angle_drift_fp32,
          fmt("--strict: the rows are within the fp32-angle allowance (%.3g of it) but %.3g of the exact-angle one", f.worst, v.worst_ratio),
          0.8);
    }
  }
  if (non_finite == 0 && v.worst_ratio > 1 && !strict_drift) {
    if (claimed.scheme == table_scheme::sinusoidal)
      detail::diagnose_sinusoid(t, v);
    else
      detail::diagnose_learned(t, v);
  }
  if (non_finite == 0 && claimed.scheme == table_scheme::sinusoidal) {
    if (v.pass && worst_exact > 1)
      add(v, classes::angle_drift_fp32,
          fmt("the rows drift up to %.3g of the exact-angle allowance (the angle formed in fp32: within its allowance; --strict fails it)",
              worst_exact),
          0.3);
  }
  if (!v.pass && v.findings.empty())
    add(v, classes::unexplained,
        fmt("row of position %lld, column %d is %.3g of its allowance off the claim (%s); no hypothesis explains every row",
            static_cast<long long>(v.worst_position), v.worst_column, v.worst_ratio, describe(claimed).c_str()),
        0.1);
  std::stable_sort(v.findings.begin(), v.findings.end(), [](const finding& a, const finding& b) { return a.confidence > b.confidence; });
  return v;
}

}  // namespace ropecheck::judge
