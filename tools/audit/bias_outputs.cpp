// tools/audit/bias_outputs.cpp — see bias_outputs.hpp.
#include "bias_outputs.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <stdexcept>

#include "explain/claim_json.hpp"
#include "explain/claim_lines.hpp"
#include "markup.hpp"
#include "ropecheck/judge/render.hpp"
#include "ropecheck/judge/sentence.hpp"
#include "tensor_file.hpp"

namespace ropecheck::audit {

judge::attention_probe matching_bias_probe(const std::filesystem::path& file, const attention_outputs_contents& c,
                                           const bias_claim& claimed) {
  judge::attention_probe p;
  try {
    p = judge::make_bias_probe(claimed, c.kv_heads, c.value_dim, c.head_dim, c.softmax_scale, c.max_position);
  } catch (const std::invalid_argument& e) {
    throw input_error(file, std::string("the file's bias probe cannot be made for the claim: ") + e.what());
  }
  check_same_probe(file, c, p, "bias ");
  return p;
}

namespace {

std::string meta_of(const bias_report& r, const char* k) {
  const auto it = r.metadata.find(k);
  return it == r.metadata.end() ? std::string("?") : it->second;
}

std::vector<judge::finding> all_findings(const bias_report& r) {
  std::vector<judge::finding> a;
  if (r.nondeterministic) a.push_back(*r.nondeterministic);
  a.insert(a.end(), r.v.findings.begin(), r.v.findings.end());
  return a;
}

std::string slopes_line(const std::vector<double>& fitted, const bias_claim& c) {
  if (fitted.empty() || c.scheme != bias_scheme::alibi) return {};
  const std::vector<double> want = claimed_slopes(c.alibi);
  std::string s = "  fitted slopes (claimed):";
  const std::size_t shown = std::min<std::size_t>(fitted.size(), 8);
  for (std::size_t h = 0; h < shown; ++h)
    s += judge::fmt(" %.4g (%.4g)", fitted[h], h < want.size() ? want[h] : 0.0);
  if (fitted.size() > shown) s += judge::fmt(" ... (%zu heads; all in the JSON)", fitted.size());
  return s + "\n";
}

}  // namespace

std::string bias_summary(const bias_report& r) {
  const bool scores = r.door == "scores";
  std::string s = scores ? "ropecheck audit --scores: " + r.source + " (" + meta_of(r, "what") + " in " + meta_of(r, "dtype") + ")\n"
                         : "ropecheck audit: " + r.source + " (outputs of the bias probe's attention calls: kernel " +
                               meta_of(r, "kernel") + ", adapter " + meta_of(r, "adapter") + ", device " + meta_of(r, "device") +
                               ", " + meta_of(r, "dtype") + ")\n";
  for (const auto& line : explain::claim_lines(r.claimed.info)) s += "  " + line + "\n";
  s += "  claimed: " + describe(r.claimed.claim) + " (" + r.claimed.family + ")\n";
  if (scores)
    s += judge::fmt("  %lld scores read (each minus scale <q, k> at scale %s: the bias up to the row's constant)\n",
                    static_cast<long long>(r.v.cells), meta_of(r, "softmax_scale").c_str());
  else
    s += judge::fmt("  %s calls (a query and up to %d keys each), %s query and %s key heads; %lld scores read from the outputs "
                    "(log(w_j / w_ref): the bias up to the row's constant)\n",
                    meta_of(r, "calls").c_str(), judge::max_attention_keys, meta_of(r, "heads").c_str(), meta_of(r, "kv_heads").c_str(),
                    static_cast<long long>(r.v.cells));
  s += slopes_line(r.v.fitted_slopes, r.claimed.claim);
  for (const auto& n : r.notes) s += "  note: " + n + "\n";
  if (r.nondeterministic) s += judge::finding_line(*r.nondeterministic, "  ");
  s += judge::fmt("\n%s: the biases against the claim: worst error/allowance %.3g (head %d, query at %lld, key at %lld)\n",
                  r.v.pass ? "PASS" : "FAIL", r.v.worst_ratio, r.v.worst_head, static_cast<long long>(r.v.worst_m),
                  static_cast<long long>(r.v.worst_n));
  if (!r.v.tolerance_reason.empty()) s += "  allowance: " + r.v.tolerance_reason + "\n";
  judge::verdict shown;
  shown.pass = r.v.pass;
  shown.findings = r.v.findings;
  s += judge::findings_block(shown, {"\n", "  ", ""});
  s += std::string("\n") + (r.passed ? "PASS" : "FAIL") + (scores ? ": the scores " : ": the attention calls ") +
       (r.passed ? "pass" : "FAIL") + "\n";
  const std::vector<judge::finding> all = all_findings(r);
  if (!r.passed && !all.empty()) s += judge::finding_line(all.front(), "  first finding: ");
  s += judge::fmt("  audit %.2f s\n  rerun: %s\n", r.seconds, r.rerun.c_str());
  return s;
}

std::string bias_json(const bias_report& r) {
  nlohmann::json j;
  j["schema_version"] = 1;
  j["ropecheck_version"] = r.version;
  j["kind"] = r.door == "scores" ? "scores" : "probe_outputs";
  j["form"] = r.door;
  j["scheme"] = std::string(to_string(r.claimed.claim.scheme));
  j["command"] = r.command;
  j["source"] = r.source;
  j["pass"] = r.passed;
  j["exit_code"] = r.passed ? 0 : 1;
  j["rerun"] = r.rerun;
  j["metadata"] = r.metadata;
  j["notes"] = r.notes;
  j["claim"] = explain::claim_json(r.claimed.info);
  j["claimed"] = {{"from", r.claimed.info.source}, {"description", describe(r.claimed.claim)}, {"family", r.claimed.family}};
  j["findings"] = nlohmann::json::array();
  for (const auto& x : all_findings(r))
    j["findings"].push_back({{"bug_class", x.bug_class}, {"sentence", x.sentence}, {"confidence", x.confidence}, {"form", r.door}});
  j["bias"] = {{"read", r.v.cells},
               {"pass", r.v.pass},
               {"worst_error_over_allowance", r.v.worst_ratio},
               {"worst", {{"head", r.v.worst_head}, {"m", r.v.worst_m}, {"n", r.v.worst_n}}},
               {"fitted_slopes", r.v.fitted_slopes},
               {"tolerance_reason", r.v.tolerance_reason}};
  if (r.claimed.claim.scheme == bias_scheme::alibi) j["bias"]["claimed_slopes"] = claimed_slopes(r.claimed.claim.alibi);
  j["forms"] = nlohmann::json::object();
  if (r.door == "attention") j["forms"]["attention"] = {{"pass", r.passed}, {"calls", "attention calls (a query and its keys a call)"}};
  j["seconds"] = {{"audit", r.seconds}};
  return j.dump(2) + "\n";
}

std::string bias_junit(const bias_report& r) {
  judge::finding first{"unexplained", "the biases fail the allowance", 0};
  const std::vector<judge::finding> all = all_findings(r);
  if (!all.empty()) first = all.front();
  const auto kernel = r.metadata.count("kernel") ? r.metadata.at("kernel") : std::string("kernel");
  if (r.door == "scores")
    return one_case_junit("ropecheck.scores", r.source + " (" + describe(r.claimed.claim) + ")", r.passed, first, bias_summary(r));
  return one_case_junit("ropecheck.probe." + kernel, "attention calls (" + describe(r.claimed.claim) + ")", r.passed, first,
                        bias_summary(r));
}

}  // namespace ropecheck::audit
