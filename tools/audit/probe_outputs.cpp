// tools/audit/probe_outputs.cpp — see probe_outputs.hpp.
#include "probe_outputs.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>

#include "markup.hpp"
#include "ropecheck/judge/classes.hpp"
#include "ropecheck/judge/render.hpp"
#include "ropecheck/judge/repeat_calls.hpp"
#include "ropecheck/judge/sentence.hpp"
#include "tensor_file.hpp"

namespace ropecheck::audit {
namespace {

nlohmann::json finding_json(const judge::finding& f) {
  return {{"bug_class", f.bug_class}, {"sentence", f.sentence}, {"confidence", f.confidence}};
}

}  // namespace

bool is_probe_outputs(const std::filesystem::path& file) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(file, ec)) return false;
  try {
    std::map<std::string, std::string> meta;
    (void)map_safetensors(file, &meta);
    return meta.count("ropecheck_probe_outputs") > 0;
  } catch (const std::exception&) {
    return false;
  }
}

probe_outputs_contents read_probe_outputs(const std::filesystem::path& file) {
  probe_outputs_contents out;
  const mapped_tensors m = map_safetensors(file, &out.metadata);
  if (out.metadata["ropecheck_probe_outputs"] != "1")
    throw input_error(file, "__metadata__ ropecheck_probe_outputs is \"" + out.metadata["ropecheck_probe_outputs"] +
                                "\": this ropecheck reads version 1 (written by the ropecheck Python package of the same version)");
  auto need = [&](const std::string& name) -> const tensor_bytes& {
    const auto it = m.tensors.find(name);
    if (it == m.tensors.end())
      throw input_error(file, "no tensor '" + name + "': an outputs file holds the probe file's tensors (ropecheck probe) "
                                                    "and the outputs of each call form (docs/python.md)");
    return it->second;
  };
  const tensor_bytes& x = need("x");
  if (x.shape.size() != 3 || x.shape[0] < 1 || x.shape[1] < 1 || x.shape[2] < 2)
    throw input_error(file, "x is " + shape_string(x.shape) + ", not [tokens, heads, head_dim]");
  (void)need("positions");
  for (const auto form : {judge::call_form::prefill, judge::call_form::decode}) {
    const std::string f = judge::to_string(form);
    for (const char* part : {".calls", ".positions", ".token", ".keep"}) (void)need(f + part);
    const auto y = m.tensors.find(f + ".y");
    if (y == m.tensors.end()) continue;
    if (y->second.shape != x.shape || y->second.type != x.type)
      throw input_error(file, f + ".y is " + std::string(dtype_name(y->second.type)) + " " + shape_string(y->second.shape) +
                                  " but x is " + std::string(dtype_name(x.type)) + " " + shape_string(x.shape) +
                                  ": the outputs must have the inputs' shape and dtype");
    out.forms.push_back(form);
  }
  if (out.forms.empty())
    throw input_error(file, "neither prefill.y nor decode.y is present: no outputs to judge");
  const auto y = m.tensors.find("prefill.y"), again = m.tensors.find("prefill.y_again");
  if (again != m.tensors.end() && y == m.tensors.end()) throw input_error(file, "prefill.y_again without prefill.y");
  if (y != m.tensors.end()) {
    if (again == m.tensors.end())
      throw input_error(file, "prefill.y without prefill.y_again: the prefill plan is applied twice (the second "
                              "application's outputs are prefill.y_again) and the two compared, as every door does");
    if (again->second.shape != y->second.shape || again->second.type != y->second.type)
      throw input_error(file, "prefill.y_again is not shaped and typed as prefill.y");
    // The one repeat-call check of every door (ropecheck/judge/repeat_calls.hpp), on the values widened exactly.
    const tensor first = decode(y->second), second = decode(again->second), pos = decode(m.tensors.at("positions"));
    const auto tokens = static_cast<std::size_t>(x.shape[0]);
    if (pos.values.size() < tokens) throw input_error(file, "positions has fewer values than x has tokens");
    std::vector<std::int64_t> positions(tokens);
    for (std::size_t i = 0; i < tokens; ++i) positions[i] = static_cast<std::int64_t>(pos.values[i]);  // row 0 of [R, T]
    out.nondeterministic = judge::repeat_call_finding(first.values, second.values, positions, static_cast<int>(x.shape[1]),
                                                      static_cast<int>(x.shape[2]), "prefill calls");
  }
  return out;
}

void merge(probe_outputs_report& r) {
  std::vector<judge::form_outcome> forms;
  for (const auto& f : r.forms) {
    judge::form_outcome o{f.form, f.passed, f.call_findings};
    o.findings.insert(o.findings.end(), f.r.v.findings.begin(), f.r.v.findings.end());
    forms.push_back(std::move(o));
  }
  r.merged = judge::merge_forms(forms);
}

std::string probe_outputs_summary(const probe_outputs_report& r) {
  auto meta = [&](const char* k) {
    const auto it = r.metadata.find(k);
    return it == r.metadata.end() ? std::string("?") : it->second;
  };
  std::string s = "ropecheck audit: " + r.source + " (outputs of the probe's calls: kernel " + meta("kernel") +
                  ", adapter " + meta("adapter") + ", device " + meta("device") + ", " + meta("dtype") + ")\n";
  for (const auto& f : r.merged.findings)
    if (judge::is_call_failure(f.bug_class)) s += judge::finding_line(f, "  ");
  for (const auto& f : r.forms) {
    s += std::string("\n-- the probe in ") + judge::call_form_phrase(f.form) + ", judged as `ropecheck audit` judges a dump --\n";
    s += human_summary(f.r);
  }
  std::string forms;
  for (const auto& f : r.forms)
    forms += std::string(forms.empty() ? "" : ", ") + judge::to_string(f.form) + " calls " + (f.passed ? "pass" : "FAIL");
  s += std::string("\n") + (r.merged.passed ? "PASS" : "FAIL") + ": " + forms + "\n";
  if (!r.merged.passed && !r.merged.findings.empty()) s += judge::finding_line(r.merged.findings.front(), "  first finding: ");
  s += "  rerun: " + r.rerun + "\n";
  return s;
}

std::string probe_outputs_json(const probe_outputs_report& r) {
  nlohmann::json j = nlohmann::json::parse(to_json(r.forms.front().r));  // the first form's figures at the top, as the plugin door
  j["kind"] = "probe_outputs";
  j["command"] = r.command;
  j["source"] = r.source;
  j["pass"] = r.merged.passed;
  j["exit_code"] = r.merged.passed ? 0 : 1;
  j["rerun"] = r.rerun;
  j["metadata"] = r.metadata;
  j["findings"] = nlohmann::json::array();
  for (std::size_t i = 0; i < r.merged.findings.size(); ++i) {
    nlohmann::json f = finding_json(r.merged.findings[i]);
    f["form"] = r.merged.forms[i];
    j["findings"].push_back(std::move(f));
  }
  j["forms"] = nlohmann::json::object();
  for (const auto& f : r.forms) {
    nlohmann::json o = nlohmann::json::parse(to_json(f.r));
    o["calls"] = judge::call_form_phrase(f.form);
    o["pass"] = f.passed;
    o["exit_code"] = f.passed ? 0 : 1;
    o["call_findings"] = nlohmann::json::array();
    for (const auto& x : f.call_findings) o["call_findings"].push_back(finding_json(x));
    j["forms"][judge::to_string(f.form)] = std::move(o);
  }
  return j.dump(2) + "\n";
}

std::string probe_outputs_junit(const probe_outputs_report& r) {
  using judge::fmt;
  const auto failures = std::count_if(r.forms.begin(), r.forms.end(), [](const auto& f) { return !f.passed; });
  const auto kernel = r.metadata.count("kernel") ? r.metadata.at("kernel") : std::string("kernel");
  const std::string suite = "ropecheck.probe." + cli::markup_escape(kernel);
  std::string s = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  s += fmt("<testsuites name=\"ropecheck audit\" tests=\"%zu\" failures=\"%d\" errors=\"0\">\n", r.forms.size(),
           static_cast<int>(failures));
  s += fmt("  <testsuite name=\"%s\" tests=\"%zu\" failures=\"%d\" errors=\"0\" skipped=\"0\">\n", suite.c_str(),
           r.forms.size(), static_cast<int>(failures));
  s += "    <properties>\n";
  for (const char* k : {"dtype", "convention", "seed", "adapter", "device"})
    if (const auto it = r.metadata.find(k); it != r.metadata.end())
      s += "      <property name=\"" + std::string(k) + "\" value=\"" + cli::markup_escape(it->second) + "\"/>\n";
  s += "      <property name=\"bug_class\" value=\"" +
       cli::markup_escape(!r.merged.passed && !r.merged.findings.empty() ? r.merged.findings.front().bug_class : std::string()) +
       "\"/>\n    </properties>\n";
  for (const auto& f : r.forms) {
    s += "    <testcase classname=\"" + suite + "\" name=\"" + judge::call_form_phrase(f.form) + "\">\n";
    const std::string text = human_summary(f.r);
    if (!f.passed) {
      std::vector<judge::finding> all = f.call_findings;
      all.insert(all.end(), f.r.v.findings.begin(), f.r.v.findings.end());
      const judge::finding first = all.empty() ? judge::finding{judge::classes::unexplained, "the outputs fail the allowance", 0} : all.front();
      s += "      <failure type=\"" + cli::markup_escape(first.bug_class) + "\" message=\"" + cli::markup_escape(first.sentence) +
           "\">" + cli::markup_escape(text) + "</failure>\n";
    } else {
      s += "      <system-out>" + cli::markup_escape(text) + "</system-out>\n";
    }
    s += "    </testcase>\n";
  }
  s += "  </testsuite>\n</testsuites>\n";
  return s;
}

}  // namespace ropecheck::audit
