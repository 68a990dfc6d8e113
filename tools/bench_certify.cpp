// tools/bench_certify.cpp — the speed and memory of `ropecheck certify` (prints figures; not a test).
//
// Runs, side by side in one process on the threads given (default 2):
//   1. one fp32 strategy (hf_float, llama3-8b) over slices of 2^22 positions of the int32 range
//      (shards of --max-position 2^31 - 1): [0, 2^22) and one at the start of every octave beyond;
//      values/s in each, and the time the whole 2^31 x 64 sweep takes with each slice standing for its
//      octave (target: <= 15 min, i.e. >= 1.5e8 values/s);
//   2. every default strategy over 0..2^24 - 1 x 64 bands (target: < 2 min), with the time split
//      between the reference, the implementations and the measurement;
//   3. peak resident memory after each (target: < 200 MB, independent of N).
// Usage: bench_certify [threads] [--quick]   (--quick: 2^20 positions instead of 2^24 in 2.)
#include <sys/resource.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "certify/engine.hpp"
#include "ropecheck/presets.hpp"

namespace {

using namespace ropecheck;

double peak_rss_mb() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_maxrss) / 1024.0;
}

certify::certify_run run(std::int64_t n, std::vector<std::string> impls, int threads, int k = 1, int count = 1) {
  certify::certify_request q;
  q.config_name = "llama3-8b";
  q.config = *find_preset("llama3-8b");
  q.max_position = n;
  q.implementations = std::move(impls);
  q.threads = threads;
  q.shard_index = k;
  q.shard_count = count;
  return certify::run_certify(q);
}

}  // namespace

int main(int argc, char** argv) {
  int threads = 2;
  bool quick = false;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--quick") == 0) quick = true;
    else threads = std::stoi(argv[i]);
  }
  const std::int64_t int32_last = (std::int64_t{1} << 31) - 1;
  constexpr int slices = 512;  // each slice is 2^22 positions
  std::printf("bench_certify: llama3-8b, 64 bands, %d threads\n\n", threads);
  std::printf("1. hf_float over slices of 0..2^31-1 of 2^22 positions: [0, 2^22) and [2^k, 2^k + 2^22), k = 22..30\n");
  // Shards of 1/512 of the sweep are 2^22 positions; slice k stands for its octave [2^k, 2^(k+1)).
  double projected = 0;
  for (int k = 21; k <= 30; ++k) {
    const int index = k == 21 ? 1 : (1 << (k - 22)) + 1;
    const auto r = run(int32_last, {"hf_float"}, threads, index, slices);
    const double weight = k == 21 ? 1.0 : static_cast<double>(1 << (k - 22));
    projected += weight * r.timing.seconds;
    std::printf("   positions %10lld..%10lld: %.3g values/s (thread-seconds: reference %.2f, implementation %.2f, measure %.2f)\n",
                static_cast<long long>(r.partial.range.first), static_cast<long long>(r.partial.range.last),
                r.timing.values_per_second, r.timing.reference_seconds, r.timing.implementation_seconds,
                r.timing.measure_seconds);
  }
  std::printf("   projected 2^31 x 64 (each slice weighted by its octave): %.1f min, %.3g values/s "
              "(target <= 15 min, >= 1.5e8 values/s); peak RSS %.0f MB\n\n",
              projected / 60, static_cast<double>(int32_last + 1) * 64 / projected, peak_rss_mb());

  const std::int64_t n = quick ? (std::int64_t{1} << 20) - 1 : (std::int64_t{1} << 24) - 1;
  std::printf("2. every default strategy over 0..%lld x 64 bands\n", static_cast<long long>(n));
  const auto all = run(n, {}, threads);
  std::printf("   %zu implementations, %.3g values in %.1f s: %.3g values/s (target for 2^24: < 120 s)\n",
              all.partial.inputs.implementations.size(), static_cast<double>(all.timing.values), all.timing.seconds,
              all.timing.values_per_second);
  std::printf("   thread-seconds: reference %.1f, implementations %.1f, measurement %.1f\n", all.timing.reference_seconds,
              all.timing.implementation_seconds, all.timing.measure_seconds);
  std::printf("3. peak RSS after both: %.0f MB (target < 200 MB; a sweep holds one block per thread)\n", peak_rss_mb());
  return 0;
}
