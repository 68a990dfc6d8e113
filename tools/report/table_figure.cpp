// tools/report/table_figure.cpp — see table_figure.hpp: the computation and its writers (CSV, summary.json, gnuplot,
// report.html).
#include "table_figure.hpp"

#include <Eigen/Core>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <stdexcept>

#include "output_common.hpp"
#include "plots.hpp"
#include "ropecheck/reference/reference.hpp"

namespace ropecheck::report {
namespace {

using detail::exact_number;
using detail::integer;

std::string quote(std::string_view s) {
  std::string q = "\"";
  for (const char c : s) {
    if (c == '"' || c == '\\') q += '\\';
    q += c;
  }
  return q + "\"";
}

std::vector<std::int64_t> positions_to(std::int64_t last) {
  std::vector<std::int64_t> out{0};
  for (int k = 0; (std::int64_t{1} << k) <= last; ++k) {
    out.push_back(std::int64_t{1} << k);
    const std::int64_t mid = std::llround(std::exp2(k + 0.5));
    if (mid <= last && mid > out.back()) out.push_back(mid);
  }
  if (out.back() != last) out.push_back(last);
  std::vector<std::int64_t> u;
  for (const std::int64_t p : out)
    if (u.empty() || p > u.back()) u.push_back(p);
  return u;
}

}  // namespace

std::string_view to_string(table_strategy s) noexcept {
  switch (s) {
    case table_strategy::float64_fp32: return "float64_fp32";
    case table_strategy::fp32: return "fp32";
    case table_strategy::fp32_bf16: return "fp32_bf16";
    case table_strategy::fp32_fp16: return "fp32_fp16";
  }
  return "?";
}

std::string_view source_of(table_strategy s) noexcept {
  switch (s) {
    case table_strategy::float64_fp32:
      return "angle in float64, table in fp32: transformers models/marian/modeling_marian.py MarianSinusoidalPositionalEmbedding, "
             "models/distilbert/modeling_distilbert.py _create_sinusoidal_embeddings";
    case table_strategy::fp32:
      return "frequency, angle and sin/cos in fp32 (a table or on the fly): models/m2m_100/modeling_m2m_100.py get_embedding, "
             "models/whisper/modeling_whisper.py sinusoids";
    case table_strategy::fp32_bf16: return "the fp32 table cast to bf16 (a bf16 model)";
    case table_strategy::fp32_fp16: return "the fp32 table cast to fp16 (an fp16 model)";
  }
  return "?";
}

double table_value_by(table_strategy s, const table_claim& c, std::int64_t q, int band, bool is_sin) noexcept {
  const double D = c.effective_denominator();
  if (s == table_strategy::float64_fp32) {
    const double a = static_cast<double>(q) / std::pow(c.base, band / D);
    return static_cast<double>(static_cast<float>(is_sin ? std::sin(a) : std::cos(a)));
  }
  // fairseq's order: emb = log(base) / D in fp32, exp(band * -emb), position * freq, each rounded in fp32
  const float emb = static_cast<float>(std::log(c.base) / D);
  const float w = std::exp(static_cast<float>(band) * -emb);
  const float a = static_cast<float>(q) * w;
  const float v = is_sin ? std::sin(a) : std::cos(a);
  if (s == table_strategy::fp32_bf16) return static_cast<double>(static_cast<float>(Eigen::bfloat16(v)));
  if (s == table_strategy::fp32_fp16) return static_cast<double>(static_cast<float>(Eigen::half(v)));
  return static_cast<double>(v);
}

table_figure table_errors(const table_claim& c, std::int64_t max_position) {
  check_table_claim(c);
  if (c.scheme != table_scheme::sinusoidal)
    throw std::invalid_argument("a learned table's values are its weights: there is no error against position to report; its door is "
                                "`ropecheck audit --table` (docs/tables.md)");
  table_figure f;
  f.claim = c;
  const int half = c.width / 2;
  std::vector<std::int64_t> qs;  // the rows of positions 0, 1, 2^k, 2^(k + 1/2), ..., max_position
  for (const std::int64_t p : positions_to(max_position)) qs.push_back(p + c.offset);
  for (const table_strategy st : table_strategies) f.series.push_back({st, {}});
  std::vector<reference::cos_sin_dd> ref(static_cast<std::size_t>(half));
  const double w_slow = std::pow(c.base, -(half - 1) / c.effective_denominator());
  for (const std::int64_t q : qs) {
    for (int b = 0; b < half; ++b) ref[static_cast<std::size_t>(b)] = reference::sinusoid_cos_sin(q, c.base, b, c.effective_denominator());
    for (table_series& s : f.series) {
      table_row row{q, 0, 0, 0};
      for (int col = 0; col < c.width; ++col) {
        const sinusoid_column sc = column_of(c.layout, c.width, col);
        const reference::dd exact = sc.is_sin ? ref[static_cast<std::size_t>(sc.band)].sin : ref[static_cast<std::size_t>(sc.band)].cos;
        const double e = std::fabs(static_cast<double>(static_cast<long double>(table_value_by(s.strategy, c, q, sc.band, sc.is_sin)) - exact.value()));
        if (e > row.max_abs_error) row.max_abs_error = e, row.worst_column = col;
        if (sc.band == half - 1) row.slow_band_tokens = std::max(row.slow_band_tokens, e / w_slow);
      }
      s.rows.push_back(row);
    }
  }
  return f;
}

int run_table_report(const table_claim& c, const std::string& family, std::int64_t max_position, const std::filesystem::path& folder,
                     const std::string& command, bool plots) {
  namespace fs = std::filesystem;
  const std::int64_t last = max_position > 0 ? max_position : c.rows > 0 ? c.last_position() : std::int64_t{1} << 17;
  const table_figure f = table_errors(c, last);
  std::printf("ropecheck report: %s%s, positions 0..%lld\n", describe(c).c_str(), family.empty() ? "" : (" (" + family + ")").c_str(),
              static_cast<long long>(last));
  detail::make_folder(folder);
  detail::make_folder(folder / "data");
  detail::make_folder(folder / "plots");
  std::string json = "{\n  \"command\": " + quote(command) + ",\n  \"table\": {\n    \"claim\": " + quote(describe(c)) +
                     ",\n    \"reference\": \"MPFR sinusoid (reference.hpp sinusoid_cos_sin)\",\n    \"strategies\": [\n";
  std::string rows_html;
  for (std::size_t i = 0; i < f.series.size(); ++i) {
    const table_series& s = f.series[i];
    std::string csv = "position,row,max_abs_error,worst_column,slow_band_tokens\n";
    table_row worst{};
    for (const table_row& r : s.rows) {
      csv += integer(r.q - c.offset) + ',' + integer(r.q) + ',' + exact_number(r.max_abs_error) + ',' + std::to_string(r.worst_column) + ',' +
             exact_number(r.slow_band_tokens) + '\n';
      if (r.max_abs_error >= worst.max_abs_error) worst = r;
    }
    const std::string name(to_string(s.strategy));
    detail::write_file(folder / "data" / ("table_" + name + ".csv"), csv);
    json += "      {\"name\": " + quote(name) + ", \"source\": " + quote(source_of(s.strategy)) + ", \"csv\": " +
            quote("data/table_" + name + ".csv") + ", \"max_abs_error\": " + exact_number(worst.max_abs_error) +
            ", \"at_position\": " + integer(worst.q - c.offset) + ", \"slow_band_tokens_at_end\": " +
            exact_number(s.rows.back().slow_band_tokens) + "}" + (i + 1 < f.series.size() ? ",\n" : "\n");
    std::printf("  %-13s max error %-12.6g at position %-8lld slowest band off by %.3g tokens at the end\n", name.c_str(),
                worst.max_abs_error, static_cast<long long>(worst.q - c.offset), s.rows.back().slow_band_tokens);
    rows_html += "<tr><td>" + name + "</td><td>" + std::string(source_of(s.strategy)) + "</td><td>" + detail::short_number(worst.max_abs_error) +
                 "</td><td>" + integer(worst.q - c.offset) + "</td><td>" + detail::short_number(s.rows.back().slow_band_tokens) + "</td></tr>\n";
  }
  detail::write_file(folder / "summary.json", json + "    ]\n  }\n}\n");
  static constexpr const char* colours[] = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e"};
  std::string gp = "# absolute sinusoid error vs position (ropecheck report, tools/report/table_figure.cpp)\n"
                   "set encoding utf8\nset datafile separator comma\nset grid\nset key outside right top vertical Left reverse box\n"
                   "set terminal svg size 960,540 enhanced font 'DejaVu Sans,12' background '#ffffff'\n"
                   "set output 'table.svg'\nset title 'absolute sinusoid: |row~ - row| vs position' noenhanced\n"
                   "set xlabel 'position'\nset ylabel 'max |value~ - value| over the columns' noenhanced\n"
                   "set logscale xy\nset format y '10^{%L}'\nFLOOR = 1e-12\ncy(v) = (v > FLOOR ? v : FLOOR)\ncx(p) = (p > 0.5 ? p : 0.5)\nplot \\\n";
  for (std::size_t i = 0; i < f.series.size(); ++i)
    gp += "  '../data/table_" + std::string(to_string(f.series[i].strategy)) + ".csv' skip 1 using (cx($1)):(cy($3)) with linespoints lc rgb '" +
          colours[i % 4] + "' lw 2 pt 7 ps 0.5 title " + quote(to_string(f.series[i].strategy)) + " noenhanced" +
          (i + 1 < f.series.size() ? ", \\\n" : "\n");
  gp += "unset output\n";
  detail::write_file(folder / "plots" / "table.gp", gp);
  std::string svg;
  if (plots) {
    const auto program = detail::find_program("gnuplot");
    if (!program)
      throw std::runtime_error("gnuplot not found: plots need the Debian package gnuplot-nox (or --no-plots); data and summary.json are written");
    const auto out = detail::run_program(*program, {"table.gp"}, folder / "plots");
    if (out.status != 0) throw std::runtime_error("gnuplot failed on plots/table.gp: " + detail::tail(out.output));
    svg = detail::read_file(folder / "plots" / "table.svg").value_or("");
    if (const auto p = svg.find("<svg"); p != std::string::npos) svg = svg.substr(p);
  }
  detail::write_file(folder / "report.html",
                     "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>ropecheck report: absolute sinusoid</title>"
                     "<style>body{font-family:sans-serif;max-width:1100px;margin:auto}td,th{border:1px solid #ccc;padding:3px 6px}"
                     "table{border-collapse:collapse}</style></head><body>\n<h1>ropecheck report</h1>\n<p><code>" + command +
                         "</code></p>\n<section id=\"table\"><h2>Absolute sinusoid error against position</h2>\n<p>Claim: " + describe(c) +
                         ". Each strategy's rows against the MPFR sinusoid; the last column is the slowest band's error in tokens "
                         "(its angle error over its frequency) at the last position.</p>\n" + svg +
                         "<table><tr><th>strategy</th><th>source</th><th>max error</th><th>at position</th><th>slowest band, tokens</th></tr>\n" +
                         rows_html + "</table></section></body></html>\n");
  std::printf("report: %s\n", (folder / "report.html").string().c_str());
  return 0;
}

}  // namespace ropecheck::report
