// judge/src/probe.cpp — see ropecheck/judge/probe.hpp for the contract.
#include "ropecheck/judge/probe.hpp"

#include <algorithm>
#include <cmath>

namespace ropecheck::judge {
namespace {

std::uint64_t splitmix64(std::uint64_t& s) {
  std::uint64_t z = (s += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

}  // namespace

std::vector<std::int64_t> probe_positions(const rope_config& c) {
  std::vector<std::int64_t> p;
  for (std::int64_t i = 0; i < 64; ++i) p.push_back(i);
  for (const std::int64_t edge : {std::int64_t{256}, std::int64_t{2048}, std::int64_t{4096}, std::int64_t{65504},
                                  std::int64_t{1} << 24})
    for (std::int64_t x = edge - 8; x <= edge + 8; ++x) p.push_back(x);
  const std::int64_t end = std::max<std::int64_t>(2 * std::max<std::int64_t>(c.max_position_embeddings, 1), 1 << 17);
  for (int k = 1;; ++k) {  // 8 per octave beyond 64
    const auto x = static_cast<std::int64_t>(std::floor(64.0 * std::exp2(k / 8.0)));
    if (x >= end) break;
    p.push_back(x);
  }
  p.push_back(end);
  std::sort(p.begin(), p.end());
  p.erase(std::unique(p.begin(), p.end()), p.end());
  return p;
}

probe_set make_probe(const rope_config& c, std::uint64_t seed, int heads) {
  probe_set s;
  s.positions = probe_positions(c);
  s.heads = heads;
  s.head_dim = c.head_dim;
  s.seed = seed;
  std::uint64_t state = seed;
  const auto n = static_cast<std::size_t>(s.tokens()) * static_cast<std::size_t>(heads) *
                 static_cast<std::size_t>(c.head_dim);
  s.x.resize(n);
  for (auto& v : s.x) {
    const auto k = static_cast<int>(splitmix64(state) % 255) - 127;  // [-127, 127]
    v = (k == 0 ? 1 : k) / 128.0;  // never zero: every pair is measurable
  }
  return s;
}

}  // namespace ropecheck::judge
