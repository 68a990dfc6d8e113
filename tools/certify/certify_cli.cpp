// tools/certify/certify_cli.cpp — see certify_cli.hpp.
#include "certify_cli.hpp"

#include <cstdio>
#include <fstream>
#include <iostream>
#include <iterator>
#include <optional>
#include <sstream>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "certificate.hpp"
#include "engine.hpp"
#include "implementations.hpp"
#include "plugin_audit.hpp"
#include "plugin_output.hpp"
#include "ropecheck/judge/render.hpp"

#ifndef ROPECHECK_VERSION
#define ROPECHECK_VERSION "unknown"
#endif

namespace ropecheck::certify {
namespace {

void write_text(const std::string& path, const std::string& text) {
  std::ofstream f(path, std::ios::binary);
  if (!f || !(f << text) || !f.flush()) throw std::runtime_error("cannot write " + path);
}

std::string read_text(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw std::runtime_error("cannot read " + path);
  return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}

// "k/N" with 1 <= k <= N.
void parse_shard(const std::string& s, int& k, int& n) {
  const auto slash = s.find('/');
  std::size_t used_k = 0, used_n = 0;
  try {
    if (slash == std::string::npos) throw std::invalid_argument("");
    k = std::stoi(s.substr(0, slash), &used_k);
    n = std::stoi(s.substr(slash + 1), &used_n);
  } catch (const std::exception&) {
    throw std::invalid_argument("--shard: '" + s + "' is not k/N (e.g. 2/4)");
  }
  if (used_k != slash || used_n != s.size() - slash - 1 || n < 1 || k < 1 || k > n)
    throw std::invalid_argument("--shard: '" + s + "' is not k/N with 1 <= k <= N");
}

// No certificate for a plugin the plugin door fails: `out` gets the door's JSON (kind "certify",
// verdict "fail", certificate false, findings each with its call form), exit 1.
int refuse_plugin(const std::string& out, nlohmann::json j, const std::vector<std::string>& lines) {
  j["kind"] = "certify";
  j["verdict"] = "fail";
  j["certificate"] = false;
  j["pass"] = false;
  j["exit_code"] = 1;
  write_text(out, j.dump(2) + "\n");
  for (const auto& l : lines) std::printf("%s", l.c_str());
  std::printf("certificate: %s (fail: no certificate for a kernel the plugin door fails)\n", out.c_str());
  return 1;
}

// The plugin door's judge (probe in prefill and in decode calls, no properties; every apply() in a
// child process), run before the sweep, which calls the kernel in blocks of consecutive positions
// only (prefill form): certify never certifies a kernel the plugin door fails, e.g. on one-token calls.
std::optional<int> judge_plugin_first(const certify_request& q, const std::string& out, const std::string& command) {
  audit::plugin_audit_options o;
  o.run_properties = false;
  o.isolate = true;
  o.timeout_seconds = q.plugin_timeout_seconds;
  const audit::plugin_audit_result r = audit::audit_plugin(q.plugin_path, o);
  std::string forms;
  for (const auto& f : r.forms)
    forms += std::string(forms.empty() ? "" : ", ") + judge::to_string(f.form) + " calls " +
             (!f.ran ? "not judged" : f.passed ? "pass" : "FAIL");
  for (const auto& f : r.qk_forms)  // ABI 3's apply_qk
    forms += std::string(", the qk form's ") + judge::to_string(f.form) + " calls " +
             (!f.ran ? "not judged" : f.passed ? "pass" : "FAIL");
  if (r.passed) {
    std::printf("the plugin door's judge on the probe (seed %llu): %s\n", static_cast<unsigned long long>(r.seed), forms.c_str());
    return std::nullopt;
  }
  std::vector<std::string> lines{"ropecheck certify --plugin " + q.plugin_path + ": the plugin door's judge on the probe: " +
                                 forms + "\n"};
  for (const auto& f : r.findings) lines.push_back(judge::finding_line(f, "  "));
  return refuse_plugin(out, nlohmann::json::parse(audit::plugin_json(r, ROPECHECK_VERSION, command)), lines);
}

void print_verdict(const certificate& c, const std::string& path) {
  for (const auto& line : c.result.summary) std::printf("%s\n", line.c_str());
  std::printf("certificate: %s (%s)\n", path.c_str(), c.result.pass ? "pass" : "fail");
}

}  // namespace

void certify_commands::add_to(CLI::App& app) {
  certify_ = app.add_subcommand("certify", "check every position 0..N and every band; write certificate.json (pass/fail)");
  merge_ = app.add_subcommand("merge", "combine the partial certificates of every shard into the certificate");
  conv_.add_to(certify_);
  certify_->add_option("--impl", req_.implementations, "implementations to certify (repeatable; default: the report's default set)");
  certify_->add_option("--plugin", req_.plugin_path, "certify a kernel behind src/ropecheck/plugin.h (it declares its convention)")
      ->check(CLI::ExistingFile);
  certify_->add_flag("--list-implementations", list_, "print the implementations and exit");
  certify_->add_option("--max-position", req_.max_position, "last position N (default: max_position_embeddings - 1)")
      ->check(CLI::Range(std::int64_t{1}, (std::int64_t{1} << 31) - 1));
  certify_->add_option("--shard", shard_, "certify slice k of N (1-based, contiguous) and write a partial for `ropecheck merge`");
  certify_->add_option("--angle-threshold", req_.angle_threshold_rad, "figure: first position whose applied angle error exceeds this (rad)")
      ->capture_default_str();
  certify_->add_option("--token-threshold", req_.position_threshold_tokens, "figure: first position with a band off by this many tokens")
      ->capture_default_str();
  certify_->add_option("--threads", req_.threads, "worker threads (default: all cores); the certificate does not depend on it")
      ->check(CLI::Range(0, 256));
  certify_->add_option("--out", out_, "output file (default: certificate.json, or certificate.part-K-of-N.json for a shard)");
  certify_->add_option("--timing", timing_out_, "also write the run's timing as JSON (it varies run to run; never in the certificate)");
  certify_->add_flag("--quiet", quiet_, "no progress on standard error");
  certify_->add_option("--plugin-timeout", req_.plugin_timeout_seconds,
                       "seconds each apply() of --plugin may take (it runs in a child process; past it: plugin_timeout)")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  merge_->add_option("parts", parts_, "the partial certificates (one per shard, any order)")->required()->check(CLI::ExistingFile);
  merge_->add_option("--out", merge_out_, "output file")->capture_default_str();
}

int certify_commands::run(const std::string& command_line) {
  try {
    return certify_->parsed() ? certify_main(command_line) : merge_main();
  } catch (const std::exception& e) {
    std::cerr << "ropecheck " << (certify_->parsed() ? "certify" : "merge") << ": " << e.what() << '\n';
    return 2;
  }
}

int certify_commands::certify_main(const std::string& command_line) {
  if (list_) {
    for (const auto& i : known_builtin_implementations())
      std::printf("%-22s %-9s %s%s\n", i.id.name.c_str(), i.id.dtype.c_str(), i.id.description.c_str(),
                  i.in_default_set ? "" : " (not in the default set)");
    return 0;
  }
  if (!shard_.empty()) parse_shard(shard_, req_.shard_index, req_.shard_count);
  if (!req_.plugin_path.empty()) {
    if (!conv_.config_path.empty() || !conv_.preset.empty() || conv_.any_override())
      throw std::invalid_argument("--plugin: the plugin declares its own convention; convention flags do not apply");
  } else {
    claim made;
    req_.config = conv_.resolve(req_.config_name, {}, &req_.config_notes, {}, &made);
    if (!quiet_)
      for (const auto& line : explain::claim_lines(made)) std::fprintf(stderr, "%s\n", line.c_str());
  }
  const bool sharded = req_.shard_count > 1;
  const std::string out = !out_.empty() ? out_
                          : sharded ? "certificate.part-" + std::to_string(req_.shard_index) + "-of-" + std::to_string(req_.shard_count) + ".json"
                                    : "certificate.json";
  if (!req_.plugin_path.empty())
    if (const auto refused = judge_plugin_first(req_, out, command_line)) return *refused;
  cli::progress_bar bar("certify");
  certify_run run;
  try {
    run = run_certify(req_, [&](std::int64_t d, std::int64_t t) {
      if (!quiet_) bar(d, t);
    });
  } catch (const plugin_call_failed& e) {  // the kernel crashed, hung or wrote past y in the sweep
    const judge::finding f{e.bug_class(), e.what(), 1.0};
    nlohmann::json j = {{"schema_version", 1}, {"ropecheck_version", ROPECHECK_VERSION}, {"command", command_line},
                        {"plugin", {{"path", req_.plugin_path}}}};
    j["findings"] = nlohmann::json::array({{{"bug_class", f.bug_class}, {"sentence", f.sentence}, {"confidence", 1.0}, {"form", ""}}});
    return refuse_plugin(out, std::move(j), {"ropecheck certify --plugin " + req_.plugin_path + ": the sweep's calls failed\n",
                                             judge::finding_line(f, "  ")});
  }
  const auto& in = run.partial.inputs;
  const auto& tm = run.timing;
  std::printf("ropecheck certify: %s, positions %lld..%lld of 0..%lld, %d bands, %zu implementation(s)\n",
              in.config_name.c_str(), static_cast<long long>(run.partial.range.first),
              static_cast<long long>(run.partial.range.last), static_cast<long long>(in.max_position),
              in.config.bands(), in.implementations.size());
  std::printf("%lld values in %.1f s on %d threads: %.3g values/s (thread-seconds: reference %.1f, implementations %.1f, "
              "measurement %.1f)\n",
              static_cast<long long>(tm.values), tm.seconds, tm.threads, tm.values_per_second, tm.reference_seconds,
              tm.implementation_seconds, tm.measure_seconds);
  if (!timing_out_.empty()) {
    std::ostringstream t;
    t << "{\n \"threads\": " << tm.threads << ",\n \"positions\": " << tm.positions << ",\n \"values\": " << tm.values
      << ",\n \"seconds\": " << tm.seconds << ",\n \"values_per_second\": " << tm.values_per_second
      << ",\n \"reference_thread_seconds\": " << tm.reference_seconds
      << ",\n \"implementation_thread_seconds\": " << tm.implementation_seconds
      << ",\n \"measure_thread_seconds\": " << tm.measure_seconds << "\n}\n";
    write_text(timing_out_, t.str());
  }
  if (sharded) {
    write_text(out, partial_json(run.partial));
    std::printf("partial certificate %d/%d: %s (merge every shard with `ropecheck merge`)\n", req_.shard_index,
                req_.shard_count, out.c_str());
    return 0;
  }
  const certificate c = finalize(run.partial);
  write_text(out, c.json);
  print_verdict(c, out);
  return c.result.pass ? 0 : 1;
}

int certify_commands::merge_main() {
  std::vector<partial_certificate> parts;
  for (const auto& p : parts_) parts.push_back(read_partial(read_text(p), p));
  const certificate c = finalize(merge_partials(parts, parts_));
  write_text(merge_out_, c.json);
  print_verdict(c, merge_out_);
  return c.result.pass ? 0 : 1;
}

}  // namespace ropecheck::certify
