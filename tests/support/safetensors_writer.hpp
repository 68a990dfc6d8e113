// tests/support/safetensors_writer.hpp — a minimal safetensors writer for tests that hand a dump to
// `ropecheck audit` (the reader is tools/audit/tensor_file.hpp; this writer shares nothing with it).
// Format: u64 little-endian header length, a JSON header {"name": {"dtype", "shape", "data_offsets"}},
// then the raw little-endian data of every tensor back to back.
#pragma once

#include <cstdint>
#include <cstring>
#include <fstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace ropecheck::test {

struct st_tensor {
  std::string name;
  std::string dtype;  // "F32", "F64", "BF16", "F16", "I64"
  std::vector<std::int64_t> shape;
  std::vector<unsigned char> bytes;
};

template <class T>
std::vector<unsigned char> raw_bytes(const std::vector<T>& v) {
  std::vector<unsigned char> b(v.size() * sizeof(T));
  if (!v.empty()) std::memcpy(b.data(), v.data(), b.size());
  return b;
}

inline void write_safetensors(const std::string& path, const std::vector<st_tensor>& tensors) {
  std::string header = "{";
  std::size_t offset = 0;
  for (std::size_t k = 0; k < tensors.size(); ++k) {
    const auto& t = tensors[k];
    std::string shape;
    for (std::size_t i = 0; i < t.shape.size(); ++i) shape += (i ? "," : "") + std::to_string(t.shape[i]);
    header += (k ? "," : "") + std::string("\"") + t.name + "\":{\"dtype\":\"" + t.dtype + "\",\"shape\":[" + shape +
              "],\"data_offsets\":[" + std::to_string(offset) + "," + std::to_string(offset + t.bytes.size()) + "]}";
    offset += t.bytes.size();
  }
  header += "}";
  while (header.size() % 8) header += ' ';
  std::ofstream f(path, std::ios::binary);
  unsigned char len[8];
  std::uint64_t n = header.size();
  for (int i = 0; i < 8; ++i) len[i] = static_cast<unsigned char>(n >> (8 * i));
  f.write(reinterpret_cast<const char*>(len), 8);
  f.write(header.data(), static_cast<std::streamsize>(header.size()));
  for (const auto& t : tensors) f.write(reinterpret_cast<const char*>(t.bytes.data()), static_cast<std::streamsize>(t.bytes.size()));
  if (!f) throw std::runtime_error("cannot write " + path);
}

}  // namespace ropecheck::test
