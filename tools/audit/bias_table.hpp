// tools/audit/bias_table.hpp — T5's learned bias table from a file (--t5-table; Python claim={"t5_table": ...}):
// transformers' relative_attention_bias.weight, [num_buckets, heads] (models/t5/modeling_t5.py T5Attention:
// nn.Embedding(relative_attention_num_buckets, n_heads)). Light header; the readers are tensor_file.hpp's.
#pragma once

#include <filesystem>
#include <vector>

namespace ropecheck::audit {

// The table's values, [num_buckets][heads] row-major, from a .npy file (one array) or a .safetensors file holding
// one tensor, or one whose name ends in "relative_attention_bias.weight". Throws std::invalid_argument starting
// "--t5-table: <file>" naming what does not fit: another shape (a [heads, num_buckets] table is named as
// transposed), several candidate tensors (their names listed), a non-finite value, an unreadable file.
[[nodiscard]] std::vector<double> read_t5_table(const std::filesystem::path& file, int num_buckets, int heads);

}  // namespace ropecheck::audit
