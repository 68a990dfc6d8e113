// ropecheck/rope.hpp — the RoPE kernels: rotate query/key heads by position.
//
// Contract of rotate_heads<Compute>(x, y, heads, geometry, pos, cs):
//   x, y     heads * head_dim values of type Storage, head-major; y may alias x
//   pairs    per head, band i rotates the pair pair_of(i): (2i, 2i+1) interleaved or
//            (i, i + rotary_dim/2) half-split; coordinates >= rotary_dim pass through unchanged
//   math     y_a = x_a c - x_b s,  y_b = x_a s + x_b c   with (c, s) = cs.cos_sin(pos, i),
//            every operand converted to Compute first and every operation rounded in Compute,
//            then one rounding to Storage. HF's q*cos + rotate_half(q)*sin and Meta's complex
//            product perform exactly these roundings (x*c and (-x)*s, then one sum).
//   inverse  rotation_sense::inverse uses (c, -s): R(-m), the transpose.
//   direction a reversed convention (rope_geometry::direction, nanochat) turns by R(-m) forward and
//            R(m) inverse: the same two products and sum with the sine's sign flipped.
//   error    with exact c, s: |y - R x| <= (2 u_C + u_C^2) (|x_a| + |x_b|) per component from the
//            two products and the sum, plus u_S |y| for the final rounding to Storage
//            (ropecheck/judge/error_model.hpp). Angle/cos/sin error is the strategy's, not the kernel's.
//   positions any int64; what a strategy does with large ones is the strategy's contract.
// cos/sin are looked up once per (position, band), never per head.
//
// The kernel is constexpr and generic over the scalar and over where cos/sin come from, so the
// same template runs at run time over float..MPFR and in constant expressions over exact
// rationals (proofs/).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <stdexcept>
#include <string>
#include <utility>

#include "ropecheck/angle.hpp"
#include "ropecheck/config.hpp"

namespace ropecheck {

enum class rotation_sense : std::uint8_t { forward, inverse };

// Which coordinates are rotated, and how they pair up.
struct rope_geometry {
  int head_dim = 128;
  int rotary_dim = 128;
  layout pair_layout = layout::half_split;
  // reversed: the convention turns by R(-p) (nanochat); rotation_sense::inverse then gives R(p).
  rotation_direction direction = rotation_direction::forward;

  [[nodiscard]] static constexpr rope_geometry of(const rope_config& c) noexcept {
    return {c.head_dim, c.rotary_dim, c.pair_layout, c.direction};
  }
  [[nodiscard]] constexpr int bands() const noexcept { return rotary_dim / 2; }
  // The two coordinates (within a head) that band `i` rotates.
  [[nodiscard]] constexpr std::pair<int, int> pair_of(int band) const noexcept {
    return pair_layout == layout::interleaved ? std::pair{2 * band, 2 * band + 1}
                                              : std::pair{band, band + rotary_dim / 2};
  }
  constexpr void check() const {
    if (head_dim <= 0 || rotary_dim <= 0 || rotary_dim > head_dim || rotary_dim % 2 != 0)
      throw std::invalid_argument("rope_geometry: need 0 < rotary_dim <= head_dim, rotary_dim even; got head_dim " +
                                  std::to_string(head_dim) + ", rotary_dim " + std::to_string(rotary_dim));
  }
};

// Anything that yields cos/sin for (position, band): every angle_strategy, and the exact
// rational tables used by the compile-time proofs.
template <class S>
concept cos_sin_source = requires(const S& s, std::int64_t pos, int band) {
  s.cos_sin(pos, band).cos;
  s.cos_sin(pos, band).sin;
};

// Rotate the `heads` heads of one token at position `pos`.
template <class Compute, class Storage, cos_sin_source CosSin>
constexpr void rotate_heads(std::span<const Storage> x, std::span<Storage> y, int heads,
                            const rope_geometry& g, std::int64_t pos, const CosSin& cs,
                            rotation_sense sense = rotation_sense::forward) {
  const auto hd = static_cast<std::size_t>(g.head_dim);
  if (x.size() != y.size() || x.size() != hd * static_cast<std::size_t>(heads))
    throw std::invalid_argument("rotate_heads: x and y must hold heads * head_dim values");
  const auto nh = static_cast<std::size_t>(heads);
  // Pass-through first, so that y may alias x.
  for (std::size_t h = 0; h < nh; ++h)
    for (std::size_t j = static_cast<std::size_t>(g.rotary_dim); j < hd; ++j)
      y[h * hd + j] = x[h * hd + j];
  // The sine's sign: R(m) for a forward convention's forward sense; R(-m) for its inverse, and the
  // other way round for a reversed convention.
  const bool negate_sin = (sense == rotation_sense::inverse) != (g.direction == rotation_direction::reversed);
  for (int band = 0; band < g.bands(); ++band) {
    const auto t = cs.cos_sin(pos, band);
    const Compute c = convert<Compute>(t.cos);
    const Compute s = negate_sin ? Compute(-convert<Compute>(t.sin)) : convert<Compute>(t.sin);
    const auto [ia, ib] = g.pair_of(band);
    for (std::size_t h = 0; h < nh; ++h) {
      const std::size_t a = h * hd + static_cast<std::size_t>(ia);
      const std::size_t b = h * hd + static_cast<std::size_t>(ib);
      const Compute xa = convert<Compute>(x[a]);
      const Compute xb = convert<Compute>(x[b]);
      // Name every product so that each is rounded in Compute (bf16 * bf16 is bf16 in Eigen).
      const Compute xa_c = xa * c, xb_s = xb * s, xa_s = xa * s, xb_c = xb * c;
      y[a] = convert<Storage>(Compute(xa_c - xb_s));
      y[b] = convert<Storage>(Compute(xa_s + xb_c));
    }
  }
}

// Rotate `positions.size()` tokens, each `heads * head_dim` values, token-major.
template <class Compute, class Storage, cos_sin_source CosSin>
constexpr void rotate_tokens(std::span<const Storage> x, std::span<Storage> y,
                             std::span<const std::int64_t> positions, int heads, const rope_geometry& g,
                             const CosSin& cs, rotation_sense sense = rotation_sense::forward) {
  const std::size_t per_token = static_cast<std::size_t>(heads) * static_cast<std::size_t>(g.head_dim);
  if (x.size() != positions.size() * per_token || y.size() != x.size())
    throw std::invalid_argument("rotate_tokens: x and y must hold tokens * heads * head_dim values");
  for (std::size_t t = 0; t < positions.size(); ++t)
    rotate_heads<Compute>(x.subspan(t * per_token, per_token), y.subspan(t * per_token, per_token),
                          heads, g, positions[t], cs, sense);
}

// ---------------------------------------------------------------------------------------------
// Layout conversion. HF's convert_llama_weights_to_hf permutes the rows of W_q and W_k per head
// so that a checkpoint trained with interleaved pairs runs under rotate_half:
//   w.view(n_heads, dim/n_heads/2, 2, in).transpose(1, 2).reshape(dim, in)
// i.e. within each head, new row j < r/2 is old row 2j and new row r/2 + j is old row 2j + 1
// (r = rotary_dim; rows past r are left in place). The same map on a vector's coordinates is
// the coordinate permutation P with half_split_rope(P x) = P interleaved_rope(x).

// Index in the interleaved layout of coordinate `j` of the half-split layout, within one head.
[[nodiscard]] constexpr int interleaved_index_of_half_split(int j, int rotary_dim) noexcept {
  const int half = rotary_dim / 2;
  if (j >= rotary_dim) return j;
  return j < half ? 2 * j : 2 * (j - half) + 1;
}

// out = P w: rows of a [heads * head_dim, cols] row-major matrix (cols = 1 for a vector)
// reordered from the interleaved to the half-split layout.
template <class T>
constexpr void permute_interleaved_to_half_split(std::span<const T> w, std::span<T> out, int heads,
                                                 int head_dim, int rotary_dim, std::size_t cols = 1) {
  const auto hd = static_cast<std::size_t>(head_dim);
  if (w.size() != out.size() || w.size() != static_cast<std::size_t>(heads) * hd * cols)
    throw std::invalid_argument("permute_interleaved_to_half_split: shape mismatch");
  for (std::size_t h = 0; h < static_cast<std::size_t>(heads); ++h)
    for (int j = 0; j < head_dim; ++j) {
      const std::size_t src = (h * hd + static_cast<std::size_t>(interleaved_index_of_half_split(j, rotary_dim))) * cols;
      const std::size_t dst = (h * hd + static_cast<std::size_t>(j)) * cols;
      for (std::size_t c = 0; c < cols; ++c) out[dst + c] = w[src + c];
    }
}

// out = P^T w: back from half-split to interleaved.
template <class T>
constexpr void permute_half_split_to_interleaved(std::span<const T> w, std::span<T> out, int heads,
                                                 int head_dim, int rotary_dim, std::size_t cols = 1) {
  const auto hd = static_cast<std::size_t>(head_dim);
  if (w.size() != out.size() || w.size() != static_cast<std::size_t>(heads) * hd * cols)
    throw std::invalid_argument("permute_half_split_to_interleaved: shape mismatch");
  for (std::size_t h = 0; h < static_cast<std::size_t>(heads); ++h)
    for (int j = 0; j < head_dim; ++j) {
      const std::size_t dst = (h * hd + static_cast<std::size_t>(interleaved_index_of_half_split(j, rotary_dim))) * cols;
      const std::size_t src = (h * hd + static_cast<std::size_t>(j)) * cols;
      for (std::size_t c = 0; c < cols; ++c) out[dst + c] = w[src + c];
    }
}

}  // namespace ropecheck
