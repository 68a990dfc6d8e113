// conformance/drivers/property_runner.hpp — running RapidCheck properties the ropecheck way, with no
// GoogleTest: the core shared by the test suites (framework.hpp adds the GoogleTest layer) and by
// `ropecheck audit --plugin` (tools/audit/plugin_audit.cpp).
//
// Every property runs through run_property(), which
//   * runs it with RapidCheck's shrinking under the given parameters (seed, max_success, ...);
//   * returns, on failure, the property's own message (the worst case in hex floats, with its
//     position), the shrunk counterexample and RapidCheck's reproduce string;
//   * reports to the given listener (silent_listener: nothing is printed or added to RapidCheck's
//     reproduce summary), or to RapidCheck's global one.
// check_property() is run_property() with the suite's policy:
//   * the suite's seed: RC_PARAMS="seed=N" if given, else ROPECHECK_SEED, else a fixed default,
//     so a CI run is reproducible and `RC_PARAMS=...` or `ROPECHECK_SEED=...` changes it;
//   * RC_PARAMS' max_success (default 100): the deep nightly mode is
//     RC_PARAMS="max_success=2000" ctest -L property;
//   * quiet mode for deliberately broken kernels (tests/properties/mutation_test.cpp).
#pragma once

#include <rapidcheck.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <sstream>
#include <string>
#include <unordered_map>

#include "rapidcheck/detail/Configuration.h"
#include "rapidcheck/detail/TestListener.h"
#include "ropecheck/judge/probe.hpp"

namespace ropecheck::test {

struct property_outcome {
  bool passed = false;
  int successes = 0;
  std::uint64_t seed = 0;
  std::string description;     // why it failed: the property's message
  std::string counterexample;  // the shrunk counterexample, one "name: value" per line
  std::string reproduce;       // RC_PARAMS value that replays exactly this failure
  [[nodiscard]] std::string report() const {
    std::ostringstream s;
    s << (passed ? "passed" : "FAILED") << " after " << successes << " successful cases (seed " << seed << ")";
    if (!passed) {
      s << "\n  " << description << "\n  counterexample:\n" << counterexample
        << "  reproduce with: RC_PARAMS=\"" << reproduce << "\"";
    }
    return s.str();
  }
};

// The suite's seed when neither RC_PARAMS="seed=N" nor ROPECHECK_SEED gives one.
inline constexpr std::uint64_t default_property_seed = judge::default_seed;

namespace detail {

class silent_listener final : public rc::detail::TestListener {
 public:
  void onTestCaseFinished(const rc::detail::CaseDescription&) override {}
  void onShrinkTried(const rc::detail::CaseDescription&, bool) override {}
  void onTestFinished(const rc::detail::TestMetadata&, const rc::detail::TestResult&) override {}
};

// The seed the environment asks for, printed nowhere: RC_PARAMS="seed=N", else ROPECHECK_SEED,
// else the fixed default. RapidCheck's configuration (which announces itself on stderr) is only
// read when RC_PARAMS names a seed.
inline std::uint64_t environment_seed() {
  const char* rc_params = std::getenv("RC_PARAMS");
  if (rc_params && std::strstr(rc_params, "seed=")) return rc::detail::configuration().testParams.seed;
  const char* env = std::getenv("ROPECHECK_SEED");
  return env ? static_cast<std::uint64_t>(std::strtoull(env, nullptr, 0)) : default_property_seed;
}

// The test suites' seed: environment_seed(), fixed for the process and printed once.
inline std::uint64_t suite_seed() {
  static const std::uint64_t seed = environment_seed();
  static const bool printed = [] {
    std::cout << "[ropecheck] property seed " << seed << " (rerun with ROPECHECK_SEED=" << seed
              << "; RapidCheck's own \"Using configuration\" seed is not used)\n";
    return true;
  }();
  (void)printed;
  return seed;
}

}  // namespace detail

// How one property is run.
struct property_run {
  rc::detail::TestParams params;  // seed, max_success, max_size, ...
  // Scales params.maxSuccess down to `cases` per 100 for a property that is expensive per case
  // (0: as is); a larger max_success (the deep mode) still scales it up.
  int cases = 0;
  // nullptr: RapidCheck's global listener (prints progress and joins its reproduce summary).
  rc::detail::TestListener* listener = nullptr;
  // The reproduce entries to replay, by property id (RC_PARAMS="reproduce=..."); nullptr: those of
  // RapidCheck's configuration. Only with a listener of one's own.
  const std::unordered_map<std::string, rc::detail::Reproduce>* reproduce = nullptr;
};

// Run one property with shrinking. `id` names it in reproduce strings: keep it unique per
// (property, implementation).
template <class Testable>
property_outcome run_property(const std::string& id, Testable&& property, const property_run& run) {
  using namespace rc::detail;
  TestParams params = run.params;
  if (run.cases > 0) params.maxSuccess = std::max(1, params.maxSuccess * run.cases / 100);
  TestMetadata metadata;
  metadata.id = id;
  metadata.description = id;
  const TestResult result = [&] {
    auto p = toProperty(std::forward<Testable>(property));
    if (!run.listener) return checkProperty(p, metadata, params);
    if (!run.reproduce) return checkProperty(p, metadata, params, *run.listener);
    return checkProperty(p, metadata, params, *run.listener, *run.reproduce);
  }();
  property_outcome out;
  out.seed = params.seed;
  if (result.template is<SuccessResult>()) {
    out.passed = true;
    out.successes = result.template get<SuccessResult>().numSuccess;
    return out;
  }
  if (result.template is<FailureResult>()) {
    const auto& f = result.template get<FailureResult>();
    out.successes = f.numSuccess;
    out.description = f.description;
    std::ostringstream ce;
    for (const auto& [type, value] : f.counterExample) ce << "    " << type << ": " << value << '\n';
    out.counterexample = ce.str();
    Configuration replay;
    replay.testParams = params;
    replay.reproduce[id] = f.reproduce;
    out.reproduce = configToString(replay);
    return out;
  }
  if (result.template is<GaveUpResult>()) {
    out.description = "gave up: " + result.template get<GaveUpResult>().description;
  } else {
    out.description = "error: " + result.template get<Error>().description;
  }
  return out;
}

// Run one property with the suite's seed and RC_PARAMS' parameters; quiet: nothing printed.
template <class Testable>
property_outcome check_property(const std::string& id, Testable&& property, bool quiet = false, int cases = 0) {
  property_run run;
  run.params = rc::detail::configuration().testParams;
  run.params.seed = detail::suite_seed();
  run.cases = cases;
  detail::silent_listener silent;
  if (quiet) run.listener = &silent;
  return run_property(id, std::forward<Testable>(property), run);
}

}  // namespace ropecheck::test
