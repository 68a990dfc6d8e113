// conformance/src/key_scores.cpp — queries (apply) against keys (apply_k, else apply) at the score: the
// property query_key_scores_match_reference and the judge's qk form on the probe set (run.hpp check_key_scores).
#include <algorithm>
#include <exception>
#include <string>
#include <vector>

#include "driven.hpp"
#include "judge_probe.hpp"
#include "property_report.hpp"
#include "ropecheck/conformance/run.hpp"
#include "ropecheck/judge/classes.hpp"
#include "ropecheck/judge/probe.hpp"
#include "ropecheck/judge/render.hpp"
#include "ropecheck/judge/scores.hpp"
#include "ropecheck/judge/sentence.hpp"
#include "score_properties.hpp"
#include "suite_property.hpp"

namespace ropecheck::conformance {
namespace {

using judge::fmt;

bool pair_class(const std::string& id) {
  return id == judge::classes::key_positions_wrong || id == judge::classes::key_convention_wrong ||
         id == judge::classes::qk_crossed;
}

// The judge's qk form on the probe set in decode calls (the form the property calls the kernel in): queries of
// probe_heads heads with the probe's inputs, keys of kv_heads heads drawn from the probe seed's key stream.
judge::qk_verdict judge_pair(const kernel& k, const detail::resolved& r) {
  const judge::probe_set qp = detail::probe_for(r);
  const judge::probe_set kp = detail::probe_for(r, judge::qk_seed(r.seed, judge::qk_stream::keys), r.opts.kv_heads);
  judge::audit_options o;
  o.strict = r.opts.strict;
  o.reference = r.reference;
  const detail::apply_fn& keys = k.apply_k ? k.apply_k : k.apply;
  return judge::audit_qk(detail::applied_dump(k.apply, qp, call_form::decode, k.dtype),
                         detail::applied_dump(keys, kp, call_form::decode, k.dtype), r.declared, o);
}

std::string pair_lines(const kernel& k, const detail::resolved& r, const judge::qk_verdict& v) {
  std::string s = fmt("  judge on queries (apply, %d heads) and keys (%s, %d heads) of the probe set in decode calls "
                      "(%s): %s\n",
                      r.opts.probe_heads, k.apply_k ? "apply_k" : "apply", r.opts.kv_heads, k.dtype.c_str(),
                      v.pass ? "PASS" : "FAIL");
  s += fmt("  score identity: worst error/allowance %.3g (query at %lld, key at %lld, query head %d) over %lld "
           "(query, key, head) triples, pass iff <= 1\n",
           v.score.worst_ratio, static_cast<long long>(v.score.m), static_cast<long long>(v.score.n), v.score.q_head,
           static_cast<long long>(v.score.pairs));
  if (v.findings.empty()) return s + "  the judge finds no bug class on the pair\n";
  s += "  the judge on the pair (most evidence first):\n";
  for (const auto& f : v.findings) s += judge::finding_line(f, "    ");
  return s;
}

}  // namespace

outcome check_key_scores(const kernel& k, const std::string& test_id) {
  outcome out;
  try {
    const detail::resolved r = detail::resolve(k);
    const test::driven_kernel d = detail::driven(k, r);
    const std::string id = test_id.empty() ? "conformance/" + k.name + "/" + key_scores_check : test_id;
    const test::drift_outcome o = detail::run_suite_property(test::query_key_score_property(), d, r, id);
    const judge::qk_verdict v = judge_pair(k, r);
    for (const auto& f : v.findings) out.bug_classes.push_back(f.bug_class);
    const bool pair_fails = !v.findings.empty() && pair_class(v.findings.front().bug_class);
    const bool failed = !o.outcome.passed || pair_fails;
    out.status = failed ? status::failed : o.drift_warning ? status::warning : status::passed;
    out.message = fmt("%s: %s %d cases (seed %llu; query heads %d, key heads %d, keys by %s)\n", key_scores_check,
                      o.outcome.passed ? "passed" : "FAILED after", o.outcome.successes,
                      static_cast<unsigned long long>(o.outcome.seed), r.opts.probe_heads, r.opts.kv_heads,
                      k.apply_k ? "apply_k" : "apply");
    if (o.drift_warning)
      out.message += "  warning: within the fp32-angle allowance but not the exact-angle one (fp32 angle drift; "
                     "options().strict or ROPECHECK_STRICT=1 fails it): " + o.drift + "\n";
    const std::string lines = o.outcome.passed ? std::string() : detail::failure_lines(o.outcome, test_id);
    const auto replay = lines.find("  replay: ");
    out.message += lines.substr(0, replay) + pair_lines(k, r, v);
    if (replay != std::string::npos) out.message += lines.substr(replay);
    else if (failed)
      out.message += fmt("  rerun: ROPECHECK_SEED=%llu %s%s\n", static_cast<unsigned long long>(r.seed),
                         detail::executable_path().c_str(),
                         test_id.empty() ? "" : (" --gtest_filter='" + test_id + "'").c_str());
  } catch (const std::exception& e) {
    out.status = status::failed;
    out.message = std::string("could not check ") + key_scores_check + " on kernel " + k.name + ": " + e.what() + "\n";
  }
  return out;
}

}  // namespace ropecheck::conformance
