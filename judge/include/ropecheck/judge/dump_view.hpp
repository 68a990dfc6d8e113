// ropecheck/judge/dump_view.hpp — a dump read where it lies: x and y in their own storage type (a
// file mapping, or a judge::dump's doubles), element by element, never copied whole.
//
// Contract: element (t, h, j) of x is x.at(layout.offset(t, h) + j), converted to double exactly
// (fp32, bf16 and f16 widen exactly; NaN stays NaN, -0 stays -0), so judging a view gives the
// verdict judging the widened dump gives, bit for bit (tests/judge/dump_view_test.cpp). A view may
// carry a coordinate map for the judge's own transformed readings (the conjugated pairs of a
// reversed claim, DeepSeek's half-split outputs read in the input's order): value(j) =
// sign[j] * stored(src[j]), each a permutation and sign change, exact.
// Positions and position rows are small and stay materialised (spans the view does not own; nor does
// it own x and y: whoever made it keeps them alive).
#pragma once

#include <bit>
#include <cstdint>
#include <cstring>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "ropecheck/judge/judge.hpp"

namespace ropecheck::judge {

// How x and y are stored: IEEE binary32, bfloat16 (the top half of a binary32), IEEE binary16, binary64;
// little-endian, any alignment.
enum class storage : unsigned char { f32, bf16, f16, f64 };

// The storage type's dtype name ("float32", ...).
[[nodiscard]] const char* storage_name(storage s) noexcept;

namespace detail {

// IEEE binary16 bits to binary32, exactly: normals rebias the exponent, subnormals are m 2^-24 (one
// exact product), infinities and NaN keep their payload's top bits.
[[nodiscard]] inline float half_to_float(std::uint16_t h) noexcept {
  const std::uint32_t sign = static_cast<std::uint32_t>(h & 0x8000u) << 16;
  const std::uint32_t e = (h >> 10) & 0x1fu, m = h & 0x3ffu;
  if (e == 0) {
    const float v = static_cast<float>(m) * 0x1p-24f;
    return sign ? -v : v;
  }
  const std::uint32_t bits = e == 31 ? (sign | 0x7f800000u | (m << 13)) : (sign | ((e + 112u) << 23) | (m << 13));
  return std::bit_cast<float>(bits);
}

}  // namespace detail

// Element i of storage S at data, widened exactly.
template <storage S>
[[nodiscard]] inline double stored_value(const void* data, std::size_t i) noexcept {
  const auto* p = static_cast<const unsigned char*>(data);
  if constexpr (S == storage::f32) {
    float v;
    std::memcpy(&v, p + 4 * i, 4);
    return v;
  } else if constexpr (S == storage::f64) {
    double v;
    std::memcpy(&v, p + 8 * i, 8);
    return v;
  } else {
    std::uint16_t b;
    std::memcpy(&b, p + 2 * i, 2);
    if constexpr (S == storage::bf16) return std::bit_cast<float>(static_cast<std::uint32_t>(b) << 16);
    else return detail::half_to_float(b);
  }
}

// One tensor of the dump where it lies.
struct stored_tensor {
  const void* data = nullptr;
  storage type = storage::f64;
  // Element i whatever the type (a switch per call: for the few reads outside the judging loop).
  [[nodiscard]] double at(std::size_t i) const noexcept {
    switch (type) {
      case storage::f32: return stored_value<storage::f32>(data, i);
      case storage::bf16: return stored_value<storage::bf16>(data, i);
      case storage::f16: return stored_value<storage::f16>(data, i);
      case storage::f64: break;
    }
    return stored_value<storage::f64>(data, i);
  }
};

// Where token t, head h starts (in elements). Token-major [tokens][heads][head_dim] by default; HF's
// [batch, heads, T, head_dim] as blocks of T tokens (token t is block t / T, token t % T within it).
struct dump_layout {
  std::int64_t tokens_per_block = 0;  // 0: one block of every token
  std::int64_t block_stride = 0, token_stride = 0, head_stride = 0;
  [[nodiscard]] std::size_t offset(std::int64_t t, std::int64_t h) const noexcept {
    const std::int64_t b = tokens_per_block > 0 ? t / tokens_per_block : 0;
    const std::int64_t k = tokens_per_block > 0 ? t % tokens_per_block : t;
    return static_cast<std::size_t>(b * block_stride + k * token_stride + h * head_stride);
  }
  [[nodiscard]] static dump_layout token_major(int heads, int head_dim) noexcept {
    return {0, 0, static_cast<std::int64_t>(heads) * head_dim, head_dim};
  }
};

struct dump_view {
  std::span<const std::int64_t> positions;      // one per token (M-RoPE: row 0)
  std::span<const std::int64_t> position_rows;  // [rows][tokens], as judge::dump's; empty for 1-D RoPE
  std::span<const std::int64_t> allowance_positions;  // as judge::dump's; empty: the positions
  int tokens = 0, heads = 0, head_dim = 0;
  std::string dtype;  // y's: "float32", "bfloat16", "float16", "float64" (the audited dtype)
  stored_tensor x, y;
  dump_layout layout;
  // The coordinate maps (empty: identity): x's value j = x_sign[j] x_stored(j); y's value j =
  // y_sign[j] y_stored(y_src[j]).
  std::vector<double> x_sign, y_sign;
  std::vector<int> y_src;
  // Called when the judge is done with tokens [first, end) for now: by the judging after each chunk of
  // tokens it has read (from its worker threads, ranges never overlapping), by widen_tokens as it goes
  // through an ascending list (the tokens up to each one taken). A door may drop those bytes from memory
  // (a mapping's pages, which a later read maps again). Unset: nothing is called.
  std::function<void(std::int64_t first, std::int64_t end)> done_with;

  [[nodiscard]] bool identity() const noexcept { return x_sign.empty() && y_sign.empty() && y_src.empty(); }
  // Value j of (t, h), through the maps.
  [[nodiscard]] double x_at(std::int64_t t, std::int64_t h, int j) const noexcept {
    const double v = x.at(layout.offset(t, h) + static_cast<std::size_t>(j));
    return x_sign.empty() ? v : x_sign[static_cast<std::size_t>(j)] * v;
  }
  [[nodiscard]] double y_at(std::int64_t t, std::int64_t h, int j) const noexcept {
    const int s = y_src.empty() ? j : y_src[static_cast<std::size_t>(j)];
    const double v = y.at(layout.offset(t, h) + static_cast<std::size_t>(s));
    return y_sign.empty() ? v : y_sign[static_cast<std::size_t>(j)] * v;
  }
};

// A view of d's doubles (storage f64, d's dtype name for the allowance); d must outlive it.
[[nodiscard]] dump_view view_of(const dump& d);

// The tokens given (in that order) widened into a dump: x and y through the view's maps, positions
// and rows of those tokens (the diagnosis subset; M-RoPE's text tokens, through view_of).
[[nodiscard]] dump widen_tokens(const dump_view& v, const std::vector<int>& tokens);
// Every token widened (tests, and the doors that need the doubles).
[[nodiscard]] dump widen(const dump_view& v);

}  // namespace ropecheck::judge
