// tools/bench_audit.cpp — the speed target of `ropecheck audit`, measured in one run.
//
//   bench_audit [--mib N] [--dir D] [--threads T] [--keep]
//
// Writes a correct fp32 dump of about N MiB (default 1024: x and y of 32768 tokens x 32 heads x 128
// dims, llama3-8b's convention with its Llama-3 scaling, positions 0..32767 spread to 131071) made
// by ropecheck's HF fp32 kernel, then times, side by side:
//   1. a naive read of the file's bytes (std::ifstream into a fresh buffer; for comparison: on a VM
//      first-touching fresh pages costs ~5 s per GiB, which load_dump avoids with one mapping),
//   2. load_dump (the audit's reader: parse, widen to double, check the contract),
//   3. the judgement and diagnosis (audit()), and the whole command's sum.
// Target: the whole audit of a 1 GiB fp32 dump < 20 s on a 2-core machine, most of it reading.
// The file is deleted afterwards unless --keep. The page cache is warm for the reads after the
// first (the dump was just written); a cold read is disk-bound on top.
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "audit_input.hpp"
#include "ropecheck/judge/judge.hpp"
#include "ropecheck/angle.hpp"
#include "ropecheck/presets.hpp"
#include "ropecheck/rope.hpp"

namespace {

using namespace ropecheck;
using clock_type = std::chrono::steady_clock;

double seconds_since(clock_type::time_point t) {
  return std::chrono::duration<double>(clock_type::now() - t).count();
}

void write_dump(const std::filesystem::path& file, const rope_config& c, int tokens, int heads) {
  const int d = c.head_dim;
  std::vector<std::int64_t> pos(static_cast<std::size_t>(tokens));
  for (int t = 0; t < tokens; ++t)  // dense start, then spread to 131071
    pos[static_cast<std::size_t>(t)] = t < 1024 ? t : 1024 + static_cast<std::int64_t>(t - 1024) * (131071 - 1024) / (tokens - 1025);
  const std::size_t n = static_cast<std::size_t>(tokens) * static_cast<std::size_t>(heads) * static_cast<std::size_t>(d);
  std::vector<float> x(n), y(n);
  std::uint64_t s = 0x9E3779B97F4A7C15ULL;
  for (auto& v : x) {  // xorshift, values k/64 in [-2, 2]
    s ^= s << 13, s ^= s >> 7, s ^= s << 17;
    v = static_cast<float>(static_cast<int>(s % 257) - 128) / 64.0f;
  }
  const hf_angle<float> cs(c);
  rotate_tokens<float, float>(std::span<const float>(x), std::span<float>(y), pos, heads, rope_geometry::of(c), cs);
  const std::string shape = "[" + std::to_string(tokens) + ", " + std::to_string(heads) + ", " + std::to_string(d) + "]";
  const std::size_t pb = pos.size() * 8, xb = n * 4;
  std::string h = "{\"positions\": {\"dtype\": \"I64\", \"shape\": [" + std::to_string(tokens) +
                  "], \"data_offsets\": [0, " + std::to_string(pb) + "]}, \"x\": {\"dtype\": \"F32\", \"shape\": " +
                  shape + ", \"data_offsets\": [" + std::to_string(pb) + ", " + std::to_string(pb + xb) +
                  "]}, \"y\": {\"dtype\": \"F32\", \"shape\": " + shape + ", \"data_offsets\": [" +
                  std::to_string(pb + xb) + ", " + std::to_string(pb + 2 * xb) + "]}}";
  while (h.size() % 8) h += ' ';
  std::ofstream out(file, std::ios::binary);
  const std::uint64_t hl = h.size();
  out.write(reinterpret_cast<const char*>(&hl), 8);
  out.write(h.data(), static_cast<std::streamsize>(h.size()));
  out.write(reinterpret_cast<const char*>(pos.data()), static_cast<std::streamsize>(pb));
  out.write(reinterpret_cast<const char*>(x.data()), static_cast<std::streamsize>(xb));
  out.write(reinterpret_cast<const char*>(y.data()), static_cast<std::streamsize>(xb));
  if (!out.flush()) throw std::runtime_error("cannot write " + file.string());
}

}  // namespace

int main(int argc, char** argv) {
  int mib = 1024, threads = 0;
  bool keep = false;
  std::filesystem::path dir = std::filesystem::temp_directory_path();
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--mib") && i + 1 < argc) mib = std::atoi(argv[++i]);
    else if (!std::strcmp(argv[i], "--dir") && i + 1 < argc) dir = argv[++i];
    else if (!std::strcmp(argv[i], "--threads") && i + 1 < argc) threads = std::atoi(argv[++i]);
    else if (!std::strcmp(argv[i], "--keep")) keep = true;
    else {
      std::fprintf(stderr, "usage: bench_audit [--mib N] [--dir D] [--threads T] [--keep]\n");
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

  t = clock_type::now();
  {
    std::ifstream in(file, std::ios::binary);
    std::vector<char> buf(static_cast<std::size_t>(bytes));
    in.read(buf.data(), static_cast<std::streamsize>(buf.size()));
  }
  const double t_bytes = seconds_since(t);

  t = clock_type::now();
  auto in = audit::load_dump(file);
  const double t_load = seconds_since(t);

  judge::audit_options o;
  o.threads = threads;
  t = clock_type::now();
  const auto v = judge::audit(in.d, c, o);
  const double t_audit = seconds_since(t);

  std::printf("verdict: %s, max error %.3g ulps (error/allowance %.3g), %lld values\n", v.pass ? "PASS" : "FAIL",
              v.max_error_ulps, v.worst_ratio, static_cast<long long>(v.elements));
  std::printf("\n%-44s %8s %10s\n", "step", "seconds", "MiB/s");
  std::printf("%-44s %8.2f %10.0f\n", "1. naive ifstream read of the bytes (compare)", t_bytes, bytes / 1048576.0 / t_bytes);
  std::printf("%-44s %8.2f %10.0f\n", "2. load_dump (parse, widen, check)", t_load, bytes / 1048576.0 / t_load);
  std::printf("%-44s %8.2f %10.0f\n", "3. audit (judge every value, diagnose)", t_audit, bytes / 1048576.0 / t_audit);
  std::printf("%-44s %8.2f %10s\n", "whole audit = 2 + 3 (target < 20 s for 1 GiB)", t_load + t_audit, "");
  std::printf("reading share of the whole: %.0f%%; reference values: %lld (token, band) pairs for %lld elements\n",
              100 * t_load / (t_load + t_audit), static_cast<long long>(tokens) * (c.rotary_dim / 2),
              static_cast<long long>(v.elements));
  if (!keep) std::filesystem::remove(file);
  return 0;
}
