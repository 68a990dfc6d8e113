// tests/judge/mrope_dumps.hpp — M-RoPE dumps made with ropecheck's M-RoPE kernel (ropecheck/mrope.hpp)
// for the judge's tests: positions laid out as HF's get_rope_index lays them out
// (transformers models/qwen2_vl/modeling_qwen2_vl.py, Qwen2VLModel.get_rope_index): text tokens at
// 0..63 (every row the same), an image of 1 x 8 x 8 patches starting at st = 64 (temporal st, height
// st + row, width st + column), a video of 2 x 4 x 4 patches after it (temporal st' + frame), then text
// again from max + 1 and the spread of judge_dumps.hpp's kPos past it. Inputs k/64 as there.
#pragma once

#include <algorithm>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "judge_dumps.hpp"
#include "ropecheck/mrope.hpp"

namespace ropecheck::judge_test {

struct mrope_positions {
  std::vector<std::int64_t> rows;  // [3][tokens]
  int tokens = 0;
};

inline mrope_positions hf_style_positions() {
  std::vector<std::int64_t> t, h, w;
  auto text = [&](std::int64_t p) { t.push_back(p), h.push_back(p), w.push_back(p); };
  for (int p = 0; p < 64; ++p) text(p);
  std::int64_t st = 64;
  for (int i = 0; i < 8; ++i)  // image: 1 x 8 x 8
    for (int j = 0; j < 8; ++j) t.push_back(st), h.push_back(st + i), w.push_back(st + j);
  st += 8;  // max(0, 7, 7) + 1
  for (int f = 0; f < 2; ++f)  // video: 2 x 4 x 4
    for (int i = 0; i < 4; ++i)
      for (int j = 0; j < 4; ++j) t.push_back(st + f), h.push_back(st + i), w.push_back(st + j);
  st += 4;
  for (int p = 0; p < 16; ++p) text(st + p);
  for (std::int64_t q : {1000, 1777, 2500, 3333, 4097, 5000, 15962, 32769, 65537, 100000}) text(q);
  mrope_positions out;
  out.tokens = static_cast<int>(t.size());
  out.rows = t;
  out.rows.insert(out.rows.end(), h.begin(), h.end());
  out.rows.insert(out.rows.end(), w.begin(), w.end());
  return out;
}

inline rope_config mrope_claim(mrope_kind k, std::vector<int> sections) {
  rope_config c = claimed_config(128);
  c.base = 1000000.0;  // Qwen2-VL / Qwen3-VL rope_theta
  c.mrope = k;
  c.mrope_section = std::move(sections);
  return c;
}
inline rope_config qwen2vl() { return mrope_claim(mrope_kind::contiguous, {16, 24, 24}); }
inline rope_config qwen3vl() { return mrope_claim(mrope_kind::interleaved, {24, 20, 20}); }

// The kernel run with `cs` on the rows `used` and the band-to-row map of `split`; the dump records the
// `told` rows (positions = row 0).
template <class Storage, class Compute = float, class CS>
dump make_mrope_dump(const rope_config& split, const CS& cs, const mrope_positions& told, const mrope_positions& used,
                     const std::string& dtype, unsigned seed = 11) {
  const rope_geometry g = rope_geometry::of(split);
  dump d;
  d.tokens = told.tokens;
  d.positions.assign(told.rows.begin(), told.rows.begin() + told.tokens);
  d.position_rows = told.rows;
  d.heads = kHeads;
  d.head_dim = g.head_dim;
  d.dtype = dtype;
  d.x = random_x(static_cast<std::size_t>(d.tokens) * kHeads * g.head_dim, seed);
  std::vector<Storage> xs(d.x.size()), ys(d.x.size());
  for (std::size_t j = 0; j < xs.size(); ++j) xs[j] = scalar_traits<Storage>::narrow(d.x[j]);
  const std::vector<int> band_rows = mrope_band_rows_of(split);
  rotate_tokens_mrope<Compute, Storage>(std::span<const Storage>(xs), std::span<Storage>(ys),
                                        std::span<const std::int64_t>(used.rows), split.position_rows(), kHeads, g,
                                        std::span<const int>(band_rows), cs);
  d.y.resize(ys.size());
  for (std::size_t j = 0; j < ys.size(); ++j) d.y[j] = static_cast<double>(scalar_traits<Storage>::widen(ys[j]));
  return d;
}

// Rows rearranged: row r of the result is row from[r] of p.
inline mrope_positions permuted(const mrope_positions& p, std::vector<int> from) {
  mrope_positions out{{}, p.tokens};
  for (int r : from) out.rows.insert(out.rows.end(), p.rows.begin() + r * p.tokens, p.rows.begin() + (r + 1) * p.tokens);
  return out;
}

}  // namespace ropecheck::judge_test
