// tools/audit/plugin_audit.cpp — see plugin_audit.hpp.
//
// The property drivers, the implementation-under-test notion, the RapidCheck runner and the drift
// rule are the conformance suite's drivers (conformance/drivers/; none includes GoogleTest), so the
// audit of a foreign kernel runs exactly what tests/properties/plugin_test.cpp and a user's
// conformance test run.
#include "plugin_audit.hpp"
#include "ropecheck/judge/classes.hpp"

#include <algorithm>
#include <chrono>
#include <charconv>
#include <cstdlib>
#include <iostream>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <string_view>
#include <unordered_map>

#include "markup.hpp"
#include "plugin_child.hpp"
#include "plugin_loader.hpp"
#include "plugin_limits.hpp"
#include "plugin_probe.hpp"
#include "drift_run.hpp"
#include "ropecheck/judge/describe.hpp"
#include "ropecheck/judge/forms.hpp"
#include "judged_binding.hpp"
#include "property_report.hpp"
#include "property_runner.hpp"
#include "rope_properties.hpp"

namespace ropecheck::test {

// A kernel behind a door as an implementation under test, bounded by the judge's allowance
// (conformance/drivers/judged_binding.hpp); with fp32_angles false it allows fp64 angles only (--strict).
rope_under_test bind_door(std::shared_ptr<plugin::kernel_door> door, const std::string& name, const rope_config& declared,
                          plugin::dtype t, bool fp32_angles, std::int64_t seq_len) {
  using plugin::dtype;
  driven_kernel k;
  k.name = "plugin:" + name + " " + std::string(plugin::to_string(t));
  k.declared = declared;
  k.dtype = audit::judge_dtype(t);
  if (t == dtype::f16) k.max_position = 65504;
  audit::apply_limits(k, door->limits());  // ABI 2's max_position, negative_positions, inverse
  k.wide_compute = t == dtype::f64;  // positions to 2^31 for double buffers, 2^24 otherwise
  k.seq_len = seq_len;
  k.to_storage = [t](long double v) {
    long double w = 0;
    unsigned char buf[8];
    plugin::to_wire(t, std::span<const long double>(&v, 1), buf);
    plugin::from_wire(t, buf, std::span<long double>(&w, 1));
    return w;
  };
  const std::size_t head_dim = static_cast<std::size_t>(declared.head_dim);
  k.rotate = [door, t, head_dim](std::span<const long double> x, std::span<long double> y, int heads, std::int64_t pos,
                                 rotation_sense sense) {
    if (heads <= 0 || x.size() != static_cast<std::size_t>(heads) * head_dim || y.size() != x.size())
      throw std::invalid_argument("plugin apply: x and y must hold heads * head_dim values");
    const std::size_t bytes = x.size() * plugin::element_bytes(t);
    std::vector<unsigned char> xs(bytes), ys(bytes);
    plugin::to_wire(t, x, xs.data());
    const std::int64_t positions[1] = {pos};
    const auto o = door->apply({xs, ys, positions, heads, sense == rotation_sense::inverse});
    if (!o.ok()) throw std::runtime_error(o.message + " (position " + std::to_string(pos) + ")");
    plugin::from_wire(t, ys.data(), y);
  };
  return judged_binding(k, fp32_angles);
}

rope_under_test bind_plugin(const plugin::loaded_plugin& p) {
  return bind_door(std::make_shared<plugin::in_process_door>(p), p.name(), p.declared(), p.element_type(), true, 0);
}

}  // namespace ropecheck::test

namespace ropecheck::audit {
namespace {



using cli::shell_word;  // tools/markup.hpp

// Verbose mode: RapidCheck's progress on stderr ('.' a case passed, 'x' the first failing case,
// then each accepted shrink's message). Observes only, so results do not depend on it.
class progress_listener final : public rc::detail::TestListener {
 public:
  void onTestCaseFinished(const rc::detail::CaseDescription& d) override {
    using T = rc::detail::CaseResult::Type;
    if (d.result.type == T::Failure) {
      std::cerr << "x\n  falsified: " << first_line(test::property_message(d.result.description)) << "\n";
    } else {
      std::cerr << (d.result.type == T::Success ? '.' : '-');
    }
  }
  void onShrinkTried(const rc::detail::CaseDescription& d, bool accepted) override {
    if (accepted) std::cerr << "  shrunk:    " << first_line(test::property_message(d.result.description)) << "\n";
  }
  void onTestFinished(const rc::detail::TestMetadata& m, const rc::detail::TestResult& r) override {
    std::cerr << "\n  " << m.id << ": " << (r.is<rc::detail::SuccessResult>() ? "passed" : "FAILED") << "\n";
  }

 private:
  static std::string first_line(const std::string& s) { return s.substr(0, s.find('\n')); }
};




}  // namespace

std::vector<std::string> plugin_property_names() {
  std::vector<std::string> v;
  for (const auto& p : test::rope_properties()) v.emplace_back(p.name);
  return v;
}

namespace {

// The property suite against the kernel behind `door`, appended to out (properties, findings, passed).
// Each property runs first with the exact-angle allowance (without shrinking); a failure there is run
// again with the fp32-angle allowance, and passing that makes it a drift warning (strict: one run,
// exact angles, shrinking).
void run_properties(plugin_audit_result& out, const rope_config& declared, plugin::dtype t,
                    const std::shared_ptr<plugin::kernel_door>& door, const plugin_audit_options& options,
                    const rc::detail::Configuration& config) {
  const bool strict = options.judge.strict;
  // The judge's sequence length on the probe (judge.cpp sequence_length): --seq-len, else its last position + 1.
  std::int64_t seq_len = options.judge.seq_len;
  if (seq_len <= 0)
    for (const auto& f : out.forms)
      for (const std::int64_t p : f.probe.positions) seq_len = std::max(seq_len, p + 1);
  const test::rope_under_test exact_angles = test::bind_door(door, out.plugin_name, declared, t, false, seq_len);
  const test::rope_under_test fp32_angles = test::bind_door(door, out.plugin_name, declared, t, true, seq_len);

  test::detail::silent_listener silent;
  progress_listener progress;
  test::property_run run;
  run.params = config.testParams;
  run.params.seed = out.seed;
  run.params.maxSuccess = out.max_success;
  run.listener = options.verbose ? static_cast<rc::detail::TestListener*>(&progress) : &silent;
  run.reproduce = &config.reproduce;

  const auto properties = test::rope_properties();
  const int total = static_cast<int>(properties.size());
  for (int i = 0; i < total; ++i) {
    const auto& p = properties[static_cast<std::size_t>(i)];
    if (options.on_property) options.on_property(p.name, i, total);
    if (const auto why = property_skip(p.name, door->limits())) {
      plugin_property_result skipped;
      skipped.name = p.name;
      skipped.passed = true;
      skipped.skipped = *why;
      out.properties.push_back(std::move(skipped));
      continue;
    }
    if (options.verbose) std::cerr << "[ropecheck audit] " << p.name << " ";
    const auto t0 = std::chrono::steady_clock::now();
    const test::drift_outcome d =
        test::run_with_drift(p, std::string("audit/") + p.name, exact_angles, fp32_angles, run, strict);
    const test::property_outcome& o = d.outcome;
    plugin_property_result r;
    r.drift_warning = d.drift_warning;
    r.drift = d.drift;
    const auto t1 = std::chrono::steady_clock::now();
    r.name = p.name;
    r.passed = o.passed;
    r.successes = o.successes;
    r.description = test::property_message(o.description);
    r.counterexample = test::sparse_counterexample(o.counterexample);
    if (o.counterexample.empty()) r.counterexample.clear();
    r.reproduce = o.reproduce;
    if (!o.reproduce.empty())
      r.replay = "RC_PARAMS=\"" + o.reproduce + "\" ropecheck audit --plugin " + shell_word(out.plugin_path);
    r.seconds = std::chrono::duration<double>(t1 - t0).count();
    if (!r.passed) {
      out.findings.push_back({judge::classes::property_failed, r.name + ": " + test::first_line(r.description), 0.5});
      out.finding_forms.emplace_back();
    }
    // A call that crashed, hung or wrote past y during the property is the door's finding (first).
    if (const auto f = door->take_failure(); f && f->status != plugin::apply_status::error_code) {
      const auto at = std::find_if(out.findings.begin(), out.findings.end(),
                                   [](const judge::finding& x) { return !judge::is_call_failure(x.bug_class); });
      out.finding_forms.insert(out.finding_forms.begin() + (at - out.findings.begin()), std::string());
      out.findings.insert(at, door_finding(*f, "during property " + r.name));
      out.passed = false;
    }
    out.passed = out.passed && r.passed;
    out.properties.push_back(std::move(r));
  }
}

}  // namespace

namespace {

// The probe applied in `form` (prefill: twice, the repeat check, as the conformance suite does), judged.
plugin_form_result run_form_judged(plugin::kernel_door& door, const judge::probe_set& probe, judge::call_form form,
                                   const rope_config& declared, plugin::dtype t, const judge::audit_options& judge_options) {
  plugin_form_result f;
  f.form = form;
  const auto t0 = std::chrono::steady_clock::now();
  probe_run run = run_form(door, probe, form, t, form == judge::call_form::prefill);
  (void)door.take_failure();  // already a finding of the probe
  const auto t1 = std::chrono::steady_clock::now();
  f.seconds_probe = std::chrono::duration<double>(t1 - t0).count();
  f.probe = std::move(run.d);
  f.ran = run.ran;
  f.call_findings = std::move(run.findings);
  if (f.ran) {
    judge::audit_options o = judge_options;
    o.progress = nullptr;
    f.judged = judge::audit(f.probe, declared, o);
    f.seconds_judge = std::chrono::duration<double>(std::chrono::steady_clock::now() - t1).count();
  }
  f.passed = f.ran && f.call_findings.empty() && f.judged.pass;
  return f;
}

// The qk form in `form` through apply_qk, judged as `ropecheck audit` judges a qk outputs file
// (tools/ropecheck.cpp run_probe_outputs_audit: each side, the pair, the crossing and repeat findings).
plugin_qk_form_result run_qk_form_judged(plugin::kernel_door& door, const judge::probe_set& queries,
                                         const judge::qk_inputs& in, judge::call_form form, const rope_config& declared,
                                         plugin::dtype t, const judge::audit_options& judge_options) {
  plugin_qk_form_result f;
  f.form = form;
  const auto t0 = std::chrono::steady_clock::now();
  qk_probe_run run = run_qk_form(door, queries, in, form, t);
  (void)door.take_failure();  // already a finding of the form
  const auto t1 = std::chrono::steady_clock::now();
  f.seconds_probe = std::chrono::duration<double>(t1 - t0).count();
  f.queries = std::move(run.queries);
  f.keys = std::move(run.keys);
  f.ran = run.ran;
  f.call_findings = std::move(run.findings);
  if (f.ran) {
    judge::audit_options o = judge_options;
    o.progress = nullptr;
    f.judged = judge::audit_qk(f.queries, f.keys, declared, o);
    f.seconds_judge = std::chrono::duration<double>(std::chrono::steady_clock::now() - t1).count();
  }
  f.passed = f.ran && f.call_findings.empty() && f.judged.pass;
  return f;
}

// out.findings from the forms, as every door that drives both forms merges them (ropecheck/judge/forms.hpp):
// the x form's, and the qk form's (merged alike, each sentence after qk_phrase()), a failing one's first.
void merge_form_findings(plugin_audit_result& out) {
  std::vector<judge::form_outcome> forms, qk_forms;
  for (const plugin_form_result& f : out.forms) {
    judge::form_outcome o{f.form, f.passed, f.call_findings};
    o.findings.insert(o.findings.end(), f.judged.findings.begin(), f.judged.findings.end());
    forms.push_back(std::move(o));
  }
  for (const plugin_qk_form_result& f : out.qk_forms) {
    judge::form_outcome o{f.form, f.passed, f.call_findings};
    o.findings.insert(o.findings.end(), f.judged.findings.begin(), f.judged.findings.end());
    qk_forms.push_back(std::move(o));
  }
  const judge::merged_forms x = judge::merge_forms(forms), qk = judge::merge_forms(qk_forms);
  // Whether a merged finding comes from a failing form ("both": from either).
  const auto from_failing = [](const std::vector<judge::form_outcome>& f, const std::string& label) {
    return std::any_of(f.begin(), f.end(), [&](const judge::form_outcome& o) {
      return !o.passed && (label == "both" || label == judge::to_string(o.form));
    });
  };
  out.findings.clear();
  out.finding_forms.clear();
  for (const bool failing : {true, false}) {
    for (std::size_t i = 0; i < x.findings.size(); ++i)
      if (from_failing(forms, x.forms[i]) == failing) {
        out.findings.push_back(x.findings[i]);
        out.finding_forms.push_back(x.forms[i]);
      }
    for (std::size_t i = 0; i < qk.findings.size(); ++i)
      if (from_failing(qk_forms, qk.forms[i]) == failing) {
        judge::finding f = qk.findings[i];
        f.sentence = qk_phrase() + ", " + f.sentence;
        out.findings.push_back(std::move(f));
        out.finding_forms.push_back("qk " + qk.forms[i]);
      }
  }
}

}  // namespace

std::string qk_phrase() {
  return "the qk form (ropecheck_plugin_apply_qk, " + std::to_string(qk_query_heads) + " query and " +
         std::to_string(qk_key_heads) + " key heads)";
}

plugin_audit_result audit_plugin(const std::filesystem::path& lib, const plugin_audit_options& options) {
  if (options.max_success < 1)
    throw std::invalid_argument("audit_plugin: max_success must be >= 1, got " + std::to_string(options.max_success));
  const plugin::loaded_plugin loaded = options.isolate ? plugin::load_plugin_guarded(lib.string(), options.timeout_seconds)
                                                       : plugin::load_plugin(lib.string());
  std::shared_ptr<plugin::kernel_door> door;
  if (options.isolate)
    door = std::make_shared<plugin::child_process_door>(loaded, options.timeout_seconds);
  else
    door = std::make_shared<plugin::in_process_door>(loaded);
  plugin_audit_result r = audit_plugin_door(lib, loaded.name(), loaded.declared(), loaded.element_type(), door, options);
  r.notes.insert(r.notes.begin(), loaded.claim_notes().begin(), loaded.claim_notes().end());  // the claim's source first
  return r;
}

plugin_audit_result audit_plugin_door(const std::filesystem::path& lib, const std::string& name,
                                      const rope_config& declared, plugin::dtype t,
                                      const std::shared_ptr<plugin::kernel_door>& door,
                                      const plugin_audit_options& options) {
  // RapidCheck's parameters: options.rc_params, else RC_PARAMS' (RapidCheck's configuration, which
  // announces itself on stderr, is only read when RC_PARAMS is set). Their max_size, discard
  // ratio, noshrink and reproduce entries apply; max_success is ours, and so is the seed if given.
  const char* env_params = std::getenv("RC_PARAMS");
  rc::detail::Configuration config;
  if (options.rc_params) {
    try {
      config = rc::detail::configFromString(*options.rc_params);
    } catch (const std::exception& e) {
      throw std::invalid_argument("audit_plugin: rc_params \"" + *options.rc_params + "\": " + e.what());
    }
  } else if (env_params) {
    config = rc::detail::configuration();
  }
  const auto seed = [&]() -> std::uint64_t {
    if (options.seed) return *options.seed;
    if (!options.rc_params) return test::detail::environment_seed();  // RC_PARAMS, ROPECHECK_SEED, default
    if (options.rc_params->find("seed=") != std::string::npos) return config.testParams.seed;
    const char* env = std::getenv("ROPECHECK_SEED");
    return env ? static_cast<std::uint64_t>(std::strtoull(env, nullptr, 0)) : test::default_property_seed;
  }();

  plugin_audit_result out;
  out.plugin_path = lib.string();
  out.plugin_name = name;
  out.element_type = judge_dtype(t);
  out.convention = judge::convention_line(declared);
  out.declared = declared;
  out.seed = seed;
  out.max_success = options.max_success;
  out.strict = options.judge.strict;
  out.rerun = "ropecheck audit --plugin " + shell_word(out.plugin_path) + " --seed " + std::to_string(out.seed);
  if (out.max_success != 100) out.rerun += " --max-success " + std::to_string(out.max_success);
  if (options.judge.reference != judge::reference_kind::exact)
    out.rerun += " --reference " + std::string(to_string(options.judge.reference));
  if (options.judge.strict) out.rerun += " --strict";

  // 1. The probe in both call forms, each judged as its dump would be.
  const limited_probe limited = limit_probe(judge::make_probe(declared, seed), declared, door->limits());
  if (!limited.note.empty()) out.notes.push_back(limited.note);
  out.positions_not_asked = limited.skipped;
  if (!door->limits().has_inverse())
    out.warnings.push_back(
        "the plugin declares supports_inverse = 0 and negative_positions = 0, so inverse_rotation_undoes_rotation, "
        "which every ABI 1 plugin is held to, is not checked: a kernel that ignores `inverse` passes. A plugin written "
        "for ABI 1 and rebuilt with abi = ROPECHECK_PLUGIN_ABI declares this without meaning to (src/ropecheck/plugin.h, "
        "Versioning): write abi = 1, or set supports_inverse = 1 if apply honours inverse");
  const judge::probe_set& probe = limited.set;
  for (const auto form : {judge::call_form::prefill, judge::call_form::decode}) {
    out.forms.push_back(run_form_judged(*door, probe, form, declared, t, options.judge));
    out.seconds_probe += out.forms.back().seconds_probe;
    out.seconds_judge += out.forms.back().seconds_judge;
  }
  out.probe_ran = std::all_of(out.forms.begin(), out.forms.end(), [](const auto& f) { return f.ran; });
  merge_form_findings(out);
  out.passed = std::all_of(out.forms.begin(), out.forms.end(), [](const auto& f) { return f.passed; });

  // 2. The properties (not when the kernel could not even answer the probe in both forms).
  if (options.run_properties && out.probe_ran) run_properties(out, declared, t, door, options, config);

  // 3. The qk form (ABI 3's apply_qk), last: a hang in it closes the door on nothing else. Its findings join the
  // forms' (before the properties'), the door's call findings of the properties still first.
  if (door->has_apply_qk() && out.probe_ran) {
    const limited_probe queries =
        limit_probe(judge::make_probe(declared, seed, qk_query_heads), declared, door->limits());
    const judge::qk_inputs in = judge::make_qk_inputs(queries.set, qk_key_heads);
    for (const auto form : {judge::call_form::prefill, judge::call_form::decode}) {
      out.qk_forms.push_back(run_qk_form_judged(*door, queries.set, in, form, declared, t, options.judge));
      out.seconds_probe += out.qk_forms.back().seconds_probe;
      out.seconds_judge += out.qk_forms.back().seconds_judge;
    }
    const bool qk_passed = std::all_of(out.qk_forms.begin(), out.qk_forms.end(), [](const auto& f) { return f.passed; });
    // The properties' findings (property_failed, a call failure during a property) after the forms' merged list.
    std::vector<judge::finding> property_findings;
    std::vector<std::string> property_forms;
    for (std::size_t i = 0; i < out.findings.size(); ++i)
      if (out.finding_forms[i].empty()) {
        property_findings.push_back(out.findings[i]);
        property_forms.push_back(out.finding_forms[i]);
      }
    merge_form_findings(out);
    // Placed again as run_properties places them: a call failure before the first finding that is not one.
    for (std::size_t i = 0; i < property_findings.size(); ++i) {
      const auto at = judge::is_call_failure(property_findings[i].bug_class)
                          ? std::find_if(out.findings.begin(), out.findings.end(),
                                         [](const judge::finding& x) { return !judge::is_call_failure(x.bug_class); })
                          : out.findings.end();
      out.finding_forms.insert(out.finding_forms.begin() + (at - out.findings.begin()), property_forms[i]);
      out.findings.insert(at, property_findings[i]);
    }
    out.passed = out.passed && qk_passed;
  }
  out.exit_code = out.passed ? 0 : 1;
  return out;
}

}  // namespace ropecheck::audit
