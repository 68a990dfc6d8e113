// judge/src/table_probe.cpp — make_table_probe (ropecheck/judge/table.hpp): the positions a table claim asks for.
// Covered by tests/judge/table_test.cpp (TableProbe.*).
#include <algorithm>
#include <cstdint>
#include <vector>

#include "table_internal.hpp"

namespace ropecheck::judge {

table_probe make_table_probe(const table_claim& c) {
  check_table_claim(c);
  table_probe p;
  // The last position inside the table, or 2^16 for a sinusoid without end (where an fp32 angle drifts by ~1e-2 rad).
  const std::int64_t last = c.rows > 0 ? c.last_position() : std::int64_t{1} << 16;
  std::vector<std::int64_t> pos;
  for (std::int64_t i = 0; i < 64 && i <= last; ++i) pos.push_back(i);
  for (std::int64_t g = 64; g <= last; g *= 2) {
    pos.push_back(g);
    if (g + g / 2 <= last) pos.push_back(g + g / 2);
  }
  for (const std::int64_t e : {last - 1, last})
    if (e >= 0) pos.push_back(e);
  std::sort(pos.begin(), pos.end());
  pos.erase(std::unique(pos.begin(), pos.end()), pos.end());
  p.positions = std::move(pos);
  if (c.rows > 0) p.past = {last + 1, last + 2, last + 1 + c.rows / 2};
  // The ids form: two sequences, the second left-padded, long enough for the offset and a few rows past it.
  p.padded_length = std::min<std::int64_t>(last + 1, 64);
  p.left_padding = std::min<std::int64_t>(3, p.padded_length - 1);
  return p;
}

}  // namespace ropecheck::judge
