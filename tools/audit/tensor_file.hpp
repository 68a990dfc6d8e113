// tools/audit/tensor_file.hpp — the input readers of `ropecheck audit`: safetensors and NumPy .npy.
//
// Contract: every value is converted to double exactly. bf16/f16/f32/f64 widen exactly; i32 does;
// i64 does below 2^53 in magnitude, and a larger magnitude is an input_error (a position that
// double cannot hold is not a position we can audit). NaN and infinities are not errors here: they
// are kept bit for bit (the sign of -0 too) and flagged in tensor::has_non_finite.
//
// Bad input never crashes and never allocates more than the file can back: every size read from a
// header (header length, shape, offsets) is checked against the file size before anything is
// allocated. Each rejection is an input_error whose message starts with the file name.
//
// Each reader has an in-memory form (parse_safetensors, parse_npy) taking the whole file's bytes
// and the name to use in messages; the file readers read the file into memory once (transient
// memory = the file size, beyond the output doubles) and call it. fuzz/ drives the in-memory forms.
// Each in-memory form is a scan (scan_safetensors, scan_npy: every rule checked, the tensors' bytes
// located, nothing decoded) and a decode; the mapped readers (map_safetensors, map_npy_dir) scan a
// read-only mapping of the file and leave the bytes there, for a caller that streams them (the
// audit judges x and y where they lie) and decodes only what is small.
//
// The json header stays inside tensor_file.cpp (STYLE.md: heavy headers out of include paths).
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace ropecheck::audit {

enum class dtype { bf16, f16, f32, f64, i32, i64 };

// "BF16", "F16", ... — the safetensors spelling, also used in messages.
[[nodiscard]] std::string_view dtype_name(dtype t) noexcept;
// Bytes per element in the file.
[[nodiscard]] std::size_t dtype_size(dtype t) noexcept;
// A shape as the messages print it: "[2, 3, 128]".
[[nodiscard]] std::string shape_string(const std::vector<std::int64_t>& shape);

struct tensor {
  std::string name;
  dtype type = dtype::f32;
  std::vector<std::int64_t> shape;  // row-major (C order); empty = a scalar with one element
  std::vector<double> values;       // product(shape) values, exactly as stored
  bool has_non_finite = false;      // some value is NaN or +-inf
};

// A tensor where it lies: the header's dtype and shape, and its bytes (little-endian, not decoded;
// they belong to the buffer or mapping scanned).
struct tensor_bytes {
  std::string name;
  dtype type = dtype::f32;
  std::vector<std::int64_t> shape;
  std::span<const unsigned char> bytes;  // product(shape) * dtype_size(type) bytes
};

// A file that cannot be read as what it claims to be. what() = "<file>: <problem>".
struct input_error : std::runtime_error {
  input_error(const std::filesystem::path& file, const std::string& problem);
  std::filesystem::path file;
};

// safetensors: u64 LE header length N, N bytes of JSON
//   {name: {"dtype": "BF16"|"F16"|"F32"|"F64"|"I32"|"I64", "shape": [...], "data_offsets": [b, e]},
//    "__metadata__": {string: string} (optional)},
// then the data buffer; offsets are relative to the buffer start, must lie inside it, must not
// overlap, and e - b must equal product(shape) * itemsize. Gaps between tensors are tolerated.
// metadata (optional) receives the header's "__metadata__" object ({} when absent; its values must be
// strings, as the format says).
[[nodiscard]] std::map<std::string, tensor> read_safetensors(const std::filesystem::path& file,
                                                             std::map<std::string, std::string>* metadata = nullptr);
// The same from the whole file's bytes; `name` stands for the file in messages (input_error::file).
[[nodiscard]] std::map<std::string, tensor> parse_safetensors(std::span<const unsigned char> bytes,
                                                              const std::filesystem::path& name,
                                                              std::map<std::string, std::string>* metadata = nullptr);

// The scan of parse_safetensors: the same rules and messages, in the same order (the I64 range check
// included), without the decode.
[[nodiscard]] std::map<std::string, tensor_bytes> scan_safetensors(std::span<const unsigned char> bytes,
                                                                   const std::filesystem::path& name,
                                                                   std::map<std::string, std::string>* metadata = nullptr);

// NumPy .npy v1.0/2.0/3.0, C order, little-endian descr '<f2' '<f4' '<f8' '<i4' '<i8', and '<u2'
// only when declared_bf16 == dtype::bf16 (bfloat16 bit patterns saved as uint16, which is how
// NumPy stores bf16). declared_bf16 affects '<u2' files only, so one flag can cover a directory
// that also holds f32 values and i64 positions. The tensor's name is the file stem.
[[nodiscard]] tensor read_npy(const std::filesystem::path& file, std::optional<dtype> declared_bf16 = {});
// The same from the whole file's bytes; `name` stands for the file in messages and its stem names
// the tensor.
[[nodiscard]] tensor parse_npy(std::span<const unsigned char> bytes, const std::filesystem::path& name,
                               std::optional<dtype> declared_bf16 = {});

// The scan of parse_npy (every rule and message, without the decode).
[[nodiscard]] tensor_bytes scan_npy(std::span<const unsigned char> bytes, const std::filesystem::path& name,
                                    std::optional<dtype> declared_bf16 = {});

// Every regular file *.npy directly in dir (not recursive), keyed by file stem.
[[nodiscard]] std::map<std::string, tensor> read_npy_dir(const std::filesystem::path& dir,
                                                         std::optional<dtype> declared_bf16 = {});

// A scanned tensor's values, exactly as parse_* gives them (the scan already made its checks).
[[nodiscard]] tensor decode(const tensor_bytes& t);
// Whether a scanned floating-point tensor holds NaN or infinity (one pass over its bytes; false for
// integer tensors).
[[nodiscard]] bool has_non_finite(const tensor_bytes& t) noexcept;

// A file's bytes, mapped read-only (MAP_PRIVATE), or read into a buffer where it cannot be mapped (an
// empty file, a file system without mmap). populate: MAP_POPULATE (the in-memory readers decode every
// byte at once); otherwise madvise(MADV_SEQUENTIAL), for a caller that streams them. Move-only; the
// bytes do not move with the object. Rejections are input_errors naming the file.
class mapped_file {
 public:
  [[nodiscard]] static mapped_file open(const std::filesystem::path& file, bool populate = false);
  mapped_file() = default;
  mapped_file(const mapped_file&) = delete;
  mapped_file& operator=(const mapped_file&) = delete;
  mapped_file(mapped_file&& o) noexcept;
  mapped_file& operator=(mapped_file&& o) noexcept;
  ~mapped_file();
  [[nodiscard]] std::span<const unsigned char> bytes() const noexcept {
    return {map_ ? static_cast<const unsigned char*>(map_) : data_.get(), size_};
  }
  [[nodiscard]] bool mapped() const noexcept { return map_ != nullptr; }

 private:
  std::unique_ptr<unsigned char[]> data_;
  void* map_ = nullptr;
  std::size_t size_ = 0;
};

// Mapped files and their scanned tensors (whose bytes lie in those files).
struct mapped_tensors {
  std::vector<mapped_file> files;
  std::map<std::string, tensor_bytes> tensors;
};
// read_safetensors without the decode: the same checks and messages, the file left mapped.
[[nodiscard]] mapped_tensors map_safetensors(const std::filesystem::path& file,
                                             std::map<std::string, std::string>* metadata = nullptr);
// read_npy_dir without the decode: each .npy file mapped and scanned, in the same order.
[[nodiscard]] mapped_tensors map_npy_dir(const std::filesystem::path& dir, std::optional<dtype> declared_bf16 = {});

}  // namespace ropecheck::audit
