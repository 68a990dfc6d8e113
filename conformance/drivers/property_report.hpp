// conformance/drivers/property_report.hpp — a failed property as a kernel author reads it: the
// property's own message without RapidCheck's preamble, and a shrunk counterexample vector as its
// nonzero coordinates. Shared by `ropecheck audit --plugin` and the conformance suite.
#pragma once

#include <cmath>
#include <cstdlib>
#include <string>
#include <vector>

namespace ropecheck::test {

inline std::string first_line(const std::string& s) { return s.substr(0, s.find('\n')); }

// A property's message without RapidCheck's preamble ("<file>:<line>:\nRC_FAIL(<expression>)\n\n"):
// the source line of the test suite's driver means nothing to the author of a foreign kernel.
inline std::string property_message(const std::string& description) {
  const auto blank = description.find("\n\n");
  if (blank == std::string::npos || description.find(":\nRC_") > blank) return description;
  return description.substr(blank + 2);
}

// A counterexample input as its nonzero coordinates ("x[3]=0.5, x[67]=-1"): a shrunk 128-vector is
// mostly zeros, and RapidCheck prints every one. Lines that are not a bracketed list stay as they are.
inline std::string sparse_line(const std::string& line) {
  const auto colon = line.find(": [");
  if (colon == std::string::npos || line.empty() || line.back() != ']') return line;
  const std::string body = line.substr(colon + 3, line.size() - colon - 4);
  std::vector<std::string> items;
  for (std::size_t at = 0; at <= body.size();) {
    const auto comma = body.find(", ", at);
    items.push_back(body.substr(at, comma == std::string::npos ? std::string::npos : comma - at));
    if (comma == std::string::npos) break;
    at = comma + 2;
  }
  std::string nonzero;
  int count = 0;
  for (std::size_t j = 0; j < items.size(); ++j) {
    char* end = nullptr;
    const long double v = std::strtold(items[j].c_str(), &end);
    if (end == items[j].c_str()) return line;  // not a list of numbers
    if (v == 0 && !std::signbit(v)) continue;
    nonzero += (count++ ? ", x[" : "x[") + std::to_string(j) + "]=" + items[j];
  }
  const std::string head = line.substr(0, colon) + " (" + std::to_string(items.size()) + " coordinates, " +
                           std::to_string(count) + " nonzero): ";
  return head + (count ? nonzero : std::string("all +0"));
}

inline std::string sparse_counterexample(const std::string& ce) {
  std::string out;
  std::size_t at = 0;
  while (at < ce.size()) {
    const auto nl = ce.find('\n', at);
    out += sparse_line(ce.substr(at, nl == std::string::npos ? std::string::npos : nl - at)) + "\n";
    if (nl == std::string::npos) break;
    at = nl + 1;
  }
  return out;
}

}  // namespace ropecheck::test
