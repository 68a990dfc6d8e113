// tools/ropecheck.cpp — the ropecheck command line.
//
//   ropecheck report [--config config.json | --preset NAME] [convention overrides] [options]
//   ropecheck audit DUMP [--config config.json | --preset NAME] [convention overrides] [options]
//   ropecheck audit --plugin lib.so [--seed N] [--max-success N]
//   ropecheck certify [--config config.json | --preset NAME] [--impl NAME | --plugin lib.so] [--shard k/N]
//   ropecheck merge PART.json ...            (certify/certify_cli.hpp)
//   ropecheck explain --config config.json [--layer N] | --families   (explain/explain_cli.hpp)
//   ropecheck probe --config config.json --dtype D --out probe.safetensors  (probe/probe_cli.hpp; the Python door)
//
// `report` measures how far each implementation real engines use (HF's fp32 path, eager bf16,
// fused bf16 storage with fp32 compute, fp16, fp64, ggml's repeated products, and the known-bad
// ones) is from exact mathematics (the MPFR reference) as position grows, explains where the error
// comes from, tabulates the bands of the convention, and writes a folder: report.html with plots,
// CSV of every series, summary.json with the verdicts (deterministic), timing.json.
//
// `audit` judges what another implementation produced (a dump: positions, inputs x, outputs y,
// optionally its cos/sin/inv_freq; safetensors or .npy) against the reference of the convention it
// claims, and on failure names the bug class with evidence; with --plugin it drives the property
// suite against a kernel behind src/ropecheck/plugin.h and prints shrunk counterexamples.
//
// `certify` checks every position 0..N and every band and writes certificate.json (a partial per
// shard with --shard k/N, which `merge` combines into the identical certificate).
//
// Exit codes: report 0 written; audit and certify/merge 0 pass, 1 failed; all 2 bad input, usage, or a file
// that cannot be read or written.
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include "audit_input.hpp"
#include "audit_output.hpp"
#include "attention_outputs.hpp"
#include "bias_outputs.hpp"
#include "table_dump.hpp"
#include "score_dump_input.hpp"
#include "ropecheck/judge/describe.hpp"
#include "ropecheck/judge/repeat_calls.hpp"
#include "ropecheck/judge/judge.hpp"
#include "ropecheck/judge/sentence.hpp"
#include "report/alibi_bias.hpp"
#include "report/table_figure.hpp"
#include "report/engine.hpp"
#include "plugin_audit.hpp"
#include "plugin_loader.hpp"
#include "plugin_output.hpp"
#include "markup.hpp"
#include "probe_outputs.hpp"
#include "probe/probe_cli.hpp"
#include "tensor_file.hpp"
#include "report/output.hpp"
#include "ropecheck/config_json.hpp"
#include "ropecheck/presets.hpp"
#include "ropecheck/schedule.hpp"
#include "cli_common.hpp"
#include "certify/certify_cli.hpp"
#include "explain/claim_lines.hpp"
#include "explain/explain_cli.hpp"
#include "certify/certificate.hpp"

namespace {

using namespace ropecheck;
using cli::convention_flags;
using cli::progress_bar;


// An input/output failure of the command line (exit 2), already phrased for the user.
struct usage_error : std::runtime_error {
  using std::runtime_error::runtime_error;
};

void write_file(const std::string& path, const std::string& text) {
  if (path == "-") {
    std::fwrite(text.data(), 1, text.size(), stdout);
    return;
  }
  std::ofstream out(path, std::ios::binary);
  if (!out) throw usage_error(path + ": cannot be opened for writing");
  out << text;
  if (!out.flush()) throw usage_error(path + ": write failed");
}

std::string show_position(std::int64_t p) { return p < 0 ? "never" : std::to_string(p); }

void print_summary(const report::report_result& r, const report::written_report& w) {
  const auto& q = r.request;
  std::printf("ropecheck report: %s — %s, attention factor %.6g\n", q.config_name.c_str(),
              explain::convention_line(q.config).c_str(), r.attention_factor);
  if (const std::string m = report::mrope_statement(q.config); !m.empty()) std::printf("%s\n", m.c_str());
  std::printf("positions 0..%lld%s, reference %s\n\n", static_cast<long long>(q.max_position),
              q.exhaustive ? " (every position)" : " (dense to 1023, log-spaced beyond, dense at regime edges)",
              r.reference_precision.c_str());
  // The verdict is the judge's (pass, drift, or the bug class it names) on the implementation's outputs
  // for the probe set, with its worst error / allowance; the rest are the sweep's figures (applied angle).
  std::printf("%-20s %-24s %-9s %10s %11s %11s %11s %14s %15s %12s\n", "implementation", "verdict (judge)", "dtype",
              "err/allow", "max angle", "max tokens", "max cos/sin", "first >thr rad", "first >=thr tok", "first p~p+1");
  for (const auto& s : r.series) {
    double angle = 0, tokens = 0, cs = 0;
    for (const auto& p : s.points) {
      angle = std::max(angle, p.angle_rad);
      tokens = std::max(tokens, p.position_tokens);
      cs = std::max(cs, p.cos_sin_abs);
    }
    const std::string verdict = s.judge.judged ? s.judge.verdict : (s.passes ? "pass (thresholds)" : "FAIL (thresholds)");
    std::printf("%-20s %-24s %-9s %10.3g %11.3e %11.3e %11.3e %14s %15s %12s\n", s.name.c_str(), verdict.c_str(),
                s.judge.judged ? s.judge.dtype.c_str() : "-", s.judge.worst_ratio, angle, tokens,
                cs, show_position(s.first_angle_over_threshold).c_str(),
                show_position(s.first_position_error_over_threshold).c_str(),
                show_position(s.first_adjacent_positions_equal).c_str());
  }
  std::printf("\n%lld values (positions x bands x implementations) in %.1f s on %d threads: %.3g values/s "
              "(fast reference alone %.3g values/s; a plain MPFR reference would have needed ~%.3g s)\n",
              static_cast<long long>(r.time.values), r.time.seconds_total, r.time.threads, r.time.values_per_second,
              r.time.reference_values_per_second, r.time.mpfr_seconds_estimate);
  std::printf("report: %s\n", (w.folder / "report.html").string().c_str());
}

struct audit_flags {
  std::string dump;
  std::optional<std::string> dtype, json, junit, plugin;
  std::string reference = "exact";
  bool strict = false, quiet = false, verbose = false, scores = false, table = false;
  std::optional<double> tolerance_ulps;
  std::int64_t seq_len = 0;
  int threads = 0;
  std::optional<std::uint64_t> seed;
  int max_success = 100;
  double plugin_timeout = 10;
};

// The judge's options from the flags, the same for a dump and for a plugin's probe.
judge::audit_options judge_options(const audit_flags& af) {
  if (af.reference != "exact" && af.reference != "hf" && af.reference != "meta" && af.reference != "ggml")
    throw usage_error("--reference must be exact, hf (meta: the same angles) or ggml, got '" + af.reference + "'");
  judge::audit_options o;
  o.strict = af.strict;
  o.reference = af.reference == "hf" || af.reference == "meta" ? judge::reference_kind::hf
                : af.reference == "ggml"                        ? judge::reference_kind::ggml
                                                                : judge::reference_kind::exact;
  o.tolerance_ulps = af.tolerance_ulps;
  o.seq_len = af.seq_len;
  o.threads = af.threads;
  return o;
}

// probe + judge + properties; outputs in tools/audit/plugin_output.cpp.
int run_plugin_audit(const audit_flags& af, const std::string& command) {
  audit::plugin_audit_options o;
  o.seed = af.seed;
  o.max_success = af.max_success;
  o.verbose = af.verbose;
  o.judge = judge_options(af);
  o.timeout_seconds = af.plugin_timeout;
  if (!af.quiet)
    o.on_property = [](const std::string& name, int i, int total) {
      std::fprintf(stderr, "[audit] property %d/%d: %s\n", i + 1, total, name.c_str());
    };
  const auto r = audit::audit_plugin(*af.plugin, o);
  for (const auto& w : r.warnings) std::cerr << "ropecheck audit: WARNING: " << w << '\n';  // even with --quiet or --json -
  if (af.json) write_file(*af.json, audit::plugin_json(r, ROPECHECK_VERSION, command));
  if (af.junit) write_file(*af.junit, audit::plugin_junit(r, ROPECHECK_VERSION, command));
  if (!(af.json && *af.json == "-")) std::fputs(audit::plugin_summary(r, ROPECHECK_VERSION, command).c_str(), stdout);
  return r.exit_code;
}

// M-RoPE: the dump's position rows against the claim (exit 2 when they cannot be judged under it), and
// the counts the output states.
void describe_position_rows(const audit::loaded_dump& in, const rope_config& claimed, audit::audit_report& r) {
  const auto tokens = static_cast<std::size_t>(in.d.tokens);
  const std::size_t rows = in.d.position_rows.empty() ? 1 : in.d.position_rows.size() / tokens;
  r.position_rows = static_cast<int>(rows);
  for (std::size_t t = 0; t < tokens; ++t) {
    bool equal = true;
    for (std::size_t k = 1; k < rows; ++k) equal = equal && in.d.position_rows[k * tokens + t] == in.d.position_rows[t];
    ++(equal ? r.text_tokens : r.multimodal_tokens);
  }
  if (claimed.mrope == mrope_kind::none) {
    if (r.multimodal_tokens > 0)
      throw usage_error(in.source.string() + ": positions are [" + std::to_string(rows) + ", " + std::to_string(tokens) +
                        "] and " + std::to_string(r.multimodal_tokens) +
                        " tokens have rows that differ: the dump looks multimodal (M-RoPE) but the claim is 1-D RoPE; set "
                        "the claim's M-RoPE fields (config.json rope_scaling {\"type\": \"mrope\", \"mrope_section\": "
                        "[...]}, or --mrope contiguous|interleaved --mrope-section 16,24,24)");
    return;
  }
  if (in.d.position_rows.empty()) {
    r.position_rows = claimed.position_rows();
    r.notes.push_back("positions are [tokens] under an M-RoPE claim: read as text-only tokens (every position row equal)");
  } else if (static_cast<int>(rows) != claimed.position_rows()) {
    throw usage_error(in.source.string() + ": positions hold " + std::to_string(rows) + " rows but the M-RoPE claim (" +
                      std::to_string(claimed.mrope_section.size()) + " sections in mrope_section) expects [" +
                      std::to_string(claimed.position_rows()) + ", tokens]");
  }
}

// The dump audit of `in` (read from af.dump in seconds_read) against the claim of cf (or a config.json
// beside the dump): everything `ropecheck audit DUMP` reports, for each door that reads a dump.
// For the outputs of the probe's calls (probe_outputs.hpp): the claim the probe was made for, checked as
// soon as the claim is resolved, and per token the length of the call it came from, by which a claim whose
// frequencies depend on it is judged group by group, each at its length (audit::seq_len_groups; --seq-len
// overrides it).
struct probe_claim_mismatch : usage_error {  // the claim given is not the probe's (the message says which is)
  using usage_error::usage_error;
};

struct probe_context {
  std::string convention;                         // the probe file's __metadata__ convention
  std::string how;                                // how to give that claim (its claim_args)
  const std::vector<std::int64_t>* call_seq_len;  // one per token of the form judged
};

audit::audit_report audit_loaded(audit::loaded_dump in, double seconds_read, const audit_flags& af, const convention_flags& cf,
                                 const std::string& command, const probe_context* probe = nullptr) {
  namespace fs = std::filesystem;
  using clock = std::chrono::steady_clock;
  judge::audit_options o = judge_options(af);
  const auto t1 = clock::now();

  // The claim: --config/--preset/flags; with none, a config.json beside the dump (or inside an
  // .npy directory); flags alone start from the default convention at the dump's head_dim.
  convention_flags claim = cf;
  std::vector<std::string> notes = in.notes;
  if (claim.config_path.empty() && claim.preset.empty()) {
    const fs::path p(af.dump);
    for (const fs::path& cand : {fs::is_directory(p) ? p / "config.json" : fs::path(), p.parent_path() / "config.json"}) {
      if (!cand.empty() && fs::is_regular_file(cand)) {
        claim.config_path = cand.string();
        notes.push_back("convention read from " + cand.string() + " (found beside the dump; --config overrides)");
        break;
      }
    }
  }
  if (claim.config_path.empty() && claim.preset.empty() && !claim.any_override())
    throw usage_error("audit: no claimed convention: give --config config.json, --preset NAME or convention flags "
                      "(--base, --layout, --rotary-dim, ...), or put a config.json beside the dump");
  if (const std::string missing = claim.unsaid_by_flags_alone(); !missing.empty())
    throw usage_error("audit: a claim by flags alone must say" + missing +
                      " (or give --config config.json / --preset NAME, or put a config.json beside the dump)");
  rope_config fallback;  // flags alone: base and layout given (checked above), head_dim the dump's, the rest RoPE's plain rule
  fallback.head_dim = fallback.rotary_dim = in.d.head_dim;
  std::string claimed_from;
  std::optional<int> dump_layer;
  bool dump_indexer = false;
  {
    const auto& meta = in.metadata;
    if (const auto it = meta.find("part"); it != meta.end()) {
      if (it->second != "indexer" && it->second != "attention")
        throw usage_error(af.dump + ": the dump's metadata \"part\" is \"" + it->second + "\", neither \"attention\" nor \"indexer\"");
      dump_indexer = it->second == "indexer";
    }
    if (const auto it = meta.find("layer"); it != meta.end()) {
      try {
        std::size_t used = 0;
        dump_layer = std::stoi(it->second, &used);
        if (used != it->second.size() || *dump_layer < 0) throw std::invalid_argument("not a layer index");
      } catch (const std::exception&) {
        throw usage_error(af.dump + ": the dump's metadata \"layer\" is \"" + it->second + "\", not a layer index");
      }
      if (claim.config_path.empty()) notes.push_back("the dump says it is layer " + it->second + " (no config.json to read per layer)");
    }
  }
  ropecheck::claim claim_info;
  hf_config_parse parsed;  // with --config: read once, for the claim and the other-layer hypothesis
  const rope_config claimed = claim.resolve(claimed_from, fallback, &notes, dump_layer, &claim_info, dump_indexer, &parsed);
  // The probe was made for one claim: judging its outputs against another would judge other inputs' plan.
  if (probe && judge::convention_line(claimed) != probe->convention)
    throw probe_claim_mismatch(af.dump + ": the probe was made for \"" + probe->convention + "\" but the claim given is \"" +
                      judge::convention_line(claimed) + "\": " + probe->how);
  if (claimed.head_dim != in.d.head_dim)
    throw usage_error(af.dump + ": the dump's head_dim is " + std::to_string(in.d.head_dim) + " but the claimed convention (" +
                      claimed_from + ") has head_dim " + std::to_string(claimed.head_dim));
  if (probe && af.seq_len <= 0)
    if (const std::vector<audit::seq_len_group> groups = audit::seq_len_groups(claimed, *probe->call_seq_len); !groups.empty()) {
      std::vector<audit::audit_report> parts;
      for (const audit::seq_len_group& g : groups) {
        audit_flags at = af;
        at.seq_len = g.seq_len;
        parts.push_back(audit_loaded(audit::subset_tokens(in, g.tokens), seconds_read, at, cf, command));
      }
      return audit::combine_groups(groups, std::move(parts));
    }

  if (in.inv_freq && in.inv_freq->dtype == "float32") {
    std::vector<float> f;
    for (double x : in.inv_freq->values) f.push_back(static_cast<float>(x));  // exact: stored as fp32
    o.hf_inv_freq = std::move(f);
  }
  progress_bar bar("audit");
  if (!af.quiet) o.progress = [&bar](std::int64_t d, std::int64_t t) { bar(d, t); };

  audit::audit_report r;
  r.version = ROPECHECK_VERSION;
  r.command = command;
  r.source = af.dump;
  r.format = in.format;
  r.dtype = in.d.dtype;
  r.x_dtype = in.x_dtype;
  r.tokens = in.d.tokens;
  r.heads = in.d.heads;
  r.head_dim = in.d.head_dim;
  r.min_position = *std::min_element(in.d.positions.begin(), in.d.positions.end());
  r.max_position = *std::max_element(in.d.positions.begin(), in.d.positions.end());
  r.seq_len = af.seq_len > 0 ? af.seq_len : std::max<std::int64_t>(r.max_position + 1, 1);
  r.claimed = claimed;
  r.claimed_from = claimed_from;
  r.strict = af.strict;
  r.notes = notes;
  r.claim_info = claim_info;
  describe_position_rows(in, claimed, r);
  if (!claim.config_path.empty() && !claim.any_override())  // the judge tries them on a failure
    for (const layer_rope& l : parsed.layers)
      if (l.config) o.other_layers.push_back({l.index, l.type, *l.config});
  r.v = judge::audit(in.d, claimed, o);
  // The cache rows are checked at the positions of row 0: right for 1-D RoPE and M-RoPE text tokens
  // only; they do not depend on where the outputs are written (DeepSeek's half-split order).
  rope_config cache_claim = claimed;
  cache_claim.outputs = output_order::in_place;
  if (r.multimodal_tokens == 0) r.evidence = audit::check_caches(in, cache_claim, r.seq_len);
  else if (in.cos || in.inv_freq) r.notes.push_back("cos/sin/inv_freq not checked on their own: the dump has multimodal tokens");
  const auto t2 = clock::now();
  r.seconds_read = seconds_read;
  r.seconds_audit = std::chrono::duration<double>(t2 - t1).count();
  return r;
}

// `ropecheck audit` of the outputs of the probe's calls (audit/probe_outputs.hpp): each form judged as its dump.
int run_probe_outputs_audit(const audit_flags& af, const convention_flags& cf, const std::string& command) {
  using clock = std::chrono::steady_clock;
  const audit::probe_outputs_contents contents = audit::read_probe_outputs(af.dump);
  audit::probe_outputs_report pr;
  pr.version = ROPECHECK_VERSION;
  pr.command = command;
  pr.source = af.dump;
  pr.metadata = contents.metadata;
  // Every form is judged against the claim the probe was made for (checked before it is judged); any other
  // error of the claim says which one that is.
  const auto meta = [&](const char* k) { return contents.metadata.count(k) ? contents.metadata.at(k) : std::string("?"); };
  const std::string probed = meta("convention");
  const std::string give = "give the probe's claim (__metadata__ claim_args: " + meta("claim_args") + ")";
  for (const judge::call_form form : contents.forms) {
    const std::string fname = judge::to_string(form);
    const probe_context probe{probed, give, &contents.call_seq_len.at(form)};
    // One side of the form: its inputs and outputs audited as a dump (widened first when `widened` is given).
    const auto judge_side = [&](const std::string& x, const std::string& y, judge::dump* widened) {
      const auto t0 = clock::now();
      if (!af.quiet) std::fprintf(stderr, "[audit] reading %s (%s calls, %s)\n", af.dump.c_str(), fname.c_str(), y.c_str());
      audit::loaded_dump in = audit::load_dump(af.dump, af.dtype, y, x);
      if (widened) *widened = judge::widen(in.d);
      const double read = std::chrono::duration<double>(clock::now() - t0).count();
      try {
        return audit_loaded(std::move(in), read, af, cf, command, &probe);
      } catch (const probe_claim_mismatch&) {
        throw;
      } catch (const usage_error& e) {
        throw usage_error(std::string(e.what()) + " (the probe was made for \"" + probed + "\": " + give + ")");
      }
    };
    audit::probe_form_report f;
    f.form = form;
    if (!contents.qk) {
      f.r = judge_side("x", fname + ".y", nullptr);
      if (form == judge::call_form::prefill && contents.nondeterministic) f.call_findings.push_back(*contents.nondeterministic);
      f.passed = f.call_findings.empty() && f.r.v.pass;
    } else {  // the qk form: each side alone, then the pair (ropecheck/judge/scores.hpp)
      judge::dump queries, keys;
      f.r = judge_side("q", fname + ".q_out", &queries);
      f.keys = judge_side("k", fname + ".k_out", &keys);
      const bool sides_pass = f.r.v.pass && f.keys->v.pass;
      const std::optional<judge::finding> crossed =
          sides_pass ? std::nullopt : judge::crossed_outputs(queries, keys, f.r.claimed, af.seq_len);
      f.pair_findings = judge::qk_findings(f.r.v, f.keys->v, crossed);
      f.score = judge::measure_score_identity(queries, keys, f.r.claimed);
      if (form == judge::call_form::prefill) {
        if (contents.nondeterministic) f.call_findings.push_back(*contents.nondeterministic);
        if (contents.crossed) f.call_findings.push_back(*contents.crossed);
      }
      f.passed = f.call_findings.empty() && sides_pass && !crossed;
    }
    pr.forms.push_back(std::move(f));
  }
  // Under a dynamic NTK claim the repeated prefill's difference is that rule's bug (ropecheck/judge/repeat_calls.hpp).
  std::vector<judge::finding> decode_findings;
  for (const auto& f : pr.forms)
    if (f.form == judge::call_form::decode) decode_findings = f.r.v.findings;
  for (auto& f : pr.forms)
    for (auto& call : f.call_findings) call = judge::carried_state_finding(call, f.r.claimed, decode_findings);
  if (contents.shift) {  // qk: the keys after the kernel's context shift, judged at their renumbered positions
    const auto& s = *contents.shift;
    judge::dump d;
    d.positions = s.positions;
    d.tokens = static_cast<int>(s.positions.size()), d.heads = s.heads, d.head_dim = s.head_dim;
    d.x = s.k, d.y = s.k_out, d.dtype = s.dtype;
    audit::shift_report sr;
    sr.delta = s.delta, sr.tokens = d.tokens;
    sr.v = judge::audit(d, pr.forms.front().r.claimed, judge_options(af));
    sr.findings = judge::shift_findings(sr.v, s.delta);
    pr.shift = std::move(sr);
  }
  pr.rerun = "ropecheck audit " + cli::shell_word(af.dump);
  const std::string args = contents.metadata.count("claim_args") ? contents.metadata.at("claim_args") : "[]";
  for (const auto& a : nlohmann::json::parse(args)) pr.rerun += " " + cli::shell_word(a.get<std::string>());
  if (af.reference != "exact") pr.rerun += " --reference " + af.reference;
  if (af.strict) pr.rerun += " --strict";
  audit::merge(pr);
  if (af.json) write_file(*af.json, audit::probe_outputs_json(pr));
  if (af.junit) write_file(*af.junit, audit::probe_outputs_junit(pr));
  if (!(af.json && *af.json == "-")) std::fputs(audit::probe_outputs_summary(pr).c_str(), stdout);
  return pr.merged.passed ? 0 : 1;
}

// The claim of a door that reads no dump of rotated tensors (attention outputs, scores): flags, a config or a preset,
// none assumed (how: what to give, for the errors), at the dump's head_dim when flags alone give it.
rope_config claim_without_dump(const convention_flags& cf, int head_dim, const std::string& how, std::string& claimed_from,
                               std::vector<std::string>& notes, claim& claim_info) {
  if (cf.config_path.empty() && cf.preset.empty() && !cf.any_override())
    throw usage_error("audit: no claimed convention: " + how);
  if (const std::string missing = cf.unsaid_by_flags_alone(); !missing.empty())
    throw usage_error("audit: a claim by flags alone must say" + missing + " (" + how + ")");
  rope_config fallback;
  fallback.head_dim = fallback.rotary_dim = head_dim;
  return cf.resolve(claimed_from, fallback, &notes, std::nullopt, &claim_info);
}

// `ropecheck audit` of the outputs of the probe's attention calls (audit/attention_outputs.hpp): the scores read
// from o, judged against the claim the probe was made for (checked, as for the other forms).
// `ropecheck audit` of the outputs of a bias probe's attention calls (audit/bias_outputs.hpp): the biases read from o,
// judged against the bias claim the probe was made for.
int run_bias_outputs_audit(const audit_flags& af, bias_config_parse claimed, const audit::attention_outputs_contents& c,
                           const std::string& command, std::chrono::steady_clock::time_point t0) {
  const auto meta = [&](const char* k) { return c.metadata.count(k) ? c.metadata.at(k) : std::string("?"); };
  if (describe(claimed.claim) != meta("convention"))
    throw probe_claim_mismatch(af.dump + ": the probe was made for \"" + meta("convention") + "\" but the claim given is \"" +
                               describe(claimed.claim) + "\": give the probe's claim (__metadata__ claim_args: " +
                               meta("claim_args") + ")");
  audit::bias_report r;
  r.version = ROPECHECK_VERSION;
  r.command = command;
  r.source = af.dump;
  r.metadata = c.metadata;
  r.notes = claimed.notes;
  r.claimed = std::move(claimed);
  const judge::attention_probe p = audit::matching_bias_probe(af.dump, c, r.claimed.claim);
  r.v = judge::judge_bias(judge::bias_evidence_of_attention(p, c.o, c.dtype), r.claimed.claim, judge_options(af));
  r.nondeterministic = judge::repeat_call_finding(c.o, c.o_again, c.q_positions, c.heads, c.value_dim, "attention calls");
  r.passed = r.v.pass && !r.nondeterministic;
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  r.rerun = "ropecheck audit " + cli::shell_word(af.dump);
  for (const auto& a : nlohmann::json::parse(c.metadata.count("claim_args") ? c.metadata.at("claim_args") : "[]"))
    r.rerun += " " + cli::shell_word(a.get<std::string>());
  if (af.strict) r.rerun += " --strict";
  if (af.json) write_file(*af.json, audit::bias_json(r));
  if (af.junit) write_file(*af.junit, audit::bias_junit(r));
  if (!(af.json && *af.json == "-")) std::fputs(audit::bias_summary(r).c_str(), stdout);
  return r.passed ? 0 : 1;
}

int run_attention_outputs_audit(const audit_flags& af, const convention_flags& cf, const std::string& command) {
  using clock = std::chrono::steady_clock;
  const auto t0 = clock::now();
  const audit::attention_outputs_contents c = audit::read_attention_outputs(af.dump);
  const auto meta = [&](const char* k) { return c.metadata.count(k) ? c.metadata.at(k) : std::string("?"); };
  const std::string give = "give the probe's claim (__metadata__ claim_args: " + meta("claim_args") + ")";
  if (std::optional<bias_config_parse> bias = cf.resolve_bias()) return run_bias_outputs_audit(af, std::move(*bias), c, command, t0);
  if (c.metadata.count("scheme"))
    throw probe_claim_mismatch(af.dump + ": the probe was made for a score-matrix bias (\"" + meta("convention") +
                               "\"), not for RoPE: " + give);
  audit::attention_report r;
  r.version = ROPECHECK_VERSION;
  r.command = command;
  r.source = af.dump;
  r.metadata = c.metadata;
  r.claimed = claim_without_dump(cf, c.head_dim, give, r.claimed_from, r.notes, r.claim_info);
  if (judge::convention_line(r.claimed) != meta("convention"))
    throw probe_claim_mismatch(af.dump + ": the probe was made for \"" + meta("convention") + "\" but the claim given is \"" +
                               judge::convention_line(r.claimed) + "\": " + give);
  const judge::attention_probe p = audit::matching_probe(af.dump, c, r.claimed);
  r.v = judge::audit_attention(p, c.o, c.dtype, r.claimed, judge_options(af));
  r.nondeterministic = judge::repeat_call_finding(c.o, c.o_again, c.q_positions, c.heads, c.value_dim, "attention calls");
  if (r.nondeterministic) r.nondeterministic = judge::carried_state_finding(*r.nondeterministic, r.claimed, r.v.findings);
  r.passed = r.v.pass && !r.nondeterministic;
  r.seconds = std::chrono::duration<double>(clock::now() - t0).count();
  r.rerun = "ropecheck audit " + cli::shell_word(af.dump);
  for (const auto& a : nlohmann::json::parse(c.metadata.count("claim_args") ? c.metadata.at("claim_args") : "[]"))
    r.rerun += " " + cli::shell_word(a.get<std::string>());
  if (af.strict) r.rerun += " --strict";
  if (af.json) write_file(*af.json, audit::attention_json(r));
  if (af.junit) write_file(*af.junit, audit::attention_junit(r));
  if (!(af.json && *af.json == "-")) std::fputs(audit::attention_summary(r).c_str(), stdout);
  return r.passed ? 0 : 1;
}

// `ropecheck audit --table`: the position vectors an implementation added (audit/table_dump.hpp), judged against the
// absolute table claimed by --config or the --table-* flags (ropecheck/judge/table.hpp).
int run_table_audit(const audit_flags& af, const convention_flags& cf, const std::string& command) {
  const auto t0 = std::chrono::steady_clock::now();
  audit::table_dump d = audit::load_table_dump(af.dump);
  std::optional<table_config_parse> claimed = cf.resolve_table(d.e.width);
  if (!claimed)
    throw usage_error("audit --table: no table claimed: give --config (a family that adds an absolute position vector; `ropecheck "
                      "explain --list-tables`) or --table-scheme with its flags");
  if (af.dtype && *af.dtype != d.e.dtype)
    throw usage_error("--dtype " + *af.dtype + ": the rows are " + d.e.dtype + " (their own dtype says it)");
  if (claimed->claim.scheme == table_scheme::learned && claimed->claim.weights.empty())
    throw usage_error("--table-weights: a learned table is judged against its weights (the model's position embedding "
                      "weight, [" + std::to_string(claimed->claim.rows) + ", " + std::to_string(claimed->claim.width) + "]); give them");
  audit::table_report r;
  r.version = ROPECHECK_VERSION;
  r.command = command;
  r.source = af.dump;
  r.metadata = d.metadata;
  r.notes = claimed->notes;
  r.dtype = d.e.dtype;
  r.rows = static_cast<std::int64_t>(d.e.positions.size());
  r.refused = static_cast<std::int64_t>(d.e.refused.size());
  r.claimed = std::move(*claimed);
  r.v = judge::judge_table(d.e, r.claimed.claim, judge_options(af));
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  r.rerun = "ropecheck audit " + cli::shell_word(af.dump) + " --table";
  if (!cf.config_path.empty()) r.rerun += " --config " + cli::shell_word(cf.config_path);
  if (cf.stack) r.rerun += " --stack " + *cf.stack;
  const auto num = [](double v) { return judge::fmt("%.17g", v); };
  if (cf.table_scheme_name) r.rerun += " --table-scheme " + *cf.table_scheme_name;
  if (cf.table_layout) r.rerun += " --table-layout " + *cf.table_layout;
  if (cf.table_denominator) r.rerun += " --table-denominator " + num(*cf.table_denominator);
  if (cf.table_base) r.rerun += " --table-base " + num(*cf.table_base);
  if (cf.table_offset) r.rerun += " --table-offset " + std::to_string(*cf.table_offset);
  if (cf.table_rows) r.rerun += " --table-rows " + std::to_string(*cf.table_rows);
  if (cf.padding_idx) r.rerun += " --padding-idx " + std::to_string(*cf.padding_idx);
  if (cf.table_weights) r.rerun += " --table-weights " + cli::shell_word(*cf.table_weights);
  if (af.strict) r.rerun += " --strict";
  if (af.json) write_file(*af.json, audit::table_json(r));
  if (af.junit) write_file(*af.junit, audit::table_junit(r));
  if (!(af.json && *af.json == "-")) std::fputs(audit::table_summary(r).c_str(), stdout);
  return r.v.pass ? 0 : 1;
}

// `ropecheck audit --scores`: scores or weights as data (audit/score_dump_input.hpp), judged up to the per-row constant.
int run_scores_audit(const audit_flags& af, const convention_flags& cf, const std::string& command) {
  using clock = std::chrono::steady_clock;
  const auto t0 = clock::now();
  audit::loaded_scores in = audit::load_score_dump(af.dump, af.dtype);
  if (std::optional<bias_config_parse> bias = cf.resolve_bias()) {
    // A family whose attention adds a bias (ALiBi, T5): the scores minus scale <q, k> are its biases.
    audit::bias_report r;
    r.door = "scores";
    r.version = ROPECHECK_VERSION;
    r.command = command;
    r.source = af.dump;
    r.notes = in.notes;
    r.notes.insert(r.notes.end(), bias->notes.begin(), bias->notes.end());
    // The scale of <q, k>: the dump's, else the family's: T5 scales nothing (transformers models/t5/modeling_t5.py
    // T5Attention.forward: scores = matmul(q, k^T), no 1/sqrt(d)); BLOOM, MPT and Falcon scale q.k by head_dim^-0.5.
    const double scale = in.d.softmax_scale > 0 ? in.d.softmax_scale
                         : bias->claim.scheme == bias_scheme::t5 ? 1.0
                                                                 : 1 / std::sqrt(static_cast<double>(in.d.head_dim));
    r.metadata = {{"what", in.d.what == judge::score_dump::kind::weights ? "weights" : "logits"},
                  {"dtype", in.d.dtype},
                  {"softmax_scale", judge::fmt("%.9g", scale)}};
    r.claimed = std::move(*bias);
    r.v = judge::judge_bias(judge::bias_evidence_of_scores(in.d, scale), r.claimed.claim, judge_options(af));
    r.passed = r.v.pass;
    r.seconds = std::chrono::duration<double>(clock::now() - t0).count();
    r.rerun = command;
    if (af.json) write_file(*af.json, audit::bias_json(r));
    if (af.junit) write_file(*af.junit, audit::bias_junit(r));
    if (!(af.json && *af.json == "-")) std::fputs(audit::bias_summary(r).c_str(), stdout);
    return r.passed ? 0 : 1;
  }
  audit::scores_report r;
  r.version = ROPECHECK_VERSION;
  r.command = command;
  r.source = af.dump;
  r.notes = in.notes;
  r.claimed = claim_without_dump(cf, in.d.head_dim, "give --config config.json, --preset NAME or convention flags", r.claimed_from,
                                 r.notes, r.claim_info);
  r.q_heads = in.d.q_heads, r.k_heads = in.d.k_heads, r.q_tokens = in.d.q_tokens, r.k_tokens = in.d.k_tokens;
  r.what = in.d.what == judge::score_dump::kind::weights ? "weights" : "logits";
  r.dtype = in.d.dtype;
  r.v = judge::audit_scores(in.d, r.claimed, judge_options(af));
  r.seconds = std::chrono::duration<double>(clock::now() - t0).count();
  r.rerun = command;
  if (af.json) write_file(*af.json, audit::scores_json(r));
  if (af.junit) write_file(*af.junit, audit::scores_junit(r));
  if (!(af.json && *af.json == "-")) std::fputs(audit::scores_summary(r).c_str(), stdout);
  return r.v.pass ? 0 : 1;
}

int run_dump_audit(const audit_flags& af, const convention_flags& cf, const std::string& command) {
  using clock = std::chrono::steady_clock;
  if (af.dump.empty()) throw usage_error("audit: give a dump (a .safetensors file or a directory of .npy files) or --plugin lib.so");
  if (af.scores && af.table) throw usage_error("audit: --scores and --table read different dumps; give one");
  if (af.table) return run_table_audit(af, cf, command);
  if (cf.any_table_flag())
    throw usage_error(cf.first_table_flag() + " declares an absolute position table, which this door does not judge: the table "
                                              "door does (`ropecheck audit --table`, Python check_table; docs/tables.md)");
  if (af.scores) return run_scores_audit(af, cf, command);
  if (audit::is_attention_outputs(af.dump)) return run_attention_outputs_audit(af, cf, command);
  if (audit::is_probe_outputs(af.dump)) return run_probe_outputs_audit(af, cf, command);
  const auto t0 = clock::now();
  if (!af.quiet) std::fprintf(stderr, "[audit] reading %s\n", af.dump.c_str());
  audit::loaded_dump in = audit::load_dump(af.dump, af.dtype);
  const double read = std::chrono::duration<double>(clock::now() - t0).count();
  const audit::audit_report r = audit_loaded(std::move(in), read, af, cf, command);
  if (af.json) write_file(*af.json, audit::to_json(r));
  if (af.junit) write_file(*af.junit, audit::to_junit(r));
  if (!(af.json && *af.json == "-")) std::fputs(audit::human_summary(r).c_str(), stdout);
  return r.v.pass ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"ropecheck: verification of rotary position embeddings"};
  app.require_subcommand(1);
  app.set_version_flag("--version", std::string("ropecheck ") + ROPECHECK_VERSION);
  auto* rep = app.add_subcommand("report", "precision of RoPE implementations against exact mathematics, by position");
  auto* aud = app.add_subcommand("audit", "judge another implementation's output (a dump) or kernel (--plugin); name the bug");
  certify::certify_commands certify_cmds;
  certify_cmds.add_to(app);
  explain::explain_command explain_cmd;
  explain_cmd.add_to(app);
  probe::probe_command probe_cmd;
  probe_cmd.add_to(app);

  std::string out = "ropecheck-report";
  report::report_request req;
  std::vector<std::string> impls;
  bool no_plots = false, list = false;
  convention_flags rep_conv, aud_conv;
  rep_conv.add_to(rep);

  rep->add_option("--max-position", req.max_position, "largest position of the sweep (default: max_position_embeddings, at least 2^17)")
      ->check(CLI::Range(std::int64_t{1}, (std::int64_t{1} << 31) - 1));
  rep->add_option("--train-length", req.train_length, "training length for the band table (default: the config's)");
  rep->add_option("--eval-length", req.eval_length, "evaluation length for the band table (default: max position)");
  rep->add_flag("--exhaustive", req.exhaustive, "every position 0..max, every band");
  rep->add_option("--impl", impls, "implementations to include (repeatable; default: all that matter)");
  rep->add_flag("--list-implementations", list, "print the implementations and exit");
  rep->add_option("--threads", req.threads, "worker threads (default: all cores); results do not depend on it")
      ->check(CLI::Range(0, 256));
  rep->add_option("--seed", req.seed, "seed of the random head vectors (rotation and score metrics)");
  rep->add_option("--angle-threshold", req.angle_threshold_rad, "verdict threshold on the angle error (rad)")
      ->capture_default_str();
  rep->add_option("--token-threshold", req.position_threshold_tokens, "verdict threshold on the position error (tokens)")
      ->capture_default_str();
  rep->add_option("--out", out, "output folder")->capture_default_str();
  rep->add_flag("--no-plots", no_plots, "write CSV/JSON and an HTML without plots (no gnuplot needed)");
  std::string certificate_file;
  rep->add_option("--certificate", certificate_file,
                  "show the figures of a certificate.json of the same convention (ropecheck certify) beside the sweep's")
      ->check(CLI::ExistingFile);
  // An ALiBi claim on the command line: the report is then the bias figure (tools/report/alibi_bias.hpp) alone.
  int alibi_heads = 0;
  std::string alibi_rule = "press";
  double alibi_bias_max = 8;
  bool alibi_slopes_bf16 = false;
  auto* alibi_opt = rep->add_option("--alibi-heads", alibi_heads,
                                    "an ALiBi claim of this many heads: report the bias error of the strategies engines use "
                                    "(fp32/bf16 tensor, fp32/bf16 kernel) against position (docs/report.md)")
                        ->check(CLI::Range(1, 1 << 16));
  rep->add_option("--alibi-rule", alibi_rule, "press (BLOOM, Falcon) or mpt (MPT's gen_slopes)")
      ->check(CLI::IsMember({"press", "mpt"}))
      ->needs(alibi_opt)
      ->capture_default_str();
  rep->add_option("--alibi-bias-max", alibi_bias_max, "MPT's alibi_bias_max (--alibi-rule mpt)")->needs(alibi_opt)->capture_default_str();
  rep->add_flag("--alibi-slopes-bf16", alibi_slopes_bf16, "the slopes are rounded to bf16 first (HF Falcon)")->needs(alibi_opt);
  std::optional<int> table_width;
  rep->add_option("--table-width", table_width, "an absolute sinusoid claimed by --table-* flags: its width d")->check(CLI::Range(2, 1 << 20));
  bool no_judge = false;
  rep->add_flag("--no-judge", no_judge,
                "skip the judge's verdict per implementation (the verdict is then: no threshold crossed)");

  audit_flags af;
  aud->add_option("dump", af.dump, "a .safetensors file or a directory of .npy files: positions, x, y [, cos, sin, inv_freq]");
  aud_conv.add_to(aud);
  aud->add_option("--dtype", af.dtype, "the dump's dtype when the files cannot say it: bfloat16 declares .npy '<u2' arrays as bf16");
  aud->add_option("--reference", af.reference,
                  "exact (default): exact mathematics; hf (or meta): HF's convention computed exactly (fp32 "
                  "inv_freq and fp32 product p*inv_freq, exact cos/sin); ggml: llama.cpp's fp32 chain of products")
      ->capture_default_str();
  aud->add_flag("--scores", af.scores,
                "the dump holds attention scores or weights with q and k before RoPE and their positions (docs/scores.md)");
  aud->add_flag("--table", af.table,
                "the dump holds the position vectors an implementation adds to the tokens (rows, positions [, left_padding, refused]): "
                "an absolute sinusoid or learned table (docs/tables.md)");
  aud->add_flag("--strict", af.strict, "fail what is a warning by default: fp32 angle drift (angles must be as good as fp64's), outputs left in place under rope_interleave's half-split claim");
  aud->add_option("--tolerance-ulps", af.tolerance_ulps,
                  "replace the derived allowance by a flat one, in ulps of the dump dtype relative to af(|x_a|+|x_b|)");
  aud->add_option("--seq-len", af.seq_len, "sequence length for dynamic NTK / LongRoPE (default: max position + 1)")
      ->check(CLI::Range(std::int64_t{0}, std::int64_t{1} << 40));
  aud->add_option("--threads", af.threads, "worker threads (default: all cores); the verdict does not depend on it")
      ->check(CLI::Range(0, 256));
  aud->add_option("--json", af.json, "write the verdict as JSON to this file ('-' for standard output)");
  aud->add_option("--junit", af.junit, "write JUnit XML to this file");
  aud->add_flag("--quiet", af.quiet, "no progress on standard error");
  aud->add_option("--plugin", af.plugin, "a shared library implementing src/ropecheck/plugin.h: run the property suite on it");
  aud->add_option("--seed", af.seed, "plugin audit: RapidCheck seed (default: RC_PARAMS, ROPECHECK_SEED or the suite's)");
  aud->add_option("--max-success", af.max_success, "plugin audit: cases per property")->check(CLI::Range(1, 1000000))
      ->capture_default_str();
  aud->add_option("--plugin-timeout", af.plugin_timeout,
                  "plugin audit: seconds each apply() may take (it runs in a child process; past it: plugin_timeout)")
      ->check(CLI::Range(0.001, 86400.0))
      ->capture_default_str();
  aud->add_flag("--verbose", af.verbose, "plugin audit: RapidCheck's progress and shrinking on standard error");

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);
    return code == 0 ? 0 : 2;  // usage errors are exit 2, like every bad input
  }

  std::string command;
  for (int i = 0; i < argc; ++i) command += (i ? " " : "") + std::string(argv[i]);

  if (certify_cmds.parsed()) return certify_cmds.run(command);
  if (explain_cmd.parsed()) return explain_cmd.run();
  if (probe_cmd.parsed()) return probe_cmd.run(command);
  if (aud->parsed()) {
    try {
      if (af.plugin) {
        if (!af.dump.empty()) throw usage_error("audit: give a dump or --plugin, not both");
        if (!aud_conv.config_path.empty() || !aud_conv.preset.empty() || aud_conv.any_override())
          throw usage_error("audit --plugin: the plugin declares its own convention; convention flags do not apply");
        return run_plugin_audit(af, command);
      }
      return run_dump_audit(af, aud_conv, command);
    } catch (const audit::input_error& e) {
      std::cerr << "ropecheck audit: " << e.what() << '\n';
      return 2;
    } catch (const std::exception& e) {
      std::cerr << "ropecheck audit: " << e.what() << '\n';
      return 2;
    }
  }

  // An absolute position table, from a table family's --config or the --table-* flags (with --table-width): the report
  // is the sinusoid's figure alone (tools/report/table_figure.hpp); a learned table has none.
  try {
    if (std::optional<table_config_parse> t = rep_conv.resolve_table(table_width)) {
      if (!impls.empty() || list || alibi_heads > 0)
        throw usage_error("report: an absolute position table is claimed; --impl, --list-implementations and --alibi-heads are RoPE's and ALiBi's");
      for (const auto& line : explain::claim_lines(t->info)) std::printf("%s\n", line.c_str());
      return report::run_table_report(t->claim, t->family, req.max_position, out, command, !no_plots);
    }
    if (table_width) throw usage_error("--table-width is for a table claimed by --table-* flags");
  } catch (const std::exception& e) {
    std::cerr << "ropecheck report: " << e.what() << '\n';
    return 2;
  }

  // A score-matrix bias claim, from the flags (--alibi-heads) or from a bias family's --config: the report is the
  // ALiBi bias figure alone (tools/report/alibi_bias.hpp).
  std::optional<bias_config_parse> rep_bias;
  try {
    if (alibi_heads > 0) {
      if (!rep_conv.config_path.empty() || !rep_conv.preset.empty() || rep_conv.any_override() || rep_conv.any_bias_flag() ||
          !impls.empty() || list)
        throw usage_error("report --alibi-heads: an ALiBi claim by flags takes no --config, --preset, convention flags, "
                          "--impl or --list-implementations");
      if (alibi_rule != "mpt" && alibi_bias_max != 8) throw usage_error("report: --alibi-bias-max needs --alibi-rule mpt");
      rep_bias.emplace();
      bias_claim& bc = rep_bias->claim;
      bc.scheme = bias_scheme::alibi;
      bc.alibi.heads = alibi_heads;
      bc.alibi.rule = alibi_rule == "mpt" ? alibi_slope_rule::mpt : alibi_slope_rule::press;
      bc.alibi.bias_max = alibi_bias_max;
      bc.alibi.slopes_bf16 = alibi_slopes_bf16;
      bc.alibi.distance = alibi_distance::key_position;
    } else if ((rep_bias = rep_conv.resolve_bias())) {
      if (!impls.empty() || list)
        throw usage_error(rep_conv.config_path + " claims a score-matrix bias (" + rep_bias->family +
                          "); --impl and --list-implementations name RoPE's implementations");
      if (rep_bias->claim.scheme != bias_scheme::alibi)
        throw usage_error(rep_conv.config_path + " claims T5's bucketed bias (" + rep_bias->family +
                          "): its values are learned weights looked up by an integer bucket, so it has no error against "
                          "position to plot; judge a kernel with `ropecheck probe --form attention --config ...` and "
                          "`ropecheck audit`, or a score dump with `ropecheck audit --scores` (docs/bias.md)");
    }
    if (rep_bias) {
      for (const auto& line : explain::claim_lines(rep_bias->info)) std::printf("%s\n", line.c_str());
      return report::run_alibi_report(rep_bias->claim, out, command, !no_plots);
    }
  } catch (const std::exception& e) {
    std::cerr << "ropecheck report: " << e.what() << '\n';
    return 2;
  }

  try {
    if (list) {
      for (const auto& i : report::known_implementations())
        std::printf("%-22s %-8s %s%s\n", i.name.c_str(), i.cos_sin_dtype.c_str(), i.description.c_str(),
                    i.in_default_set ? "" : " (not in the default set)");
      return 0;
    }
    std::vector<std::string> notes;
    rope_config cfg = rep_conv.resolve(req.config_name, {}, &notes, {}, &req.claim_info);
    for (const auto& line : explain::claim_lines(req.claim_info)) std::printf("%s\n", line.c_str());
    if (cfg.outputs == output_order::half_split) {
      cfg.outputs = output_order::in_place;
      notes.push_back("outputs half_split (rope_interleave): the report measures the rotation in the input's order; "
                      "where the outputs are written does not change their precision");
    }
    req.config = cfg;
    req.config_notes = notes;
    if (req.max_position == 0) req.max_position = std::max<std::int64_t>(cfg.max_position_embeddings, std::int64_t{1} << 17);
    req.implementations = impls;
    req.judge = !no_judge;

    std::optional<certify::certificate_reading> cert;
    if (!certificate_file.empty()) {
      std::ifstream f(certificate_file, std::ios::binary);
      const std::string text{std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
      cert = certify::read_certificate_figures(text, certificate_file);
      if (!(cert->config == req.config))
        throw std::invalid_argument("--certificate: " + certificate_file + " certifies another convention (" +
                                    judge::convention_line(cert->config) + ") than the report's (" +
                                    judge::convention_line(req.config) + ")");
    }
    progress_bar bar("report");
    auto result = report::run_report(req, [&bar](std::int64_t d, std::int64_t t) { bar(d, t); });
    if (cert) result.certificate = cert->figures;
    report::write_options wo;
    wo.command = command;
    wo.plots = !no_plots;
    const auto written = report::write_report(result, out, wo);
    print_summary(result, written);
    if (result.certificate)
      std::printf("certificate %s: every position 0..%lld, verdict %s (shown in the report)\n",
                  result.certificate->file.c_str(), static_cast<long long>(result.certificate->max_position),
                  result.certificate->verdict.c_str());
    for (const auto& n : notes) std::printf("note: %s\n", n.c_str());
    return 0;
  } catch (const std::exception& e) {
    std::cerr << "ropecheck: " << e.what() << '\n';
    return 2;
  }
}
