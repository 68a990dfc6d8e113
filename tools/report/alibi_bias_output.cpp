// tools/report/alibi_bias_output.cpp — the writers of the ALiBi bias figure (alibi_bias.hpp): CSV per strategy,
// summary.json's "alibi_bias" block, the gnuplot script and report.html's section.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <stdexcept>

#include "alibi_bias.hpp"
#include "output_common.hpp"
#include "plots.hpp"

namespace ropecheck::report {
namespace {

using detail::exact_number;
using detail::integer;

std::string quote(std::string_view s) {  // a JSON / gnuplot double-quoted string (the texts here are ASCII)
  std::string q = "\"";
  for (const char c : s) {
    if (c == '"' || c == '\\') q += '\\';
    q += c;
  }
  return q + "\"";
}

double min_slope(const alibi_bias_result& r) { return *std::min_element(r.slopes.begin(), r.slopes.end()); }
double max_slope(const alibi_bias_result& r) { return *std::max_element(r.slopes.begin(), r.slopes.end()); }

// The first x at which the strategy's worst error reaches half that head's slope (its neighbouring keys can swap
// or merge); -1 if never.
std::int64_t first_half_slope(const alibi_bias_series& s) {
  for (const auto& row : s.rows)
    if (row.max_abs_error > 0 && row.max_abs_error >= row.worst_slope / 2) return row.x;
  return -1;
}
std::int64_t first_merged(const alibi_bias_series& s) {
  for (const auto& row : s.rows)
    if (row.merged_heads > 0) return row.x;
  return -1;
}

}  // namespace

std::string alibi_bias_csv(const alibi_bias_series& s, const alibi_bias_result& r) {
  (void)r;
  std::string out = "x,max_abs_error,worst_head,worst_slope,half_slope,merged_heads\n";
  for (const auto& row : s.rows)
    out += integer(row.x) + ',' + exact_number(row.max_abs_error) + ',' + std::to_string(row.worst_head) + ',' +
           exact_number(row.worst_slope) + ',' + exact_number(row.worst_slope / 2) + ',' +
           std::to_string(row.merged_heads) + '\n';
  return out;
}

std::string alibi_bias_summary_json(const alibi_bias_result& r) {
  std::string j = "{\n    \"claim\": " + quote(describe(r.claim)) + ",\n";
  j += "    \"reference\": \"slope x in long double (64-bit significand)\",\n";
  j += "    \"slope_min\": " + exact_number(min_slope(r)) + ",\n    \"slope_max\": " + exact_number(max_slope(r)) + ",\n";
  j += "    \"strategies\": [\n";
  for (std::size_t i = 0; i < r.series.size(); ++i) {
    const auto& s = r.series[i];
    const auto worst = std::max_element(s.rows.begin(), s.rows.end(),
                                        [](const auto& a, const auto& b) { return a.max_abs_error < b.max_abs_error; });
    j += "      {\"name\": " + quote(to_string(s.strategy)) + ", \"source\": " + quote(source_of(s.strategy)) +
         ", \"csv\": " + quote("data/alibi_bias_" + std::string(to_string(s.strategy)) + ".csv") +
         ", \"max_abs_error\": " + exact_number(worst == s.rows.end() ? 0.0 : worst->max_abs_error) +
         ", \"at_x\": " + integer(worst == s.rows.end() ? 0 : worst->x) +
         ", \"first_x_error_ge_half_slope\": " + integer(first_half_slope(s)) +
         ", \"first_x_neighbours_merged\": " + integer(first_merged(s)) + "}" + (i + 1 < r.series.size() ? ",\n" : "\n");
  }
  return j + "    ]\n  }";
}

std::string alibi_bias_gnuplot(const alibi_bias_result& r) {
  static constexpr const char* colours[] = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e"};
  double smallest = INFINITY;
  for (const auto& s : r.series)
    for (const auto& row : s.rows)
      if (row.max_abs_error > 0) smallest = std::min(smallest, row.max_abs_error);
  smallest = std::min(smallest, min_slope(r) / 2);
  const double floor = std::pow(10.0, std::floor(std::log10(smallest)) - 1);
  std::string g = "set xlabel 'x: key position (tensor, flash-attn) or distance (vLLM)'\n";
  g += "set ylabel '|bias~ - slope x|, max over heads' noenhanced\n";
  g += "set logscale xy\nset format y '10^{%L}'\n";
  g += "set xrange [0.4:" + detail::gp_number(1.5 * static_cast<double>(r.series.front().rows.back().x)) + "]\n";
  // the display clamp, as plots.cpp's clamp_functions: zero errors at FLOOR, x = 0 at 0.5
  g += "FLOOR = " + detail::gp_number(floor) + "\ncy(v) = (v != v) ? NaN : (v > FLOOR ? v : FLOOR)\n";
  g += "cx(p) = (p > 0.5 ? p : 0.5)\n";
  g += "plot \\\n";
  for (std::size_t i = 0; i < r.series.size(); ++i) {
    const std::string name(to_string(r.series[i].strategy));
    // tensor and kernel strategies of one dtype give the same numbers (the same arithmetic; only what x means
    // differs): the kernel's line is drawn dashed with open points over the tensor's solid one
    const bool kernel = name.starts_with("kernel");
    g += "  '../data/alibi_bias_" + name + ".csv' skip 1 using (cx($1)):(cy($2)) with linespoints lc rgb '" +
         colours[i % 4] + (kernel ? "' lw 1.5 dt 2 pt 6 ps 1.0" : "' lw 3 dt 1 pt 7 ps 0.6") + " title " + quote(name) +
         " noenhanced, \\\n";
  }
  g += "  " + detail::gp_number(min_slope(r) / 2) + " with lines lc rgb '#888888' dt 2 lw 1.5 title 'smallest slope / 2', \\\n";
  g += "  " + detail::gp_number(max_slope(r) / 2) + " with lines lc rgb '#444444' dt 3 lw 1.5 title 'steepest slope / 2'\n";
  return g;
}

std::string alibi_bias_html_section(const alibi_bias_result& r, const std::string& inline_svg) {
  std::string h = "<section id=\"alibi-bias\"><h2>ALiBi bias error against position</h2>\n<p>Claim: " + describe(r.claim) +
                  ". The bias each strategy adds, against slope &times; x computed exactly (long double), worst over "
                  "the heads held. Dashed lines: half the bias spacing between neighbouring keys (the slope); an error "
                  "at or above it can swap or merge neighbouring keys. Tensor strategies and flash-attn multiply the "
                  "slope by the key position, so their error grows with the position even for neighbouring keys; vLLM's "
                  "paged attention multiplies by the distance. A tensor strategy and the kernel strategy of its dtype do the same "
                  "arithmetic on x, so their curves coincide (the kernel's is dashed over the tensor's); what differs "
                  "is what x is.</p>\n";
  h += inline_svg;
  h += "<table><tr><th>strategy</th><th>source</th><th>max error</th><th>at x</th><th>error &ge; slope/2 from x</th>"
       "<th>neighbours merged from x</th></tr>\n";
  for (const auto& s : r.series) {
    const auto worst = std::max_element(s.rows.begin(), s.rows.end(),
                                        [](const auto& a, const auto& b) { return a.max_abs_error < b.max_abs_error; });
    const auto cell = [](std::int64_t x) { return x < 0 ? std::string("never") : integer(x); };
    h += "<tr><td>" + std::string(to_string(s.strategy)) + "</td><td>" + std::string(source_of(s.strategy)) + "</td><td>" +
         detail::short_number(worst->max_abs_error) + "</td><td>" + integer(worst->x) + "</td><td>" +
         cell(first_half_slope(s)) + "</td><td>" + cell(first_merged(s)) + "</td></tr>\n";
  }
  return h + "</table></section>\n";
}

std::vector<std::filesystem::path> write_alibi_report(const alibi_bias_result& r, const std::filesystem::path& folder,
                                                      const std::string& command, bool plots, const std::string& gnuplot) {
  namespace fs = std::filesystem;
  std::vector<fs::path> files;
  const auto emit = [&](const fs::path& rel, const std::string& bytes) {
    detail::write_file(folder / rel, bytes);
    files.push_back(rel);
  };
  detail::make_folder(folder);
  detail::make_folder(folder / "data");
  for (const auto& s : r.series) emit(fs::path("data") / ("alibi_bias_" + std::string(to_string(s.strategy)) + ".csv"), alibi_bias_csv(s, r));
  emit("summary.json", "{\n  \"command\": " + quote(command) + ",\n  \"alibi_bias\": " + alibi_bias_summary_json(r) + "\n}\n");
  detail::make_folder(folder / "plots");
  const std::string script = "# ALiBi bias error vs position (ropecheck report, tools/report/alibi_bias_output.cpp)\n"
                             "set encoding utf8\nset datafile separator comma\nset grid\n"
                             "set key outside right top vertical Left reverse box\n"
                             "set terminal svg size 960,540 enhanced font 'DejaVu Sans,12' background '#ffffff'\n"
                             "set output 'alibi_bias.svg'\nset title 'ALiBi bias error vs position' noenhanced\n" +
                             alibi_bias_gnuplot(r) + "unset output\n";
  emit(fs::path("plots") / "alibi_bias.gp", script);
  std::string svg, note;
  if (plots) {
    const auto program = detail::find_program(gnuplot);
    if (!program) {
      note = "<p>No plot: gnuplot not found (Debian package gnuplot-nox).</p>";
    } else {
      const auto out = detail::run_program(*program, {"alibi_bias.gp"}, folder / "plots");
      if (out.status != 0) throw std::runtime_error("gnuplot failed on plots/alibi_bias.gp (status " + std::to_string(out.status) + "): " + detail::tail(out.output));
      files.emplace_back(fs::path("plots") / "alibi_bias.svg");
      svg = detail::read_file(folder / "plots" / "alibi_bias.svg").value_or("");
      if (const auto p = svg.find("<svg"); p != std::string::npos) svg = svg.substr(p);
    }
  }
  emit("report.html", "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>ropecheck report: ALiBi</title>"
                      "<style>body{font-family:sans-serif;max-width:1100px;margin:auto}td,th{border:1px solid #ccc;"
                      "padding:3px 6px}table{border-collapse:collapse}</style></head><body>\n<h1>ropecheck report</h1>\n<p><code>" +
                          command + "</code></p>\n" + alibi_bias_html_section(r, svg + note) + "</body></html>\n");
  if (plots && !detail::find_program(gnuplot))
    throw std::runtime_error("gnuplot not found ('" + gnuplot + "'): plots need the Debian package gnuplot-nox; "
                             "data, summary.json and report.html are written");
  return files;
}

int run_alibi_report(const bias_claim& claim, const std::filesystem::path& folder, const std::string& command, bool plots) {
  const alibi_bias_result r = alibi_bias_errors(claim, alibi_positions(20));
  std::printf("ropecheck report: %s\n", describe(claim).c_str());
  for (const auto& s : r.series) {
    double worst = 0;
    std::int64_t at = 0;
    for (const auto& row : s.rows)
      if (row.max_abs_error > worst) worst = row.max_abs_error, at = row.x;
    std::printf("  %-12s max bias error %-12.6g at x = %lld\n", std::string(to_string(s.strategy)).c_str(), worst,
                static_cast<long long>(at));
  }
  (void)write_alibi_report(r, folder, command, plots);
  std::printf("report: %s\n", (folder / "report.html").string().c_str());
  return 0;
}

}  // namespace ropecheck::report
