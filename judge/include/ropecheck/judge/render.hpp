// ropecheck/judge/render.hpp — the findings as text, the same in every door: `ropecheck audit`'s
// summary (and the plugin door's, which prints it), the conformance suite's messages, the plugin door's
// own findings about the call. Each door chooses only the indentation. Covered by
// tests/judge/render_test.cpp.
#pragma once

#include <string>
#include <string_view>

#include "ropecheck/judge/judge.hpp"

namespace ropecheck::judge {

// "<indent>[bug_class] sentence\n"
[[nodiscard]] std::string finding_line(const finding& f, std::string_view indent);

struct findings_layout {
  std::string_view heading;            // before each heading line ("\n": a blank line first)
  std::string_view item;               // before each finding's line
  std::string_view unexplained_note;   // after "no known bug class explains the error"
};

// A pass: its warnings ("warnings:" and a line each), nothing when it has none. A failure: "diagnosis
// (most evidence first):" and a line per finding, or one line saying no known bug class explains the
// error.
[[nodiscard]] std::string findings_block(const verdict& v, const findings_layout& layout);

}  // namespace ropecheck::judge
