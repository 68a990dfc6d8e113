// tools/golden/golden.hpp — golden reference data: what it contains and how it is rendered.
//
// The generator (gen_golden) writes these files into reference/golden/; golden_test regenerates
// a sample with the same functions and compares it with the committed files line by line.
// Values are the reference's double-double results written exactly (two hex floats, hi and lo)
// with a decimal for people; inv_freq also as 40 decimal digits straight from MPFR.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ropecheck/config.hpp"

namespace ropecheck::golden {

struct golden_case {
  std::string name;  // file stem
  rope_config cfg;
  std::int64_t seq_len = 0;
  std::vector<std::int64_t> positions;
};

// The configurations and positions the golden files cover (one per scaling rule and layout).
[[nodiscard]] std::vector<golden_case> golden_cases();

// The "# key: value" lines every file opens with: command, precision, date, config.
[[nodiscard]] std::string provenance(const std::string& command, const std::string& date, int precision_bits,
                                     const std::string& what);

// The CSV body (column line + rows) of one case; deterministic.
[[nodiscard]] std::string render_case(const golden_case& c, int precision_bits);

// The checkable figures of shared/DESIGN.md, computed by the reference: name,value,what.
[[nodiscard]] std::string render_figures(int precision_bits);

// Text of a config as one line, for provenance headers.
[[nodiscard]] std::string describe(const rope_config& cfg, std::int64_t seq_len);

}  // namespace ropecheck::golden
