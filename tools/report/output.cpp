// tools/report/output.cpp — CSV, summary.json, timing.json, gnuplot plots and report.html.
//
// The contract is in output.hpp. Plots are drawn by gnuplot (Debian gnuplot-nox) from scripts this
// file writes into plots/: each script reads the CSV files in data/ and renders SVG (inlined into
// report.html) and PNG. gnuplot runs through posix_spawn with its working directory set to plots/,
// so the folder can be moved and any script rerun by hand.
#include "output.hpp"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <array>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <limits>
#include <numbers>
#include <optional>
#include <set>
#include <sstream>
#include <stdexcept>
#include <system_error>

extern char** environ;

namespace ropecheck::report {
namespace {

namespace fs = std::filesystem;

// ---------------------------------------------------------------------------------------------
// Number formatting

// Shortest decimal that reads back to the same double (std::to_chars): deterministic across runs
// and exact for machines. Non-finite values are spelled "nan", "inf", "-inf" (no sign on NaN).
std::string exact_number(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  std::array<char, 64> buf{};
  const auto r = std::to_chars(buf.data(), buf.data() + buf.size(), v);
  return std::string(buf.data(), r.ptr);
}

std::string integer(std::int64_t v) { return std::to_string(v); }

// For people: three significant digits.
std::string short_number(double v, int digits = 3) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  std::array<char, 64> buf{};
  std::snprintf(buf.data(), buf.size(), "%.*g", digits, v);
  return buf.data();
}

// For tables: 1000 <= |v| < 1e6 as a whole number (wavelengths, turns, arcs), else 4 digits.
std::string table_number(double v) {
  if (!std::isfinite(v)) return short_number(v);
  std::array<char, 64> buf{};
  const double a = std::fabs(v);
  if (a >= 1000 && a < 1e6) std::snprintf(buf.data(), buf.size(), "%.0f", v);
  else std::snprintf(buf.data(), buf.size(), "%.4g", v);
  return buf.data();
}

// A gnuplot numeric literal (gnuplot reads C notation; keep full precision).
std::string gp_number(double v) {
  std::array<char, 64> buf{};
  std::snprintf(buf.data(), buf.size(), "%.17g", v);
  return buf.data();
}

// ---------------------------------------------------------------------------------------------
// Files

void write_file(const fs::path& path, std::string_view bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) {
    throw std::runtime_error("ropecheck report: cannot create file '" + path.string() +
                             "': " + std::strerror(errno));
  }
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  out.close();
  if (!out) throw std::runtime_error("ropecheck report: cannot write file '" + path.string() + "'");
}

std::optional<std::string> read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

void make_folder(const fs::path& folder) {
  std::error_code ec;
  fs::create_directories(folder, ec);
  if (ec || !fs::is_directory(folder)) {
    throw std::runtime_error("ropecheck report: cannot create folder '" + folder.string() +
                             "': " + (ec ? ec.message() : std::string("not a directory")));
  }
}

// ---------------------------------------------------------------------------------------------
// The per-position columns, in CSV order (the gnuplot scripts address them by this index + 1).

struct column {
  const char* name;
  double (*get)(const position_errors&);
};

// New columns go at the end, so that readers addressing columns by index keep working.
constexpr std::array<column, 14> error_columns{{
    {"angle_rad", [](const position_errors& e) { return e.angle_rad; }},
    {"position_tokens", [](const position_errors& e) { return e.position_tokens; }},
    {"cos_sin_abs", [](const position_errors& e) { return e.cos_sin_abs; }},
    {"cos_sin_ulps", [](const position_errors& e) { return e.cos_sin_ulps; }},
    {"rotated_relative", [](const position_errors& e) { return e.rotated_relative; }},
    {"score_violation", [](const position_errors& e) { return e.score_violation; }},
    {"source_frequency_rad", [](const position_errors& e) { return e.sources.frequency_rad; }},
    {"source_position_rad", [](const position_errors& e) { return e.sources.position_rad; }},
    {"source_product_rad", [](const position_errors& e) { return e.sources.product_rad; }},
    {"source_sin_cos", [](const position_errors& e) { return e.sources.sin_cos; }},
    {"source_cache", [](const position_errors& e) { return e.sources.cache; }},
    {"source_rotation", [](const position_errors& e) { return e.sources.rotation; }},
    {"magnitude_rel", [](const position_errors& e) { return e.magnitude_rel; }},
    {"source_formed_angle_rad", [](const position_errors& e) { return e.sources.formed_angle_rad; }},
}};

// gnuplot column number of a field (column 1 is the position).
int gp_column(std::string_view name) {
  for (std::size_t i = 0; i < error_columns.size(); ++i)
    if (name == error_columns[i].name) return static_cast<int>(i) + 2;
  throw std::logic_error("unknown column");
}

std::string error_table(const std::vector<position_errors>& points) {
  std::string s = "position";
  for (const auto& c : error_columns) (s += ',') += c.name;
  s += '\n';
  for (const auto& p : points) {
    s += integer(p.position);
    for (const auto& c : error_columns) (s += ',') += exact_number(c.get(p));
    s += '\n';
  }
  return s;
}

// Max over positions of one field, NaN ignored (NaN points are counted separately).
struct field_max {
  double value = std::numeric_limits<double>::quiet_NaN();
  std::int64_t position = -1;
};

field_max max_of(const implementation_series& s, const column& c) {
  field_max m;
  for (const auto& p : s.points) {
    const double v = c.get(p);
    if (std::isnan(v)) continue;
    if (m.position < 0 || v > m.value) m = {v, p.position};
  }
  return m;
}

std::int64_t nan_points(const implementation_series& s) {
  std::int64_t n = 0;
  for (const auto& p : s.points) {
    bool any = false;
    for (const auto& c : error_columns) any = any || std::isnan(c.get(p));
    n += any ? 1 : 0;
  }
  return n;
}

// Unique file stems, in series order.
std::vector<std::string> file_stems(const report_result& r) {
  std::vector<std::string> stems;
  std::set<std::string> used{"bands"};
  for (const auto& s : r.series) {
    std::string base = file_stem(s.name);
    if (base.rfind("heat_", 0) == 0) base.insert(0, "impl_");  // data/heat_* are the heat maps
    std::string stem = base;
    for (int k = 2; used.count(stem); ++k) stem = base + "-" + std::to_string(k);
    used.insert(stem);
    stems.push_back(stem);
  }
  return stems;
}

// ---------------------------------------------------------------------------------------------
// JSON pieces

using ojson = nlohmann::ordered_json;

ojson optional_number(const std::optional<double>& v) { return v ? ojson(*v) : ojson(nullptr); }
ojson finite_or_null(double v) { return std::isfinite(v) ? ojson(v) : ojson(nullptr); }

ojson config_json(const rope_config& c) {
  ojson j;
  j["head_dim"] = c.head_dim;
  j["rotary_dim"] = c.rotary_dim;
  j["base"] = c.base;
  j["layout"] = std::string(to_string(c.pair_layout));
  j["scaling"] = std::string(to_string(c.scaling));
  j["factor"] = c.factor;
  j["max_position_embeddings"] = c.max_position_embeddings;
  j["original_max_position_embeddings"] = c.original_max_position_embeddings;
  j["beta_fast"] = c.beta_fast;
  j["beta_slow"] = c.beta_slow;
  j["truncate"] = c.truncate;
  j["attention_factor"] = optional_number(c.attention_factor);
  j["mscale"] = optional_number(c.mscale);
  j["mscale_all_dim"] = optional_number(c.mscale_all_dim);
  j["low_freq_factor"] = c.low_freq_factor;
  j["high_freq_factor"] = c.high_freq_factor;
  j["short_factor"] = c.short_factor;
  j["long_factor"] = c.long_factor;
  return j;
}

// ---------------------------------------------------------------------------------------------
// gnuplot

// A single-quoted gnuplot string: only the quote itself needs doubling.
std::string gp_quote(std::string_view s) {
  std::string q = "'";
  for (char ch : s) {
    if (ch == '\'') q += "''";
    else if (ch == '\n' || ch == '\r') q += ' ';
    else q += ch;
  }
  return q + "'";
}

// Distinct colours; past 12 implementations the dash pattern changes too.
constexpr std::array<const char*, 12> palette{"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e",
                                              "#9467bd", "#8c564b", "#e377c2", "#17becf",
                                              "#7f7f7f", "#bcbd22", "#000080", "#808000"};

std::string line_style(std::size_t i, bool points) {
  std::string s = "lc rgb '" + std::string(palette[i % palette.size()]) + "' dt " +
                  std::to_string(i / palette.size() % 5 + 1) + " lw 2";
  if (points) s += " pt " + std::to_string(i % 13 + 1) + " ps 1";
  return s;
}

// More points than this are drawn as a max envelope: sweeps mix positions a narrow type holds
// exactly with their neighbours that it does not, and a line through both fills the plot.
constexpr std::size_t max_plotted_points = 300;
constexpr int envelope_buckets_per_octave = 32;
constexpr double position_floor = 0.5;            // where position 0 is drawn on log axes

struct plot {
  std::string name;     // plots/<name>.gp, .svg, .png
  std::string title;
  std::string caption;  // one sentence: what to look for (+ the display notes)
  std::string script;   // the plot commands (after the common preamble)
  int width = 960;      // SVG size in px; the PNG is 4/3 of it
  int height = 540;
};

// Plots shown two to a row are drawn on a smaller canvas, so their text is not scaled down.
constexpr int pair_width = 660, pair_height = 500;

std::string gp_preamble(const report_result& r, const plot& p) {
  std::string s;
  s += "# " + p.title + "\n";
  s += "# Written by ropecheck report " + r.ropecheck_version +
       " (tools/report/output.cpp). Rerun from this folder: gnuplot -d " + p.name + ".gp\n";
  s += "set encoding utf8\n";
  s += "set datafile separator comma\n";
  s += "set datafile commentschars '#'\n";
  s += "set grid xtics ytics lc rgb '#dddddd' lw 1 dt 1\n";
  s += "set border lw 1.2\n";
  s += "set key outside right top vertical Left reverse samplen 3 spacing 1.1 box lc rgb '#bbbbbb'\n";
  s += "set title " + gp_quote(p.title) + " font ',15' noenhanced\n";
  return s;
}

std::string gp_render(const plot& p, bool png) {
  std::string s;
  s += "set terminal svg size " + std::to_string(p.width) + "," + std::to_string(p.height) +
       " enhanced font 'DejaVu Sans,12' background '#ffffff'\n";
  s += "set output '" + p.name + ".svg'\n";
  s += p.script;
  if (png) {
    s += "set terminal pngcairo size " + std::to_string(p.width * 4 / 3) + "," + std::to_string(p.height * 4 / 3) +
         " enhanced font 'DejaVu Sans,13' background '#ffffff'\n";
    s += "set output '" + p.name + ".png'\n";
    s += "replot\n";
  }
  s += "unset output\n";
  return s;
}

// Position tics on a log axis: 0 (drawn at 0.5), then powers of 4 up to the largest position.
std::string position_tics(std::int64_t max_position) {
  std::string s = "set xtics ('0' " + gp_number(position_floor);
  for (std::int64_t t = 1; t <= std::max<std::int64_t>(max_position, 1) * 2; t *= 4)
    s += ", '" + integer(t) + "' " + integer(t);
  s += ")\n";
  const double top = static_cast<double>(std::max<std::int64_t>(max_position, 1));
  return s + "set xrange [" + gp_number(0.8 * position_floor) + ":" + gp_number(1.3 * top) + "]\n";
}

// The largest power of ten at least 10x below every positive finite value; 1e-20 when none.
struct log_floor {
  double floor = 1e-20;
  bool clamps_zeros = false;
};

log_floor floor_for(const std::vector<double>& values) {
  log_floor f;
  double smallest = std::numeric_limits<double>::infinity();
  for (double v : values) {
    if (std::isfinite(v) && v > 0) smallest = std::min(smallest, v);
    if (v <= 0) f.clamps_zeros = true;
  }
  if (std::isfinite(smallest)) f.floor = std::pow(10.0, std::floor(std::log10(smallest)) - 1);
  return f;
}

std::string floor_note(const log_floor& f, std::string_view what) {
  if (!f.clamps_zeros) return "";
  return " Zero " + std::string(what) + " are drawn at the floor " + short_number(f.floor, 2) + ".";
}

// One data file per implementation for the plots: the CSV itself, or, past max_plotted_points, a
// max envelope over log-spaced buckets (plots/<stem>_envelope.csv, same columns; each row carries
// the bucket's first position and, field by field, the maximum over the bucket, NaN ignored).
struct plot_source {
  std::string file;  // relative to plots/
  bool thinned = false;
};

std::vector<position_errors> thin(const std::vector<position_errors>& points) {
  std::vector<position_errors> out;
  long last_key = -1;
  for (const auto& p : points) {
    const long key = std::lround(std::floor(std::log2(static_cast<double>(p.position) + 1) * envelope_buckets_per_octave));
    if (out.empty() || key != last_key) {
      out.push_back(p);
      last_key = key;
      continue;
    }
    auto& m = out.back();
    raise_to(m, p);
  }
  return out;
}

bool has_finite(const implementation_series& s, const column& c) {
  return std::any_of(s.points.begin(), s.points.end(), [&](const position_errors& p) {
    const double v = c.get(p);
    return !std::isnan(v);
  });
}

// A log-log plot of one field for every implementation, with an optional horizontal threshold.
std::optional<plot> field_plot(const report_result& r, const std::vector<plot_source>& sources,
                               std::string name, std::string title, std::string field,
                               std::string ylabel, std::optional<std::pair<double, std::string>> threshold,
                               std::string caption, std::string_view zero_what,
                               const std::vector<std::pair<double, std::string>>& references = {}) {
  const column& c = error_columns[static_cast<std::size_t>(gp_column(field) - 2)];
  std::vector<double> values;
  std::vector<std::size_t> shown;
  for (std::size_t i = 0; i < r.series.size(); ++i) {
    if (!has_finite(r.series[i], c)) continue;
    shown.push_back(i);
    for (const auto& p : r.series[i].points) values.push_back(c.get(p));
  }
  if (shown.empty()) return std::nullopt;
  const log_floor f = floor_for(values);
  // gnuplot cannot draw an infinite error (a non-finite result): say where the curve stops.
  std::string infinite;
  for (std::size_t i : shown) {
    for (const auto& pt : r.series[i].points) {
      if (!std::isinf(c.get(pt))) continue;
      infinite += (infinite.empty() ? " Infinite values (non-finite results) cannot be drawn: " : "; ") +
                  std::string("from p = ") + integer(pt.position) + " for " + r.series[i].name;
      break;
    }
  }
  if (!infinite.empty()) infinite += ".";
  bool thinned = false;
  plot p{std::move(name), std::move(title), "", ""};
  std::string& s = p.script;
  s += "set xlabel 'position p (tokens)'\n";
  s += "set ylabel " + gp_quote(ylabel) + " noenhanced\n";
  s += "set logscale xy\n";
  s += position_tics(r.request.max_position);
  s += "set format y '10^{%L}'\n";
  s += "FLOOR = " + gp_number(f.floor) + "\n";
  s += "cy(v) = (v != v) ? NaN : (v > FLOOR ? v : FLOOR)\n";
  s += "cx(p) = (p > " + gp_number(position_floor) + " ? p : " + gp_number(position_floor) + ")\n";
  const std::int64_t train = r.request.train_length;
  if (train > 0 && train <= r.request.max_position) {
    s += "set arrow 1 from " + integer(train) + ", graph 0 to " + integer(train) +
         ", graph 1 nohead dt 3 lw 1.5 lc rgb '#666666' front\n";
    // Above the frame, so that it never sits on a curve or the threshold line.
    s += "set label 1 " + gp_quote("L_train = " + integer(train)) + " at " + integer(train) +
         ", graph 1 center offset 0,0.7 tc rgb '#444444' noenhanced front\n";
    s += "set tmargin 4\n";
  }
  s += "plot \\\n";
  const int col = gp_column(field);
  for (std::size_t k = 0; k < shown.size(); ++k) {
    const std::size_t i = shown[k];
    thinned = thinned || sources[i].thinned;
    const bool points = r.series[i].points.size() <= 60;
    s += "  " + gp_quote(sources[i].file) + " skip 1 using (cx($1)):(cy($" + std::to_string(col) +
         ")) with " + (points ? "linespoints " : "lines ") + line_style(i, points) + " title " +
         gp_quote(r.series[i].name) + " noenhanced";
    s += (k + 1 < shown.size() || threshold || !references.empty()) ? ", \\\n" : "\n";
  }
  if (threshold) {
    s += "  " + gp_number(threshold->first) + " with lines dt 2 lw 2 lc rgb '#000000' title " +
         gp_quote(threshold->second) + " noenhanced";
    s += references.empty() ? "\n" : ", \\\n";
  }
  // Reference lines (the storage floors): dark, dash-dotted, one shade each, unlike any curve.
  constexpr std::array<const char*, 3> greys{"#333333", "#6b6b6b", "#9a9a9a"};
  for (std::size_t k = 0; k < references.size(); ++k) {
    s += "  " + gp_number(references[k].first) + " with lines dt 4 lw 2 lc rgb '" + greys[k % greys.size()] +
         "' title " + gp_quote(references[k].second) + " noenhanced";
    s += k + 1 < references.size() ? ", \\\n" : "\n";
  }
  p.caption = std::move(caption) + infinite + floor_note(f, zero_what) + " Position 0 is drawn at " +
              short_number(position_floor) + " on the log axis." +
              (thinned ? " Each curve is the maximum over position buckets 1/" +
                             std::to_string(envelope_buckets_per_octave) +
                             " octave wide (data/*.csv has every position)."
                       : "");
  return p;
}

// The storage floors as reference lines of the position-error plot (max over bands: the slowest band).
std::vector<std::pair<double, std::string>> floor_lines(const report_result& r) {
  std::vector<std::pair<double, std::string>> out;
  for (const auto& f : r.storage_floors) {
    if (!(f.max_tokens > 0) || !std::isfinite(f.max_tokens)) continue;
    const std::string name = f.dtype == "bfloat16" ? "bf16" : f.dtype == "float16" ? "fp16" : f.dtype == "float32" ? "fp32" : f.dtype;
    out.emplace_back(f.max_tokens, name + " floor " + short_number(f.max_tokens) + " tok");
  }
  return out;
}

// (e) Where one implementation's error comes from.
std::optional<plot> sources_plot(const report_result& r, const plot_source& source,
                                 const implementation_series& s, const std::string& stem) {
  struct line {
    const char* field;
    const char* title;
    const char* colour;
    int dash;
  };
  constexpr std::array<line, 8> lines{{
      {"angle_rad", "applied angle error (rad)", "#999999", 1},
      {"source_formed_angle_rad", "angle formed, before sin/cos (rad)", "#000000", 3},
      {"source_frequency_rad", "frequency rounding (rad)", "#1f77b4", 2},
      {"source_position_rad", "position representation (rad)", "#d62728", 1},
      {"source_product_rad", "product rounding (rad)", "#2ca02c", 4},
      {"source_sin_cos", "sin/cos evaluation", "#ff7f0e", 1},
      {"source_cache", "cos/sin cache storage", "#9467bd", 5},
      {"source_rotation", "rotation arithmetic (relative)", "#8c564b", 3},
  }};
  std::vector<double> values;
  std::vector<const line*> shown;
  for (const auto& l : lines) {
    const column& c = error_columns[static_cast<std::size_t>(gp_column(l.field) - 2)];
    if (!has_finite(s, c)) continue;
    shown.push_back(&l);
    for (const auto& p : s.points) values.push_back(c.get(p));
  }
  if (shown.empty()) return std::nullopt;
  const log_floor f = floor_for(values);
  plot p{"sources_" + stem, "Error sources vs position: " + s.name, "", "", pair_width, pair_height};
  std::string& g = p.script;
  g += "set xlabel 'position p (tokens)'\n";
  g += "set ylabel 'error, max over bands (rad; cos/sin units; relative)'\n";
  g += "set logscale xy\n";
  g += position_tics(r.request.max_position);
  g += "set format y '10^{%L}'\n";
  // Below the frame, clear of the x label (gnuplot's own "below" key overlaps it).
  g += "set key horizontal maxcols 2 Left reverse width -2 at screen 0.5, screen 0.015 center bottom\n";
  g += "set bmargin 9\n";
  g += "FLOOR = " + gp_number(f.floor) + "\n";
  g += "cy(v) = (v != v) ? NaN : (v > FLOOR ? v : FLOOR)\n";
  g += "cx(p) = (p > " + gp_number(position_floor) + " ? p : " + gp_number(position_floor) + ")\n";
  g += "plot \\\n";
  for (std::size_t k = 0; k < shown.size(); ++k) {
    const bool total = k == 0 && std::string_view(shown[k]->field) == "angle_rad";
    g += "  " + gp_quote(source.file) + " skip 1 using (cx($1)):(cy($" +
         std::to_string(gp_column(shown[k]->field)) + ")) with lines lc rgb '" + shown[k]->colour +
         "' lw " + (total ? "5" : "2") + " dt " + std::to_string(shown[k]->dash) +
         " title " + gp_quote(shown[k]->title) + " noenhanced";
    g += k + 1 < shown.size() ? ", \\\n" : "\n";
  }
  p.caption = "The term that follows the grey applied angle error of " + s.name +
              " is where its error comes from: the black angle formed (frequency + position + product) when "
              "it follows it, sin/cos evaluation or cache storage when the applied angle is off more." +
              floor_note(f, "terms") + " Position 0 is drawn at 0.5." +
              (source.thinned ? " Each curve is the maximum over position buckets 1/" +
                                    std::to_string(envelope_buckets_per_octave) + " octave wide."
                              : "");
  return p;
}

// (f) Band x position-bucket heat map (x: bucket index, labelled with the bucket's first position).
std::optional<plot> heat_plot(const implementation_series& s, const std::string& stem) {
  if (s.band_position_heat.empty() || s.band_position_heat.front().empty()) return std::nullopt;
  std::vector<double> values;
  for (const auto& row : s.band_position_heat) values.insert(values.end(), row.begin(), row.end());
  if (std::none_of(values.begin(), values.end(), [](double v) { return !std::isnan(v); }))
    return std::nullopt;
  const log_floor f = floor_for(values);
  const std::size_t buckets = s.band_position_heat.front().size();
  const std::size_t bands = s.band_position_heat.size();
  plot p{"heat_" + stem, "Applied angle error by band and position: " + s.name, "", "", pair_width, pair_height};
  std::string& g = p.script;
  g += "set xlabel 'position bucket (first position in the bucket, tokens)'\n";
  g += "set ylabel 'band i (0 = fastest)'\n";
  g += "set cblabel 'max applied angle error in the bucket (rad)' offset 0.5,0\n";
  g += "set rmargin 13\n";  // room for the colour box label, which gnuplot's margin omits
  g += "set logscale cb\n";
  g += "set format cb '10^{%L}'\n";
  g += "set palette defined (0 '#000004', 1 '#3b0f70', 2 '#8c2981', 3 '#de4968', 4 '#fe9f6d', 5 '#fcfdbf')\n";
  g += "set xrange [-0.5:" + gp_number(static_cast<double>(buckets) - 0.5) + "]\n";
  g += "set yrange [-0.5:" + gp_number(static_cast<double>(bands) - 0.5) + "]\n";
  g += "unset grid\nunset key\n";
  g += "set ytics " + std::to_string(std::max<std::size_t>(1, bands / 8)) + "\n";
  g += "set tics out\n";
  // About eight labelled buckets.
  const std::size_t step = std::max<std::size_t>(1, (buckets + 7) / 8);
  g += "set xtics (";
  for (std::size_t b = 0; b < buckets; b += step) {
    const std::string label =
        b < s.heat_bucket_edges.size() ? integer(s.heat_bucket_edges[b]) : "#" + std::to_string(b);
    g += (b ? ", " : "") + gp_quote(label) + " " + std::to_string(b);
  }
  g += ")\n";
  g += "FLOOR = " + gp_number(f.floor) + "\n";
  // An infinite error (non-finite result) is drawn in the brightest colour: the largest finite one.
  double ceiling = f.floor;
  for (double v : values)
    if (std::isfinite(v)) ceiling = std::max(ceiling, v);
  g += "CEILING = " + gp_number(ceiling) + "\n";
  g += "cz(v) = (v != v) ? NaN : (v > CEILING ? CEILING : (v > FLOOR ? v : FLOOR))\n";
  g += "plot " + gp_quote("../data/heat_" + stem + ".csv") + " skip 1 using 2:1:(cz($5)) with image\n";
  p.caption = "Largest applied angle error of " + s.name +
              " per band (rows, fast bands at the bottom) and position range (columns), on a log "
              "colour scale: look for where the colour turns bright, which says in which bands and "
              "from which position the error grows." +
              floor_note(f, "errors") + " Position buckets are drawn with equal width." +
              (std::any_of(values.begin(), values.end(), [](double v) { return std::isinf(v); })
                   ? " Cells with an infinite error (a non-finite result) are drawn in the brightest colour."
                   : "");
  return p;
}

// (g) Wavelength per band before and after scaling, with the training and evaluation lengths.
std::optional<plot> band_plot(const report_result& r) {
  if (r.bands.empty()) return std::nullopt;
  plot p{"bands", "Wavelength per band, before and after scaling", "", ""};
  std::string& g = p.script;
  const bool points = r.bands.size() <= 64;
  g += "set xlabel 'band i (0 = fastest)'\n";
  g += "set ylabel 'wavelength 2 pi / theta_i (tokens)' noenhanced\n";
  g += "set logscale y\n";
  g += "set format y '10^{%L}'\n";
  g += "set xrange [-0.5:" + gp_number(static_cast<double>(r.bands.size()) - 0.5) + "]\n";
  g += "set xtics " + std::to_string(std::max<std::size_t>(1, r.bands.size() / 8)) + "\n";
  g += "cy(v) = (v > 0 ? v : NaN)\n";
  g += "plot \\\n";
  // "before" wide and pale underneath, so that it shows where scaling leaves a band alone.
  g += "  '../data/bands.csv' skip 1 using 1:(cy($5)) with lines lw 7 lc rgb '#9ecae1' "
       "title 'before scaling' noenhanced, \\\n";
  g += "  '../data/bands.csv' skip 1 using 1:(cy($4)) with " +
       std::string(points ? "linespoints " : "lines ") + line_style(1, points) +
       " title 'after scaling' noenhanced";
  if (r.request.train_length > 0)
    g += ", \\\n  " + integer(r.request.train_length) +
         " with lines dt 2 lw 2 lc rgb '#000000' title " +
         gp_quote("training length L_train = " + integer(r.request.train_length)) + " noenhanced";
  if (r.request.eval_length > 0 && r.request.eval_length != r.request.train_length)
    g += ", \\\n  " + integer(r.request.eval_length) +
         " with lines dt 3 lw 2 lc rgb '#666666' title " +
         gp_quote("evaluation length L_eval = " + integer(r.request.eval_length)) + " noenhanced";
  g += "\n";
  p.caption = "Bands whose wavelength lies above the dashed training length never completed a "
              "full turn in training, so longer contexts show them angles they never saw; the gap "
              "between the two curves shows which bands the scaling stretched.";
  return p;
}

// ---------------------------------------------------------------------------------------------
// Running gnuplot

std::optional<fs::path> find_program(const std::string& program) {
  auto runnable = [](const fs::path& p) {
    std::error_code ec;
    return fs::is_regular_file(p, ec) && ::access(p.c_str(), X_OK) == 0;
  };
  if (program.find('/') != std::string::npos)
    return runnable(program) ? std::optional<fs::path>(program) : std::nullopt;
  const char* env = std::getenv("PATH");
  const std::string path = env ? env : "/usr/local/bin:/usr/bin:/bin";
  std::size_t start = 0;
  while (start <= path.size()) {
    const std::size_t end = std::min(path.find(':', start), path.size());
    const fs::path dir = end > start ? fs::path(path.substr(start, end - start)) : fs::path(".");
    if (runnable(dir / program)) return dir / program;
    start = end + 1;
  }
  return std::nullopt;
}

struct run_outcome {
  int status = -1;     // exit status, or -1 if it did not exit normally
  std::string output;  // stdout and stderr, interleaved
};

// Runs program with args in cwd, stdin from /dev/null, and collects its output.
run_outcome run_program(const fs::path& program, const std::vector<std::string>& args, const fs::path& cwd) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0)
    throw std::runtime_error(std::string("ropecheck report: cannot create a pipe: ") + std::strerror(errno));
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addchdir_np(&actions, cwd.c_str());
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, fds[1], 1);
  posix_spawn_file_actions_adddup2(&actions, fds[1], 2);
  std::vector<std::string> argv_storage{program.string()};
  argv_storage.insert(argv_storage.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& a : argv_storage) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t pid = 0;
  const int rc = ::posix_spawn(&pid, program.c_str(), &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  ::close(fds[1]);
  run_outcome out;
  if (rc != 0) {
    ::close(fds[0]);
    out.output = std::string("cannot start: ") + std::strerror(rc);
    return out;
  }
  std::array<char, 4096> buf{};
  for (;;) {
    const ssize_t n = ::read(fds[0], buf.data(), buf.size());
    if (n > 0) out.output.append(buf.data(), static_cast<std::size_t>(n));
    else if (n == 0 || errno != EINTR) break;
  }
  ::close(fds[0]);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  out.status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return out;
}

std::string tail(const std::string& s, std::size_t n = 1500) {
  return s.size() <= n ? s : "..." + s.substr(s.size() - n);
}

// ---------------------------------------------------------------------------------------------
// HTML

std::string html_escape(std::string_view s) {
  std::string o;
  for (char ch : s) {
    switch (ch) {
      case '&': o += "&amp;"; break;
      case '<': o += "&lt;"; break;
      case '>': o += "&gt;"; break;
      case '"': o += "&quot;"; break;
      case '\'': o += "&#39;"; break;
      default: o += ch;
    }
  }
  return o;
}

// gnuplot's SVG as an inline element: the XML prolog dropped, and every id (and reference to
// one) prefixed so that several plots on one page do not share ids such as gpPt0 or gnuplot_canvas.
std::string inline_svg(const std::string& svg, const std::string& prefix, const std::string& label) {
  const std::size_t start = svg.find("<svg");
  if (start == std::string::npos) return "";
  std::string o;
  o.reserve(svg.size() - start + 4096);
  o += "<svg role=\"img\" aria-label=\"" + html_escape(label) + "\"";
  std::string_view s(svg);
  s.remove_prefix(start + 4);
  static constexpr std::array<std::string_view, 5> id_marks{"id='", "id=\"", "href='#", "href=\"#", "url(#"};
  for (std::size_t i = 0; i < s.size();) {
    bool matched = false;
    for (std::size_t m = 0; m < id_marks.size(); ++m) {
      const auto mark = id_marks[m];
      if (s.compare(i, mark.size(), mark) != 0) continue;
      // An id attribute must start a name: the character before it is white space.
      if (m < 2 && (i == 0 || !std::isspace(static_cast<unsigned char>(s[i - 1])))) continue;
      o += mark;
      o += prefix;
      i += mark.size();
      matched = true;
      break;
    }
    if (!matched) o += s[i++];
  }
  // gnuplot titles every SVG "Gnuplot" (a tooltip in browsers): use the plot's own title.
  const std::string generic = "<title>Gnuplot</title>";
  if (const auto t = o.find(generic); t != std::string::npos)
    o.replace(t, generic.size(), "<title>" + html_escape(label) + "</title>");
  return o;
}

std::string never_or(std::int64_t p) { return p < 0 ? "never" : integer(p); }

constexpr const char* css = R"(
body { font-family: "DejaVu Sans", "Helvetica Neue", Arial, sans-serif; color: #1d1d1d; margin: 24px auto; max-width: 1320px; padding: 0 16px; line-height: 1.4; }
h1 { font-size: 24px; margin-bottom: 4px; } h2 { font-size: 19px; margin-top: 32px; border-bottom: 1px solid #ccc; padding-bottom: 3px; }
h3 { font-size: 15px; margin: 18px 0 4px; }
table { border-collapse: collapse; font-size: 13px; margin: 8px 0; }
th, td { border: 1px solid #c8c8c8; padding: 3px 7px; text-align: right; vertical-align: top; }
th { background: #f0f0f0; font-weight: 600; }
td.text, th.text { text-align: left; }
tr.pass td.verdict { background: #d9f2d0; color: #185c0b; font-weight: 700; text-align: center; }
tr.fail td.verdict { background: #f7d4d4; color: #8a1111; font-weight: 700; text-align: center; }
tr.drift td.verdict { background: #eef5c8; color: #4d5c0b; font-weight: 700; text-align: center; }
tr.unseen td { background: #fff7dc; }
table.config td:first-child { text-align: left; color: #555; }
table.config td { text-align: left; }
figure { margin: 18px 0 26px; }
figure svg { display: block; width: 100%; max-width: 960px; height: auto; border: 1px solid #e2e2e2; }
figure svg image { image-rendering: pixelated; }
figcaption { max-width: 960px; font-size: 14px; color: #333; margin-top: 6px; }
.pair { display: grid; grid-template-columns: repeat(auto-fit, minmax(560px, 1fr)); gap: 8px 20px; }
.pair figure svg { max-width: 100%; }
.note { background: #fff3cd; border: 1px solid #e6cf7e; padding: 8px 12px; max-width: 940px; }
code { background: #f4f4f4; padding: 1px 4px; font-size: 13px; }
.muted { color: #666; font-size: 13px; }
)";

struct rendered_plot {
  plot p;
  std::string svg;  // inline, empty when not drawn
};

std::string figure_html(const rendered_plot& rp, std::size_t index) {
  std::string h = "<figure id=\"fig-" + html_escape(rp.p.name) + "\">\n";
  if (!rp.svg.empty()) {
    h += inline_svg(rp.svg, "f" + std::to_string(index) + "_", rp.p.title) + "\n";
  } else {
    h += "<p class=\"note\">" + html_escape(rp.p.title) + ": not drawn (see the note above); its gnuplot "
         "script is <code>plots/" + html_escape(rp.p.name) + ".gp</code>.</p>\n";
  }
  h += "<figcaption><b>" + html_escape(rp.p.title) + ".</b> " + html_escape(rp.p.caption) +
       " <span class=\"muted\">(plots/" + html_escape(rp.p.name) + ".svg, .png, .gp)</span></figcaption>\n";
  return h + "</figure>\n";
}

std::string report_html(const report_result& r, const write_options& o, const std::vector<std::string>& stems,
                        const std::vector<rendered_plot>& main_plots, const std::vector<rendered_plot>& source_plots,
                        const std::vector<rendered_plot>& heat_plots, const std::optional<rendered_plot>& bands_plot,
                        const std::string& plot_note) {
  const auto& q = r.request;
  const auto& c = q.config;
  std::string h;
  h += "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n";
  h += "<title>ropecheck precision report: " + html_escape(q.config_name) + "</title>\n";
  h += "<style>" + std::string(css) + "</style>\n</head>\n<body>\n";
  h += "<h1>ropecheck precision report: " + html_escape(q.config_name) + "</h1>\n";
  const auto fails = std::count_if(r.series.begin(), r.series.end(), [](const auto& s) { return !s.passes; });
  const bool judged = std::any_of(r.series.begin(), r.series.end(), [](const auto& s) { return s.judge.judged; });
  h += "<p>" + std::to_string(r.series.size()) + " implementations checked against the reference up to position " +
       integer(q.max_position) + ": <b>" + std::to_string(r.series.size() - static_cast<std::size_t>(fails)) +
       " pass, " + std::to_string(fails) + " fail</b> " +
       (judged ? std::string("(the verdict is the judge's, as <code>ropecheck audit</code> would give it on each "
                             "implementation's outputs for the probe set; the threshold crossings are figures: angle "
                             "threshold ")
               : std::string("(angle threshold ")) +
       short_number(q.angle_threshold_rad) + " rad, position threshold " + short_number(q.position_threshold_tokens) +
       " tokens).</p>\n";

  // Configuration.
  h += "<h2>Configuration</h2>\n<table class=\"config\">\n";
  auto row = [&](std::string_view k, const std::string& v) {
    h += "<tr><td>" + html_escape(k) + "</td><td>" + html_escape(v) + "</td></tr>\n";
  };
  row("config", q.config_name);
  row("head_dim / rotary_dim", std::to_string(c.head_dim) + " / " + std::to_string(c.rotary_dim) + " (" +
                                   std::to_string(c.bands()) + " bands)");
  row("base (rope_theta)", short_number(c.base, 9));
  row("layout", std::string(to_string(c.pair_layout)));
  std::string scaling = std::string(to_string(c.scaling));
  if (c.scaling != scaling_kind::none) scaling += ", factor " + short_number(c.factor, 9);
  if (c.scaling == scaling_kind::yarn)
    scaling += ", beta_fast " + short_number(c.beta_fast) + ", beta_slow " + short_number(c.beta_slow);
  if (c.scaling == scaling_kind::llama3)
    scaling += ", low_freq_factor " + short_number(c.low_freq_factor) + ", high_freq_factor " +
               short_number(c.high_freq_factor);
  row("scaling", scaling);
  row("attention factor", short_number(r.attention_factor, 9));
  row("max_position_embeddings / original", integer(c.max_position_embeddings) + " / " +
                                                 integer(c.original_max_position_embeddings));
  row("L_train / L_eval (band table)", integer(q.train_length) + " / " + integer(q.eval_length));
  row("sweep", std::string(q.exhaustive ? "every position 0.." : "positions up to ") + integer(q.max_position));
  row("thresholds", "angle " + short_number(q.angle_threshold_rad) + " rad; position " +
                        short_number(q.position_threshold_tokens) + " tokens");
  std::array<char, 32> seed{};
  std::snprintf(seed.data(), seed.size(), "0x%llx", static_cast<unsigned long long>(q.seed));
  row("seed (random head vectors)", seed.data());

  // Verdicts.
  h += "</table>\n<h2>Verdicts</h2>\n<table class=\"verdicts\">\n<tr><th class=\"text\">implementation</th>"
       "<th class=\"text\">description</th><th class=\"text\">cos/sin dtype</th><th>verdict</th>"
       "<th class=\"text\">dtype judged</th><th>judge: worst error / allowance</th>"
       "<th>first p with angle error &gt; " + html_escape(short_number(q.angle_threshold_rad)) + " rad</th>"
       "<th>first p with &ge; " + html_escape(short_number(q.position_threshold_tokens)) + " token error</th>"
       "<th>first p with applied(p) = applied(p+1)</th><th>worst band</th><th>max applied angle error (rad) at p</th>"
       "<th>max position error (tokens)</th><th>max cos/sin error</th><th>max score violation</th></tr>\n";
  auto at = [](const field_max& m) {
    return m.position < 0 ? std::string("&ndash;") : html_escape(short_number(m.value)) + " at " + integer(m.position);
  };
  for (std::size_t i = 0; i < r.series.size(); ++i) {
    const auto& s = r.series[i];
    const std::string row_class = !s.judge.judged ? (s.passes ? "pass" : "fail")
                                  : s.judge.verdict == "pass" || s.judge.verdict == "drift" ? s.judge.verdict
                                                                                            : "fail";
    h += "<tr class=\"" + row_class + "\" id=\"impl-" + html_escape(stems[i]) + "\">";
    h += "<td class=\"text\"><code>" + html_escape(s.name) + "</code></td>";
    h += "<td class=\"text\">" + html_escape(s.description) + "</td>";
    h += "<td class=\"text\">" + html_escape(s.cos_sin_dtype) + "</td>";
    if (s.judge.judged) {
      h += "<td class=\"verdict\" title=\"" + html_escape(s.judge.finding) + "\">" + html_escape(s.judge.verdict) + "</td>";
      h += "<td class=\"text\">" + html_escape(s.judge.dtype) + "</td>";
      h += "<td>" + html_escape(short_number(s.judge.worst_ratio)) + " at " + integer(s.judge.worst_position) +
           (s.judge.worst_band >= 0 ? ", band " + std::to_string(s.judge.worst_band) : std::string()) + "</td>";
    } else {
      h += std::string("<td class=\"verdict\">") + (s.passes ? "PASS" : "FAIL") + "</td><td class=\"text\">&ndash;</td><td>&ndash;</td>";
    }
    h += "<td>" + never_or(s.first_angle_over_threshold) + "</td>";
    h += "<td>" + never_or(s.first_position_error_over_threshold) + "</td>";
    h += "<td>" + never_or(s.first_adjacent_positions_equal) + "</td>";
    h += "<td>" + (s.worst_band < 0 ? std::string("&ndash;") : std::to_string(s.worst_band)) + "</td>";
    h += "<td>" + at(max_of(s, error_columns[0])) + "</td>";
    h += "<td>" + at(max_of(s, error_columns[1])) + "</td>";
    h += "<td>" + at(max_of(s, error_columns[2])) + "</td>";
    h += "<td>" + at(max_of(s, error_columns[5])) + "</td></tr>\n";
  }
  h += "</table>\n<p class=\"muted\">&ldquo;never&rdquo;: not reached up to position " + integer(q.max_position) +
       ". Per-position figures: <code>data/&lt;implementation&gt;.csv</code>; verdicts and maxima: "
       "<code>summary.json</code>.</p>\n";
  if (judged) {
    h += "<p>The verdict: each implementation rotated the judge's probe set (positions 0..63, &plusmn;8 around "
         "256, 2048, 4096, 65504 and 2<sup>24</sup>, 8 per octave to twice max_position_embeddings; inputs k/128) "
         "in its own storage and compute types, and the judge (<code>ropecheck audit</code>'s, reference exact) "
         "judged the outputs in the storage dtype: <b>pass</b>, <b>drift</b> (a pass with the fp32 angle-drift "
         "warning), or the first bug class it names. Its first finding:</p>\n<ul>\n";
    for (const auto& s : r.series) {
      if (!s.judge.judged) continue;
      h += "<li><code>" + html_escape(s.name) + "</code> (" + html_escape(s.judge.verdict) + "): " +
           (s.judge.finding.empty() ? std::string("no finding") : html_escape(s.judge.finding)) + "</li>\n";
    }
    h += "</ul>\n";
  }

  // Plots.
  h += "<h2>Error against position</h2>\n";
  if (!plot_note.empty()) h += "<p class=\"note\">" + html_escape(plot_note) + "</p>\n";
  std::size_t index = 0;
  for (const auto& p : main_plots) h += figure_html(p, index++);
  if (!source_plots.empty()) {
    h += "<h2>Where the error comes from</h2>\n<p>Each term at its largest over bands, per "
         "implementation: <b>frequency rounding</b> p (inv_freq_used &minus; &theta;) grows in proportion "
         "to p; <b>position representation</b> (p_used &minus; p) inv_freq_used jumps where the position's "
         "type runs out of integers; <b>product rounding</b> is the rounding of p_used inv_freq_used; "
         "<b>sin/cos evaluation</b> (cos_raw against af cos of the angle formed) and <b>cache storage</b> "
         "(rounding cos/sin to the cache dtype) are in cos/sin units and stay flat; <b>rotation "
         "arithmetic</b> is |y &minus; R~x| / |x| given the final cos/sin.</p>\n<div class=\"pair\">\n";
    for (const auto& p : source_plots) h += figure_html(p, index++);
    h += "</div>\n";
  }
  if (!heat_plots.empty()) {
    h += "<h2>Error by band and position</h2>\n<div class=\"pair\">\n";
    for (const auto& p : heat_plots) h += figure_html(p, index++);
    h += "</div>\n";
  }

  // Band table.
  h += "<h2>Bands</h2>\n";
  if (bands_plot) h += figure_html(*bands_plot, index++);
  h += "<p>L_train = " + integer(q.train_length) + " tokens, L_eval = " + integer(q.eval_length) +
       " tokens. Turns in training = L_train &theta;<sub>i</sub> / 2&pi; (before scaling). Unseen = share of "
       "the arc a band sweeps up to L_eval (at most one turn) that lies past the arc it swept in training; "
       "rows that never completed one turn in training are shaded. Storage floor = 2<sup>&minus;d</sup> / "
       "&theta;<sub>i</sub> tokens: a pair stored with d significant bits (bf16 8, fp16 11, fp32 24) can be off "
       "by up to 2<sup>&minus;d</sup> rad in its angle (each component rounded to within 2<sup>&minus;d</sup> "
       "relative moves the angle by at most 2<sup>&minus;d</sup> |sin 2&psi;|), so band i cannot tell "
       "positions apart finer than that, however exactly the rotation was computed.</p>\n";
  h += "<table class=\"bands\">\n<tr><th>band i</th><th>&theta;<sub>i</sub> before scaling (rad/token)</th>"
       "<th>&theta;<sub>i</sub> after scaling (rad/token)</th><th>wavelength before (tokens)</th>"
       "<th>wavelength after (tokens)</th><th>turns in training</th><th>arc swept in training (rad)</th>"
       "<th>unseen at L_eval, before scaling</th><th>unseen at L_eval, after scaling</th>"
       "<th>storage floor bf16 (tokens)</th><th>fp16</th><th>fp32</th></tr>\n";
  auto percent = [](double f) { return std::isnan(f) ? std::string("nan") : short_number(100 * f, 3) + "%"; };
  for (const auto& b : r.bands) {
    h += std::string("<tr") + (b.turns_in_training < 1 ? " class=\"unseen\"" : "") + "><td>" +
         std::to_string(b.band) + "</td><td>" + short_number(b.inv_freq_unscaled, 4) + "</td><td>" +
         short_number(b.inv_freq, 4) + "</td><td>" + table_number(b.wavelength_unscaled) + "</td><td>" +
         table_number(b.wavelength) + "</td><td>" + table_number(b.turns_in_training) + "</td><td>" +
         table_number(2 * std::numbers::pi * b.turns_in_training) + "</td><td>" +
         percent(b.unseen_fraction_unscaled) + "</td><td>" + percent(b.unseen_fraction_scaled) + "</td><td>" +
         table_number(b.floor_tokens_bfloat16) + "</td><td>" + table_number(b.floor_tokens_float16) + "</td><td>" +
         table_number(b.floor_tokens_float32) + "</td></tr>\n";
  }
  h += "</table>\n";

  // Timing and provenance.
  const auto& t = r.time;
  h += "<h2>Timing and provenance</h2>\n<p>" + integer(t.values) + " values (" + integer(t.positions) +
       " positions &times; " + std::to_string(r.bands.size()) + " bands &times; " + std::to_string(r.series.size()) +
       " implementations) in " + short_number(t.seconds_total) + " s on " + std::to_string(t.threads) +
       " threads: " + short_number(t.values_per_second) + " values/s; the fast reference alone runs at " +
       short_number(t.reference_values_per_second) + " values/s; a plain MPFR reference would have needed about " +
       short_number(t.mpfr_seconds_estimate) + " s.</p>\n";
  h += "<table class=\"config\">\n";
  row("command", o.command.empty() ? std::string("(not recorded)") : o.command);
  row("ropecheck version", r.ropecheck_version);
  row("reference precision", r.reference_precision);
  row("plots", "gnuplot (Debian gnuplot-nox), scripts in plots/*.gp");
  row("machine-readable", "summary.json (deterministic), timing.json, data/*.csv");
  h += "</table>\n</body>\n</html>\n";
  return h;
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Public pieces

std::string file_stem(std::string_view name) {
  std::string s;
  for (char ch : name) {
    const bool keep = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
                      ch == '_' || ch == '-' || ch == '.';
    s += keep ? ch : '_';
  }
  if (s.empty() || s.front() == '.') s.insert(0, "impl");
  return s;
}

std::string implementation_csv(const implementation_series& series) { return error_table(series.points); }

std::string bands_csv(const report_result& r) {
  std::string s =
      "band,inv_freq,inv_freq_unscaled,wavelength,wavelength_unscaled,turns_in_training,"
      "unseen_fraction_unscaled,unseen_fraction_scaled,floor_tokens_bfloat16,floor_tokens_float16,"
      "floor_tokens_float32\n";
  for (const auto& b : r.bands) {
    s += std::to_string(b.band) + ',' + exact_number(b.inv_freq) + ',' + exact_number(b.inv_freq_unscaled) + ',' +
         exact_number(b.wavelength) + ',' + exact_number(b.wavelength_unscaled) + ',' +
         exact_number(b.turns_in_training) + ',' + exact_number(b.unseen_fraction_unscaled) + ',' +
         exact_number(b.unseen_fraction_scaled) + ',' + exact_number(b.floor_tokens_bfloat16) + ',' +
         exact_number(b.floor_tokens_float16) + ',' + exact_number(b.floor_tokens_float32) + '\n';
  }
  return s;
}

// Long format, band-major: band,bucket,position_begin,position_end,angle_rad. position_end is
// exclusive; past the given edges it is max_position + 1 of the sweep (or -1 when unknown).
std::string heat_csv(const implementation_series& series) {
  std::string s = "band,bucket,position_begin,position_end,angle_rad\n";
  const auto& e = series.heat_bucket_edges;
  const std::int64_t last = series.points.empty() ? -1 : series.points.back().position + 1;
  for (std::size_t b = 0; b < series.band_position_heat.size(); ++b) {
    const auto& row = series.band_position_heat[b];
    for (std::size_t k = 0; k < row.size(); ++k) {
      const std::int64_t begin = k < e.size() ? e[k] : -1;
      const std::int64_t end = k + 1 < e.size() ? e[k + 1] : last;
      s += std::to_string(b) + ',' + std::to_string(k) + ',' + integer(begin) + ',' + integer(end) + ',' +
           exact_number(row[k]) + '\n';
    }
  }
  return s;
}

// summary.json — keys, in this order (stable; add new keys only at the end of an object):
//   format                 "ropecheck-report-summary"
//   format_version         1
//   ropecheck_version, reference_precision
//   request                { config_name, config {head_dim, rotary_dim, base, layout, scaling,
//                            factor, max_position_embeddings, original_max_position_embeddings,
//                            beta_fast, beta_slow, truncate, attention_factor, mscale,
//                            mscale_all_dim, low_freq_factor, high_freq_factor, short_factor,
//                            long_factor}, train_length, eval_length, max_position, exhaustive,
//                            implementations, seed, angle_threshold_rad,
//                            position_threshold_tokens }
//   attention_factor
//   bands                  number of bands (the table is data/bands.csv)
//   passes                 true when every implementation passes (the judge's verdict when it ran)
//   implementations        [ { name, description, cos_sin_dtype, csv, heat_csv, passes,
//                              first_angle_over_threshold, first_position_error_over_threshold,
//                              first_adjacent_positions_equal, worst_band, positions, nan_points,
//                              max { angle_rad, position_tokens, cos_sin_abs, cos_sin_ulps,
//                                    rotated_relative, score_violation, source_frequency_rad,
//                                    source_position_rad, source_product_rad, source_sin_cos,
//                                    source_cache, source_rotation, magnitude_rel,
//                                    source_formed_angle_rad: {value, position}},
//                              judge { judged, verdict, pass, dtype, tokens, worst_ratio,
//                                      max_error_ulps, tolerance_ulps, worst_position, worst_band,
//                                      finding } } ]
//   timing                 "timing.json" (timing, thread count and the command line vary from run
//                          to run for the same inputs: they live in that file, so that this one
//                          is byte-identical for the same inputs and seed, whatever --threads)
//   storage_floor          [ { dtype, bits, angle_rad (2^-bits), max_tokens, band (the slowest),
//                              tokens_per_band [2^-bits / theta_i per band] } ] for bfloat16,
//                          float16, float32 (engine.hpp: storage_floor_rad)
// Conventions: positions are integers, -1 = never (as in report_data.hpp); a non-finite number
// is null; "max" ignores NaN points (nan_points counts them) and its position is where the
// maximum is first reached (-1 and null value when there are no points).
std::string summary_json(const report_result& r, const write_options& o) {
  const auto stems = file_stems(r);
  const auto& q = r.request;
  ojson j;
  j["format"] = "ropecheck-report-summary";
  j["format_version"] = 1;
  j["ropecheck_version"] = r.ropecheck_version;
  j["reference_precision"] = r.reference_precision;
  ojson req;
  req["config_name"] = q.config_name;
  req["config"] = config_json(q.config);
  req["train_length"] = q.train_length;
  req["eval_length"] = q.eval_length;
  req["max_position"] = q.max_position;
  req["exhaustive"] = q.exhaustive;
  req["implementations"] = q.implementations;
  req["seed"] = q.seed;
  req["angle_threshold_rad"] = q.angle_threshold_rad;
  req["position_threshold_tokens"] = q.position_threshold_tokens;
  j["request"] = std::move(req);
  j["attention_factor"] = r.attention_factor;
  j["bands"] = r.bands.size();
  j["passes"] = std::all_of(r.series.begin(), r.series.end(), [](const auto& s) { return s.passes; });
  ojson impls = ojson::array();
  for (std::size_t i = 0; i < r.series.size(); ++i) {
    const auto& s = r.series[i];
    ojson e;
    e["name"] = s.name;
    e["description"] = s.description;
    e["cos_sin_dtype"] = s.cos_sin_dtype;
    e["csv"] = "data/" + stems[i] + ".csv";
    e["heat_csv"] = "data/heat_" + stems[i] + ".csv";
    e["passes"] = s.passes;
    e["first_angle_over_threshold"] = s.first_angle_over_threshold;
    e["first_position_error_over_threshold"] = s.first_position_error_over_threshold;
    e["first_adjacent_positions_equal"] = s.first_adjacent_positions_equal;
    e["worst_band"] = s.worst_band;
    e["positions"] = s.points.size();
    e["nan_points"] = nan_points(s);
    ojson mx;
    for (const auto& c : error_columns) {
      const field_max m = max_of(s, c);
      ojson v;
      v["value"] = m.position < 0 ? ojson(nullptr) : ojson(m.value);
      v["position"] = m.position;
      mx[c.name] = std::move(v);
    }
    e["max"] = std::move(mx);
    ojson jv;
    jv["judged"] = s.judge.judged;
    jv["verdict"] = s.judge.verdict;
    jv["pass"] = s.judge.pass;
    jv["dtype"] = s.judge.dtype;
    jv["tokens"] = s.judge.tokens;
    jv["worst_ratio"] = finite_or_null(s.judge.worst_ratio);
    jv["max_error_ulps"] = finite_or_null(s.judge.max_error_ulps);
    jv["tolerance_ulps"] = finite_or_null(s.judge.tolerance_ulps);
    jv["worst_position"] = s.judge.worst_position;
    jv["worst_band"] = s.judge.worst_band;
    jv["finding"] = s.judge.finding;
    e["judge"] = std::move(jv);
    impls.push_back(std::move(e));
  }
  j["implementations"] = std::move(impls);
  j["timing"] = "timing.json";
  ojson floors = ojson::array();
  for (const auto& f : r.storage_floors) {
    ojson e;
    e["dtype"] = f.dtype;
    e["bits"] = f.bits;
    e["angle_rad"] = f.angle_rad;
    e["max_tokens"] = finite_or_null(f.max_tokens);
    e["band"] = f.band;
    ojson per_band = ojson::array();
    for (const auto& b : r.bands) {
      const double v = f.dtype == "bfloat16" ? b.floor_tokens_bfloat16
                       : f.dtype == "float16" ? b.floor_tokens_float16
                                              : b.floor_tokens_float32;
      per_band.push_back(finite_or_null(v));
    }
    e["tokens_per_band"] = std::move(per_band);
    floors.push_back(std::move(e));
  }
  j["storage_floor"] = std::move(floors);
  return j.dump(2) + "\n";
}

// timing.json — { command, seconds_total, values_per_second, reference_values_per_second,
// mpfr_seconds_estimate, threads, positions, values }: varies from run to run.
std::string timing_json(const report_result& r, const write_options& o) {
  const auto& t = r.time;
  ojson j;
  j["command"] = o.command;
  j["seconds_total"] = t.seconds_total;
  j["values_per_second"] = t.values_per_second;
  j["reference_values_per_second"] = t.reference_values_per_second;
  j["mpfr_seconds_estimate"] = t.mpfr_seconds_estimate;
  j["threads"] = t.threads;
  j["positions"] = t.positions;
  j["values"] = t.values;
  return j.dump(2) + "\n";
}

// ---------------------------------------------------------------------------------------------
// The folder

written_report write_report(const report_result& r, const fs::path& folder, const write_options& o) {
  written_report w{folder, {}};
  make_folder(folder);
  make_folder(folder / "data");
  auto emit = [&](const fs::path& rel, std::string_view bytes) {
    write_file(folder / rel, bytes);
    w.files.push_back(rel);
  };

  // Data and JSON first: they are what a CI reads, and must exist even when plotting fails.
  const auto stems = file_stems(r);
  for (std::size_t i = 0; i < r.series.size(); ++i) {
    emit(fs::path("data") / (stems[i] + ".csv"), implementation_csv(r.series[i]));
    emit(fs::path("data") / ("heat_" + stems[i] + ".csv"), heat_csv(r.series[i]));
  }
  emit(fs::path("data") / "bands.csv", bands_csv(r));
  emit("summary.json", summary_json(r, o));
  emit("timing.json", timing_json(r, o));

  // Plot scripts.
  std::vector<rendered_plot> main_plots, source_plots, heat_plots;
  std::optional<rendered_plot> bands_plot;
  std::string plot_note;
  std::optional<std::string> plot_error;
  if (o.plots) {
    make_folder(folder / "plots");
    std::vector<plot_source> sources;
    for (std::size_t i = 0; i < r.series.size(); ++i) {
      if (r.series[i].points.size() > max_plotted_points) {
        const std::string file = stems[i] + "_envelope.csv";
        emit(fs::path("plots") / file, error_table(thin(r.series[i].points)));
        sources.push_back({file, true});
      } else {
        sources.push_back({"../data/" + stems[i] + ".csv", false});
      }
    }
    const auto& q = r.request;
    auto add = [](std::vector<rendered_plot>& to, std::optional<plot> p) {
      if (p) to.push_back({std::move(*p), ""});
    };
    add(main_plots,
        field_plot(r, sources, "angle_error", "Applied angle error vs position", "angle_rad",
                   "applied angle error |atan2(sin, cos) - p theta_i|, max over bands (rad)",
                   std::pair{q.angle_threshold_rad, "threshold " + short_number(q.angle_threshold_rad) + " rad"},
                   "The angle of the (cos, sin) pair each implementation really feeds its rotation (after "
                   "every cast and cache), against p theta_i. Look for where a curve crosses the dashed "
                   "threshold: angles formed in fp32 drift in proportion to p; a fast sin/cos or a 16-bit "
                   "cos/sin applies angles a fixed fraction off, which grows with p in the slow bands too.",
                   "errors"));
    add(main_plots,
        field_plot(r, sources, "position_error", "Position error in tokens vs position", "position_tokens",
                   "position error |applied angle error| / theta_i, max over bands (tokens)",
                   std::pair{q.position_threshold_tokens,
                             "threshold " + short_number(q.position_threshold_tokens) + " token"},
                   "A curve above the dashed line no longer tells position p from its neighbours in some "
                   "band: that is a precision failure that changes effective positions, whatever the dtype. "
                   "The grey dash-dotted lines are the storage floors of bf16, fp16 and fp32: a pair stored with "
                   "d significant bits (8, 11, 24) can be off by 2^-d rad, i.e. 2^-d / theta_i tokens in band i, "
                   "however exactly it was computed (drawn: the slowest band's; per band in the band table); an "
                   "error below a dtype's line is one a model keeping q/k in that dtype could not represent anyway.",
                   "errors", floor_lines(r)));
    add(main_plots,
        field_plot(r, sources, "cos_sin_error", "cos/sin error vs position", "cos_sin_abs",
                   "|cos/sin - af cos/sin(p theta)|, max over bands", std::nullopt,
                   "Look for growth with position (angle drift) against a flat floor set by the cos/sin "
                   "dtype; a curve high already at position 0 points to a wrong attention factor.",
                   "errors"));
    add(main_plots,
        field_plot(r, sources, "score_violation", "Relative-offset score violation vs position",
                   "score_violation",
                   "score violation, relative to sum |q_j k_j|", std::nullopt,
                   "The score <R(m)q, R(m-1)k> of a query at m and a key at m-1 should equal "
                   "af <q, R(-1)k>, which depends only on their offset (shown: the difference over "
                   "sum |q_j k_j|); a curve that grows with m means absolute position leaks into attention.",
                   "violations"));
    for (std::size_t i = 0; i < r.series.size(); ++i) add(source_plots, sources_plot(r, sources[i], r.series[i], stems[i]));
    // Heat maps for the key implementations: failing first, then by largest angle error.
    std::vector<std::size_t> order(r.series.size());
    for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
    auto worst = [&](std::size_t i) {
      const double v = max_of(r.series[i], error_columns[0]).value;
      return std::isnan(v) ? -1.0 : v;
    };
    std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
      if (r.series[a].passes != r.series[b].passes) return !r.series[a].passes;
      return worst(a) > worst(b);
    });
    for (std::size_t k = 0, made = 0; k < order.size() && made < static_cast<std::size_t>(std::max(0, o.heat_map_implementations)); ++k) {
      auto p = heat_plot(r.series[order[k]], stems[order[k]]);
      if (p) {
        heat_plots.push_back({std::move(*p), ""});
        ++made;
      }
    }
    if (auto p = band_plot(r)) bands_plot = rendered_plot{std::move(*p), ""};

    std::vector<rendered_plot*> all;
    for (auto* v : {&main_plots, &source_plots, &heat_plots})
      for (auto& p : *v) all.push_back(&p);
    if (bands_plot) all.push_back(&*bands_plot);
    for (auto* p : all) emit(fs::path("plots") / (p->p.name + ".gp"), gp_preamble(r, p->p) + gp_render(p->p, o.png));

    // Draw.
    const fs::path plots_dir = fs::absolute(folder / "plots");
    const auto gnuplot = find_program(o.gnuplot);
    if (!gnuplot) {
      const char* env = std::getenv("PATH");
      plot_error = "ropecheck report: cannot draw the plots: program '" + o.gnuplot + "' not found" +
                   (o.gnuplot.find('/') == std::string::npos ? " on PATH (" + std::string(env ? env : "") + ")" : "") +
                   ". Plots need gnuplot: install the Debian package gnuplot-nox (apt-get install gnuplot-nox). "
                   "The data (data/*.csv, summary.json, timing.json), the plot scripts (plots/*.gp) and "
                   "report.html without plots were written to '" + folder.string() + "'.";
      plot_note = "Plots were not drawn: gnuplot was not found (install the Debian package gnuplot-nox, then "
                  "run `gnuplot -d NAME.gp` in plots/ or rerun the report).";
    } else {
      for (auto* p : all) {
        const std::string script = p->p.name + ".gp";
        const run_outcome out = run_program(*gnuplot, {"-d", script}, plots_dir);
        const auto svg = read_file(plots_dir / (p->p.name + ".svg"));
        if (out.status != 0 || !svg || svg->find("</svg>") == std::string::npos) {
          if (!plot_error) {
            plot_error = "ropecheck report: gnuplot failed on '" + (plots_dir / script).string() + "' (command: " +
                         gnuplot->string() + " -d " + script + " in " + plots_dir.string() + ", exit status " +
                         std::to_string(out.status) + "): " + tail(out.output);
            plot_note = "Some plots were not drawn: gnuplot failed on plots/" + script + ".";
          }
          continue;
        }
        p->svg = *svg;
        w.files.push_back(fs::path("plots") / (p->p.name + ".svg"));
        if (o.png) w.files.push_back(fs::path("plots") / (p->p.name + ".png"));
      }
    }
  } else {
    plot_note = "Plots were not requested.";
  }

  emit("report.html", report_html(r, o, stems, main_plots, source_plots, heat_plots, bands_plot, plot_note));
  if (plot_error) throw std::runtime_error(*plot_error);
  return w;
}

}  // namespace ropecheck::report
