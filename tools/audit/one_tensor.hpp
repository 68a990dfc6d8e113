// tools/audit/one_tensor.hpp — one table given on the command line as a file (--t5-table, --table-weights): a .npy file
// (one array) or a .safetensors file holding one tensor, or one whose name ends in one of the names the flag expects.
// Light header; the readers are tensor_file.hpp's.
#pragma once

#include <cstdint>
#include <filesystem>
#include <initializer_list>
#include <string>
#include <vector>

#include "tensor_file.hpp"

namespace ropecheck::audit {

// The tensor, of shape `want`. Throws std::invalid_argument starting "<flag>: <file>" naming what does not fit: several
// candidate tensors (their names listed), another shape (the reverse of a 2-D `want` named as transposed; `layout`
// says what the table is, e.g. "[num_buckets 32, heads 8] (relative_attention_bias.weight)"), a non-finite value, an
// unreadable file.
[[nodiscard]] tensor read_one_tensor(const std::filesystem::path& file, const std::string& flag,
                                     std::initializer_list<const char*> name_suffixes, const std::vector<std::int64_t>& want,
                                     const std::string& layout);

}  // namespace ropecheck::audit
