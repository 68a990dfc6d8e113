// tests/support/printers.hpp — how GoogleTest prints test parameters (by name, not as bytes), so
// test names and logs stay readable.
#pragma once

#include <ostream>

#include "ropecheck/presets.hpp"

namespace ropecheck {
inline void PrintTo(const named_config& c, std::ostream* os) { *os << c.name; }
}  // namespace ropecheck
