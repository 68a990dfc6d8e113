// tools/bench_report.cpp — the speed targets of `ropecheck report`, measured side by side in one run.
//
//   bench_report [--threads N] [--log2-positions K]
//
// 1. Exhaustive sweep of llama3-8b (d 128: 64 bands) over 2^K positions (default K = 20), for each
//    fp32 implementation alone and for the three together, against the fast reference's own
//    cos_sin throughput measured in the same run on the same threads.
//    Target: implementation throughput >= 1/3 of the reference's.
// 2. The default report of llama3-8b (all default implementations, max position 131072).
//    Target: < 60 s on a 2-core machine.
// 3. The time a plain MPFR reference (mpfr_sin_cos at 256 bits) would have needed for each grid.
// Throughput counts (position, band, implementation) values per second, all threads together.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "report/engine.hpp"
#include "ropecheck/presets.hpp"

namespace {

using namespace ropecheck;
using namespace ropecheck::report;

report_request llama3_request() {
  report_request r;
  r.config_name = "llama3-8b";
  r.config = *find_preset("llama3-8b");
  return r;
}

}  // namespace

int main(int argc, char** argv) {
  int threads = 0, log2_positions = 20;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (std::strcmp(argv[i], "--threads") == 0) threads = std::atoi(argv[i + 1]);
    else if (std::strcmp(argv[i], "--log2-positions") == 0) log2_positions = std::atoi(argv[i + 1]);
    else {
      std::fprintf(stderr, "usage: bench_report [--threads N] [--log2-positions K]\n");
      return 2;
    }
  }

  std::printf("exhaustive sweep, llama3-8b (64 bands), positions 0..2^%d - 1\n", log2_positions);
  std::printf("%-34s %9s %14s %14s %8s %12s\n", "implementations", "seconds", "impl values/s", "ref values/s",
              "ratio", "MPFR est. s");
  const std::vector<std::vector<std::string>> sets = {
      {"hf_float"}, {"direct_float"}, {"ggml_float"}, {"hf_float", "direct_float", "ggml_float"}};
  bool all_met = true;
  for (const auto& set : sets) {
    report_request r = llama3_request();
    r.exhaustive = true;
    r.max_position = (std::int64_t{1} << log2_positions) - 1;
    r.implementations = set;
    r.threads = threads;
    const report_result res = run_report(r);
    std::string names;
    for (const auto& n : set) names += (names.empty() ? "" : "+") + n;
    const double ratio = res.time.values_per_second / res.time.reference_values_per_second;
    all_met = all_met && ratio >= 1.0 / 3.0;
    std::printf("%-34s %9.2f %14.4g %14.4g %8.3f %12.4g\n", names.c_str(), res.time.seconds_total,
                res.time.values_per_second, res.time.reference_values_per_second, ratio,
                res.time.mpfr_seconds_estimate);
  }

  report_request d = llama3_request();
  d.threads = threads;
  const auto t0 = std::chrono::steady_clock::now();
  const report_result def = run_report(d);
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("\ndefault report, llama3-8b, %zu implementations, %lld positions x %zu bands, %d threads:\n",
              def.series.size(), static_cast<long long>(def.time.positions), def.bands.size(), def.time.threads);
  std::printf("  wall %.2f s (target < 60 s), sweep %.4g values/s, reference %.4g values/s, MPFR estimate %.4g s\n",
              wall, def.time.values_per_second, def.time.reference_values_per_second, def.time.mpfr_seconds_estimate);
  std::printf("\nexhaustive target (every ratio >= 1/3): %s\n", all_met ? "met" : "NOT met");
  return 0;
}
