// reference/src/mrope.cpp — the M-RoPE band-to-row map, rebuilt the way Hugging Face builds its cos/sin
// (see reference.hpp for the contract). Written from HF's code, not from config.hpp's position_row:
// the judge and the kernels use that one, and tests/reference/mrope_reference_test.cpp checks the two
// agree for every band over several sections.
#include <cstddef>
#include <stdexcept>
#include <string>
#include <vector>

#include "ropecheck/reference/reference.hpp"

namespace ropecheck::reference {
namespace {

// Qwen2-VL / Qwen2.5-VL (transformers models/qwen2_vl/modeling_qwen2_vl.py,
// apply_multimodal_rotary_pos_emb): mrope_section = mrope_section * 2; cos.split(mrope_section, -1);
// chunk i is m[i % 3]. The coordinate axis is cat(freqs, freqs) (rotary_dim long): coordinate j < d/2
// carries band j, and so does j + d/2. The row of band b is the row of the chunk holding coordinate b
// (and of the one holding b + d/2, which HF's doubling makes the same chunk index mod rows).
std::vector<int> contiguous_rows(const rope_config& c) {
  const std::size_t rows = c.mrope_section.size();
  const int d = c.rotary_dim;
  std::vector<int> chunk_sizes;
  for (int pass = 0; pass < 2; ++pass)
    for (int s : c.mrope_section) chunk_sizes.push_back(s);
  std::vector<int> row_of_coordinate;
  for (std::size_t i = 0; i < chunk_sizes.size(); ++i)
    for (int k = 0; k < chunk_sizes[i]; ++k) row_of_coordinate.push_back(static_cast<int>(i % rows));
  if (static_cast<int>(row_of_coordinate.size()) != d)
    throw std::invalid_argument("ropecheck::reference::mrope_band_rows: mrope_section * 2 splits " +
                                std::to_string(row_of_coordinate.size()) + " coordinates, rotary_dim is " +
                                std::to_string(d));
  std::vector<int> out(static_cast<std::size_t>(d / 2));
  for (int b = 0; b < d / 2; ++b) {
    const int first = row_of_coordinate[static_cast<std::size_t>(b)];
    const int second = row_of_coordinate[static_cast<std::size_t>(b + d / 2)];
    if (first != second)
      throw std::invalid_argument("ropecheck::reference::mrope_band_rows: band " + std::to_string(b) +
                                  " would take two rows");
    out[static_cast<std::size_t>(b)] = first;
  }
  return out;
}

// Qwen3-VL (transformers models/qwen3_vl/modeling_qwen3_vl.py, apply_interleaved_mrope):
//   freqs_t = freqs[0]; for dim, offset in enumerate((1, 2), start=1):
//     freqs_t[..., slice(offset, mrope_section[dim] * 3, 3)] = freqs[dim, ..., same slice]
// over the d/2 bands (a Python slice stops at the end of the axis).
std::vector<int> interleaved_rows(const rope_config& c) {
  const int bands = c.rotary_dim / 2;
  std::vector<int> out(static_cast<std::size_t>(bands), 0);  // freqs_t = freqs[0]
  for (std::size_t dim = 1; dim < c.mrope_section.size(); ++dim) {
    const int offset = static_cast<int>(dim);
    const int length = c.mrope_section[dim] * 3;
    for (int idx = offset; idx < length && idx < bands; idx += 3) out[static_cast<std::size_t>(idx)] = static_cast<int>(dim);
  }
  int sum = 0;
  for (int s : c.mrope_section) sum += s;
  if (sum != bands)
    throw std::invalid_argument("ropecheck::reference::mrope_band_rows: mrope_section sums to " +
                                std::to_string(sum) + ", rotary_dim / 2 is " + std::to_string(bands));
  return out;
}

}  // namespace

std::vector<int> mrope_band_rows(const rope_config& cfg) {
  switch (cfg.mrope) {
    case mrope_kind::none: break;
    case mrope_kind::contiguous: return contiguous_rows(cfg);
    case mrope_kind::interleaved: return interleaved_rows(cfg);
  }
  return std::vector<int>(static_cast<std::size_t>(cfg.rotary_dim > 0 ? cfg.rotary_dim / 2 : 0), 0);
}

}  // namespace ropecheck::reference
