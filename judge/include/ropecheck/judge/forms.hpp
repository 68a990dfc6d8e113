// ropecheck/judge/forms.hpp — one verdict from the judge's verdicts on each call form of the probe plan
// (probe.hpp call_form): how every door that drives a kernel in both forms (the plugin door, the Python
// door's outputs file) reports them, so that they say the same thing in the same order.
#pragma once

#include <string>
#include <vector>

#include "ropecheck/judge/judge.hpp"
#include "ropecheck/judge/probe.hpp"

namespace ropecheck::judge {

// What one form came to: passed (every call answered, no call finding, the judge passed) and its
// findings, the door's about the calls (plugin_crashed, nondeterministic, ...) first, then the judge's.
struct form_outcome {
  call_form form = call_form::prefill;
  bool passed = false;
  std::vector<finding> findings;
};

struct merged_forms {
  // Most important first: a failing form's findings (in the order of `forms`), then a passing form's
  // (warnings). A sentence is prefixed with its form's call_form_phrase ("decode calls (one token a
  // call): ..."); a finding two forms give (same class, same sentence) is listed once, its sentence
  // followed by " (both forms)".
  std::vector<finding> findings;
  std::vector<std::string> forms;  // parallel to findings: "prefill", "decode" or "both"
  bool passed = false;             // there is a form and every form passed
};

[[nodiscard]] merged_forms merge_forms(const std::vector<form_outcome>& forms);

}  // namespace ropecheck::judge
