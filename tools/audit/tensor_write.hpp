// tools/audit/tensor_write.hpp — the safetensors writer of the files ropecheck hands to other languages
// (`ropecheck probe`'s probe file: tools/probe/probe_file.hpp). The readers are tensor_file.hpp's; the
// format is theirs: u64 little-endian header length, a JSON header {name: {"dtype", "shape",
// "data_offsets"}, "__metadata__": {string: string}} padded with spaces to 8 bytes, then the data of every
// tensor back to back, little-endian, in the order given.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "tensor_file.hpp"

namespace ropecheck::audit {

struct tensor_out {
  std::string name;
  dtype type = dtype::f32;
  std::vector<std::int64_t> shape;
  std::vector<unsigned char> bytes;  // product(shape) * dtype_size(type), little-endian
};

// The little-endian bytes of int64 values (an I64 tensor's data).
[[nodiscard]] std::vector<unsigned char> i64_bytes(const std::vector<std::int64_t>& v);

// The whole file. std::invalid_argument when a tensor's bytes do not match its shape and dtype, or a
// name repeats or is "__metadata__".
[[nodiscard]] std::string safetensors_bytes(const std::vector<tensor_out>& tensors,
                                            const std::map<std::string, std::string>& metadata);

// safetensors_bytes written to `file` (to a temporary beside it, then renamed: never a half-written
// file); an input_error naming the file when it cannot be written.
void write_safetensors(const std::filesystem::path& file, const std::vector<tensor_out>& tensors,
                       const std::map<std::string, std::string>& metadata);

}  // namespace ropecheck::audit
