// ropecheck/mrope.hpp — the M-RoPE kernels (Qwen2-VL / Qwen2.5-VL contiguous sections, Qwen3-VL
// interleaved): rotate query/key heads whose positions are a [rows, tokens] array, band i turned by
// the position of row rope_config::position_row(i).
//
// Contract of rotate_heads_mrope<Compute>(x, y, heads, geometry, rows_at, band_rows, cs):
//   rows_at    the token's position in each row (temporal, height, width for Qwen2-VL)
//   band_rows  the row of every band (mrope_band_rows(config), one per band)
//   math       rotate_heads itself (rope.hpp) over a cos/sin source giving band i
//              cs.cos_sin(rows_at[band_rows[i]], i): every operand converted to Compute, each operation
//              rounded in Compute, one rounding to Storage. So a token whose rows are all p gets rotate_heads(..., p, ...) bit for bit
//              (tests/properties/mrope_properties_test.cpp), with the same error bound.
// cos/sin are looked up once per (row position, band), never per head. The 1-D kernel of rope.hpp is
// not touched: M-RoPE goes through this separate entry.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "ropecheck/config.hpp"
#include "ropecheck/rope.hpp"

namespace ropecheck {

// The row of every band of `c` (all 0 for 1-D RoPE), from rope_config::position_row.
[[nodiscard]] inline std::vector<int> mrope_band_rows_of(const rope_config& c) {
  std::vector<int> rows(static_cast<std::size_t>(c.bands()));
  for (int b = 0; b < c.bands(); ++b) rows[static_cast<std::size_t>(b)] = c.position_row(b);
  return rows;
}

// A cos/sin source that looks band i up at its row's position: rotate_heads over it is the M-RoPE
// rotation, with rotate_heads' arithmetic itself (one definition of the rounding steps).
template <cos_sin_source CosSin>
struct row_positions {
  const CosSin& cs;
  std::span<const std::int64_t> rows_at;
  std::span<const int> band_rows;
  [[nodiscard]] constexpr auto cos_sin(std::int64_t /*ignored*/, int band) const {
    const int r = band_rows[static_cast<std::size_t>(band)];
    if (r < 0 || static_cast<std::size_t>(r) >= rows_at.size())
      throw std::invalid_argument("rotate_heads_mrope: band " + std::to_string(band) + " takes row " +
                                  std::to_string(r) + ", " + std::to_string(rows_at.size()) + " rows given");
    return cs.cos_sin(rows_at[static_cast<std::size_t>(r)], band);
  }
};

template <class Compute, class Storage, cos_sin_source CosSin>
constexpr void rotate_heads_mrope(std::span<const Storage> x, std::span<Storage> y, int heads, const rope_geometry& g,
                                  std::span<const std::int64_t> rows_at, std::span<const int> band_rows,
                                  const CosSin& cs, rotation_sense sense = rotation_sense::forward) {
  if (band_rows.size() != static_cast<std::size_t>(g.bands()))
    throw std::invalid_argument("rotate_heads_mrope: band_rows must hold one row per band (" +
                                std::to_string(g.bands()) + ")");
  const row_positions<CosSin> src{cs, rows_at, band_rows};
  rotate_heads<Compute>(x, y, heads, g, 0, src, sense);
}

// Rotate tokens whose positions are `position_rows`, [rows][tokens] row-major (rows = its size /
// tokens), each token heads * head_dim values, token-major.
template <class Compute, class Storage, cos_sin_source CosSin>
constexpr void rotate_tokens_mrope(std::span<const Storage> x, std::span<Storage> y,
                                   std::span<const std::int64_t> position_rows, int rows, int heads,
                                   const rope_geometry& g, std::span<const int> band_rows, const CosSin& cs,
                                   rotation_sense sense = rotation_sense::forward) {
  if (rows <= 0 || position_rows.size() % static_cast<std::size_t>(rows) != 0)
    throw std::invalid_argument("rotate_tokens_mrope: position_rows must hold rows * tokens values");
  const std::size_t tokens = position_rows.size() / static_cast<std::size_t>(rows);
  const std::size_t per_token = static_cast<std::size_t>(heads) * static_cast<std::size_t>(g.head_dim);
  if (x.size() != tokens * per_token || y.size() != x.size())
    throw std::invalid_argument("rotate_tokens_mrope: x and y must hold tokens * heads * head_dim values");
  std::vector<std::int64_t> at(static_cast<std::size_t>(rows));
  for (std::size_t t = 0; t < tokens; ++t) {
    for (std::size_t r = 0; r < at.size(); ++r) at[r] = position_rows[r * tokens + t];
    rotate_heads_mrope<Compute>(x.subspan(t * per_token, per_token), y.subspan(t * per_token, per_token), heads, g,
                                std::span<const std::int64_t>(at), band_rows, cs, sense);
  }
}

}  // namespace ropecheck
