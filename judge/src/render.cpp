// judge/src/render.cpp — see ropecheck/judge/render.hpp.
#include "ropecheck/judge/render.hpp"

namespace ropecheck::judge {

std::string finding_line(const finding& f, std::string_view indent) {
  return std::string(indent) + "[" + f.bug_class + "] " + f.sentence + "\n";
}

std::string findings_block(const verdict& v, const findings_layout& layout) {
  std::string s;
  if (!v.findings.empty()) {
    s += std::string(layout.heading) + (v.pass ? "warnings:\n" : "diagnosis (most evidence first):\n");
    for (const auto& f : v.findings) s += finding_line(f, layout.item);
  } else if (!v.pass) {
    s += std::string(layout.heading) + "diagnosis: no known bug class explains the error" +
         std::string(layout.unexplained_note) + "\n";
  }
  return s;
}

}  // namespace ropecheck::judge
