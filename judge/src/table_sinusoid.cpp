// judge/src/table_sinusoid.cpp — what a failing sinusoid's rows are (ropecheck/judge/table.hpp): hypotheses tried in
// order on every row inside the table, each a whole rule evaluated in long double under the claim's allowance
// (table_allowance.hpp 9), the first that explains every row named by what it changes:
//   the offset (positions_offset: every token at p + o'), the padding rule (positions_offset: left padding counted
//   or skipped against the claim), the layout (sinusoid_layout_wrong: interleaved vs concatenated, sin and cos
//   swapped), the frequencies (sinusoid_frequencies_wrong: fairseq's d/2 - 1 for the paper's d/2 or the reverse,
//   another base fitted from a band's slope), their combinations, and the precision an implementation lost
//   (positions_low_precision, inv_freq_low_precision, angle_low_precision, cos_sin_low_precision).
// Covered by tests/judge/table_test.cpp.
#include <algorithm>
#include <cmath>
#include <numbers>
#include <optional>
#include <string>
#include <vector>

#include "ropecheck/judge/classes.hpp"
#include "ropecheck/judge/sentence.hpp"
#include "table_internal.hpp"

namespace ropecheck::judge::detail {
namespace {

constexpr std::int64_t kOffsetScan = 64;  // offsets tried around the claim's and around the slowest band's estimate

std::string layout_words(sinusoid_layout l) {
  switch (l) {
    case sinusoid_layout::interleaved: return "interleaved (column 2i sin, 2i+1 cos: the paper's)";
    case sinusoid_layout::interleaved_cos_first: return "interleaved with cos first (column 2i cos, 2i+1 sin)";
    case sinusoid_layout::concatenated: return "concatenated [sin | cos] (fairseq's, tensor2tensor's, Marian's, Whisper's)";
    case sinusoid_layout::concatenated_cos_first: return "concatenated [cos | sin]";
  }
  return "?";
}

std::string denominator_words(double D, int width) {
  if (D == width / 2.0) return fmt("%g = d/2 (the paper's 2i/d)", D);
  if (D == width / 2.0 - 1) return fmt("%g = d/2 - 1 (fairseq's and tensor2tensor's log(base) / (half_dim - 1))", D);
  if (D == width) return fmt("%g = d (i/d: the 2 of 2i/d dropped)", D);
  if (D == width / 2.0 + 1) return fmt("%g = d/2 + 1", D);
  return fmt("%g", D);
}

// The phase of band b of row n under a layout.
double phase(const table_context& t, std::size_t n, sinusoid_layout l, int b) {
  const double* x = t.row(n);
  double s = 0, c = 0;
  for (int col = 0; col < t.c.width; ++col) {
    const sinusoid_column sc = column_of(l, t.c.width, col);
    if (sc.band != b) continue;
    (sc.is_sin ? s : c) = x[col];
  }
  return std::atan2(s, c);
}

// Band b's frequency fitted from its phase along the unpadded rows (increasing positions, unwrapped with the slope so
// far): nullopt without two rows one apart at the start.
std::optional<double> fit_frequency(const table_context& t, sinusoid_layout l, int b) {
  std::vector<std::pair<std::int64_t, double>> pts;
  for (const std::size_t n : t.inside)
    if (t.k_of(n) == 0) pts.emplace_back(t.e.positions[n], phase(t, n, l, b));
  std::sort(pts.begin(), pts.end());
  pts.erase(std::unique(pts.begin(), pts.end(), [](const auto& a, const auto& c) { return a.first == c.first; }), pts.end());
  if (pts.size() < 3 || pts[1].first - pts[0].first != 1) return std::nullopt;
  const auto wrap = [](double a) { return a - 2 * std::numbers::pi * std::nearbyint(a / (2 * std::numbers::pi)); };
  const std::int64_t p0 = pts[0].first;
  const double f0 = pts[0].second;
  double w = wrap(pts[1].second - f0);
  for (std::size_t i = 2; i < pts.size(); ++i) {
    const double dp = static_cast<double>(pts[i].first - p0);
    const double predicted = f0 + w * dp;
    const double unwrapped = predicted + wrap(pts[i].second - predicted);
    w = (unwrapped - f0) / dp;
  }
  return w;
}

// 3 significant digits (a base written in a config: 10000, 1e5, 500000).
double round_sig3(double x) {
  if (!(x > 0)) return x;
  const double e = std::pow(10.0, std::floor(std::log10(x)) - 2);
  return std::nearbyint(x / e) * e;
}

struct candidate {
  sinusoid_rule rule;
  std::vector<finding> findings;
};

void describe_changes(const table_context& t, const sinusoid_rule& h, std::vector<finding>& out) {
  const table_claim& c = t.c;
  const sinusoid_rule base = rule_of(c);
  if (h.layout != base.layout)
    out.push_back({classes::sinusoid_layout_wrong,
                   "the rows are " + layout_words(h.layout) + ", not the claim's " + layout_words(base.layout), 0.95});
  if (h.denominator != base.denominator)
    out.push_back({classes::sinusoid_frequencies_wrong,
                   "band i's frequency is base^(-i/D) with D " + denominator_words(h.denominator, c.width) + ", not the claim's " +
                       denominator_words(base.denominator, c.width),
                   0.9});
  if (h.base != base.base)
    out.push_back({classes::sinusoid_frequencies_wrong, fmt("every band fits base %.6g, not the claim's %.6g", h.base, base.base), 0.9});
  if (h.padding != base.padding)
    out.push_back({classes::positions_offset,
                   h.padding == padding_rule::counted
                       ? fmt("left padding is counted as positions: the first real token after k padding tokens reads row k + %lld, "
                             "where the claim skips padding (positions from the input ids or the mask: it reads row %lld)",
                             static_cast<long long>(h.offset), static_cast<long long>(base.offset))
                       : fmt("left padding is skipped (positions counted from the first real token), where the claim counts every "
                             "token from the sequence's start"),
                   0.85});
  if (h.offset != base.offset)
    out.push_back({classes::positions_offset,
                   fmt("every token reads the row of position p + %lld (offset %lld), not p + %lld: %s", static_cast<long long>(h.offset),
                       static_cast<long long>(h.offset), static_cast<long long>(base.offset),
                       h.offset < base.offset ? "indexed from 0 where the claim's positions start later (fairseq's padding_idx + 1, OPT's and BART's + 2)"
                                              : "positions shifted past the claim's"),
                   0.85});
  const auto dt = [](int d) { return d == 8 ? "bf16" : "fp16"; };
  if (h.angle_digits)
    out.push_back({classes::angle_low_precision,
                   fmt("position, frequency and their product are each rounded to %s before sin/cos", dt(h.angle_digits)), 0.8});
  else if (h.position_digits)
    out.push_back({classes::positions_low_precision,
                   fmt("positions are rounded to %s before the angle (position 4097 is 4096 in bf16)", dt(h.position_digits)), 0.8});
  else if (h.freq_digits)
    out.push_back({classes::inv_freq_low_precision, fmt("the frequencies are held in %s", dt(h.freq_digits)), 0.8});
  if (h.value_digits)
    out.push_back({classes::cos_sin_low_precision,
                   fmt("the table is held in %s (each value rounded to %d bits) where the rows' %s keeps it finer", dt(h.value_digits),
                       h.value_digits, t.e.dtype.c_str()),
                   0.8});
}

// The slowest band's estimate of the offset under a layout (|o| < pi base), from the unpadded row of the smallest position.
std::optional<std::int64_t> offset_estimate(const table_context& t, const sinusoid_rule& h) {
  std::optional<std::size_t> first;
  for (const std::size_t n : t.inside)
    if (t.k_of(n) == 0 && (!first || t.e.positions[n] < t.e.positions[*first])) first = n;
  if (!first) return std::nullopt;
  const int b = t.c.width / 2 - 1;
  const double w = std::exp(-(b / h.denominator) * std::log(h.base));
  const double q = phase(t, *first, h.layout, b) / w;
  return static_cast<std::int64_t>(std::llround(q)) - t.e.positions[*first];
}

bool fits(const table_context& t, const sinusoid_rule& h) { return fit_rule(t, h, 1.0).worst <= 1; }

// The offsets to try with a rule: around the claim's, and around the slowest band's estimate.
std::vector<std::int64_t> offsets_to_try(const table_context& t, const sinusoid_rule& h) {
  std::vector<std::int64_t> o;
  for (std::int64_t d = 1; d <= kOffsetScan; ++d) {
    o.push_back(t.c.offset + d);
    if (t.c.offset - d >= -kOffsetScan) o.push_back(t.c.offset - d);
  }
  if (const auto est = offset_estimate(t, h))
    for (std::int64_t d = -kOffsetScan; d <= kOffsetScan; ++d)
      if (std::abs(*est + d - t.c.offset) > kOffsetScan) o.push_back(*est + d);
  return o;
}

}  // namespace

rule_fit fit_rule(const table_context& t, const sinusoid_rule& h, double stop) {
  rule_fit f;
  // A precision hypothesis (a frequency, angle or position rounded) may miss 1% of the cells: where the kernel's fp32
  // value and the exact one straddle a rounding boundary of the 16-bit type (judge/src/pass_angle_precision.cpp asks
  // the same of RoPE's angle_low_precision).
  const std::size_t misses_allowed =
      (h.freq_digits || h.angle_digits || h.position_digits) ? t.inside.size() * static_cast<std::size_t>(t.c.width) / 100 : 0;
  const int half = t.c.width / 2;
  std::vector<long double> w(static_cast<std::size_t>(half));
  for (int b = 0; b < half; ++b) {
    long double x = std::exp(-(static_cast<long double>(b) / h.denominator) * std::log(static_cast<long double>(h.base)));
    w[static_cast<std::size_t>(b)] = round_digits(x, h.freq_digits);
  }
  for (const std::size_t n : t.inside) {
    const std::int64_t q = row_read(h.padding, h.offset, h.padding_row, t.e.positions[n], t.k_of(n));
    const bool pad = h.padding == padding_rule::skipped && t.e.positions[n] < t.k_of(n);
    const bool zero = pad && h.padding_row_zero;
    const long double qv = round_digits(static_cast<long double>(q), h.position_digits);
    const double* x = t.row(n);
    for (int col = 0; col < t.c.width; ++col) {
      const sinusoid_column sc = column_of(h.layout, t.c.width, col);
      long double val = 0, boundary = 0;
      if (!zero) {
        const long double phi = round_digits(qv * w[static_cast<std::size_t>(sc.band)], h.angle_digits);
        val = round_digits(sc.is_sin ? std::sin(phi) : std::cos(phi), h.value_digits);
        // A rounding the hypothesis adds sees the kernel's value, not the exact one: the two may round to neighbours,
        // one ulp of the rounded type apart. (A rounded frequency or product moves the angle by a whole ulp of it at such
        // a boundary: those cells are the misses fit_rule allows a precision hypothesis, below.)
        if (h.value_digits) boundary += std::ldexp(std::fabs(val), 1 - h.value_digits);
      }
      const double a = zero ? t.dmin / 2
                            : sinusoid_entry_allowance(t, q < 0 ? -q : q, sc.band, h.denominator, h.base, static_cast<double>(val), t.exact_angle) +
                                  static_cast<double>(boundary);
      double r = static_cast<double>(std::fabs(static_cast<long double>(x[col]) - val)) / a;
      // A real token that lands on a zeroed padding row (an offset hypothesis below fairseq's padding_idx + 1) reads
      // the zeros of a table built as fairseq builds it, or the sinusoid of one evaluated on the fly: either.
      if (!pad && h.padding_row_zero && q == h.padding_row) r = std::min(r, std::fabs(x[col]) / (t.dmin / 2));
      if (misses_allowed > 0 && r > 1 && f.misses < misses_allowed) {
        ++f.misses;
        continue;
      }
      if (r > f.worst || std::isnan(r)) {
        f.worst = std::isnan(r) ? INFINITY : r;
        f.worst_n = n;
        f.worst_col = col;
        if (stop > 0 && f.worst > stop) return f;
      }
    }
  }
  return f;
}

void diagnose_sinusoid(const table_context& t, table_verdict& v) {
  const table_claim& c = t.c;
  const sinusoid_rule base = rule_of(c);
  bool padded = false;
  for (const std::size_t n : t.inside) padded = padded || t.k_of(n) > 0;
  const auto found = [&](const sinusoid_rule& h) {
    std::vector<finding> f;
    describe_changes(t, h, f);
    v.findings.insert(v.findings.end(), f.begin(), f.end());
  };
  // The rules whose offset is then scanned: the claim's, its layouts, its frequencies (fitted or another
  // denominator), and their combinations.
  std::vector<sinusoid_rule> shapes{base};
  std::vector<sinusoid_layout> layouts{base.layout};
  for (auto l : {sinusoid_layout::interleaved, sinusoid_layout::concatenated, sinusoid_layout::interleaved_cos_first,
                 sinusoid_layout::concatenated_cos_first})
    if (l != base.layout) layouts.push_back(l);
  std::vector<std::pair<double, double>> freqs{{base.denominator, base.base}};
  for (const double D : {c.width / 2.0, c.width / 2.0 - 1, c.width / 2.0 + 1, static_cast<double>(c.width)})
    if (D != base.denominator && D > 0) freqs.emplace_back(D, base.base);
  if (base.base != 10000) freqs.emplace_back(base.denominator, 10000.0);
  for (const sinusoid_layout l : layouts) {
    const int b = c.width / 4 > 0 ? c.width / 4 : 1;
    if (const auto w = fit_frequency(t, l, b); w && *w > 0 && *w < 1) {
      const double fitted_base = std::pow(*w, -base.denominator / b);
      for (const double B : {round_sig3(fitted_base), fitted_base})
        if (std::isfinite(B) && B > 1 && std::fabs(B / base.base - 1) > 1e-9) freqs.emplace_back(base.denominator, B);
      const double D = b * std::log(base.base) / -std::log(*w);
      const double Dr = std::nearbyint(2 * D) / 2;
      if (std::isfinite(Dr) && Dr > 0 && Dr != base.denominator) freqs.emplace_back(Dr, base.base);
    }
  }
  for (const auto& [D, B] : freqs)
    for (const sinusoid_layout l : layouts) {
      sinusoid_rule h = base;
      h.layout = l;
      h.denominator = D;
      h.base = B;
      if (l == base.layout && D == base.denominator && B == base.base) continue;
      shapes.push_back(h);
    }
  // 1. The claim's shape with another padding rule, or another offset; 2. another shape, then with an offset.
  std::vector<sinusoid_rule> tries;
  for (const sinusoid_rule& s : shapes) {
    if (&s != &shapes.front()) tries.push_back(s);
    if (padded) {
      sinusoid_rule h = s;
      h.padding = s.padding == padding_rule::counted ? padding_rule::skipped : padding_rule::counted;
      if (h.padding == padding_rule::skipped && h.padding_row < 0) h.padding_row = std::max<std::int64_t>(0, h.offset - 1);
      tries.push_back(h);
    }
  }
  for (const sinusoid_rule& h : tries)
    if (h.layout == base.layout && h.denominator == base.denominator && h.base == base.base && fits(t, h)) return found(h);
  for (const std::int64_t o : offsets_to_try(t, base)) {
    sinusoid_rule h = base;
    h.offset = o;
    if (fits(t, h)) return found(h);
  }
  for (const sinusoid_rule& h : tries)
    if (fits(t, h)) return found(h);
  for (std::size_t i = 1; i < shapes.size(); ++i)
    for (const std::int64_t o : offsets_to_try(t, shapes[i])) {
      sinusoid_rule h = shapes[i];
      h.offset = o;
      if (fits(t, h)) return found(h);
    }
  // Precision: an implementation that lost bits where the claim keeps them.
  for (const int d : {8, 11}) {
    sinusoid_rule h = base;
    h.position_digits = d;
    if (fits(t, h)) return found(h);
    h.freq_digits = d;
    h.angle_digits = d;
    if (fits(t, h)) return found(h);
    h = base;
    h.freq_digits = d;
    if (fits(t, h)) return found(h);
    if (d >= t.digits) continue;  // a table rounded to the rows' own dtype is the claim's rounding
    h = base;
    h.value_digits = d;
    if (fits(t, h)) return found(h);
  }
}

}  // namespace ropecheck::judge::detail
