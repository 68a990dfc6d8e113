// tools/report/data.hpp — the report's data model is the sweep's (tools/sweep/report_data.hpp, shared
// with certify): its names as the report's API spells them (report::report_request, ...).
#pragma once

#include "sweep/report_data.hpp"

namespace ropecheck::report {

using sweep::band_row;
using sweep::certificate_figures;
using sweep::certificate_row;
using sweep::error_sources;
using sweep::implementation_series;
using sweep::judge_column;
using sweep::position_errors;
using sweep::score_offset_row;
using sweep::raise_to;
using sweep::report_request;
using sweep::report_result;
using sweep::storage_floor;
using sweep::timing;

}  // namespace ropecheck::report
