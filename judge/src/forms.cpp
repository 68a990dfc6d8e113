// judge/src/forms.cpp — the verdicts of both call forms as one list (ropecheck/judge/forms.hpp).
#include "ropecheck/judge/forms.hpp"

#include <algorithm>
#include <cstddef>
#include <utility>

namespace ropecheck::judge {

merged_forms merge_forms(const std::vector<form_outcome>& forms) {
  merged_forms out;
  std::vector<std::pair<finding, std::size_t>> raw;  // finding, index of its form
  for (const bool failing : {true, false})
    for (std::size_t i = 0; i < forms.size(); ++i)
      if (forms[i].passed != failing)
        for (const auto& x : forms[i].findings) raw.emplace_back(x, i);
  std::vector<bool> both(raw.size(), false), dropped(raw.size(), false);
  for (std::size_t a = 0; a < raw.size(); ++a)
    for (std::size_t b = a + 1; b < raw.size() && !dropped[a]; ++b)
      if (!dropped[b] && raw[b].second != raw[a].second && raw[b].first.bug_class == raw[a].first.bug_class &&
          raw[b].first.sentence == raw[a].first.sentence)
        both[a] = true, dropped[b] = true;
  for (std::size_t a = 0; a < raw.size(); ++a) {
    if (dropped[a]) continue;
    finding x = raw[a].first;
    const call_form form = forms[raw[a].second].form;
    x.sentence = both[a] ? x.sentence + " (both forms)" : std::string(call_form_phrase(form)) + ": " + x.sentence;
    out.findings.push_back(std::move(x));
    out.forms.emplace_back(both[a] ? "both" : to_string(form));
  }
  // Nothing judged is not a pass: a door that ran no form has no verdict to give.
  out.passed = !forms.empty() && std::all_of(forms.begin(), forms.end(), [](const form_outcome& f) { return f.passed; });
  return out;
}

}  // namespace ropecheck::judge
