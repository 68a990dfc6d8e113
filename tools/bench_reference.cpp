// tools/bench_reference.cpp — the fast and dense reference paths against a plain MPFR loop and double sincos.
//
// Per (position, band) value, side by side in one run:
//   fast   rope_reference::cos_sin (fixed-point phase + double-double sin/cos, |error| <= 2^-90)
//   dense_path / dense_path_generic  rope_reference::dense_cos_sin over blocks of consecutive positions,
//          all bands (automatic isa: AVX2+FMA when the CPU has it; generic: no FMA), |error| <= 2^-90
//   mpfr   theta = pos * inv_freq in MPFR, mpfr_sin_cos at the same precision (256 bits)
//   double std::sin and std::cos of pos * inv_freq in double (the accuracy being checked, for scale)
// over two workloads: a dense sweep (consecutive positions, all 64 bands of base 10000, d 128) and
// random positions below 2^31 with random bands. After the runs a table of the ratios
// fast/mpfr and fast/double (of items_per_second) is printed, then the dense path's ratios on the dense
// workload. Targets: dense/mpfr >= 250 and dense/double >= 2 (dense workload), fast/mpfr >= 100 (random).
#include <benchmark/benchmark.h>
#include <mpfr.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "ropecheck/config.hpp"
#include "ropecheck/reference/reference.hpp"

namespace {

using ropecheck::reference::rope_reference;

constexpr int precision = 256;
constexpr int bands = 64;
constexpr std::size_t random_points = 4096;

const rope_reference& reference() {
  static const rope_reference ref(ropecheck::rope_config{}, 0, precision);
  return ref;
}

struct point {
  std::int64_t pos;
  int band;
};

const std::vector<point>& random_workload() {
  static const std::vector<point> pts = [] {
    std::mt19937_64 rng(20240611);  // fixed: the workload, not a test
    std::uniform_int_distribution<std::int64_t> pos(0, (std::int64_t{1} << 31) - 1);
    std::uniform_int_distribution<int> band(0, bands - 1);
    std::vector<point> out(random_points);
    for (auto& p : out) p = {pos(rng), band(rng)};
    return out;
  }();
  return pts;
}

// The MPFR inv_freq values, read back once from the reference's digits (setup, not timed).
struct mpfr_freqs {
  mpfr_t f[bands];
  mpfr_freqs() {
    for (int b = 0; b < bands; ++b) {
      mpfr_init2(f[b], precision);
      mpfr_set_str(f[b], reference().inv_freq_decimal(b, 90).c_str(), 10, MPFR_RNDN);
    }
  }
  ~mpfr_freqs() {
    for (auto& x : f) mpfr_clear(x);
  }
};
const mpfr_freqs& freqs() {
  static const mpfr_freqs m;
  return m;
}

// One MPFR evaluation as a user without the fast path would write it.
struct mpfr_loop {
  mpfr_t theta, s, c;
  mpfr_loop() {
    mpfr_init2(theta, precision + 64);  // holds the exact product
    mpfr_init2(s, precision);
    mpfr_init2(c, precision);
  }
  ~mpfr_loop() {
    mpfr_clear(theta), mpfr_clear(s), mpfr_clear(c);
  }
  double operator()(std::int64_t pos, int band) {
    mpfr_mul_si(theta, freqs().f[band], pos, MPFR_RNDN);
    mpfr_sin_cos(s, c, theta, MPFR_RNDN);
    return mpfr_get_d(c, MPFR_RNDN);
  }
};

void dense_fast(benchmark::State& state) {
  const rope_reference& ref = reference();
  std::int64_t pos = 100000;
  for (auto _ : state) {
    for (int b = 0; b < bands; ++b) benchmark::DoNotOptimize(ref.cos_sin(pos, b));
    ++pos;
  }
  state.SetItemsProcessed(state.iterations() * bands);
}

void dense_mpfr(benchmark::State& state) {
  mpfr_loop loop;
  std::int64_t pos = 100000;
  for (auto _ : state) {
    for (int b = 0; b < bands; ++b) benchmark::DoNotOptimize(loop(pos, b));
    ++pos;
  }
  state.SetItemsProcessed(state.iterations() * bands);
}

void dense_double(benchmark::State& state) {
  double f[bands];
  for (int b = 0; b < bands; ++b) f[b] = reference().inv_freq(b).hi;
  std::int64_t pos = 100000;
  for (auto _ : state) {
    for (int b = 0; b < bands; ++b) {
      const double theta = static_cast<double>(pos) * f[b];
      benchmark::DoNotOptimize(std::sin(theta));
      benchmark::DoNotOptimize(std::cos(theta));
    }
    ++pos;
  }
  state.SetItemsProcessed(state.iterations() * bands);
}

// The dense path on the dense workload: blocks of 256 consecutive positions from 100000 on, all bands.
void dense_path_run(benchmark::State& state, rope_reference::dense_isa isa) {
  const rope_reference& ref = reference();
  constexpr std::int64_t block = 256;
  std::vector<double> ch(block * bands), cl(block * bands), sh(block * bands), sl(block * bands);
  std::int64_t pos = 100000;
  for (auto _ : state) {
    ref.dense_cos_sin(pos, block, {ch, cl, sh, sl}, isa);
    benchmark::DoNotOptimize(ch.data()), benchmark::DoNotOptimize(sl.data());
    benchmark::ClobberMemory();
    pos += block;
  }
  state.SetItemsProcessed(state.iterations() * block * bands);
}
void dense_path(benchmark::State& state) { dense_path_run(state, rope_reference::dense_isa::automatic); }
void dense_path_generic(benchmark::State& state) { dense_path_run(state, rope_reference::dense_isa::generic); }

void random_fast(benchmark::State& state) {
  const rope_reference& ref = reference();
  const auto& pts = random_workload();
  for (auto _ : state)
    for (const point& p : pts) benchmark::DoNotOptimize(ref.cos_sin(p.pos, p.band));
  state.SetItemsProcessed(state.iterations() * static_cast<std::int64_t>(pts.size()));
}

void random_mpfr(benchmark::State& state) {
  mpfr_loop loop;
  const auto& pts = random_workload();
  for (auto _ : state)
    for (const point& p : pts) benchmark::DoNotOptimize(loop(p.pos, p.band));
  state.SetItemsProcessed(state.iterations() * static_cast<std::int64_t>(pts.size()));
}

void random_double(benchmark::State& state) {
  double f[bands];
  for (int b = 0; b < bands; ++b) f[b] = reference().inv_freq(b).hi;
  const auto& pts = random_workload();
  for (auto _ : state)
    for (const point& p : pts) {
      const double theta = static_cast<double>(p.pos) * f[p.band];
      benchmark::DoNotOptimize(std::sin(theta));
      benchmark::DoNotOptimize(std::cos(theta));
    }
  state.SetItemsProcessed(state.iterations() * static_cast<std::int64_t>(pts.size()));
}

BENCHMARK(dense_fast);
BENCHMARK(dense_mpfr);
BENCHMARK(dense_double);
BENCHMARK(dense_path);
BENCHMARK(dense_path_generic);
BENCHMARK(random_fast);
BENCHMARK(random_mpfr);
BENCHMARK(random_double);

// Prints as usual and keeps items_per_second of every run for the ratio table.
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
  (void)reference(), (void)freqs(), (void)random_workload();  // set-up outside the timings
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  collecting_reporter reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);
  benchmark::Shutdown();

  std::printf("\nper (position, band) value, %d-bit MPFR:\n", precision);
  std::printf("%-8s %14s %14s %14s %10s %10s\n", "workload", "fast/s", "mpfr/s", "double/s", "fast/mpfr",
              "fast/double");
  for (const char* w : {"dense", "random"}) {
    const auto& ips = reporter.items_per_second;
    const auto get = [&](const std::string& k) {
      const auto it = ips.find(std::string(w) + "_" + k);
      return it == ips.end() ? 0.0 : it->second;
    };
    const double fast = get("fast"), mp = get("mpfr"), dbl = get("double");
    if (fast == 0.0) continue;  // filtered out
    std::printf("%-8s %14.4g %14.4g %14.4g %10.1f %10.3f\n", w, fast, mp, dbl, mp > 0 ? fast / mp : 0.0,
                dbl > 0 ? fast / dbl : 0.0);
  }

  // The dense path against the same MPFR and double loops of the dense workload, with the targets.
  const auto& ips = reporter.items_per_second;
  const auto get = [&](const std::string& k) {
    const auto it = ips.find(k);
    return it == ips.end() ? 0.0 : it->second;
  };
  const double mp = get("dense_mpfr"), dbl = get("dense_double"), fast_random = get("random_fast"),
               mp_random = get("random_mpfr");
  const auto verdict = [](double ratio, double target) { return ratio >= target ? "ok" : "BELOW TARGET"; };
  std::printf("\ndense path, dense workload (avx2_fma available: %s):\n",
              rope_reference::dense_avx2_fma_available() ? "yes" : "no");
  std::printf("%-20s %14s %10s %12s %10s %12s\n", "isa", "values/s", "/mpfr", "(>= 250)", "/double", "(>= 2)");
  for (const char* k : {"dense_path", "dense_path_generic"}) {
    const double v = get(k);
    if (v == 0.0 || mp == 0.0 || dbl == 0.0) continue;  // filtered out
    std::printf("%-20s %14.4g %10.1f %12s %10.2f %12s\n", k, v, v / mp, verdict(v / mp, 250.0), v / dbl,
                verdict(v / dbl, 2.0));
  }
  if (fast_random > 0.0 && mp_random > 0.0)
    std::printf("random positions, fast path: /mpfr %.1f (>= 100: %s)\n", fast_random / mp_random,
                verdict(fast_random / mp_random, 100.0));
  return 0;
}
