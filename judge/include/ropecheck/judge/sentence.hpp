// ropecheck/judge/sentence.hpp — printf-style formatting of a finding's sentence and the writers' lines,
// of any length (a sentence is never cut at a buffer's size). Format strings are the callers' literals.
// Covered through the sentences its callers write: tests/judge/pass_frequencies_test.cpp (Diagnose.BaseWrong:
// "base is 10000 not 500000"), tests/judge/layer_hypothesis_test.cpp, tests/judge/output_order_test.cpp.
#pragma once

#include <cstddef>
#include <cstdio>
#include <string>

namespace ropecheck::judge {

template <class... A>
[[nodiscard]] std::string fmt(const char* f, A... a) {
  const int n = std::snprintf(nullptr, 0, f, a...);
  if (n <= 0) return {};
  std::string s(static_cast<std::size_t>(n) + 1, '\0');
  std::snprintf(s.data(), s.size(), f, a...);
  s.resize(static_cast<std::size_t>(n));
  return s;
}

}  // namespace ropecheck::judge
