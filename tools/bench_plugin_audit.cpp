// tools/bench_plugin_audit.cpp — the speed of `ropecheck audit --plugin` (not a test): the whole plugin
// audit of a 128-dim fp32 kernel (the HF-style example plugin, tools/audit/plugins/hf_rope.cpp) with
// the default settings (child process, 100 cases per property), repeated, printing the probe, the
// judge and each property side by side, and the same audit with apply() in this process to show
// what the child process costs. The probe is applied in both call forms (ropecheck/judge/probe.hpp
// plan_calls: prefill, twice for the repeat check, and decode, one token a call), each judged:
// prefill seconds, decode seconds, judge seconds (both verdicts), their total. Targets on a 2-core
// machine: probe + judge of both forms < 1 s; the whole audit well under 10 s.
//
//   bench_plugin_audit [plugin.so] [repetitions]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "plugin_audit.hpp"
#include "ropecheck/judge/probe.hpp"

#ifndef ROPECHECK_BENCH_PLUGIN
#error "ROPECHECK_BENCH_PLUGIN must name the fp32 example plugin"
#endif

namespace {

struct timing {
  double total = 0, prefill = 0, decode = 0, judge = 0;
  std::vector<double> properties;
};

timing run(const std::string& lib, bool isolate, ropecheck::audit::plugin_audit_result& last) {
  ropecheck::audit::plugin_audit_options o;
  o.seed = 0x5eed2026;
  o.isolate = isolate;
  const auto t0 = std::chrono::steady_clock::now();
  last = ropecheck::audit::audit_plugin(lib, o);
  timing t;
  t.total = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  t.prefill = last.form_result(ropecheck::judge::call_form::prefill).seconds_probe;
  t.decode = last.form_result(ropecheck::judge::call_form::decode).seconds_probe;
  t.judge = last.seconds_judge;
  for (const auto& p : last.properties) t.properties.push_back(p.seconds);
  return t;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  const std::string lib = argc > 1 ? argv[1] : ROPECHECK_BENCH_PLUGIN;
  const int reps = argc > 2 ? std::max(1, std::atoi(argv[2])) : 5;
  std::printf("plugin audit of %s, default settings, %d repetitions (median)\n", lib.c_str(), reps);
  ropecheck::audit::plugin_audit_result last;
  std::vector<timing> child, inproc;
  for (int i = 0; i < reps; ++i) child.push_back(run(lib, true, last));
  for (int i = 0; i < reps; ++i) inproc.push_back(run(lib, false, last));
  auto col = [](const std::vector<timing>& ts, auto get) {
    std::vector<double> v;
    for (const auto& t : ts) v.push_back(get(t));
    return median(v);
  };
  const auto& prefill = last.form_result(ropecheck::judge::call_form::prefill);
  const auto& decode = last.form_result(ropecheck::judge::call_form::decode);
  std::printf("verdict: %s, %d tokens x %d heads probed in %zu prefill calls (twice) and %d decode calls, %lld values "
              "judged a form\n\n",
              last.passed ? "PASS" : "FAIL", prefill.probe.tokens, prefill.probe.heads,
              ropecheck::judge::plan_calls(ropecheck::judge::make_probe(last.declared, last.seed), ropecheck::judge::call_form::prefill).size(),
              decode.probe.tokens, static_cast<long long>(prefill.judged.elements));
  std::printf("%-36s %14s %14s\n", "step", "child process", "in process");
  const auto row = [&](const char* name, auto get) {
    std::printf("%-36s %12.4f s %12.4f s\n", name, col(child, get), col(inproc, get));
  };
  row("probe in prefill calls (2 passes)", [](const timing& t) { return t.prefill; });
  row("probe in decode calls", [](const timing& t) { return t.decode; });
  row("judge (both forms)", [](const timing& t) { return t.judge; });
  row("probe + judge, both forms (< 1 s)", [](const timing& t) { return t.prefill + t.decode + t.judge; });
  double props_child = 0, props_inproc = 0;
  for (std::size_t k = 0; k < last.properties.size(); ++k) {
    const double a = col(child, [k](const timing& t) { return t.properties[k]; });
    const double b = col(inproc, [k](const timing& t) { return t.properties[k]; });
    props_child += a, props_inproc += b;
    std::printf("%-36s %12.4f s %12.4f s\n", last.properties[k].name.c_str(), a, b);
  }
  std::printf("%-36s %12.4f s %12.4f s\n", "properties (sum)", props_child, props_inproc);
  std::printf("%-36s %12.4f s %12.4f s\n", "whole audit", col(child, [](const timing& t) { return t.total; }),
              col(inproc, [](const timing& t) { return t.total; }));
  return 0;
}
