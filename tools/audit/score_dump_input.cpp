// tools/audit/score_dump_input.cpp — see score_dump_input.hpp.
#include "score_dump_input.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <stdexcept>

#include "audit_input.hpp"
#include "audit_output.hpp"
#include "explain/claim_json.hpp"
#include "explain/claim_lines.hpp"
#include "markup.hpp"
#include "ropecheck/judge/sentence.hpp"
#include "tensor_file.hpp"

namespace ropecheck::audit {

loaded_scores load_score_dump(const std::filesystem::path& path, const std::optional<std::string>& declared_dtype) {
  namespace fs = std::filesystem;
  loaded_scores out;
  std::error_code ec;
  mapped_tensors m;
  if (fs::is_directory(path, ec)) {
    m = map_npy_dir(path, declared_dtype && *declared_dtype == "bfloat16" ? std::optional<dtype>(dtype::bf16) : std::nullopt);
  } else if (fs::exists(path, ec)) {
    m = map_safetensors(path, &out.metadata);
  } else {
    throw input_error(path, "no such file or directory");
  }
  const auto find = [&](const std::string& name) -> const tensor_bytes* {
    const auto it = m.tensors.find(name);
    return it == m.tensors.end() ? nullptr : &it->second;
  };
  const auto need = [&](const std::string& name) -> const tensor_bytes& {
    if (const tensor_bytes* t = find(name)) return *t;
    throw input_error(path, "no tensor '" + name + "': a scores dump holds q, k (before RoPE), q_positions, k_positions and "
                                                   "weights or logits (docs/scores.md)");
  };
  // A leading batch of 1 is dropped.
  const auto shape_of = [](const tensor_bytes& t) {
    std::vector<std::int64_t> s = t.shape;
    if (s.size() >= 2 && s.front() == 1) s.erase(s.begin());
    return s;
  };
  const auto ints = [&](const std::string& name) {
    const tensor t = decode(need(name));
    if (t.type != dtype::i64 && t.type != dtype::i32) throw input_error(path, name + " must be integers (I32/I64)");
    if (shape_of(need(name)).size() != 1) throw input_error(path, name + " is " + shape_string(t.shape) + ", not [T]");
    std::vector<std::int64_t> v;
    for (const double d : t.values) v.push_back(static_cast<std::int64_t>(d));
    return v;
  };
  judge::score_dump& d = out.d;
  const tensor_bytes& q = need("q");
  const tensor_bytes& k = need("k");
  const auto qs = shape_of(q), ks = shape_of(k);
  if (qs.size() != 3 || ks.size() != 3 || qs[2] != ks[2])
    throw input_error(path, "q is " + shape_string(q.shape) + " and k " + shape_string(k.shape) +
                                ": expected [Tq, Hq, D] and [Tk, Hk, D] with one head_dim (the inputs before RoPE)");
  d.q_tokens = static_cast<int>(qs[0]), d.q_heads = static_cast<int>(qs[1]), d.head_dim = static_cast<int>(qs[2]);
  d.k_tokens = static_cast<int>(ks[0]), d.k_heads = static_cast<int>(ks[1]);
  d.q = decode(q).values;
  d.k = decode(k).values;
  d.q_positions = ints("q_positions");
  d.k_positions = ints("k_positions");
  if (d.q_positions.size() != static_cast<std::size_t>(d.q_tokens) || d.k_positions.size() != static_cast<std::size_t>(d.k_tokens))
    throw input_error(path, judge::fmt("q_positions holds %zu and k_positions %zu positions for %d query and %d key tokens",
                                       d.q_positions.size(), d.k_positions.size(), d.q_tokens, d.k_tokens));
  const tensor_bytes* w = find("weights");
  const tensor_bytes* l = find("logits");
  if ((w != nullptr) == (l != nullptr))
    throw input_error(path, "a scores dump holds exactly one of 'weights' (softmax weights, as output_attentions) and 'logits'");
  const tensor_bytes& s = w ? *w : *l;
  const std::vector<std::int64_t> want{d.q_heads, d.q_tokens, d.k_tokens};
  if (shape_of(s) != want)
    throw input_error(path, std::string(w ? "weights" : "logits") + " is " + shape_string(s.shape) + ", expected " +
                                shape_string(want) + " ([heads, query tokens, key tokens], as q and k say)");
  d.what = w ? judge::score_dump::kind::weights : judge::score_dump::kind::logits;
  d.values = decode(s).values;
  d.dtype = audit_dtype_name(s.type);
  if (d.dtype != "float32" && d.dtype != "bfloat16" && d.dtype != "float16" && d.dtype != "float64")
    throw input_error(path, std::string(w ? "weights" : "logits") + " is " + d.dtype + ", not a floating-point dtype");
  if (declared_dtype && *declared_dtype != d.dtype)
    throw input_error(path, "--dtype " + *declared_dtype + " but the scores are " + d.dtype);
  if (const auto it = out.metadata.find("softmax_scale"); it != out.metadata.end()) {
    try {
      d.softmax_scale = std::stod(it->second);
    } catch (const std::exception&) {
      throw input_error(path, "__metadata__ softmax_scale is \"" + it->second + "\", not a number");
    }
    if (!(d.softmax_scale > 0)) throw input_error(path, "__metadata__ softmax_scale must be > 0");
  }
  for (const auto& [name, t] : m.tensors)
    if (name != "q" && name != "k" && name != "q_positions" && name != "k_positions" && name != "weights" && name != "logits")
      out.notes.push_back("tensor '" + name + "' is not part of the scores contract: ignored");
  return out;
}

std::string scores_summary(const scores_report& r) {
  const judge::score_dump_verdict& v = r.v;
  std::string s = judge::fmt("ropecheck audit --scores: %s (%s %s, %d query tokens x %d heads, %d key tokens x %d heads)\n",
                             r.source.c_str(), r.what.c_str(), r.dtype.c_str(), r.q_tokens, r.q_heads, r.k_tokens, r.k_heads);
  for (const auto& line : explain::claim_lines(r.claim_info)) s += "  " + line + "\n";
  s += "  claimed: " + describe(r.claimed) + " (from " + r.claimed_from + ")\n";
  for (const auto& n : r.notes) s += "  note: " + n + "\n";
  s += judge::fmt("\n%s: %lld scores in %lld rows against the claim's, each row centred (the per-row constant softmax removes): "
                  "errors %.3g times their rounding noise (RMS; at most 3), worst %.3g of the allowance (m %lld, n %lld, query "
                  "head %d)\n",
                  v.pass ? "PASS" : "FAIL", static_cast<long long>(v.scores), static_cast<long long>(v.rows), v.noise_rms, v.worst_ratio,
                  static_cast<long long>(v.worst_m), static_cast<long long>(v.worst_n), v.worst_head);
  s += "  allowance: " + v.allowance_reason + "\n";
  if (!v.findings.empty()) {
    s += "\ndiagnosis (most evidence first):\n";
    for (const auto& f : v.findings) s += "  [" + f.bug_class + "] " + f.sentence + "\n";
  }
  s += judge::fmt("\naudit %.2f s\n  rerun: %s\n", r.seconds, r.rerun.c_str());
  return s;
}

std::string scores_json(const scores_report& r) {
  nlohmann::json j;
  j["schema_version"] = 1;
  j["ropecheck_version"] = r.version;
  j["kind"] = "scores";
  j["command"] = r.command;
  j["source"] = r.source;
  j["pass"] = r.v.pass;
  j["exit_code"] = r.v.pass ? 0 : 1;
  j["rerun"] = r.rerun;
  j["input"] = {{"what", r.what}, {"dtype", r.dtype}, {"q_tokens", r.q_tokens}, {"q_heads", r.q_heads},
                {"k_tokens", r.k_tokens}, {"k_heads", r.k_heads}};
  j["claimed"] = {{"from", r.claimed_from}, {"description", describe(r.claimed)}};
  j["claim"] = explain::claim_json(r.claim_info);
  j["notes"] = r.notes;
  j["scores"] = {{"judged", r.v.scores}, {"rows", r.v.rows}, {"worst_error_over_allowance", r.v.worst_ratio},
                 {"noise_rms", r.v.noise_rms},
                 {"m", r.v.worst_m}, {"n", r.v.worst_n}, {"query_head", r.v.worst_head}, {"allowance", r.v.allowance_reason}};
  j["findings"] = nlohmann::json::array();
  for (const auto& f : r.v.findings)
    j["findings"].push_back({{"bug_class", f.bug_class}, {"sentence", f.sentence}, {"confidence", f.confidence}});
  j["seconds"] = {{"audit", r.seconds}};
  return j.dump(2) + "\n";
}

std::string scores_junit(const scores_report& r) {
  const judge::finding first =
      r.v.findings.empty() ? judge::finding{"unexplained", "the scores fail the allowance", 0} : r.v.findings.front();
  return one_case_junit("ropecheck.scores", r.source, r.v.pass, first, scores_summary(r));
}

}  // namespace ropecheck::audit
