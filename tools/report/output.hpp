// tools/report/output.hpp — the writers of `ropecheck report`: a report_result becomes a folder.
//
//   <folder>/data/<implementation>.csv   one row per position: every position_errors and
//                                        error_sources field (header line, shortest round-trip
//                                        doubles, "nan"/"inf" kept, -1 = never)
//   <folder>/data/bands.csv              the band table
//   <folder>/data/heat_<implementation>.csv  band x position-bucket max angle error (long format)
//   <folder>/data/score_<implementation>.csv the score error against the offset m - n, one row per
//                                        offset bucket (report_data.hpp score_offset_row; engine:
//                                        score_offsets.hpp): offset_lo, offset_hi, abs_offset_lo,
//                                        pairs, max, rms, worst_m, worst_n
//   <folder>/summary.json                request echo, attention factor, verdicts and max errors
//                                        per implementation, version, reference precision
//   <folder>/timing.json                 timing (varies run to run, so kept out of summary.json)
//   <folder>/plots/*.gp                  gnuplot scripts (rerun with `cd plots && gnuplot X.gp`)
//   <folder>/plots/*.svg, *.png          what gnuplot drew from them
//   <folder>/report.html                 self-contained: inline CSS and SVG, no external fetch
//
// Determinism: the CSV files, summary.json and the .gp scripts are byte-identical for identical
// inputs (fixed column and key order, std::to_chars shortest round-trip numbers, no timestamps).
// timing.json and report.html carry the timing and are not. The writers compute no metric: they
// only format the report_result (plus the max over positions that summary.json and the verdict
// table show, and the display-only clamping and thinning the plots state in their captions).
//
// Light header: no JSON, no gnuplot. Everything heavy lives in output.cpp.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "data.hpp"

namespace ropecheck::report {

struct write_options {
  std::string command;              // the command line that produced the report (echoed, shown)
  bool plots = true;                // false: CSV, JSON and an HTML without plots; no gnuplot needed
  std::string gnuplot = "gnuplot";  // program: a name looked up on PATH, or a path
  bool png = true;                  // also render plots/*.png (the HTML embeds the SVG)
  int heat_map_implementations = 3; // heat maps for this many key implementations (failing, worst first)
};

struct written_report {
  std::filesystem::path folder;
  std::vector<std::filesystem::path> files;  // relative to folder, in the order written
};

// Writes the whole folder (created if missing; existing files of the same names are replaced).
// Order: data/*.csv, summary.json, timing.json, plots/*.gp, plots/*.svg|png, report.html.
// Throws std::runtime_error naming the file or command:
//   - the folder or a file cannot be created or written;
//   - gnuplot is not found (the message says plots need the Debian package `gnuplot-nox`): the
//     CSV/JSON files, the .gp scripts and an HTML without plots are written before the throw;
//   - gnuplot fails on a script (exit status and its stderr in the message): the same.
// The CLI maps these to exit code 2.
written_report write_report(const report_result& result, const std::filesystem::path& folder,
                            const write_options& options = {});

// The deterministic pieces as strings: write_report writes exactly these bytes.
[[nodiscard]] std::string implementation_csv(const implementation_series& series);
[[nodiscard]] std::string bands_csv(const report_result& result);
[[nodiscard]] std::string heat_csv(const implementation_series& series);
[[nodiscard]] std::string score_offsets_csv(const implementation_series& series);
[[nodiscard]] std::string summary_json(const report_result& result, const write_options& options);
[[nodiscard]] std::string timing_json(const report_result& result, const write_options& options);

// Under an M-RoPE claim: what the report measures (text positions, every row equal: plain RoPE over the
// same frequencies) and how the sections split the bands among the position rows ("bands 0..15
// temporal, 16..39 height, 40..63 width"). Empty for 1-D RoPE. Printed by the CLI, in summary.json
// ("mrope").
[[nodiscard]] std::string mrope_statement(const rope_config& c);

// A file-name stem for an implementation: [A-Za-z0-9._-] kept, anything else becomes '_'.
[[nodiscard]] std::string file_stem(std::string_view implementation_name);

}  // namespace ropecheck::report
