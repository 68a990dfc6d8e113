// tools/audit/table_weights.hpp — a learned position table's weights from a file (--table-weights; Python
// claim={"weights": module.weight}): GPT-2's wpe.weight, BERT's position_embeddings.weight, OPT's and BART's
// embed_positions.weight, [rows, width]. Light header; the readers are tensor_file.hpp's.
#pragma once

#include <cstdint>
#include <filesystem>
#include <vector>

namespace ropecheck::audit {

// The weights, [rows][width] row-major, from a .npy file (one array) or a .safetensors file holding one tensor, or one
// whose name ends in "wpe.weight", "position_embeddings.weight" or "embed_positions.weight". Throws
// std::invalid_argument starting "--table-weights: <file>" naming what does not fit: another shape (a [width, rows]
// table is named as transposed), several candidate tensors, a non-finite value, an unreadable file.
[[nodiscard]] std::vector<double> read_table_weights(const std::filesystem::path& file, std::int64_t rows, int width);

}  // namespace ropecheck::audit
