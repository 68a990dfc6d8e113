// tools/report/strategy_outputs.cpp — see strategy_outputs.hpp.
#include "strategy_outputs.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>
#include <vector>

#include "registry.hpp"
#include "ropecheck/judge/classes.hpp"

namespace ropecheck::report {

judge::dump strategy_outputs(const std::string& name, const rope_config& cfg, const judge::probe_set& probe) {
  const auto entries = detail::select_implementations({name});
  const std::int64_t last = probe.positions.empty()
                                ? 0
                                : *std::max_element(probe.positions.begin(), probe.positions.end());
  return entries.front()->outputs(cfg, last + 1, probe);
}

judge_column judge_implementation(const std::string& name, const rope_config& cfg, std::uint64_t seed, int threads) {
  const judge::probe_set probe = judge::make_probe(cfg, seed);
  // One form, no call plan (ropecheck/judge/probe.hpp call_form): ropecheck's own strategies are pure functions of
  // the position (cos_sin(p), no state between calls, no notion of a call's length), so prefill and
  // decode calls give the same bits and a form cannot differ here. Foreign kernels can: the plugin
  // door and certify --plugin judge both forms.
  const judge::dump d = strategy_outputs(name, cfg, probe);
  judge::audit_options opt;
  opt.reference = judge::reference_kind::exact;
  opt.threads = threads;
  const judge::verdict v = judge::audit(d, cfg, opt);
  judge_column j;
  j.judged = true;
  j.pass = v.pass;
  j.dtype = d.dtype;
  j.tokens = d.tokens;
  j.worst_ratio = v.worst_ratio;
  j.max_error_ulps = v.max_error_ulps;
  j.tolerance_ulps = v.tolerance;
  j.worst_position = v.from_exact.worst_position;
  j.worst_band = v.from_exact.worst_band;
  if (!v.findings.empty()) j.finding = v.findings.front().sentence;
  std::vector<std::string> classes;
  for (const auto& f : v.findings) classes.push_back(f.bug_class);
  j.verdict = judge::outcome_class(v.pass, classes);
  return j;
}

}  // namespace ropecheck::report
