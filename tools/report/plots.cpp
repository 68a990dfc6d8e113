// tools/report/plots.cpp — the gnuplot scripts of `ropecheck report` (plots.hpp). Each script reads
// the CSV files in data/ and renders SVG (inlined into report.html) and PNG; gnuplot runs through
// posix_spawn with its working directory set to plots/, so the folder can be moved and any script
// rerun by hand.
#include "plots.hpp"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>

extern char** environ;

namespace ropecheck::report::detail {

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

constexpr double position_floor = 0.5;            // where position 0 is drawn on log axes


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

// The gnuplot functions the log-log plots draw through: FLOOR (f's), cy(v) lifting values below it to it (NaN kept),
// cx(p) drawing position or offset 0 at position_floor.
std::string clamp_functions(const log_floor& f) {
  return "FLOOR = " + gp_number(f.floor) + "\n" + "cy(v) = (v != v) ? NaN : (v > FLOOR ? v : FLOOR)\n" +
         "cx(p) = (p > " + gp_number(position_floor) + " ? p : " + gp_number(position_floor) + ")\n";
}

std::string floor_note(const log_floor& f, std::string_view what) {
  if (!f.clamps_zeros) return "";
  return " Zero " + std::string(what) + " are drawn at the floor " + short_number(f.floor, 2) + ".";
}

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
                               const std::vector<std::pair<double, std::string>>& references) {
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
  s += clamp_functions(f);
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
// The score-level figure: per implementation, the largest score error per offset bucket against |m - n|,
// keys behind or at the query (m >= n, the causal case) solid, keys ahead (m < n) dashed in the same colour.
// Data: data/score_<stem>.csv (output.hpp); nothing is computed here.
std::optional<plot> score_offset_plot(const report_result& r, const std::vector<std::string>& stems) {
  std::vector<double> values;
  std::vector<std::size_t> shown;
  for (std::size_t i = 0; i < r.series.size(); ++i) {
    if (r.series[i].score_by_offset.empty()) continue;
    shown.push_back(i);
    for (const auto& row : r.series[i].score_by_offset) values.push_back(row.max);
  }
  if (shown.empty()) return std::nullopt;
  const log_floor f = floor_for(values);
  plot p{"score_offsets", "Score error vs query-key offset |m - n|", "", ""};
  std::string& s = p.script;
  s += "set xlabel 'offset |m - n| (tokens; buckets [2^k, 2^(k+1)), drawn at their start)'\n";
  s += "set ylabel '|<R~_m q, R~_n k> - af^2 <q, R(n-m) k>| / (af^2 |q| |k|), max per bucket' noenhanced\n";
  s += "set logscale xy\n";
  s += position_tics(r.request.max_position);
  s += "set format y '10^{%L}'\n";
  s += clamp_functions(f);
  s += "plot \\\n";
  for (std::size_t k = 0; k < shown.size(); ++k) {
    const std::size_t i = shown[k];
    const std::string file = gp_quote("../data/score_" + stems[i] + ".csv");
    const std::string colour = "lc rgb '" + std::string(palette[i % palette.size()]) + "' lw 2";
    s += "  " + file + " skip 1 using ($1 >= 0 ? cx($3) : NaN):(cy($5)) with linespoints " + colour + " dt 1 pt 7 ps 0.8 title " +
         gp_quote(r.series[i].name) + " noenhanced, \\\n";
    s += "  " + file + " skip 1 using ($2 < 0 ? cx($3) : NaN):(cy($5)) with linespoints " + colour +
         " dt 2 pt 6 ps 0.8 notitle";
    s += k + 1 < shown.size() ? ", \\\n" : "\n";
  }
  std::string infinite;
  for (std::size_t i : shown)
    for (const auto& row : r.series[i].score_by_offset)
      if (std::isinf(row.max)) {
        infinite += (infinite.empty() ? " Infinite errors (non-finite scores) cannot be drawn: " : "; ") + r.series[i].name +
                    " from m - n = " + integer(row.offset_lo);
        break;
      }
  if (!infinite.empty()) infinite += ".";
  p.caption = "Queries at m and keys at n over the report's positions (48 log-spaced, each with keys at m -+ 1, 3, 16, "
              "255): the score each implementation gives, against the reference's, which depends on m - n only. "
              "Solid: keys at or behind the query (m >= n); dashed: keys ahead (m < n). The buckets of the near keys (1, "
              "2-3, 16-31, 128-255) hold pairs at every query position up to the last, so they carry large-position "
              "drift that the buckets of far-apart pairs only reach at large offsets: compare curves, not buckets. A curve that rises with the "
              "offset means the two rotations disagree more the further apart they are (angles drifting with "
              "position); a flat high curve, an error at every offset (a wrong rule). data/score_*.csv has the "
              "RMS per bucket and the worst (m, n)." + infinite + floor_note(f, "errors") + " Offset 0 is drawn at " +
              short_number(position_floor) + ".";
  return p;
}

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
  g += clamp_functions(f);
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

std::string tail(const std::string& s, std::size_t n) {
  return s.size() <= n ? s : "..." + s.substr(s.size() - n);
}

}  // namespace ropecheck::report::detail
