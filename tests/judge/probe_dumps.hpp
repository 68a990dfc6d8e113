// tests/judge/probe_dumps.hpp — dumps on the probe set (ropecheck/judge/probe.hpp: what the plugin door
// feeds a kernel), made with ropecheck's own kernels and any cos/sin strategy, for the per-head and the
// accumulated-table tests (tests/judge/pass_heads_test.cpp, tests/judge/pass_accumulated_test.cpp).
// The probe's seed is fixed and printed.
#pragma once

#include <cstdio>
#include <span>
#include <string>
#include <vector>

#include "judge/judge_dumps.hpp"
#include "ropecheck/judge/probe.hpp"

namespace ropecheck::judge_test {

inline constexpr std::uint64_t kProbeDumpSeed = 20240611;

// rotate_tokens<Compute, Storage> with `cs` on the probe set of c (4 heads), tokens at positions <= pmax.
template <class Storage, class Compute = float, class CS>
dump probe_dump_in(const rope_config& c, const rope_geometry& g, const CS& cs, const std::string& dtype,
                   std::uint64_t seed, std::int64_t pmax = INT64_MAX, int heads = 4) {
  const judge::probe_set ps = judge::make_probe(c, seed, heads);
  std::printf("[ropecheck] seed %llu (probe set: %d tokens, %d heads)\n", static_cast<unsigned long long>(seed),
              ps.tokens(), heads);
  dump d;
  d.heads = ps.heads;
  d.head_dim = ps.head_dim;
  d.dtype = dtype;
  const auto per = static_cast<std::size_t>(ps.heads) * static_cast<std::size_t>(ps.head_dim);
  for (int t = 0; t < ps.tokens(); ++t) {
    if (ps.positions[static_cast<std::size_t>(t)] > pmax) continue;
    d.positions.push_back(ps.positions[static_cast<std::size_t>(t)]);
    d.x.insert(d.x.end(), ps.x.begin() + static_cast<std::ptrdiff_t>(t * per),
               ps.x.begin() + static_cast<std::ptrdiff_t>((t + 1) * per));
  }
  d.tokens = static_cast<int>(d.positions.size());
  std::vector<Storage> xs(d.x.size()), ys(d.x.size());
  for (std::size_t j = 0; j < xs.size(); ++j) xs[j] = scalar_traits<Storage>::narrow(d.x[j]);
  rotate_tokens<Compute, Storage>(std::span<const Storage>(xs), std::span<Storage>(ys), d.positions, d.heads, g, cs);
  d.y.resize(ys.size());
  for (std::size_t j = 0; j < ys.size(); ++j) d.y[j] = static_cast<double>(scalar_traits<Storage>::widen(ys[j]));
  return d;
}

// The same over c's own geometry, with this header's seed.
template <class Storage, class Compute = float, class CS>
dump probe_dump(const rope_config& c, const CS& cs, const std::string& dtype, std::int64_t pmax = INT64_MAX,
                int heads = 4) {
  return probe_dump_in<Storage, Compute>(c, rope_geometry::of(c), cs, dtype, kProbeDumpSeed, pmax, heads);
}

// Head h's coordinates of token t (x or y of a dump), as a span to read or write.
inline std::span<double> head_of(std::vector<double>& v, const dump& d, int t, int h) {
  const auto o = (static_cast<std::size_t>(t) * static_cast<std::size_t>(d.heads) + static_cast<std::size_t>(h)) *
                 static_cast<std::size_t>(d.head_dim);
  return std::span<double>(v).subspan(o, static_cast<std::size_t>(d.head_dim));
}

}  // namespace ropecheck::judge_test
