// tools/bench_strategies.cpp — every implementation of the report (tools/sweep/strategies.hpp):
// values/s of the scalar loop over cos_sin against cos_sin_block (ropecheck/angle_batch.hpp).
//
// Workloads, on the llama3-8b preset (64 bands), dense positions: [0, 2^K) ("low", every float(p)
// distinct) and [2^30, 2^30 + 2^K) ("high", float(p) in runs of 127/129), K = 20 unless
// --log2_positions=K. Both loops write the same position-major double buffers, block_rows
// positions at a time (--block_rows=N, default 256; the scalar loop widens each cos_sin as the
// block does). At high, also through one cos_sin_blocks ("carried": the last row carried over). After the runs a
// table puts scalar and block side by side with their ratio, and the projected time of one thread
// over every position 0..2^31-1 (2^24 positions at the low rate, the rest at the high rate).
#include <benchmark/benchmark.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "ropecheck/angle_batch.hpp"
#include "ropecheck/presets.hpp"
#include "sweep/strategies.hpp"

namespace {

using namespace ropecheck;

std::int64_t block_rows = 256;  // 256 x 64 x 2 doubles = 256 KiB of output per block (--block_rows=N)
int log2_positions = 20;

const std::int64_t workload_first[] = {0, std::int64_t{1} << 30};
const char* const workload_name[] = {"low", "high"};

template <class S>
void scalar_loop(benchmark::State& state, const S& s, std::int64_t first) {
  const auto bands = static_cast<std::size_t>(s.bands());
  std::vector<double> c(static_cast<std::size_t>(block_rows) * bands), sn(c.size());
  const std::int64_t n = std::int64_t{1} << log2_positions;
  for (auto _ : state) {
    for (std::int64_t p0 = first; p0 < first + n; p0 += block_rows) {
      for (std::int64_t i = 0; i < block_rows; ++i)
        for (std::size_t b = 0; b < bands; ++b) {
          const auto cs = s.cos_sin(p0 + i, static_cast<int>(b));
          c[static_cast<std::size_t>(i) * bands + b] = detail::trace_value<double>(cs.cos);
          sn[static_cast<std::size_t>(i) * bands + b] = detail::trace_value<double>(cs.sin);
        }
      benchmark::DoNotOptimize(c.data());
      benchmark::DoNotOptimize(sn.data());
      benchmark::ClobberMemory();
    }
  }
  state.SetItemsProcessed(state.iterations() * n * static_cast<std::int64_t>(bands));
}

template <class S>
void block_loop(benchmark::State& state, const S& s, std::int64_t first) {
  const auto bands = static_cast<std::size_t>(s.bands());
  std::vector<double> c(static_cast<std::size_t>(block_rows) * bands), sn(c.size());
  const std::int64_t n = std::int64_t{1} << log2_positions;
  for (auto _ : state) {
    for (std::int64_t p0 = first; p0 < first + n; p0 += block_rows) {
      cos_sin_block(s, p0, block_rows, c, sn);
      benchmark::DoNotOptimize(c.data());
      benchmark::DoNotOptimize(sn.data());
      benchmark::ClobberMemory();
    }
  }
  state.SetItemsProcessed(state.iterations() * n * static_cast<std::int64_t>(bands));
}

// The same through one cos_sin_blocks, which carries the last row over to the next block.
template <class S>
void carried_loop(benchmark::State& state, const S& s, std::int64_t first) {
  const auto bands = static_cast<std::size_t>(s.bands());
  std::vector<double> c(static_cast<std::size_t>(block_rows) * bands), sn(c.size());
  const std::int64_t n = std::int64_t{1} << log2_positions;
  cos_sin_blocks<S> blocks(s);
  for (auto _ : state) {
    for (std::int64_t p0 = first; p0 < first + n; p0 += block_rows) {
      blocks.fill(p0, block_rows, c, sn);
      benchmark::DoNotOptimize(c.data());
      benchmark::DoNotOptimize(sn.data());
      benchmark::ClobberMemory();
    }
  }
  state.SetItemsProcessed(state.iterations() * n * static_cast<std::int64_t>(bands));
}

std::vector<std::string> strategy_order;

struct registrar {
  rope_config cfg;
  template <class Compute, class Storage, class Make>
  void operator()(const char* name, const char*, const char*, bool, Make make, const sweep::arithmetic&) {
    using S = decltype(make(cfg, std::int64_t{0}));
    auto s = std::make_shared<const S>(make(cfg, 0));
    strategy_order.push_back(name);
    for (int w = 0; w < 2; ++w) {
      const std::int64_t first = workload_first[w];
      const std::string suffix = std::string("/") + workload_name[w];
      benchmark::RegisterBenchmark((std::string(name) + "/scalar" + suffix).c_str(),
                                   [s, first](benchmark::State& st) { scalar_loop(st, *s, first); })
          ->Unit(benchmark::kMillisecond);
      benchmark::RegisterBenchmark((std::string(name) + "/block" + suffix).c_str(),
                                   [s, first](benchmark::State& st) { block_loop(st, *s, first); })
          ->Unit(benchmark::kMillisecond);
      if (w == 1)  // below 2^24 no row repeats: carrying changes nothing there
        benchmark::RegisterBenchmark((std::string(name) + "/carried" + suffix).c_str(),
                                     [s, first](benchmark::State& st) { carried_loop(st, *s, first); })
            ->Unit(benchmark::kMillisecond);
    }
  }
};

// Prints as usual and keeps items_per_second of every run for the side-by-side table.
class collecting_reporter : public benchmark::ConsoleReporter {
 public:
  std::map<std::string, double> items_per_second;
  void ReportRuns(const std::vector<Run>& runs) override {
    for (const Run& r : runs) {
      const auto it = r.counters.find("items_per_second");
      if (it != r.counters.end()) items_per_second[r.benchmark_name()] = it->second.value;
    }
    ConsoleReporter::ReportRuns(runs);
  }
};

}  // namespace

int main(int argc, char** argv) {
  // Our own flag first (benchmark::Initialize would reject it).
  int kept = 1;
  for (int i = 1; i < argc; ++i) {
    if (std::strncmp(argv[i], "--log2_positions=", 17) == 0) log2_positions = std::atoi(argv[i] + 17);
    else if (std::strncmp(argv[i], "--block_rows=", 13) == 0) block_rows = std::atoi(argv[i] + 13);
    else argv[kept++] = argv[i];
  }
  argc = kept;
  if (log2_positions < 8 || log2_positions > 30) {
    std::fprintf(stderr, "--log2_positions must be in [8, 30]\n");
    return 2;
  }
  if (block_rows < 1 || block_rows > 65536 || (std::int64_t{1} << log2_positions) % block_rows != 0) {
    std::fprintf(stderr, "--block_rows must be in [1, 65536] and divide 2^log2_positions\n");
    return 2;
  }
  sweep::for_each_strategy(registrar{*find_preset("llama3-8b")});
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  collecting_reporter reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);
  benchmark::Shutdown();

  std::printf("\nvalues (position, band) per second, llama3-8b, 2^%d dense positions from 0 (low) and 2^30 (high), "
              "blocks of %lld positions:\n", log2_positions, static_cast<long long>(block_rows));
  std::printf("%-20s %11s %11s %7s %11s %11s %11s %7s %13s\n", "implementation", "scalar/low", "block/low", "ratio",
              "scalar/high", "block/high", "carried/hi", "ratio", "2^31x64 1thr");
  const auto& ips = reporter.items_per_second;
  const auto get = [&](const std::string& k) {
    const auto it = ips.find(k);
    return it == ips.end() ? 0.0 : it->second;
  };
  for (const std::string& name : strategy_order) {
    const double sl = get(name + "/scalar/low"), bl = get(name + "/block/low");
    const double sh = get(name + "/scalar/high"), bh = get(name + "/block/high"), ch = get(name + "/carried/high");
    if (sl == 0.0 && bl == 0.0 && sh == 0.0 && bh == 0.0 && ch == 0.0) continue;  // filtered out
    // One thread over positions 0..2^31-1, 64 bands: 2^24 positions at the low rate, the rest at the
    // carried high rate.
    const double low_values = 64.0 * 16777216.0, high_values = 64.0 * (2147483648.0 - 16777216.0);
    const double projected = bl > 0 && ch > 0 ? low_values / bl + high_values / ch : 0.0;
    std::printf("%-20s %11.4g %11.4g %7.2f %11.4g %11.4g %11.4g %7.2f %11.0f s\n", name.c_str(), sl, bl,
                sl > 0 ? bl / sl : 0.0, sh, bh, ch, sh > 0 ? ch / sh : 0.0, projected);
  }
  std::printf("(ratio: block/scalar at low, carried/scalar at high; carried = one cos_sin_blocks across blocks)\n");
  return 0;
}
