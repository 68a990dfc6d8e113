// tools/bench_audit.cpp — the speed and memory targets of `ropecheck audit`, measured in one run.
//
//   bench_audit [--mib N] [--dir D] [--threads T] [--keep] [--streamed-only]
//
// Writes a correct fp32 dump of about N MiB (default 1024: x and y of 32768 tokens x 32 heads x 128
// dims, llama3-8b's convention with its Llama-3 scaling, positions 0..32767 spread to 131071) made
// by ropecheck's HF fp32 kernel, a chunk of tokens at a time (the writer holds ~16 MiB, whatever N),
// then audits it twice, each in a child process of its own so each peak is its own:
//   widened   the way the audit read before the dump view: every value decoded to double
//             (read_safetensors), then judge::audit on the widened dump;
//   streamed  the audit's door now: load_dump maps the file and checks the contract, judge::audit
//             judges x and y where they lie, in fp32, the diagnosis subset widened.
// Each prints the read and judge seconds and shares, peak RSS (getrusage ru_maxrss) and the peaks of
// its anonymous and file-backed parts (RssAnon, RssFile of /proc/self/status, sampled every 5 ms):
// the page cache a read-only mapping touches counts in RSS as file-backed, the heap as anonymous.
// Targets for a 1 GiB fp32 dump on a 2-core machine: whole audit <= 3 s, peak RSS <= 1.25 x the file.
// --streamed-only skips the widened run (a 10 GiB dump widened is 20 GiB of doubles). The file is
// deleted afterwards unless --keep. The page cache is warm (the dump was just written).
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "audit_input.hpp"
#include "ropecheck/angle.hpp"
#include "ropecheck/judge/dump_view.hpp"
#include "ropecheck/judge/judge.hpp"
#include "ropecheck/presets.hpp"
#include "ropecheck/rope.hpp"
#include "tensor_file.hpp"

namespace {

using namespace ropecheck;
using clock_type = std::chrono::steady_clock;

double seconds_since(clock_type::time_point t) {
  return std::chrono::duration<double>(clock_type::now() - t).count();
}

std::int64_t position_of(int t, int tokens) {  // dense start, then spread to 131071
  return t < 1024 ? t : 1024 + static_cast<std::int64_t>(t - 1024) * (131071 - 1024) / (tokens - 1025);
}

void write_dump(const std::filesystem::path& file, const rope_config& c, int tokens, int heads) {
  const int d = c.head_dim;
  const std::size_t row = static_cast<std::size_t>(heads) * static_cast<std::size_t>(d);
  const std::size_t n = static_cast<std::size_t>(tokens) * row;
  const std::string shape = "[" + std::to_string(tokens) + ", " + std::to_string(heads) + ", " + std::to_string(d) + "]";
  const std::size_t pb = static_cast<std::size_t>(tokens) * 8, xb = n * 4;
  std::string h = "{\"positions\": {\"dtype\": \"I64\", \"shape\": [" + std::to_string(tokens) +
                  "], \"data_offsets\": [0, " + std::to_string(pb) + "]}, \"x\": {\"dtype\": \"F32\", \"shape\": " +
                  shape + ", \"data_offsets\": [" + std::to_string(pb) + ", " + std::to_string(pb + xb) +
                  "]}, \"y\": {\"dtype\": \"F32\", \"shape\": " + shape + ", \"data_offsets\": [" +
                  std::to_string(pb + xb) + ", " + std::to_string(pb + 2 * xb) + "]}}";
  while (h.size() % 8) h += ' ';
  std::vector<std::int64_t> pos(static_cast<std::size_t>(tokens));
  for (int t = 0; t < tokens; ++t) pos[static_cast<std::size_t>(t)] = position_of(t, tokens);
  std::fstream out(file, std::ios::binary | std::ios::in | std::ios::out | std::ios::trunc);
  const std::uint64_t hl = h.size();
  out.write(reinterpret_cast<const char*>(&hl), 8);
  out.write(h.data(), static_cast<std::streamsize>(h.size()));
  out.write(reinterpret_cast<const char*>(pos.data()), static_cast<std::streamsize>(pb));
  const std::streamoff x0 = static_cast<std::streamoff>(8 + h.size() + pb), y0 = x0 + static_cast<std::streamoff>(xb);
  const hf_angle<float> cs(c);
  const int chunk = std::max(1, static_cast<int>((std::size_t{4} << 20) / (row * 4)));
  std::vector<float> x, y;
  std::uint64_t s = 0x9E3779B97F4A7C15ULL;
  for (int t0 = 0; t0 < tokens; t0 += chunk) {
    const int t1 = std::min(tokens, t0 + chunk);
    x.resize(static_cast<std::size_t>(t1 - t0) * row);
    y.resize(x.size());
    for (auto& v : x) {  // xorshift, values k/64 in [-2, 2]
      s ^= s << 13, s ^= s >> 7, s ^= s << 17;
      v = static_cast<float>(static_cast<int>(s % 257) - 128) / 64.0f;
    }
    const std::vector<std::int64_t> p(pos.begin() + t0, pos.begin() + t1);
    rotate_tokens<float, float>(std::span<const float>(x), std::span<float>(y), p, heads, rope_geometry::of(c), cs);
    const auto off = static_cast<std::streamoff>(static_cast<std::size_t>(t0) * row * 4);
    out.seekp(x0 + off);
    out.write(reinterpret_cast<const char*>(x.data()), static_cast<std::streamsize>(x.size() * 4));
    out.seekp(y0 + off);
    out.write(reinterpret_cast<const char*>(y.data()), static_cast<std::streamsize>(y.size() * 4));
  }
  if (!out.flush()) throw std::runtime_error("cannot write " + file.string());
}

// kB of a /proc/self/status field ("RssAnon:", "RssFile:").
long status_kb(const char* field) {
  std::ifstream in("/proc/self/status");
  std::string line;
  const std::size_t n = std::strlen(field);
  while (std::getline(in, line))
    if (line.compare(0, n, field) == 0) return std::atol(line.c_str() + n);
  return -1;
}

struct run_result {
  double read = 0, judge = 0;
  long maxrss_kb = 0, anon_peak_kb = 0, file_peak_kb = 0;
  bool pass = false;
  double worst_ratio = 0, max_ulps = 0;
  long long elements = 0;
  int tokens_diagnosed = 0;
};

// The peaks of RssAnon and RssFile while f runs, sampled every 5 ms.
template <class F>
void sampled(run_result& r, F f) {
  std::atomic<bool> stop{false};
  std::atomic<long> anon{0}, filed{0};
  std::thread sampler([&] {
    while (!stop.load()) {
      anon = std::max(anon.load(), status_kb("RssAnon:"));
      filed = std::max(filed.load(), status_kb("RssFile:"));
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
  });
  f();
  stop = true;
  sampler.join();
  r.anon_peak_kb = std::max(anon.load(), status_kb("RssAnon:"));
  r.file_peak_kb = std::max(filed.load(), status_kb("RssFile:"));
}

run_result widened(const std::filesystem::path& file, const rope_config& c, const judge::audit_options& o) {
  run_result r;
  sampled(r, [&] {
    auto t = clock_type::now();
    judge::dump d;
    {
      auto ts = audit::read_safetensors(file);
      d.tokens = static_cast<int>(ts.at("x").shape[0]);
      d.heads = static_cast<int>(ts.at("x").shape[1]);
      d.head_dim = static_cast<int>(ts.at("x").shape[2]);
      d.dtype = "float32";
      for (double p : ts.at("positions").values) d.positions.push_back(static_cast<std::int64_t>(p));
      d.x = std::move(ts.at("x").values);
      d.y = std::move(ts.at("y").values);
    }
    r.read = seconds_since(t);
    t = clock_type::now();
    const auto v = judge::audit(d, c, o);
    r.judge = seconds_since(t);
    r.pass = v.pass, r.worst_ratio = v.worst_ratio, r.max_ulps = v.max_error_ulps, r.elements = v.elements;
    r.tokens_diagnosed = v.tokens_diagnosed;
  });
  return r;
}

run_result streamed(const std::filesystem::path& file, const rope_config& c, const judge::audit_options& o) {
  run_result r;
  sampled(r, [&] {
    auto t = clock_type::now();
    const auto in = audit::load_dump(file);
    r.read = seconds_since(t);
    t = clock_type::now();
    const auto v = judge::audit(in.d, c, o);
    r.judge = seconds_since(t);
    r.pass = v.pass, r.worst_ratio = v.worst_ratio, r.max_ulps = v.max_error_ulps, r.elements = v.elements;
    r.tokens_diagnosed = v.tokens_diagnosed;
  });
  return r;
}

// f in a child process, its result and its own peak RSS back through a pipe.
template <class F>
run_result in_child(F f) {
  int fds[2];
  if (::pipe(fds) != 0) throw std::runtime_error("pipe failed");
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::close(fds[0]);
    run_result r = f();
    rusage ru{};
    ::getrusage(RUSAGE_SELF, &ru);
    r.maxrss_kb = ru.ru_maxrss;
    const ssize_t w = ::write(fds[1], &r, sizeof r);
    ::_exit(w == static_cast<ssize_t>(sizeof r) ? 0 : 1);
  }
  ::close(fds[1]);
  run_result r;
  const ssize_t got = ::read(fds[0], &r, sizeof r);
  ::close(fds[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  if (got != static_cast<ssize_t>(sizeof r) || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
    throw std::runtime_error("the measuring child failed");
  return r;
}

void print_run(const char* name, const run_result& r, double bytes) {
  const double whole = r.read + r.judge, mib = bytes / 1048576.0;
  std::printf("%-9s %7.2f %7.2f %7.2f   %3.0f%% / %3.0f%%  %9.0f %6.2f  %9.0f %9.0f   %s %.3g %.4g ulps\n", name, r.read,
              r.judge, whole, 100 * r.read / whole, 100 * r.judge / whole, static_cast<double>(r.maxrss_kb) / 1024,
              static_cast<double>(r.maxrss_kb) * 1024 / bytes, static_cast<double>(r.anon_peak_kb) / 1024,
              static_cast<double>(r.file_peak_kb) / 1024, r.pass ? "PASS" : "FAIL", r.worst_ratio, r.max_ulps);
  (void)mib;
}

}  // namespace

int main(int argc, char** argv) {
  int mib = 1024, threads = 0;
  bool keep = false, streamed_only = false;
  std::filesystem::path dir = std::filesystem::temp_directory_path();
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--mib") && i + 1 < argc) mib = std::atoi(argv[++i]);
    else if (!std::strcmp(argv[i], "--dir") && i + 1 < argc) dir = argv[++i];
    else if (!std::strcmp(argv[i], "--threads") && i + 1 < argc) threads = std::atoi(argv[++i]);
    else if (!std::strcmp(argv[i], "--keep")) keep = true;
    else if (!std::strcmp(argv[i], "--streamed-only")) streamed_only = true;
    else {
      std::fprintf(stderr, "usage: bench_audit [--mib N] [--dir D] [--threads T] [--keep] [--streamed-only]\n");
      return 2;
    }
  }
  const rope_config c = *find_preset("llama3-8b");
  const int heads = 32;
  const int tokens = std::max(2048, static_cast<int>(static_cast<double>(mib) * 1048576.0 / (2.0 * 4 * heads * c.head_dim)));
  const auto file = dir / "ropecheck_bench_audit.safetensors";
  auto t = clock_type::now();
  write_dump(file, c, tokens, heads);
  const double t_write = seconds_since(t);
  const double bytes = static_cast<double>(std::filesystem::file_size(file));
  std::printf("dump: %s, %.1f MiB (%d tokens x %d heads x %d dims, fp32), written in %.2f s\n", file.c_str(),
              bytes / 1048576.0, tokens, heads, c.head_dim, t_write);

  judge::audit_options o;
  o.threads = threads;
  std::printf("\n%-9s %7s %7s %7s   %-11s  %9s %6s  %9s %9s   %s\n", "run", "read s", "judge s", "whole s", "read/judge",
              "peak MiB", "x file", "anon MiB", "file MiB", "verdict, error/allowance, max error");
  run_result w;
  if (!streamed_only) {
    w = in_child([&] { return widened(file, c, o); });
    print_run("widened", w, bytes);
  }
  const run_result s = in_child([&] { return streamed(file, c, o); });
  print_run("streamed", s, bytes);
  std::printf("\nstreamed: %lld values judged, %d tokens diagnosed; targets for 1 GiB: whole <= 3 s, peak <= 1.25 x file\n",
              s.elements, s.tokens_diagnosed);
  if (!streamed_only && (w.pass != s.pass || w.worst_ratio != s.worst_ratio || w.max_ulps != s.max_ulps || w.elements != s.elements)) {
    std::printf("the two runs' verdicts differ\n");
    if (!keep) std::filesystem::remove(file);
    return 1;
  }
  if (!keep) std::filesystem::remove(file);
  return 0;
}
