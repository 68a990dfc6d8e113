// tools/audit/plugin_audit.hpp — `ropecheck audit --plugin lib.so`: a foreign kernel behind the C
// plugin interface (src/ropecheck/plugin.h, loaded by plugin_loader.hpp) judged as a dump is, and run
// through the property suite.
//
// 1. Probe + judge, in both call forms. The probe set (ropecheck/judge/probe.hpp, make_probe(declared,
//    seed)) is converted exactly to the plugin's dtype and applied in the judge's call plan
//    (judge::plan_calls) of each form: prefill (runs of consecutive positions, 2 to 64 tokens a call;
//    the whole plan applied twice, the second answer bitwise the first's) and decode (one token a call,
//    as the conformance suite's decode test calls it). Each form's y is widened exactly and its dump
//    {positions, x, y} goes to the one judge (ropecheck/judge/judge.hpp) with options.judge — the
//    options `ropecheck audit` builds from the same flags. So each form's verdict, its findings (classes
//    and order) are exactly those of `ropecheck audit` on a file of that form's outputs
//    (tests/audit/plugin_door_test.cpp checks it for every example plugin). The door passes iff both
//    forms pass: a kernel right in prefill and wrong in one-token calls (a KV-cache off-by-one) fails.
// 2. Properties (conformance/drivers/rope_properties.hpp, in the order the mutation table reports): the
//    rotation matches the MPFR reference, norms are preserved, the inverse undoes the rotation,
//    rotations compose additively, the materialised matrix is orthogonal, the relative offset identity
//    holds, scores are shift invariant. Each runs with RapidCheck's shrinking, so a failure comes back
//    as a minimal counterexample with the property's own message and a string that replays it.
// 3. The qk form (plugin.h ABI 3, docs/scores.md), when the plugin exports ropecheck_plugin_apply_qk: the probe
//    set with qk_query_heads heads is the queries, the keys (qk_key_heads heads) and the crossing check's other
//    inputs are judge::make_qk_inputs' draws of the same seed, and apply_qk is called in both call forms as the
//    Python door calls a qk kernel (prefill: once, again, with other keys, with other queries; decode once).
//    Each form is judged by judge::audit_qk (each side by judge::audit, the pair by crossed_outputs and
//    qk_findings, the score identity) with the door's crossing and repeat findings (judge::crossing_finding,
//    judge::repeat_call_finding), the functions `ropecheck audit` judges a qk outputs file with. It runs
//    after the properties (a hang in apply_qk closes the door on nothing else) and only when the probe ran.
//
// Seed: options.seed, else RC_PARAMS="seed=N" (or options.rc_params), else ROPECHECK_SEED, else
// the suite's fixed default (as the test suites); the probe's inputs are drawn from the same seed.
// The same seed and max_success give the same results, whether verbose or not.
// RC_PARAMS="reproduce=..." (a property's `reproduce`) replays exactly that shrunk counterexample;
// the properties it does not name then pass with 0 cases.
//
// Light header: std types and the judge's verdict (no RapidCheck, MPFR, dlopen or loader internals).
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "ropecheck/judge/judge.hpp"
#include "ropecheck/judge/probe.hpp"
#include "ropecheck/judge/scores.hpp"

namespace ropecheck::audit {

struct plugin_property_result {
  std::string name;            // the property, e.g. "rotation_matches_reference"
  bool passed = false;
  // Passed under the fp32-angle allowance but not under the exact-angle one (fp64 angles): the
  // excess is angle drift only, a warning (never set in strict mode, where it is a failure).
  bool drift_warning = false;
  std::string drift;           // the exact-angle run's message and counterexample, when drift_warning
  int successes = 0;           // cases that passed (all of them when passed)
  std::string description;     // why it failed: the property's message (empty when passed)
  std::string counterexample;  // the shrunk counterexample, one "    name: value" line per input
  std::string reproduce;       // RC_PARAMS value replaying exactly this counterexample (empty when passed)
  std::string replay;          // command line doing so: RC_PARAMS="<reproduce>" ropecheck audit --plugin <lib>
  double seconds = 0;          // wall time of this property, shrinking included
  std::string skipped;         // not run, and why (plugin_limits.hpp property_skip); passed is then true
};

struct plugin_audit_options {
  std::optional<std::uint64_t> seed;  // unset: RC_PARAMS="seed=N", ROPECHECK_SEED, the suite's default
  int max_success = 100;              // cases per property (>= 1; the materialised matrix runs 20 per 100)
  bool verbose = false;               // RapidCheck's progress and shrinking on stderr
  // RapidCheck parameters in RC_PARAMS' format, used instead of the RC_PARAMS environment
  // variable: e.g. a property's `reproduce` replays its counterexample. Only its seed (when no
  // `seed` is given), max_size, max_discard_ratio, noshrink and reproduce entries are used.
  std::optional<std::string> rc_params;
  // The judge's options, as `ropecheck audit` builds them from --reference, --strict,
  // --tolerance-ulps, --seq-len, --threads. Its progress callback is not called.
  judge::audit_options judge;
  bool run_properties = true;  // false: probe + judge only
  // Every apply() runs in a child process (plugin_child.hpp): a crash, a hang past timeout_seconds
  // or a write past y is a finding, not a crash of ropecheck. false: in this process (tests).
  bool isolate = true;
  double timeout_seconds = 10;  // per apply() call (--plugin-timeout)
  // Called before each property is run (index 0-based, total = the number of properties).
  std::function<void(const std::string& property, int index, int total)> on_property;
};

// The probe in one call form (ropecheck/judge/probe.hpp call_form), judged.
struct plugin_form_result {
  judge::call_form form = judge::call_form::prefill;
  judge::dump probe;         // the probe set and what the plugin returned on it in this form (the judged dump)
  judge::verdict judged;     // the judge's verdict on `probe` (empty when !ran)
  bool ran = false;          // the plugin answered every call of the form
  std::vector<judge::finding> call_findings;  // the door's about the calls (plugin_crashed, ..., nondeterministic)
  bool passed = false;       // ran, no call finding, judged.pass
  double seconds_probe = 0;  // applying the probe in this form (prefill: both passes)
  double seconds_judge = 0;
};

// The qk form's head counts: query head h reads key head h / 4 (grouped-query attention, as Llama 3's 32 / 8).
inline constexpr int qk_query_heads = 8, qk_key_heads = 2;

// The qk form (apply_qk) in one call form, judged.
struct plugin_qk_form_result {
  judge::call_form form = judge::call_form::prefill;
  judge::dump queries, keys;  // {positions, q, q'} and {positions, k, k'}: the inputs and apply_qk's first answer
  judge::qk_verdict judged;   // judge::audit_qk on them (empty when !ran)
  bool ran = false;           // apply_qk answered every call of the form's first run
  // About the calls: the door's (plugin_crashed, ..., naming apply_qk and the run), prefill's nondeterministic
  // (either output) and the crossing probe's qk_crossed (judge::crossing_finding).
  std::vector<judge::finding> call_findings;
  bool passed = false;        // ran, no call finding, judged.pass
  double seconds_probe = 0;   // applying the form (prefill: all four runs)
  double seconds_judge = 0;
};

struct plugin_audit_result {
  std::string plugin_path;
  std::string plugin_name;   // ropecheck_plugin_name(), or the file's stem
  std::string element_type;  // "float32", "float64", "bfloat16", "float16"
  std::string convention;    // one line: head_dim, rotary_dim, base, scaling, factor, layout, ...
  // Where the claim came from and what the kernel's limits left out (plugin.h ABI 2: the config
  // reader's notes for a config_path; the probe positions past max_position, not asked), one sentence each.
  std::vector<std::string> notes;
  std::vector<std::int64_t> positions_not_asked;  // every probe position past max_position (a note summarises them)
  // Checks an ABI 1 plugin is held to that this one's declaration drops (plugin.h, Versioning: a plugin written
  // for ABI 1 and rebuilt with abi = ROPECHECK_PLUGIN_ABI declares zero limits without meaning to), one sentence
  // each: printed first in the summary, on standard error, and in JSON "warnings".
  std::vector<std::string> warnings;
  std::uint64_t seed = 0;
  int max_success = 0;
  bool strict = false;       // judged with --strict
  std::string rerun;         // command line rerunning the whole audit: ropecheck audit --plugin <lib> --seed N ...
  std::vector<plugin_property_result> properties;
  rope_config declared;      // the convention the plugin declares (what the judge is told)
  // forms[0] prefill, forms[1] decode (form_result(f) picks one).
  std::vector<plugin_form_result> forms;
  bool probe_ran = false;    // the plugin answered the probe in every form (else a form is not judged)
  // The qk form, prefill then decode; empty when the plugin does not export apply_qk (ABI 3), or the probe
  // did not run (then nothing was asked of apply_qk).
  std::vector<plugin_qk_form_result> qk_forms;
  // Every finding, most important first: a failing form's (prefill's first, then decode's; each its
  // calls' — judge::class_kind::call: plugin_crashed, plugin_timeout, plugin_out_of_bounds,
  // plugin_error, nondeterministic — then its judge's in the judge's order), then the qk form's when it
  // fails, then a passing form's warnings (the qk form's after the x form's), then one property_failed per
  // failing property. A form's sentence is prefixed with its call_form_phrase ("decode calls (one token a
  // call): ..."), the qk form's with qk_phrase first; a finding both forms give (same class, same sentence)
  // is listed once, with " (both forms)".
  std::vector<judge::finding> findings;
  // Parallel to findings: "prefill", "decode", "both"; "qk prefill", "qk decode", "qk both"; or "" (a
  // property's or a property run's call).
  std::vector<std::string> finding_forms;
  bool passed = false;       // no finding of the door, both forms' judge passed (and the qk form's), every property passed
  int exit_code = 1;         // 0 passed, 1 failed
  double seconds_probe = 0;  // applying the probe in both forms (every call, the child's fork included)
  double seconds_judge = 0;  // the judge's verdicts and diagnoses on them
  [[nodiscard]] const plugin_form_result& form_result(judge::call_form f) const {
    return forms.at(f == judge::call_form::prefill ? 0 : 1);
  }
  // The qk form in f (qk_forms must not be empty).
  [[nodiscard]] const plugin_qk_form_result& qk_form_result(judge::call_form f) const {
    return qk_forms.at(f == judge::call_form::prefill ? 0 : 1);
  }
};

// "the qk form (ropecheck_plugin_apply_qk, 8 query and 2 key heads)": what the qk form's sentences begin with.
[[nodiscard]] std::string qk_phrase();

// Throws ropecheck::plugin::plugin_error (plugin_loader.hpp) when the library cannot be loaded
// (missing file, missing symbol, ABI mismatch, invalid convention, a crash or hang while loading; the
// message names the file), std::invalid_argument when max_success < 1 or rc_params cannot be parsed.
// Everything apply() does is a result: a crash, a hang, a write past y, a nonzero return on the probe
// is the door's finding (the probe is then not judged and no property runs); during a property it
// fails that property (its message says what happened) and is the door's finding too.
[[nodiscard]] plugin_audit_result audit_plugin(const std::filesystem::path& lib, const plugin_audit_options& options = {});

// The property names audit_plugin runs, in order.
[[nodiscard]] std::vector<std::string> plugin_property_names();

}  // namespace ropecheck::audit
