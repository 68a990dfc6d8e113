// tools/report/html.hpp — report.html of `ropecheck report` (internal to ropecheck_report_output):
// self-contained, inline CSS and SVG, no external fetch.
#pragma once

#include <string>
#include <vector>
#include <optional>

#include "output.hpp"
#include "output_common.hpp"

namespace ropecheck::report::detail {

[[nodiscard]] std::string report_html(const report_result& r, const write_options& o,
                                      const std::vector<std::string>& stems,
                                      const std::vector<rendered_plot>& main_plots,
                                      const std::vector<rendered_plot>& source_plots,
                                      const std::vector<rendered_plot>& heat_plots,
                                      const std::optional<rendered_plot>& bands_plot, const std::string& plot_note);

}  // namespace ropecheck::report::detail
