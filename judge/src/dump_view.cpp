// judge/src/dump_view.cpp — see ropecheck/judge/dump_view.hpp.
#include "ropecheck/judge/dump_view.hpp"

namespace ropecheck::judge {

const char* storage_name(storage s) noexcept {
  switch (s) {
    case storage::f32: return "float32";
    case storage::bf16: return "bfloat16";
    case storage::f16: return "float16";
    case storage::f64: break;
  }
  return "float64";
}

dump_view view_of(const dump& d) {
  dump_view v;
  v.positions = d.positions;
  v.position_rows = d.position_rows;
  v.allowance_positions = d.allowance_positions;
  v.tokens = d.tokens, v.heads = d.heads, v.head_dim = d.head_dim;
  v.dtype = d.dtype;
  v.x = {d.x.data(), storage::f64};
  v.y = {d.y.data(), storage::f64};
  v.layout = dump_layout::token_major(d.heads, d.head_dim);
  return v;
}

dump widen_tokens(const dump_view& v, const std::vector<int>& tokens) {
  dump s;
  s.dtype = v.dtype;
  s.heads = v.heads;
  s.head_dim = v.head_dim;
  s.tokens = static_cast<int>(tokens.size());
  const std::size_t row = static_cast<std::size_t>(v.heads) * static_cast<std::size_t>(v.head_dim);
  s.x.resize(row * tokens.size());
  s.y.resize(row * tokens.size());
  s.positions.reserve(tokens.size());
  std::size_t o = 0;
  std::int64_t kept = 0;  // tokens before it are done with (an ascending list releases as it goes)
  for (int t : tokens) {
    s.positions.push_back(v.positions[static_cast<std::size_t>(t)]);
    if (!v.allowance_positions.empty()) s.allowance_positions.push_back(v.allowance_positions[static_cast<std::size_t>(t)]);
    for (int h = 0; h < v.heads; ++h)
      for (int j = 0; j < v.head_dim; ++j, ++o) s.x[o] = v.x_at(t, h, j), s.y[o] = v.y_at(t, h, j);
    // The pages a read maps around each token (fault-around, large folios) would otherwise stay
    // mapped between the spread tokens: most of the file.
    if (v.done_with && t >= kept) v.done_with(kept, t + 1), kept = t + 1;
  }
  if (!v.position_rows.empty()) {  // M-RoPE: the same tokens of every row
    const std::size_t rows = v.position_rows.size() / static_cast<std::size_t>(v.tokens);
    s.position_rows.reserve(rows * tokens.size());
    for (std::size_t r = 0; r < rows; ++r)
      for (int t : tokens) s.position_rows.push_back(v.position_rows[r * static_cast<std::size_t>(v.tokens) + static_cast<std::size_t>(t)]);
  }
  return s;
}

dump widen(const dump_view& v) {
  std::vector<int> all(static_cast<std::size_t>(v.tokens));
  for (int t = 0; t < v.tokens; ++t) all[static_cast<std::size_t>(t)] = t;
  return widen_tokens(v, all);
}

}  // namespace ropecheck::judge
