// judge/src/probe.cpp — see ropecheck/judge/probe.hpp for the contract.
#include "ropecheck/judge/probe.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

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
  s.x = probe_inputs(seed, s.tokens(), heads, c.head_dim);
  return s;
}

std::vector<double> probe_inputs(std::uint64_t seed, int tokens, int heads, int head_dim) {
  std::uint64_t state = seed;
  std::vector<double> x(static_cast<std::size_t>(tokens) * static_cast<std::size_t>(heads) *
                        static_cast<std::size_t>(head_dim));
  for (auto& v : x) {
    const auto k = static_cast<int>(splitmix64(state) % 255) - 127;  // [-127, 127]
    v = (k == 0 ? 1 : k) / 128.0;  // never zero: every pair is measurable
  }
  return x;
}

std::uint64_t qk_seed(std::uint64_t seed, qk_stream s) noexcept {
  std::uint64_t state = seed ^ (0x51ed2700ULL + static_cast<std::uint64_t>(s));
  return splitmix64(state);
}

qk_inputs make_qk_inputs(const probe_set& p, int kv_heads) {
  if (kv_heads < 1 || p.heads % kv_heads != 0)
    throw std::invalid_argument("qk probe: " + std::to_string(kv_heads) + " key heads must divide the " +
                                std::to_string(p.heads) + " query heads");
  qk_inputs in;
  in.kv_heads = kv_heads;
  in.k = probe_inputs(qk_seed(p.seed, qk_stream::keys), p.tokens(), kv_heads, p.head_dim);
  in.q_alt = probe_inputs(qk_seed(p.seed, qk_stream::other_queries), p.tokens(), p.heads, p.head_dim);
  in.k_alt = probe_inputs(qk_seed(p.seed, qk_stream::other_keys), p.tokens(), kv_heads, p.head_dim);
  return in;
}

const char* call_form_phrase(call_form f) noexcept {
  return f == call_form::prefill ? "prefill calls (runs of consecutive positions, 2 to 64 tokens a call)"
                                 : "decode calls (one token a call)";
}

const char* to_string(call_form f) noexcept { return f == call_form::prefill ? "prefill" : "decode"; }

std::vector<probe_call> plan_calls(const probe_set& p, call_form form) {
  std::vector<probe_call> plan;
  const auto at = [&p](int t) { return p.positions[static_cast<std::size_t>(t)]; };
  const auto tokens = static_cast<std::size_t>(p.tokens());
  if (tokens > 0 && p.position_rows.size() % tokens != 0)
    throw std::invalid_argument("plan_calls: position_rows must hold rows * tokens positions");
  const std::size_t rows = p.position_rows.empty() ? 0 : p.position_rows.size() / tokens;
  // Token t + 1 goes on the call of token t: 1-D, its position is the next; M-RoPE, its row 0 stays
  // or steps by one (see the header).
  const auto continues = [&](int u) {
    const std::int64_t step = at(u) - at(u - 1);
    return step == 1 || (rows > 0 && step == 0);
  };
  int t = 0;
  while (t < p.tokens()) {
    int n = 1;
    if (form == call_form::prefill)
      while (t + n < p.tokens() && n < max_prefill_tokens && continues(t + n)) ++n;
    probe_call c;
    c.first = t;
    c.count = n;
    c.positions.assign(p.positions.begin() + t, p.positions.begin() + t + n);
    if (form == call_form::prefill && n == 1) {
      const std::int64_t pos = at(t);
      c.has_neighbour = true;
      c.neighbour = pos > 0 ? pos - 1 : pos + 1;
      c.probe_at = pos > 0 ? 1 : 0;
      c.positions.insert(c.positions.begin() + (pos > 0 ? 0 : 1), c.neighbour);
    }
    for (std::size_t r = 0; r < rows; ++r)  // this call's slice of every row; the neighbour a text token
      for (int j = 0; j < static_cast<int>(c.positions.size()); ++j) {
        const bool neighbour = c.has_neighbour && j != c.probe_at;
        c.position_rows.push_back(neighbour ? c.neighbour
                                            : p.position_rows[r * tokens + static_cast<std::size_t>(t + j - c.probe_at)]);
      }
    plan.push_back(std::move(c));
    t += n;
  }
  return plan;
}

}  // namespace ropecheck::judge
