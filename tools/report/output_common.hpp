// tools/report/output_common.hpp — what the writers of `ropecheck report` share (internal to
// ropecheck_report_output): number formatting, files, the per-position columns, and the plot
// records the gnuplot scripts (plots.cpp) and the HTML (html.cpp) pass around.
#pragma once

#include <algorithm>
#include <array>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <optional>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include "output.hpp"
#include "data.hpp"

namespace ropecheck::report::detail {

namespace fs = std::filesystem;

// ---------------------------------------------------------------------------------------------
// Number formatting

// Shortest decimal that reads back to the same double (std::to_chars): deterministic across runs
// and exact for machines. Non-finite values are spelled "nan", "inf", "-inf" (no sign on NaN).
inline std::string exact_number(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  std::array<char, 64> buf{};
  const auto r = std::to_chars(buf.data(), buf.data() + buf.size(), v);
  return std::string(buf.data(), r.ptr);
}

inline std::string integer(std::int64_t v) { return std::to_string(v); }

// For people: three significant digits.
inline std::string short_number(double v, int digits = 3) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  std::array<char, 64> buf{};
  std::snprintf(buf.data(), buf.size(), "%.*g", digits, v);
  return buf.data();
}

// For tables: 1000 <= |v| < 1e6 as a whole number (wavelengths, turns, arcs), else 4 digits.
inline std::string table_number(double v) {
  if (!std::isfinite(v)) return short_number(v);
  std::array<char, 64> buf{};
  const double a = std::fabs(v);
  if (a >= 1000 && a < 1e6) std::snprintf(buf.data(), buf.size(), "%.0f", v);
  else std::snprintf(buf.data(), buf.size(), "%.4g", v);
  return buf.data();
}

// A gnuplot numeric literal (gnuplot reads C notation; keep full precision).
inline std::string gp_number(double v) {
  std::array<char, 64> buf{};
  std::snprintf(buf.data(), buf.size(), "%.17g", v);
  return buf.data();
}

// ---------------------------------------------------------------------------------------------
// Files

inline void write_file(const fs::path& path, std::string_view bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) {
    throw std::runtime_error("ropecheck report: cannot create file '" + path.string() +
                             "': " + std::strerror(errno));
  }
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  out.close();
  if (!out) throw std::runtime_error("ropecheck report: cannot write file '" + path.string() + "'");
}

inline std::optional<std::string> read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

inline void make_folder(const fs::path& folder) {
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
inline int gp_column(std::string_view name) {
  for (std::size_t i = 0; i < error_columns.size(); ++i)
    if (name == error_columns[i].name) return static_cast<int>(i) + 2;
  throw std::logic_error("unknown column");
}

inline std::string error_table(const std::vector<position_errors>& points) {
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

inline field_max max_of(const implementation_series& s, const column& c) {
  field_max m;
  for (const auto& p : s.points) {
    const double v = c.get(p);
    if (std::isnan(v)) continue;
    if (m.position < 0 || v > m.value) m = {v, p.position};
  }
  return m;
}

inline std::int64_t nan_points(const implementation_series& s) {
  std::int64_t n = 0;
  for (const auto& p : s.points) {
    bool any = false;
    for (const auto& c : error_columns) any = any || std::isnan(c.get(p));
    n += any ? 1 : 0;
  }
  return n;
}

// Unique file stems, in series order.
inline std::vector<std::string> file_stems(const report_result& r) {
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
// Plot records

struct plot {
  std::string name;     // plots/<name>.gp, .svg, .png
  std::string title;
  std::string caption;  // one sentence: what to look for (+ the display notes)
  std::string script;   // the plot commands (after the common preamble)
  int width = 960;      // SVG size in px; the PNG is 4/3 of it
  int height = 540;
};

// One data file per implementation for the plots: the CSV itself, or, past max_plotted_points, a
// max envelope over log-spaced buckets (plots/<stem>_envelope.csv, same columns; each row carries
// the bucket's first position and, field by field, the maximum over the bucket, NaN ignored).
struct plot_source {
  std::string file;  // relative to plots/
  bool thinned = false;
};

// More points than this are drawn as a max envelope: sweeps mix positions a narrow type holds
// exactly with their neighbours that it does not, and a line through both fills the plot.
constexpr std::size_t max_plotted_points = 300;
constexpr int envelope_buckets_per_octave = 32;

struct rendered_plot {
  plot p;
  std::string svg;  // inline, empty when not drawn
};

}  // namespace ropecheck::report::detail
