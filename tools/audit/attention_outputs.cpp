// tools/audit/attention_outputs.cpp — see attention_outputs.hpp.
#include "attention_outputs.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <stdexcept>

#include "explain/claim_json.hpp"
#include "explain/claim_lines.hpp"
#include "markup.hpp"
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

bool is_attention_outputs(const std::filesystem::path& file) {
  try {
    std::map<std::string, std::string> meta;
    (void)map_safetensors(file, &meta);
    const auto it = meta.find("form");
    return meta.count("ropecheck_probe_outputs") > 0 && it != meta.end() && it->second == "attention";
  } catch (const std::exception&) {
    return false;
  }
}

attention_outputs_contents read_attention_outputs(const std::filesystem::path& file) {
  attention_outputs_contents c;
  const mapped_tensors m = map_safetensors(file, &c.metadata);
  if (c.metadata["ropecheck_probe_outputs"] != "1")
    throw input_error(file, "__metadata__ ropecheck_probe_outputs is \"" + c.metadata["ropecheck_probe_outputs"] +
                                "\": this ropecheck reads version 1");
  const auto number = [&](const char* key) -> double {
    const auto it = c.metadata.find(key);
    if (it == c.metadata.end()) throw input_error(file, std::string("__metadata__ has no ") + key + " (written by `ropecheck probe --form attention`)");
    try {
      std::size_t used = 0;
      const double v = std::stod(it->second, &used);
      if (used != it->second.size()) throw std::invalid_argument("trailing text");
      return v;
    } catch (const std::exception&) {
      throw input_error(file, std::string("__metadata__ ") + key + " is \"" + it->second + "\", not a number");
    }
  };
  c.heads = static_cast<int>(number("heads"));
  c.kv_heads = static_cast<int>(number("kv_heads"));
  c.head_dim = static_cast<int>(number("head_dim"));
  c.value_dim = static_cast<int>(number("value_dim"));
  c.softmax_scale = number("softmax_scale");
  c.max_position = static_cast<std::int64_t>(number("max_position"));
  const auto need = [&](const std::string& name) -> const tensor_bytes& {
    const auto it = m.tensors.find(name);
    if (it == m.tensors.end())
      throw input_error(file, "no tensor '" + name + "': an attention outputs file holds the probe's tensors and attention.o, "
                                                    "attention.o_again (docs/scores.md)");
    return it->second;
  };
  const auto ints = [&](const std::string& name) {
    const tensor t = decode(need(name));
    if (t.type != dtype::i64 || t.shape.size() != 1) throw input_error(file, name + " is not I64 [n]");
    std::vector<std::int64_t> v;
    for (const double d : t.values) v.push_back(static_cast<std::int64_t>(d));
    return v;
  };
  c.calls = ints("attention.calls");
  c.key_calls = ints("attention.key_calls");
  c.q_positions = ints("attention.q_positions");
  c.k_positions = ints("attention.k_positions");
  const auto NQ = static_cast<std::int64_t>(c.q_positions.size()), NK = static_cast<std::int64_t>(c.k_positions.size());
  const tensor_bytes& q = need("attention.q");
  const auto values = [&](const std::string& name, std::vector<std::int64_t> shape, std::vector<double>& out) {
    const tensor_bytes& t = need(name);
    if (t.shape != shape || t.type != q.type)
      throw input_error(file, name + " is " + std::string(dtype_name(t.type)) + " " + shape_string(t.shape) + ", expected " +
                                  std::string(dtype_name(q.type)) + " " + shape_string(shape) +
                                  (name.rfind("attention.o", 0) == 0 ? " (the outputs: [queries, heads, value_dim] in q's dtype)" : ""));
    out = decode(t).values;
  };
  values("attention.q", {NQ, c.heads, c.head_dim}, c.q);
  values("attention.k", {NK, c.kv_heads, c.head_dim}, c.k);
  values("attention.v", {NK, c.kv_heads, c.value_dim}, c.v);
  values("attention.o", {NQ, c.heads, c.value_dim}, c.o);
  values("attention.o_again", {NQ, c.heads, c.value_dim}, c.o_again);
  c.dtype = audit_dtype_name(q.type);
  return c;
}

judge::attention_probe matching_probe(const std::filesystem::path& file, const attention_outputs_contents& c,
                                      const rope_config& claimed) {
  judge::attention_probe p;
  try {
    p = judge::make_attention_probe(claimed, c.heads, c.kv_heads, c.value_dim, c.softmax_scale, c.max_position);
  } catch (const std::invalid_argument& e) {
    throw input_error(file, std::string("the file's attention probe cannot be made for the claim: ") + e.what());
  }
  check_same_probe(file, c, p, "");
  return p;
}

void check_same_probe(const std::filesystem::path& file, const attention_outputs_contents& c, const judge::attention_probe& p,
                      const std::string& what) {
  const auto differs = [&](const char* tensor) {
    throw input_error(file, std::string(tensor) + " is not what `ropecheck probe --form attention` writes for this " + what +
                                "claim and the file's heads, kv_heads, head_dim, value_dim, softmax_scale and max_position: "
                                "judge the outputs against the claim the probe was made for");
  };
  if (p.q_heads != c.heads) differs("heads");
  if (p.calls != c.calls || p.key_calls != c.key_calls) differs("attention.calls / attention.key_calls");
  if (p.q_positions != c.q_positions || p.k_positions != c.k_positions) differs("attention.q_positions / k_positions");
  if (p.q != c.q) differs("attention.q");
  if (p.k != c.k) differs("attention.k");
  if (p.v != c.v) differs("attention.v");
}

std::string attention_summary(const attention_report& r) {
  const auto meta = [&](const char* k) {
    const auto it = r.metadata.find(k);
    return it == r.metadata.end() ? std::string("?") : it->second;
  };
  std::string s = "ropecheck audit: " + r.source + " (outputs of the probe's attention calls: kernel " + meta("kernel") +
                  ", adapter " + meta("adapter") + ", device " + meta("device") + ", " + meta("dtype") + ")\n";
  for (const auto& line : explain::claim_lines(r.claim_info)) s += "  " + line + "\n";
  s += "  claimed: " + describe(r.claimed) + " (from " + r.claimed_from + "), softmax scale " + meta("softmax_scale") + "\n";
  s += judge::fmt("  %s calls (queries at one position, up to %d keys each), %s query and %s key heads; %lld scores read from the outputs "
                  "(log(w_j / w_0) against the zero key)\n",
                  meta("calls").c_str(), std::min(std::stoi(meta("value_dim")), judge::max_attention_keys), meta("heads").c_str(),
                  meta("kv_heads").c_str(), static_cast<long long>(r.v.cells));
  s += judge::fmt("  the scores' scale: %.4g of the claim's (median |score| over its designed magnitude)\n", r.v.scale_ratio);
  for (const auto& n : r.notes) s += "  note: " + n + "\n";
  if (r.nondeterministic) s += judge::finding_line(*r.nondeterministic, "  ");
  const judge::verdict& v = r.v.scores;
  s += judge::fmt("\n%s: the scores against the claim at m - n: worst error/allowance %.3g (at m - n = %lld, band %d)\n",
                  r.v.pass ? "PASS" : "FAIL", v.worst_ratio, static_cast<long long>(v.from_exact.worst_position),
                  v.from_exact.worst_band);
  s += "  allowance: both sides' angles (at m and at n), cos/sin, rotation and store twice, and the read-out of weights "
       "stored in " + meta("dtype") + " (error_model.hpp section 7)\n";
  judge::verdict shown = v;
  shown.findings = r.v.findings;
  s += judge::findings_block(shown, {"\n", "  ", ""});
  s += std::string("\n") + (r.passed ? "PASS" : "FAIL") + ": the attention calls " + (r.passed ? "pass" : "FAIL") + "\n";
  const std::vector<judge::finding> all = [&] {
    std::vector<judge::finding> a;
    if (r.nondeterministic) a.push_back(*r.nondeterministic);
    a.insert(a.end(), r.v.findings.begin(), r.v.findings.end());
    return a;
  }();
  if (!r.passed && !all.empty()) s += judge::finding_line(all.front(), "  first finding: ");
  s += judge::fmt("  audit %.2f s\n  rerun: %s\n", r.seconds, r.rerun.c_str());
  return s;
}

std::string attention_json(const attention_report& r) {
  nlohmann::json j;
  j["schema_version"] = 1;
  j["ropecheck_version"] = r.version;
  j["kind"] = "probe_outputs";
  j["form"] = "attention";
  j["command"] = r.command;
  j["source"] = r.source;
  j["pass"] = r.passed;
  j["exit_code"] = r.passed ? 0 : 1;
  j["rerun"] = r.rerun;
  j["metadata"] = r.metadata;
  j["notes"] = r.notes;
  j["claim"] = explain::claim_json(r.claim_info);
  j["claimed"] = {{"from", r.claimed_from}, {"description", describe(r.claimed)}};
  j["findings"] = nlohmann::json::array();
  if (r.nondeterministic) {
    nlohmann::json f = finding_json(*r.nondeterministic);
    f["form"] = "attention";
    j["findings"].push_back(std::move(f));
  }
  for (const auto& x : r.v.findings) {
    nlohmann::json f = finding_json(x);
    f["form"] = "attention";
    j["findings"].push_back(std::move(f));
  }
  j["scores"] = {{"read", r.v.cells},
                 {"scale_ratio", r.v.scale_ratio},
                 {"pass", r.v.pass},
                 {"worst_error_over_allowance", r.v.scores.worst_ratio},
                 {"tolerance_reason", r.v.scores.tolerance_reason}};
  j["forms"] = nlohmann::json::object();
  j["forms"]["attention"] = {{"pass", r.passed}, {"calls", "attention calls (the queries of one position and its keys a call)"}};
  j["seconds"] = {{"audit", r.seconds}};
  return j.dump(2) + "\n";
}

std::string attention_junit(const attention_report& r) {
  judge::finding first{"unexplained", "the scores fail the allowance", 0};
  if (r.nondeterministic) first = *r.nondeterministic;
  else if (!r.v.findings.empty()) first = r.v.findings.front();
  const auto kernel = r.metadata.count("kernel") ? r.metadata.at("kernel") : std::string("kernel");
  return one_case_junit("ropecheck.probe." + kernel, "attention calls", r.passed, first, attention_summary(r));
}

}  // namespace ropecheck::audit
