// tools/audit/probe_outputs.cpp — see probe_outputs.hpp.
#include "probe_outputs.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <stdexcept>

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

// Per probe token, the sequence length of the call that kept it: the largest position of the call's entries
// (every row, as transformers' dynamic_rope_update takes torch.max(position_ids)) + 1. The plan must keep
// every token exactly once, as probe_file.hpp writes it.
std::vector<std::int64_t> call_sequence_lengths(const std::filesystem::path& file, const std::string& f,
                                                const mapped_tensors& m, std::size_t tokens) {
  const auto ints = [&](const std::string& name) {
    const tensor t = decode(m.tensors.at(name));
    if (t.type != dtype::i64) throw input_error(file, name + " is " + std::string(dtype_name(t.type)) + ", not I64");
    std::vector<std::int64_t> v;
    v.reserve(t.values.size());
    for (const double d : t.values) v.push_back(static_cast<std::int64_t>(d));
    return v;
  };
  const std::vector<std::int64_t> calls = ints(f + ".calls"), pos = ints(f + ".positions"), token = ints(f + ".token"),
                                  keep = ints(f + ".keep");
  const std::size_t n = token.size();
  if (keep.size() != n || n == 0 || pos.size() % n != 0 || calls.empty() || calls.front() != 0 ||
      calls.back() != static_cast<std::int64_t>(n) || !std::is_sorted(calls.begin(), calls.end()))
    throw input_error(file, f + ".calls, .positions, .token and .keep do not form a plan (calls from 0 to the " +
                                std::to_string(n) + " entries, one position per entry and row): rewrite it with `ropecheck probe`");
  const std::size_t rows = pos.size() / n;
  std::vector<std::int64_t> seq(tokens, -1);
  for (std::size_t c = 0; c + 1 < calls.size(); ++c) {
    const auto b = static_cast<std::size_t>(calls[c]), e = static_cast<std::size_t>(calls[c + 1]);
    std::int64_t top = 0;
    for (std::size_t r = 0; r < rows; ++r)
      for (std::size_t j = b; j < e; ++j) top = std::max(top, pos[r * n + j]);
    for (std::size_t j = b; j < e; ++j) {
      if (keep[j] == 0) continue;
      if (token[j] < 0 || static_cast<std::size_t>(token[j]) >= tokens || seq[static_cast<std::size_t>(token[j])] >= 0)
        throw input_error(file, f + ".token: entry " + std::to_string(j) + " keeps probe token " + std::to_string(token[j]) +
                                    ", which is out of range or kept twice (the plan keeps every token once)");
      seq[static_cast<std::size_t>(token[j])] = top + 1;
    }
  }
  if (std::find(seq.begin(), seq.end(), -1) != seq.end())
    throw input_error(file, f + ".keep: some probe token is kept by no call (the plan keeps every token once)");
  return seq;
}

// The positions of the file's tokens (row 0 of [R, T]).
std::vector<std::int64_t> token_positions(const std::filesystem::path& file, const mapped_tensors& m, std::size_t tokens) {
  const tensor pos = decode(m.tensors.at("positions"));
  if (pos.values.size() < tokens) throw input_error(file, "positions has fewer values than the inputs have tokens");
  std::vector<std::int64_t> positions(tokens);
  for (std::size_t i = 0; i < tokens; ++i) positions[i] = static_cast<std::int64_t>(pos.values[i]);
  return positions;
}

// The qk form's shifted keys, when present (all three tensors and shift_delta, or none).
void read_shift(const std::filesystem::path& file, const mapped_tensors& m, probe_outputs_contents& out) {
  const bool any = m.tensors.count("shift.token") || m.tensors.count("shift.positions") || m.tensors.count("shift.k_out");
  if (!any) return;
  for (const char* name : {"shift.token", "shift.positions", "shift.k_out"})
    if (!m.tensors.count(name))
      throw input_error(file, std::string("shift.token, shift.positions and shift.k_out go together: no ") + name);
  const auto delta = out.metadata.find("shift_delta");
  probe_outputs_contents::shifted_keys s;
  try {
    if (delta == out.metadata.end()) throw std::invalid_argument("absent");
    s.delta = std::stoll(delta->second);
  } catch (const std::exception&) {
    throw input_error(file, "the shifted keys need __metadata__ shift_delta (the positions' change, an integer)");
  }
  const auto ints = [&](const char* name) {
    const tensor t = decode(m.tensors.at(name));
    if (t.type != dtype::i64 || t.shape.size() != 1) throw input_error(file, std::string(name) + " is not I64 [S]");
    std::vector<std::int64_t> v;
    for (const double d : t.values) v.push_back(static_cast<std::int64_t>(d));
    return v;
  };
  s.token = ints("shift.token");
  s.positions = ints("shift.positions");
  const tensor_bytes& k = m.tensors.at("k");
  const tensor_bytes& ko = m.tensors.at("shift.k_out");
  const auto S = static_cast<std::int64_t>(s.token.size());
  if (s.positions.size() != s.token.size() || S == 0 || ko.shape != std::vector<std::int64_t>{S, k.shape[1], k.shape[2]} ||
      ko.type != k.type)
    throw input_error(file, "shift.k_out is " + std::string(dtype_name(ko.type)) + " " + shape_string(ko.shape) + ", expected " +
                                std::string(dtype_name(k.type)) + " [" + std::to_string(S) + ", " + std::to_string(k.shape[1]) +
                                ", " + std::to_string(k.shape[2]) + "] (one row a shifted token, as shift.token and shift.positions)");
  const tensor kk = decode(k);
  s.heads = static_cast<int>(k.shape[1]), s.head_dim = static_cast<int>(k.shape[2]);
  const auto per = static_cast<std::size_t>(s.heads * s.head_dim);
  for (const std::int64_t t : s.token) {
    if (t < 0 || t >= k.shape[0]) throw input_error(file, "shift.token names probe token " + std::to_string(t) + ", out of range");
    s.k.insert(s.k.end(), kk.values.begin() + static_cast<std::ptrdiff_t>(static_cast<std::size_t>(t) * per),
               kk.values.begin() + static_cast<std::ptrdiff_t>((static_cast<std::size_t>(t) + 1) * per));
  }
  s.k_out = decode(ko).values;
  s.dtype = audit_dtype_name(ko.type);
  out.shift = std::move(s);
}

// The qk form's repeated prefill runs: again (nondeterministic, either output) and the crossing probe.
void read_qk_repeats(const std::filesystem::path& file, const mapped_tensors& m, probe_outputs_contents& out) {
  const bool prefill = std::find(out.forms.begin(), out.forms.end(), judge::call_form::prefill) != out.forms.end();
  static const char* const runs[] = {"prefill.q_out_again", "prefill.k_out_again", "prefill.q_out_kalt", "prefill.k_out_qalt"};
  for (const char* name : runs) {
    const auto it = m.tensors.find(name);
    if (!prefill && it != m.tensors.end()) throw input_error(file, std::string(name) + " without prefill.q_out");
    if (!prefill) continue;
    if (it == m.tensors.end())
      throw input_error(file, std::string("prefill.q_out without ") + name + ": the qk form applies the prefill plan four "
                              "times (again, with the keys k_alt, with the queries q_alt; docs/scores.md)");
    const std::string base = std::string(name).substr(0, std::string(name).rfind('_'));  // prefill.q_out
    const tensor_bytes& first = m.tensors.at(base);
    if (it->second.shape != first.shape || it->second.type != first.type)
      throw input_error(file, std::string(name) + " is not shaped and typed as " + base);
  }
  read_shift(file, m, out);
  if (!prefill) return;
  const tensor_bytes& q = m.tensors.at("q");
  const tensor_bytes& k = m.tensors.at("k");
  const std::vector<std::int64_t> positions = token_positions(file, m, static_cast<std::size_t>(q.shape[0]));
  const int Hq = static_cast<int>(q.shape[1]), Hk = static_cast<int>(k.shape[1]), D = static_cast<int>(q.shape[2]);
  const tensor q_out = decode(m.tensors.at("prefill.q_out")), k_out = decode(m.tensors.at("prefill.k_out"));
  const tensor q_again = decode(m.tensors.at("prefill.q_out_again")), k_again = decode(m.tensors.at("prefill.k_out_again"));
  out.nondeterministic = judge::repeat_call_finding(q_out.values, q_again.values, positions, Hq, D, "prefill calls (q's outputs)");
  if (!out.nondeterministic)
    out.nondeterministic = judge::repeat_call_finding(k_out.values, k_again.values, positions, Hk, D, "prefill calls (k's outputs)");
  const tensor q_kalt = decode(m.tensors.at("prefill.q_out_kalt")), k_qalt = decode(m.tensors.at("prefill.k_out_qalt"));
  out.crossed = judge::crossing_finding(q_out.values, q_kalt.values, k_out.values, k_qalt.values, positions, Hq, Hk, D);
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
  const auto form_it = out.metadata.find("form");
  const std::string form_name = form_it == out.metadata.end() ? "x" : form_it->second;
  if (form_name != "x" && form_name != "qk")
    throw input_error(file, "__metadata__ form is \"" + form_name + "\": this ropecheck reads the forms x and qk");
  out.qk = form_name == "qk";
  // The inputs and, per form, the outputs judged against them: x -> F.y, or q -> F.q_out and k -> F.k_out.
  const std::vector<std::pair<std::string, std::string>> sides =
      out.qk ? std::vector<std::pair<std::string, std::string>>{{"q", ".q_out"}, {"k", ".k_out"}}
             : std::vector<std::pair<std::string, std::string>>{{"x", ".y"}};
  std::int64_t tokens = -1;
  for (const auto& [in, suffix] : sides) {
    const tensor_bytes& x = need(in);
    if (x.shape.size() != 3 || x.shape[0] < 1 || x.shape[1] < 1 || x.shape[2] < 2)
      throw input_error(file, in + " is " + shape_string(x.shape) + ", not [tokens, heads, head_dim]");
    if (tokens >= 0 && x.shape[0] != tokens) throw input_error(file, "q and k hold different numbers of tokens");
    tokens = x.shape[0];
  }
  if (out.qk) {
    const tensor_bytes &q = need("q"), &k = need("k");
    if (q.shape[2] != k.shape[2] || q.type != k.type || q.shape[1] % k.shape[1] != 0)
      throw input_error(file, "q " + std::string(dtype_name(q.type)) + " " + shape_string(q.shape) + " and k " +
                                  std::string(dtype_name(k.type)) + " " + shape_string(k.shape) +
                                  " must share head_dim and dtype, with k's heads dividing q's");
  }
  (void)need("positions");
  for (const auto form : {judge::call_form::prefill, judge::call_form::decode}) {
    const std::string f = judge::to_string(form);
    for (const char* part : {".calls", ".positions", ".token", ".keep"}) (void)need(f + part);
    std::size_t present = 0;
    for (const auto& [in, suffix] : sides) {
      const auto y = m.tensors.find(f + suffix);
      if (y == m.tensors.end()) continue;
      ++present;
      const tensor_bytes& x = m.tensors.at(in);
      if (y->second.shape != x.shape || y->second.type != x.type)
        throw input_error(file, f + suffix + " is " + std::string(dtype_name(y->second.type)) + " " +
                                    shape_string(y->second.shape) + " but " + in + " is " + std::string(dtype_name(x.type)) +
                                    " " + shape_string(x.shape) + ": the outputs must have the inputs' shape and dtype");
    }
    if (present == 0) continue;
    if (present != sides.size()) throw input_error(file, f + ".q_out and " + f + ".k_out go together: one is missing");
    out.forms.push_back(form);
    out.call_seq_len[form] = call_sequence_lengths(file, f, m, static_cast<std::size_t>(tokens));
  }
  if (out.forms.empty())
    throw input_error(file, out.qk ? "neither prefill.q_out nor decode.q_out is present: no outputs to judge"
                                   : "neither prefill.y nor decode.y is present: no outputs to judge");
  if (out.qk) {
    read_qk_repeats(file, m, out);
    return out;
  }
  const tensor_bytes& x = m.tensors.at("x");
  const auto y = m.tensors.find("prefill.y"), again = m.tensors.find("prefill.y_again");
  if (again != m.tensors.end() && y == m.tensors.end()) throw input_error(file, "prefill.y_again without prefill.y");
  if (y != m.tensors.end()) {
    if (again == m.tensors.end())
      throw input_error(file, "prefill.y without prefill.y_again: the prefill plan is applied twice (the second "
                              "application's outputs are prefill.y_again) and the two compared, as every door does");
    if (again->second.shape != y->second.shape || again->second.type != y->second.type)
      throw input_error(file, "prefill.y_again is not shaped and typed as prefill.y");
    // The one repeat-call check of every door (ropecheck/judge/repeat_calls.hpp), on the values widened exactly.
    const tensor first = decode(y->second), second = decode(again->second);
    const std::vector<std::int64_t> positions = token_positions(file, m, static_cast<std::size_t>(x.shape[0]));
    out.nondeterministic = judge::repeat_call_finding(first.values, second.values, positions, static_cast<int>(x.shape[1]),
                                                      static_cast<int>(x.shape[2]), "prefill calls");
  }
  return out;
}

std::vector<seq_len_group> seq_len_groups(const rope_config& c, const std::vector<std::int64_t>& seq_len) {
  const bool longrope = c.scaling == scaling_kind::longrope && c.short_factor != c.long_factor;
  const bool dynamic = c.scaling == scaling_kind::dynamic_ntk;
  if (!longrope && !dynamic) return {};
  // The key: what the frequencies depend on (0 for the lengths at which the rule leaves them as at none).
  const auto key = [&](std::int64_t s) -> std::int64_t {
    if (longrope) return s > c.trained_length() ? 1 : 0;
    return s > c.max_position_embeddings ? s : 0;
  };
  std::map<std::int64_t, seq_len_group> by_key;
  for (std::size_t t = 0; t < seq_len.size(); ++t) {
    seq_len_group& g = by_key[key(seq_len[t])];
    if (g.tokens.empty()) g.min_seq_len = g.seq_len = seq_len[t];
    g.seq_len = std::max(g.seq_len, seq_len[t]);
    g.min_seq_len = std::min(g.min_seq_len, seq_len[t]);
    g.tokens.push_back(t);
  }
  std::vector<seq_len_group> out;
  for (auto& [k, g] : by_key) out.push_back(std::move(g));
  return out;
}

audit_report combine_groups(const std::vector<seq_len_group>& groups, std::vector<audit_report> reports) {
  if (groups.empty() || groups.size() != reports.size()) throw std::logic_error("combine_groups: one report per group");
  const auto label = [&](std::size_t i) {
    const seq_len_group& g = groups[i];
    return "calls of sequence length " +
           (g.min_seq_len == g.seq_len ? std::to_string(g.seq_len) : std::to_string(g.min_seq_len) + ".." + std::to_string(g.seq_len));
  };
  std::size_t pick = 0;
  bool pass = true;
  for (std::size_t i = 0; i < reports.size(); ++i) {
    if (!reports[i].v.pass && pass) pick = i;
    if (pass && reports[i].v.pass && groups[i].tokens.size() > groups[pick].tokens.size()) pick = i;
    pass = pass && reports[i].v.pass;
  }
  std::vector<judge::finding> findings;
  for (const bool failing : {true, false})
    for (std::size_t i = 0; i < reports.size(); ++i)
      if (reports[i].v.pass != failing)
        for (judge::finding f : reports[i].v.findings) {
          f.sentence = label(i) + " (" + std::to_string(groups[i].tokens.size()) + " tokens): " + f.sentence;
          findings.push_back(std::move(f));
        }
  std::string note = "judged in " + std::to_string(groups.size()) +
                     " groups by each call's sequence length (its largest position + 1, as transformers' dynamic_rope_update "
                     "derives it; the claim's frequencies depend on it):";
  std::vector<std::string> lines;
  std::vector<std::size_t> failing;
  for (std::size_t i = 0; i < reports.size(); ++i) {
    lines.push_back(label(i) + ", " + std::to_string(groups[i].tokens.size()) + " tokens, " + (reports[i].v.pass ? "pass" : "FAIL"));
    if (!reports[i].v.pass) failing.push_back(i);
  }
  if (lines.size() <= max_listed_groups) {
    for (std::size_t i = 0; i < lines.size(); ++i) note += std::string(i ? ";" : "") + " " + lines[i];
  } else {  // many: the span, the counts and the first failing groups; every group in the JSON
    note += " sequence lengths " + std::to_string(groups.front().min_seq_len) + ".." + std::to_string(groups.back().seq_len) +
            ", " + std::to_string(lines.size() - failing.size()) + " pass, " + std::to_string(failing.size()) + " FAIL";
    for (std::size_t k = 0; k < failing.size() && k < 3; ++k) note += std::string(k ? "; " : " (") + lines[failing[k]];
    if (!failing.empty()) note += failing.size() > 3 ? "; ...)" : ")";
    note += "; every group in the JSON's seq_len_groups";
  }
  audit_report r = std::move(reports[pick]);
  r.seq_len_groups = std::move(lines);
  r.v.pass = pass;
  r.v.findings = std::move(findings);
  r.notes.push_back(note + (groups.size() > 1 ? "; the figures below are those of the " + label(pick) : std::string()));
  return r;
}

void merge(probe_outputs_report& r) {
  std::vector<judge::form_outcome> forms;
  for (const auto& f : r.forms) {
    judge::form_outcome o{f.form, f.passed, f.call_findings};
    const std::vector<judge::finding>& judged = f.keys ? f.pair_findings : f.r.v.findings;
    o.findings.insert(o.findings.end(), judged.begin(), judged.end());
    forms.push_back(std::move(o));
  }
  r.merged = judge::merge_forms(forms);
  if (r.shift) {  // a failing shift's findings before the passing forms' warnings
    const auto at = static_cast<std::ptrdiff_t>(r.merged.passed && !r.shift->v.pass ? 0 : r.merged.findings.size());
    r.merged.findings.insert(r.merged.findings.begin() + at, r.shift->findings.begin(), r.shift->findings.end());
    r.merged.forms.insert(r.merged.forms.begin() + at, r.shift->findings.size(), "shift");
    r.merged.passed = r.merged.passed && r.shift->v.pass;
  }
}

std::string score_identity_line(const judge::score_identity& s) {
  return judge::fmt("  score identity: |<q'_m, k'_n> - af^2 <q_m, R(n - m) k_n>| / (af^2 |q| |k|) at most %.3g; at most %.3g of "
                    "its allowance (m %lld, n %lld, query head %d; %lld pairs)\n",
                    s.violation, s.worst_ratio, static_cast<long long>(s.m), static_cast<long long>(s.n), s.q_head,
                    static_cast<long long>(s.pairs));
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
    const std::string phrase = judge::call_form_phrase(f.form);
    if (!f.keys) {
      s += "\n-- the probe in " + phrase + ", judged as `ropecheck audit` judges a dump --\n" + human_summary(f.r);
      continue;
    }
    s += "\n-- the probe in " + phrase + ": the queries, judged as a dump --\n" + human_summary(f.r);
    s += "\n-- the probe in " + phrase + ": the keys, judged as a dump --\n" + human_summary(*f.keys);
    s += "\n-- the probe in " + phrase + ": queries and keys together --\n";
    if (f.score) s += score_identity_line(*f.score);
    for (const auto& x : f.pair_findings) s += judge::finding_line(x, "  ");
  }
  if (r.shift) {
    s += judge::fmt("\n-- the keys after the kernel's context shift of %+lld (%lld tokens), judged at their renumbered positions --\n",
                    static_cast<long long>(r.shift->delta), static_cast<long long>(r.shift->tokens));
    s += judge::fmt("  %s: worst error/allowance %.3g\n", r.shift->v.pass ? "PASS" : "FAIL", r.shift->v.worst_ratio);
    for (const auto& x : r.shift->findings) s += judge::finding_line(x, "  ");
  }
  std::string forms;
  for (const auto& f : r.forms)
    forms += std::string(forms.empty() ? "" : ", ") + judge::to_string(f.form) + " calls " + (f.passed ? "pass" : "FAIL");
  if (r.shift) forms += std::string(", shifted keys ") + (r.shift->v.pass ? "pass" : "FAIL");
  s += std::string("\n") + (r.merged.passed ? "PASS" : "FAIL") + ": " + forms + "\n";
  if (!r.merged.passed && !r.merged.findings.empty()) s += judge::finding_line(r.merged.findings.front(), "  first finding: ");
  s += "  rerun: " + r.rerun + "\n";
  return s;
}

std::string probe_outputs_json(const probe_outputs_report& r) {
  nlohmann::json j = nlohmann::json::parse(to_json(r.forms.front().r));  // the first form's figures at the top, as the plugin door
  j["kind"] = "probe_outputs";
  j["form"] = r.forms.front().keys ? "qk" : "x";
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
    if (f.keys) {  // qk: each side's audit, the pair's findings and the score identity
      o = nlohmann::json::object();
      o["queries"] = nlohmann::json::parse(to_json(f.r));
      o["keys"] = nlohmann::json::parse(to_json(*f.keys));
      o["findings"] = nlohmann::json::array();
      for (const auto& x : f.pair_findings) o["findings"].push_back(finding_json(x));
      if (f.score)
        o["score"] = {{"violation", f.score->violation}, {"worst_ratio", f.score->worst_ratio}, {"m", f.score->m}, {"n", f.score->n}, {"query_head", f.score->q_head},
                      {"pairs", f.score->pairs}};
    }
    o["calls"] = judge::call_form_phrase(f.form);
    o["pass"] = f.passed;
    o["exit_code"] = f.passed ? 0 : 1;
    o["call_findings"] = nlohmann::json::array();
    for (const auto& x : f.call_findings) o["call_findings"].push_back(finding_json(x));
    j["forms"][judge::to_string(f.form)] = std::move(o);
  }
  if (r.shift) {
    j["shift"] = {{"delta", r.shift->delta}, {"tokens", r.shift->tokens}, {"pass", r.shift->v.pass},
                  {"worst_error_over_allowance", r.shift->v.worst_ratio}, {"findings", nlohmann::json::array()}};
    for (const auto& x : r.shift->findings) j["shift"]["findings"].push_back(finding_json(x));
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
    const std::string text = human_summary(f.r) + (f.keys ? "\n" + human_summary(*f.keys) : std::string());
    if (!f.passed) {
      std::vector<judge::finding> all = f.call_findings;
      const std::vector<judge::finding>& judged = f.keys ? f.pair_findings : f.r.v.findings;
      all.insert(all.end(), judged.begin(), judged.end());
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
