// tools/report/plots.hpp — the gnuplot scripts of `ropecheck report` and running gnuplot (internal
// to ropecheck_report_output; the folder's contract is output.hpp).
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "output_common.hpp"

namespace ropecheck::report::detail {

// The common head of every script (title, grid, key) and its rendering to SVG (and PNG).
[[nodiscard]] std::string gp_preamble(const report_result& r, const plot& p);
[[nodiscard]] std::string gp_render(const plot& p, bool png);

// The max envelope of points over log-spaced buckets (plot_source).
[[nodiscard]] std::vector<position_errors> thin(const std::vector<position_errors>& points);

// A log-log plot of one field for every implementation, with an optional horizontal threshold and
// reference lines (value, title).
[[nodiscard]] std::optional<plot> field_plot(const report_result& r, const std::vector<plot_source>& sources,
                                             std::string name, std::string title, std::string field,
                                             std::string ylabel,
                                             std::optional<std::pair<double, std::string>> threshold,
                                             std::string caption, std::string_view zero_what,
                                             const std::vector<std::pair<double, std::string>>& references = {});
// The score-level figure: each implementation's score error against |m - n| (data/score_<stem>.csv).
[[nodiscard]] std::optional<plot> score_offset_plot(const report_result& r, const std::vector<std::string>& stems);
// The storage floors as reference lines of the position-error plot (max over bands: the slowest band).
[[nodiscard]] std::vector<std::pair<double, std::string>> floor_lines(const report_result& r);
// Where one implementation's error comes from; its band x position heat map; the band wavelengths.
[[nodiscard]] std::optional<plot> sources_plot(const report_result& r, const plot_source& source,
                                               const implementation_series& s, const std::string& stem);
[[nodiscard]] std::optional<plot> heat_plot(const implementation_series& s, const std::string& stem);
[[nodiscard]] std::optional<plot> band_plot(const report_result& r);

// A program on PATH (or a path), if it exists and is executable.
[[nodiscard]] std::optional<fs::path> find_program(const std::string& program);
struct run_outcome {
  int status = -1;     // exit status, or -1 if it did not exit normally
  std::string output;  // stdout and stderr, interleaved
};
// Runs program with args in cwd, stdin from /dev/null, and collects its output.
[[nodiscard]] run_outcome run_program(const fs::path& program, const std::vector<std::string>& args,
                                      const fs::path& cwd);
// The last n characters of s ("..." in front when cut).
[[nodiscard]] std::string tail(const std::string& s, std::size_t n = 1500);

}  // namespace ropecheck::report::detail
