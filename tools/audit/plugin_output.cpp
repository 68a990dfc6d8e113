// tools/audit/plugin_output.cpp — see plugin_output.hpp.
#include "plugin_output.hpp"
#include "markup.hpp"
#include "probe_outputs.hpp"
#include "ropecheck/judge/classes.hpp"
#include "ropecheck/judge/render.hpp"
#include "ropecheck/judge/sentence.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>

namespace ropecheck::audit {
namespace {

using judge::fmt;  // ropecheck/judge/sentence.hpp

const char* status_of(const plugin_property_result& p) {
  if (!p.skipped.empty()) return "skipped";
  if (!p.passed) return "FAIL";
  if (p.drift_warning) return "pass, drift warning";
  return p.successes == 0 ? "not run (replay of another property)" : "pass";
}

std::string indent(const std::string& text, const std::string& pad) {
  std::string out;
  std::size_t at = 0;
  while (at < text.size()) {
    const auto nl = text.find('\n', at);
    out += pad + text.substr(at, nl == std::string::npos ? std::string::npos : nl - at) + "\n";
    if (nl == std::string::npos) break;
    at = nl + 1;
  }
  return out;
}

std::string trim_leading(const std::string& s) {
  const auto at = s.find_first_not_of(' ');
  return at == std::string::npos ? std::string() : s.substr(at);
}

int properties_holding(const plugin_audit_result& r) {
  return static_cast<int>(std::count_if(r.properties.begin(), r.properties.end(), [](const auto& p) { return p.passed; }));
}

}  // namespace

namespace {

// One judged dump of the door as a dump audit's report (source: the plugin; claimed: its declared convention).
audit_report judged_dump_report(const plugin_audit_result& r, const judge::dump& d, const judge::verdict& v,
                                const std::string& version, const std::string& command, std::string note) {
  audit_report a;
  a.version = version;
  a.command = command;
  a.source = r.plugin_path;
  a.format = "plugin";
  a.dtype = a.x_dtype = r.element_type;
  a.tokens = d.tokens;
  a.heads = d.heads;
  a.head_dim = d.head_dim;
  if (!d.positions.empty()) {
    a.min_position = *std::min_element(d.positions.begin(), d.positions.end());
    a.max_position = *std::max_element(d.positions.begin(), d.positions.end());
  }
  a.seq_len = a.max_position + 1;
  // M-RoPE: the probe's rows and its text / multimodal tokens, as the dump door states them
  // (tools/ropecheck.cpp describe_position_rows).
  const auto tokens = static_cast<std::size_t>(d.tokens);
  const std::size_t rows = d.position_rows.empty() || tokens == 0 ? 1 : d.position_rows.size() / tokens;
  a.position_rows = r.declared.position_rows();
  for (std::size_t t = 0; t < tokens; ++t) {
    bool equal = true;
    for (std::size_t k = 1; k < rows; ++k) equal = equal && d.position_rows[k * tokens + t] == d.position_rows[t];
    ++(equal ? a.text_tokens : a.multimodal_tokens);
  }
  a.claimed = r.declared;
  a.claimed_from = "declared by the plugin (ropecheck_plugin_describe)";
  a.claim_info.source = "the plugin's ropecheck_plugin_describe";  // its config.json's notes, if any, are r.notes
  a.strict = r.strict;
  a.v = v;
  a.notes.push_back(std::move(note));
  return a;
}

// One side of the qk form in one call form as a dump audit's report.
audit_report qk_side_report(const plugin_audit_result& r, const plugin_qk_form_result& f, bool keys,
                            const std::string& version, const std::string& command) {
  const judge::dump& d = keys ? f.keys : f.queries;
  return judged_dump_report(
      r, d, keys ? f.judged.keys : f.judged.queries, version, command,
      fmt("probe: %d tokens x %d %s heads (the qk form, ropecheck/judge/probe.hpp make_qk_inputs), inputs from seed %llu, "
          "applied with the %s by the plugin's ropecheck_plugin_apply_qk in %s%s",
          d.tokens, d.heads, keys ? "key" : "query", static_cast<unsigned long long>(r.seed), keys ? "queries" : "keys",
          judge::call_form_phrase(f.form),
          f.form == judge::call_form::prefill ? ", all of them repeated once, with other keys and with other queries" : ""));
}

// Every finding of a qk form: the door's about its calls, then the judge's (judge::qk_findings' order).
judge::verdict qk_form_findings(const plugin_qk_form_result& f) {
  judge::verdict v;
  v.pass = f.passed;
  v.findings = f.call_findings;
  v.findings.insert(v.findings.end(), f.judged.findings.begin(), f.judged.findings.end());
  return v;
}

// "prefill calls pass, decode calls FAIL" of the qk form.
std::string qk_forms_words(const plugin_audit_result& r) {
  std::string s;
  for (const auto& f : r.qk_forms)
    s += std::string(s.empty() ? "" : ", ") + judge::to_string(f.form) + " calls " + (!f.ran ? "not judged" : f.passed ? "pass" : "FAIL");
  return s;
}

}  // namespace

audit_report plugin_probe_report(const plugin_audit_result& r, const plugin_form_result& form, const std::string& version,
                                 const std::string& command) {
  return judged_dump_report(r, form.probe, form.judged, version, command,
                            fmt("probe: %d tokens x %d heads (ropecheck/judge/probe.hpp), inputs from seed %llu, applied by "
                                "the plugin in %s%s",
                                form.probe.tokens, form.probe.heads, static_cast<unsigned long long>(r.seed),
                                judge::call_form_phrase(form.form),
                                form.form == judge::call_form::prefill ? ", all of them repeated once" : ""));
}

namespace {

// The door's verdict on one form, in a word.
std::string form_word(const plugin_form_result& f) {
  if (!f.ran) return "not judged";
  return f.passed ? "pass" : "FAIL";
}

// The first form that ran (its dump is the JSON's base), or null.
const plugin_form_result* first_ran(const plugin_audit_result& r) {
  for (const auto& f : r.forms)
    if (f.ran) return &f;
  return nullptr;
}

bool judge_passes(const plugin_audit_result& r) {
  return !r.forms.empty() && std::all_of(r.forms.begin(), r.forms.end(), [](const auto& f) { return f.passed; });
}

}  // namespace

std::string plugin_summary(const plugin_audit_result& r, const std::string& version, const std::string& command) {
  std::string s = "ropecheck audit --plugin " + r.plugin_path + "\n  kernel: " + r.plugin_name + ", " + r.element_type +
                  "\n  declared convention: " + r.convention + "\n";
  for (const auto& w : r.warnings) s += "  WARNING: " + w + "\n";
  for (const auto& n : r.notes) s += "  note: " + n + "\n";
  for (const auto& f : r.findings)
    if (judge::is_call_failure(f.bug_class)) s += judge::finding_line(f, "  ");
  for (const auto& f : r.forms) {
    s += std::string("\n-- the probe in ") + judge::call_form_phrase(f.form) + ", judged as `ropecheck audit` judges a dump --\n";
    s += f.ran ? human_summary(plugin_probe_report(r, f, version, command))
               : std::string("  the plugin did not answer the probe in these calls: nothing to judge\n");
  }
  for (const auto& f : r.qk_forms) {  // ABI 3's apply_qk: each side as a dump, then the pair (docs/scores.md)
    const std::string head = "\n-- " + qk_phrase() + " in " + judge::call_form_phrase(f.form);
    if (!f.ran) {
      s += head + " --\n  the plugin's apply_qk did not answer the probe in these calls: nothing to judge\n";
      for (const auto& x : f.call_findings) s += judge::finding_line(x, "  ");
      continue;
    }
    s += head + ": the queries, judged as a dump --\n" + human_summary(qk_side_report(r, f, false, version, command));
    s += head + ": the keys, judged as a dump --\n" + human_summary(qk_side_report(r, f, true, version, command));
    s += head + ": queries and keys together --\n" + score_identity_line(f.judged.score);
    s += judge::findings_block(qk_form_findings(f), {"  ", "  ", " (each side's figures above)"});
  }
  if (!r.properties.empty()) {
    s += "\n-- properties (seed " + std::to_string(r.seed) + ", " + std::to_string(r.max_success) +
         " cases per property) --\n";
    for (const auto& p : r.properties) {
      s += fmt("  %-36s %s  (%d cases, %.2f s)\n", p.name.c_str(), status_of(p), p.successes, p.seconds);
      if (!p.skipped.empty()) {
        s += "      " + p.skipped + "\n";
      } else if (!p.passed) {
        std::string why = p.description;
        while (!why.empty() && why.back() == '\n') why.pop_back();
        s += indent(why, "      ") + "      shrunk counterexample:\n" + indent(p.counterexample, "      ") +
             "      replay: " + p.replay + "\n";
      } else if (p.drift_warning) {
        s += "      within the fp32-angle allowance, beyond the exact-angle one (angle drift; --strict fails it):\n" +
             indent(trim_leading(p.drift), "      ");
      }
    }
  }
  const int warnings = static_cast<int>(std::count_if(r.properties.begin(), r.properties.end(),
                                                      [](const auto& p) { return p.drift_warning; }));
  std::string forms;
  for (const auto& f : r.forms) forms += std::string(forms.empty() ? "" : ", ") + judge::to_string(f.form) + " calls " + form_word(f);
  s += std::string("\n") + (r.passed ? "PASS" : "FAIL") + ": " +
       (r.properties.empty() ? std::string("properties not run")
                             : std::to_string(properties_holding(r)) + " of " + std::to_string(r.properties.size()) +
                                   " properties hold") +
       (warnings ? fmt(" (%d with a drift warning)", warnings) : std::string()) + "; the probe's verdict: " + forms +
       (r.qk_forms.empty() ? std::string() : "; the qk form's (apply_qk): " + qk_forms_words(r)) + "\n";
  if (!r.passed && !r.findings.empty()) s += judge::finding_line(r.findings.front(), "  first finding: ");
  s += "  rerun: " + r.rerun + "\n";
  return s;
}

std::string plugin_json(const plugin_audit_result& r, const std::string& version, const std::string& command) {
  const plugin_form_result* base = first_ran(r);
  nlohmann::json j = base ? nlohmann::json::parse(to_json(plugin_probe_report(r, *base, version, command)))
                          : nlohmann::json::object({{"schema_version", 1}, {"ropecheck_version", version},
                                                    {"command", command}});
  const auto finding_json = [](const judge::finding& f) {
    return nlohmann::json{{"bug_class", f.bug_class}, {"sentence", f.sentence}, {"confidence", f.confidence}};
  };
  j["kind"] = "plugin";
  j["pass"] = r.passed;
  j["exit_code"] = r.exit_code;
  const bool judged_pass = judge_passes(r);
  j["judge"] = {{"ran", r.probe_ran}, {"pass", judged_pass}, {"exit_code", judged_pass ? 0 : 1}};
  j["forms"] = nlohmann::json::object();
  for (const auto& f : r.forms) {
    nlohmann::json o = {{"calls", judge::call_form_phrase(f.form)}, {"ran", f.ran}, {"pass", f.passed},
                        {"max_error_ulps", f.judged.max_error_ulps}, {"worst_ratio", f.judged.worst_ratio},
                        {"call_findings", nlohmann::json::array()}, {"findings", nlohmann::json::array()},
                        {"seconds_probe", f.seconds_probe}, {"seconds_judge", f.seconds_judge}};
    for (const auto& x : f.call_findings) o["call_findings"].push_back(finding_json(x));
    for (const auto& x : f.judged.findings) o["findings"].push_back(finding_json(x));
    j["forms"][judge::to_string(f.form)] = std::move(o);
  }
  if (!r.qk_forms.empty()) {  // ABI 3's apply_qk: absent without it
    nlohmann::json qk = {{"entry", "ropecheck_plugin_apply_qk"}, {"query_heads", qk_query_heads}, {"key_heads", qk_key_heads},
                         {"pass", std::all_of(r.qk_forms.begin(), r.qk_forms.end(), [](const auto& f) { return f.passed; })},
                         {"forms", nlohmann::json::object()}};
    const auto side = [&](const judge::verdict& v) {
      nlohmann::json o = {{"pass", v.pass}, {"max_error_ulps", v.max_error_ulps}, {"worst_ratio", v.worst_ratio},
                          {"findings", nlohmann::json::array()}};
      for (const auto& x : v.findings) o["findings"].push_back(finding_json(x));
      return o;
    };
    for (const auto& f : r.qk_forms) {
      nlohmann::json o = {{"calls", judge::call_form_phrase(f.form)}, {"ran", f.ran}, {"pass", f.passed},
                          {"queries", side(f.judged.queries)}, {"keys", side(f.judged.keys)},
                          {"call_findings", nlohmann::json::array()}, {"findings", nlohmann::json::array()},
                          {"seconds_probe", f.seconds_probe}, {"seconds_judge", f.seconds_judge}};
      for (const auto& x : f.call_findings) o["call_findings"].push_back(finding_json(x));
      for (const auto& x : f.judged.findings) o["findings"].push_back(finding_json(x));
      if (f.ran)
        o["score"] = {{"violation", f.judged.score.violation}, {"worst_ratio", f.judged.score.worst_ratio},
                      {"m", f.judged.score.m}, {"n", f.judged.score.n}, {"query_head", f.judged.score.q_head},
                      {"pairs", f.judged.score.pairs}};
      qk["forms"][judge::to_string(f.form)] = std::move(o);
    }
    j["qk"] = std::move(qk);
  }
  j["plugin"] = {{"path", r.plugin_path}, {"name", r.plugin_name}, {"dtype", r.element_type}, {"convention", r.convention}, {"notes", r.notes}};
  if (!r.positions_not_asked.empty()) j["positions_not_asked"] = r.positions_not_asked;
  j["warnings"] = r.warnings;
  j["seed"] = r.seed;
  j["max_success"] = r.max_success;
  j["rerun"] = r.rerun;
  j["findings"] = nlohmann::json::array();
  for (std::size_t i = 0; i < r.findings.size(); ++i) {
    nlohmann::json f = finding_json(r.findings[i]);
    f["form"] = i < r.finding_forms.size() ? r.finding_forms[i] : std::string();
    j["findings"].push_back(std::move(f));
  }
  j["properties"] = nlohmann::json::array();
  for (const auto& p : r.properties)
    j["properties"].push_back({{"name", p.name}, {"pass", p.passed}, {"drift_warning", p.drift_warning},
                               {"drift", p.drift}, {"successes", p.successes}, {"description", p.description},
                               {"counterexample", p.counterexample}, {"reproduce", p.reproduce}, {"replay", p.replay},
                               {"seconds", p.seconds}});
  return j.dump(2) + "\n";
}

std::string plugin_junit(const plugin_audit_result& r, const std::string& version, const std::string& command) {
  // The qk form's findings (apply_qk's calls included) are its own testcase's.
  const auto of_qk = [&](std::size_t i) { return i < r.finding_forms.size() && r.finding_forms[i].rfind("qk ", 0) == 0; };
  bool judge_fails = !judge_passes(r);
  const judge::finding* first_x = nullptr;
  for (std::size_t i = 0; i < r.findings.size(); ++i) {
    if (of_qk(i)) continue;
    if (!first_x) first_x = &r.findings[i];
    judge_fails = judge_fails || judge::is_call_failure(r.findings[i].bug_class);
  }
  const bool qk = !r.qk_forms.empty();
  const bool qk_fails = qk && !std::all_of(r.qk_forms.begin(), r.qk_forms.end(), [](const auto& f) { return f.passed; });
  int failures = (judge_fails ? 1 : 0) + (qk_fails ? 1 : 0);
  double total = 0;
  for (const auto& p : r.properties) failures += p.passed ? 0 : 1, total += p.seconds;
  const std::size_t tests = 1 + (qk ? 1 : 0) + r.properties.size();
  const std::string suite = "ropecheck.plugin." + cli::markup_escape(r.plugin_name);
  std::string s = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  s += fmt("<testsuites name=\"ropecheck audit --plugin\" tests=\"%zu\" failures=\"%d\" errors=\"0\" time=\"%.3f\">\n",
           tests, failures, total);
  s += fmt("  <testsuite name=\"%s\" tests=\"%zu\" failures=\"%d\" errors=\"0\" skipped=\"0\" time=\"%.3f\">\n",
           suite.c_str(), tests, failures, total);
  s += "    <properties>\n      <property name=\"seed\" value=\"" + std::to_string(r.seed) +
       "\"/>\n      <property name=\"convention\" value=\"" + cli::markup_escape(r.convention) +
       "\"/>\n      <property name=\"dtype\" value=\"" + cli::markup_escape(r.element_type) + "\"/>\n    </properties>\n";
  const plugin_form_result* base = first_ran(r);
  const std::string reference = base ? std::string(to_string(base->judged.reference)) : std::string("exact");
  s += "    <testcase classname=\"" + suite + "\" name=\"the probe matches the " + reference + " reference\">\n";
  std::string text;
  for (const auto& f : r.forms)
    if (f.ran)
      text += std::string(text.empty() ? "" : "\n") + "-- " + judge::call_form_phrase(f.form) + " --\n" +
              human_summary(plugin_probe_report(r, f, version, command));
  if (judge_fails) {
    const judge::finding first = first_x ? *first_x : judge::finding{judge::classes::unexplained, "the probe fails the allowance", 0};
    s += "      <failure type=\"" + cli::markup_escape(first.bug_class) + "\" message=\"" + cli::markup_escape(first.sentence) + "\">" +
         cli::markup_escape(text.empty() ? first.sentence : text) + "</failure>\n";
  } else {
    s += "      <system-out>" + cli::markup_escape(text) + "</system-out>\n";
  }
  s += "    </testcase>\n";
  if (qk) {  // ABI 3's apply_qk: the qk form's verdict on both call forms
    s += "    <testcase classname=\"" + suite + "\" name=\"the qk form (apply_qk) matches the " + reference + " reference\">\n";
    std::string qk_text;
    const judge::finding* first = nullptr;
    for (std::size_t i = 0; i < r.findings.size() && !first; ++i)
      if (of_qk(i)) first = &r.findings[i];
    for (const auto& f : r.qk_forms) {
      qk_text += std::string(qk_text.empty() ? "" : "\n") + "-- " + judge::call_form_phrase(f.form) + " --\n";
      qk_text += !f.ran ? std::string("not judged\n")
                        : score_identity_line(f.judged.score) + judge::findings_block(qk_form_findings(f), {"  ", "  ", ""});
    }
    if (qk_fails) {
      const judge::finding shown = first ? *first : judge::finding{judge::classes::unexplained, "the qk form fails", 0};
      s += "      <failure type=\"" + cli::markup_escape(shown.bug_class) + "\" message=\"" + cli::markup_escape(shown.sentence) +
           "\">" + cli::markup_escape(qk_text) + "</failure>\n";
    } else {
      s += "      <system-out>" + cli::markup_escape(qk_text) + "</system-out>\n";
    }
    s += "    </testcase>\n";
  }
  for (const auto& p : r.properties) {
    s += "    <testcase classname=\"" + suite + "\" name=\"" + cli::markup_escape(p.name) + "\" time=\"" + fmt("%.3f", p.seconds) + "\">\n";
    if (!p.passed)
      s += "      <failure type=\"" + std::string(judge::classes::property_failed) + "\" message=\"" + cli::markup_escape(p.description) + "\">" +
           cli::markup_escape(p.description + "\nshrunk counterexample:\n" + p.counterexample + "\nreplay: " + p.replay) +
           "</failure>\n";
    else if (p.drift_warning)
      s += "      <system-out>" + cli::markup_escape("drift warning (" + std::string(judge::classes::angle_drift_fp32) + "): " + p.drift) + "</system-out>\n";
    s += "    </testcase>\n";
  }
  s += "  </testsuite>\n</testsuites>\n";
  return s;
}

}  // namespace ropecheck::audit
