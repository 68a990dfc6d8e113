// tools/audit/audit_output.hpp — what `ropecheck audit` prints and writes: a human summary, JSON
// (--json) and JUnit XML (--junit) for a dump audit and for a plugin audit. The json header stays
// inside audit_output.cpp.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "audit_input.hpp"
#include "ropecheck/claim.hpp"
#include "ropecheck/judge/judge.hpp"
#include "ropecheck/config.hpp"

namespace ropecheck::audit {

struct audit_report {
  std::string version, command;
  std::string source, format, dtype, x_dtype;
  int tokens = 0, heads = 0, head_dim = 0;
  std::int64_t min_position = 0, max_position = 0, seq_len = 0;
  rope_config claimed;
  std::string claimed_from;  // "config.json", "preset llama3-8b", "flags", with overrides noted
  bool strict = false;
  judge::verdict v;
  std::vector<cache_evidence> evidence;
  std::vector<std::string> notes;
  // The groups of a check judged per call length (probe_outputs.hpp combine_groups), one line each; a note
  // summarises them when they are many; JSON "seq_len_groups".
  std::vector<std::string> seq_len_groups;
  claim claim_info;  // what the convention was claimed from (printed at the top, "claim" in JSON)
  // M-RoPE: position rows of the dump (1 for 1-D), tokens whose rows are all equal (text) and the rest.
  int position_rows = 1, text_tokens = 0, multimodal_tokens = 0;
  double seconds_read = 0, seconds_audit = 0;
};

[[nodiscard]] std::string human_summary(const audit_report& r);
[[nodiscard]] std::string to_json(const audit_report& r);   // one object, 2-space indented
[[nodiscard]] std::string to_junit(const audit_report& r);  // <testsuites> with one testcase

// JUnit XML of one test case: a failure of type first.bug_class with first's sentence when !passed, the text as
// its body (or system-out on a pass). For the doors with one verdict and no dump report of their own.
[[nodiscard]] std::string one_case_junit(const std::string& suite, const std::string& name, bool passed,
                                         const judge::finding& first, const std::string& text);

// One line describing a convention (head_dim, rotary_dim, base, scaling, factor, layout).
[[nodiscard]] std::string describe(const rope_config& c);


}  // namespace ropecheck::audit
