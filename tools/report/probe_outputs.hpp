// tools/report/probe_outputs.hpp — an implementation of the report driven on the judge's probe set
// (internal to the report engine; the public door is strategy_outputs() in strategy_outputs.hpp).
//
// probe_outputs<Compute, Storage>(s, cfg, probe): every probe head narrowed to Storage (exact: the
// probe's values are k/128), rotated by rotate_heads<Compute, Storage> with strategy s's own cos/sin
// at each probe position (s.cos_sin, i.e. after every cast and cache, once per (position, band), as
// the report's runner rotates its head vectors), widened back to double. The dump's dtype is the
// Storage type's name as the judge reads it: "float32", "bfloat16", "float16", "float64".
#pragma once

#include <cstddef>
#include <span>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include "ropecheck/angle.hpp"
#include "ropecheck/judge/judge.hpp"
#include "ropecheck/judge/probe.hpp"
#include "ropecheck/rope.hpp"
#include "ropecheck/scalar.hpp"

namespace ropecheck::report::detail {

template <class Storage>
[[nodiscard]] std::string judge_dtype_name() {
  if constexpr (std::is_same_v<Storage, float>) return "float32";
  else if constexpr (std::is_same_v<Storage, double>) return "float64";
  else if constexpr (std::is_same_v<Storage, bfloat16>) return "bfloat16";
  else if constexpr (std::is_same_v<Storage, float16>) return "float16";
  else static_assert(!sizeof(Storage), "the judge reads float32, bfloat16, float16 and float64 dumps only");
}

template <class V>
struct cos_sin_row {
  const cos_sin_pair<V>* row;
  [[nodiscard]] cos_sin_pair<V> cos_sin(std::int64_t, int band) const { return row[band]; }
};

template <class Compute, class Storage, class S>
[[nodiscard]] judge::dump probe_outputs(const S& s, const rope_config& cfg, const judge::probe_set& probe) {
  using V = typename S::value_type;
  using st = scalar_traits<Storage>;
  if (probe.head_dim != cfg.head_dim)
    throw std::invalid_argument("strategy_outputs: the probe's head_dim " + std::to_string(probe.head_dim) +
                                " is not the convention's " + std::to_string(cfg.head_dim));
  const rope_geometry g = rope_geometry::of(cfg);
  const auto per_token = static_cast<std::size_t>(probe.heads) * static_cast<std::size_t>(probe.head_dim);
  if (probe.x.size() != per_token * static_cast<std::size_t>(probe.tokens()))
    throw std::invalid_argument("strategy_outputs: the probe's x does not hold tokens * heads * head_dim values");
  judge::dump d;
  d.positions = probe.positions;
  d.tokens = probe.tokens();
  d.heads = probe.heads;
  d.head_dim = probe.head_dim;
  d.x = probe.x;
  d.y.resize(probe.x.size());
  d.dtype = judge_dtype_name<Storage>();
  std::vector<cos_sin_pair<V>> row(static_cast<std::size_t>(g.bands()));
  std::vector<Storage> xs(per_token), ys(per_token);
  for (std::size_t t = 0; t < d.positions.size(); ++t) {
    const std::int64_t pos = d.positions[t];
    for (int b = 0; b < g.bands(); ++b) row[static_cast<std::size_t>(b)] = s.cos_sin(pos, b);
    for (std::size_t j = 0; j < per_token; ++j) xs[j] = st::narrow(static_cast<long double>(probe.x[t * per_token + j]));
    rotate_heads<Compute, Storage>(std::span<const Storage>(xs), std::span<Storage>(ys), probe.heads, g, pos,
                                   cos_sin_row<V>{row.data()});
    for (std::size_t j = 0; j < per_token; ++j) d.y[t * per_token + j] = static_cast<double>(st::widen(ys[j]));
  }
  return d;
}

}  // namespace ropecheck::report::detail
