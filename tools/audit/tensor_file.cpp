// tools/audit/tensor_file.cpp — safetensors and .npy readers; see tensor_file.hpp for the contract.
#include "tensor_file.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <bit>
#include <cctype>
#include <cmath>
#include <cstring>
#include <fstream>
#include <limits>
#include <memory>
#include <system_error>
#include <utility>

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>

#include "ropecheck/scalar.hpp"

namespace ropecheck::audit {

namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

// A JSON/dict header larger than this is not a tensor file (real ones are kilobytes).
constexpr std::uint64_t max_header_bytes = 100ull * 1024 * 1024;
// Integers of magnitude <= 2^53 are exact as double.
constexpr std::int64_t max_exact_int = std::int64_t{1} << 53;

// A whole file's bytes, read at explicit offsets; every read is checked against its size first.
class byte_view {
 public:
  byte_view(std::span<const unsigned char> bytes, const fs::path& path) : bytes_(bytes), path_(path) {}

  [[noreturn]] void fail(const std::string& problem) const { throw input_error(path_, problem); }
  [[nodiscard]] std::uint64_t size() const noexcept { return bytes_.size(); }

  // n bytes at offset (a view, no copy); `what` names the part for the truncation message.
  [[nodiscard]] std::span<const unsigned char> read(std::uint64_t offset, std::uint64_t n, std::string_view what) const {
    if (offset > size() || n > size() - offset)
      fail("truncated: " + std::string(what) + " needs bytes [" + std::to_string(offset) + ", " +
           std::to_string(offset + n) + ") but the file has " + std::to_string(size()) + " bytes");
    return bytes_.subspan(static_cast<std::size_t>(offset), static_cast<std::size_t>(n));
  }

 private:
  std::span<const unsigned char> bytes_;
  const fs::path& path_;
};

}  // namespace

std::string shape_string(const std::vector<std::int64_t>& shape) {
  std::string s = "[";
  for (std::size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

// The whole file's bytes: a read-only private mapping, or, where mapping fails (an empty file, a
// file system without mmap), the bytes read into one buffer. populate (the in-memory readers, which
// decode every byte at once): MAP_POPULATE maps the page cache in one call. Otherwise (the mapped
// readers, whose callers stream the bytes) the mapping is advised sequential: read ahead, touched
// once. Rejections are the ones read_safetensors/read_npy always gave for unreadable files.
mapped_file mapped_file::open(const std::filesystem::path& path, bool populate) {
  std::error_code ec;
  if (!fs::is_regular_file(path, ec)) throw input_error(path, "not a regular file (or does not exist)");
  const std::uintmax_t size = fs::file_size(path, ec);
  if (ec) throw input_error(path, "cannot get file size: " + ec.message());
  if (size > std::numeric_limits<std::size_t>::max() / 2)
    throw input_error(path, "file of " + std::to_string(size) + " bytes is too large to read");
  mapped_file f;
  f.size_ = static_cast<std::size_t>(size);
  if (f.size_ > 0) {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) throw input_error(path, "cannot open for reading: " + std::string(std::strerror(errno)));
    void* m = ::mmap(nullptr, f.size_, PROT_READ, MAP_PRIVATE | (populate ? MAP_POPULATE : 0), fd, 0);
    ::close(fd);
    if (m != MAP_FAILED) {
      if (!populate) (void)::madvise(m, f.size_, MADV_SEQUENTIAL);
      f.map_ = m;
      return f;
    }
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) throw input_error(path, "cannot open for reading");
  f.data_ = std::make_unique_for_overwrite<unsigned char[]>(f.size_);
  if (f.size_ > 0 && !in.read(reinterpret_cast<char*>(f.data_.get()), static_cast<std::streamsize>(f.size_)))
    throw input_error(path, "read error after " + std::to_string(in.gcount()) + " of " + std::to_string(size) +
                                " bytes (file changed while reading?)");
  return f;
}

mapped_file::mapped_file(mapped_file&& o) noexcept
    : data_(std::move(o.data_)), map_(std::exchange(o.map_, nullptr)), size_(std::exchange(o.size_, 0)) {}

mapped_file& mapped_file::operator=(mapped_file&& o) noexcept {
  if (this != &o) {
    if (map_) ::munmap(map_, size_);
    data_ = std::move(o.data_);
    map_ = std::exchange(o.map_, nullptr);
    size_ = std::exchange(o.size_, 0);
  }
  return *this;
}

mapped_file::~mapped_file() {
  if (map_) ::munmap(map_, size_);
}

namespace {

// Large outputs: fault the pages in with one madvise call before writing them (on a VM a page
// fault per 4 KiB costs ~20 us; MADV_POPULATE_WRITE, Linux 5.14+, does them in bulk). Harmless
// where unsupported (the writes then fault as usual).
void prefault(void* p, std::size_t bytes) {
#ifdef MADV_POPULATE_WRITE
  constexpr std::size_t page = 4096;
  if (bytes < (std::size_t{16} << 20)) return;
  const auto a = (reinterpret_cast<std::uintptr_t>(p) + page - 1) & ~(page - 1);
  const auto e = (reinterpret_cast<std::uintptr_t>(p) + bytes) & ~(page - 1);
  if (e > a) (void)::madvise(reinterpret_cast<void*>(a), e - a, MADV_POPULATE_WRITE);
#else
  (void)p, (void)bytes;
#endif
}

// Little-endian unsigned integer of `width` bytes at p (independent of the host's byte order).
std::uint64_t load_le(const unsigned char* p, std::size_t width) noexcept {
  std::uint64_t v = 0;
  for (std::size_t i = width; i-- > 0;) v = (v << 8) | p[i];
  return v;
}

// product(shape), or a message if a dimension is negative or the product overflows int64.
std::optional<std::string> element_count(const std::vector<std::int64_t>& shape, std::int64_t& count) {
  count = 1;
  for (std::size_t i = 0; i < shape.size(); ++i)
    if (shape[i] < 0) return "shape has a negative dimension " + std::to_string(shape[i]) + " at axis " + std::to_string(i);
  for (const std::int64_t d : shape)
    if (__builtin_mul_overflow(count, d, &count)) return std::string("shape's element count overflows int64");
  return std::nullopt;
}

// The one rejection of a tensor's values (not of its header): an I64 value beyond 2^53 in magnitude,
// the first in flat order. Called only after the caller checked bytes.size() == count * dtype_size(t).
void check_exact(const byte_view& f, const std::string& name, dtype t, std::span<const unsigned char> bytes) {
  if (t != dtype::i64) return;
  for (std::size_t i = 0; i < bytes.size() / 8; ++i) {
    const auto k = static_cast<std::int64_t>(load_le(bytes.data() + i * 8, 8));
    if (k > max_exact_int || k < -max_exact_int)
      f.fail("tensor '" + name + "': I64 value " + std::to_string(k) + " at flat index " + std::to_string(i) +
             " exceeds 2^53 in magnitude and is not exact as double");
  }
}

// Decode count elements of type t from little-endian bytes into out (exact widening to double).
// Called only after check_exact accepted them.
void decode(dtype t, std::span<const unsigned char> bytes, tensor& out) {
  const std::size_t w = dtype_size(t);
  const std::size_t n = bytes.size() / w;
  out.values.clear();
  if (n == 0) return;  // an empty tensor (a zero in its shape): nothing to copy (memcpy of null is UB)
  out.values.reserve(n);
  prefault(out.values.data(), n * sizeof(double));
  out.values.resize(n);
  if constexpr (std::endian::native == std::endian::little) {
    // Floating-point tensors on a little-endian host: straight conversions (exact widening), the
    // non-finite flag from one pass. Integer tensors take the checked loop below.
    if (t == dtype::f32 || t == dtype::f64) {
      bool non_finite = false;
      double* dst = out.values.data();
      const unsigned char* src = bytes.data();
      if (t == dtype::f32) {
        for (std::size_t i = 0; i < n; ++i) {
          float v;
          std::memcpy(&v, src + 4 * i, 4);
          dst[i] = v;
          non_finite |= !(v - v == 0.0f);
        }
      } else {
        std::memcpy(dst, src, n * 8);
        for (std::size_t i = 0; i < n; ++i) non_finite |= !(dst[i] - dst[i] == 0.0);
      }
      out.has_non_finite = out.has_non_finite || non_finite;
      return;
    }
    if (t == dtype::bf16 || t == dtype::f16) {
      // Every 16-bit pattern widened once (the same scalar_traits conversion as the loop below).
      static const auto table = [](dtype k) {
        std::vector<double> v(65536);
        for (std::uint32_t b = 0; b < 65536; ++b)
          v[b] = k == dtype::bf16
                     ? static_cast<double>(scalar_traits<bfloat16>::widen(scalar_traits<bfloat16>::from_bits(static_cast<std::uint16_t>(b))))
                     : static_cast<double>(scalar_traits<float16>::widen(scalar_traits<float16>::from_bits(static_cast<std::uint16_t>(b))));
        return v;
      };
      static const std::vector<double> bf16_table = table(dtype::bf16), f16_table = table(dtype::f16);
      const std::vector<double>& lut = t == dtype::bf16 ? bf16_table : f16_table;
      bool non_finite = false;
      double* dst = out.values.data();
      const unsigned char* src = bytes.data();
      for (std::size_t i = 0; i < n; ++i) {
        std::uint16_t b;
        std::memcpy(&b, src + 2 * i, 2);
        dst[i] = lut[b];
        non_finite |= !(dst[i] - dst[i] == 0.0);
      }
      out.has_non_finite = out.has_non_finite || non_finite;
      return;
    }
  }
  for (std::size_t i = 0; i < n; ++i) {
    const std::uint64_t raw = load_le(bytes.data() + i * w, w);
    double v = 0;
    switch (t) {
      case dtype::bf16:
        // widen() is to long double; every bf16/f16 value is exact in double.
        v = static_cast<double>(scalar_traits<bfloat16>::widen(scalar_traits<bfloat16>::from_bits(static_cast<std::uint16_t>(raw))));
        break;
      case dtype::f16:
        v = static_cast<double>(scalar_traits<float16>::widen(scalar_traits<float16>::from_bits(static_cast<std::uint16_t>(raw))));
        break;
      case dtype::f32: v = std::bit_cast<float>(static_cast<std::uint32_t>(raw)); break;
      case dtype::f64: v = std::bit_cast<double>(raw); break;
      case dtype::i32: v = static_cast<std::int32_t>(static_cast<std::uint32_t>(raw)); break;
      case dtype::i64: v = static_cast<double>(static_cast<std::int64_t>(raw)); break;
    }
    if (!std::isfinite(v)) out.has_non_finite = true;
    out.values[i] = v;
  }
}

std::optional<dtype> safetensors_dtype(std::string_view s) {
  if (s == "BF16") return dtype::bf16;
  if (s == "F16") return dtype::f16;
  if (s == "F32") return dtype::f32;
  if (s == "F64") return dtype::f64;
  if (s == "I32") return dtype::i32;
  if (s == "I64") return dtype::i64;
  return std::nullopt;
}

// ---- .npy header: a Python dict literal of str keys and str / bool / tuple-of-int values ----

struct npy_value {
  enum class kind { string, boolean, int_tuple } k = kind::string;
  std::string s;
  bool b = false;
  std::vector<std::int64_t> ints;
};

class py_dict_parser {
 public:
  py_dict_parser(const byte_view& f, std::string_view text) : f_(f), t_(text) {}

  std::map<std::string, npy_value> parse() {
    std::map<std::string, npy_value> out;
    skip_ws();
    expect('{', "header is not a Python dict (no '{')");
    skip_ws();
    while (peek() != '}') {
      std::string key = string_literal("a dict key");
      skip_ws();
      expect(':', "header dict: expected ':' after key '" + key + "'");
      skip_ws();
      npy_value v = value(key);
      if (!out.emplace(key, std::move(v)).second) bad("header dict: duplicate key '" + key + "'");
      skip_ws();
      if (peek() == ',') { ++i_; skip_ws(); }
      else if (peek() != '}') bad("header dict: expected ',' or '}' after the value of '" + key + "'");
    }
    ++i_;
    skip_ws();
    if (i_ != t_.size()) bad("header dict: unexpected text after '}'");
    return out;
  }

 private:
  [[noreturn]] void bad(const std::string& m) const { f_.fail(m); }
  char peek() const {
    if (i_ >= t_.size()) bad("header is not a Python dict (ends early)");
    return t_[i_];
  }
  void skip_ws() { while (i_ < t_.size() && std::isspace(static_cast<unsigned char>(t_[i_]))) ++i_; }
  void expect(char c, const std::string& m) { if (peek() != c) bad(m); ++i_; }

  std::string string_literal(std::string_view what) {
    const char q = peek();
    if (q != '\'' && q != '"') bad("header dict: expected a string for " + std::string(what));
    ++i_;
    std::string s;
    while (peek() != q) {
      if (t_[i_] == '\\') bad("header dict: escape sequences in strings are not supported");
      s += t_[i_++];
    }
    ++i_;
    return s;
  }

  npy_value value(const std::string& key) {
    npy_value v;
    const char c = peek();
    if (c == '\'' || c == '"') { v.k = npy_value::kind::string; v.s = string_literal("the value of '" + key + "'"); return v; }
    if (t_.substr(i_, 4) == "True") { v.k = npy_value::kind::boolean; v.b = true; i_ += 4; return v; }
    if (t_.substr(i_, 5) == "False") { v.k = npy_value::kind::boolean; v.b = false; i_ += 5; return v; }
    if (c == '(') {
      v.k = npy_value::kind::int_tuple;
      ++i_;
      skip_ws();
      while (peek() != ')') {
        v.ints.push_back(integer(key));
        if (v.ints.size() > 64) bad("header dict: '" + key + "' has more than 64 dimensions");
        skip_ws();
        if (peek() == ',') { ++i_; skip_ws(); }
        else if (peek() != ')') bad("header dict: expected ',' or ')' in the tuple of '" + key + "'");
      }
      ++i_;
      return v;
    }
    bad("header dict: unsupported value for '" + key + "' (structured dtypes and lists are not supported)");
  }

  std::int64_t integer(const std::string& key) {
    bool neg = false;
    if (peek() == '-') { neg = true; ++i_; }
    if (!std::isdigit(static_cast<unsigned char>(peek()))) bad("header dict: expected an integer in '" + key + "'");
    std::int64_t v = 0;
    bool overflow = false;
    while (i_ < t_.size() && std::isdigit(static_cast<unsigned char>(t_[i_]))) {
      overflow |= __builtin_mul_overflow(v, 10, &v) || __builtin_add_overflow(v, t_[i_] - '0', &v);
      ++i_;
    }
    if (i_ < t_.size() && t_[i_] == 'L') ++i_;  // Python 2 long literal
    if (overflow) bad("shape's element count overflows int64 (a dimension of '" + key + "' does not fit)");
    return neg ? -v : v;
  }

  const byte_view& f_;
  std::string_view t_;
  std::size_t i_ = 0;
};

}  // namespace

std::string_view dtype_name(dtype t) noexcept {
  switch (t) {
    case dtype::bf16: return "BF16";
    case dtype::f16: return "F16";
    case dtype::f32: return "F32";
    case dtype::f64: return "F64";
    case dtype::i32: return "I32";
    case dtype::i64: return "I64";
  }
  return "?";
}

std::size_t dtype_size(dtype t) noexcept {
  switch (t) {
    case dtype::bf16: case dtype::f16: return 2;
    case dtype::f32: case dtype::i32: return 4;
    case dtype::f64: case dtype::i64: return 8;
  }
  return 0;
}

input_error::input_error(const std::filesystem::path& f, const std::string& problem)
    : std::runtime_error(f.string() + ": " + problem), file(f) {}

std::map<std::string, tensor> read_safetensors(const std::filesystem::path& path, std::map<std::string, std::string>* metadata) {
  const mapped_file bytes = mapped_file::open(path, true);
  return parse_safetensors(bytes.bytes(), path, metadata);
}

std::map<std::string, tensor> parse_safetensors(std::span<const unsigned char> file, const std::filesystem::path& path,
                                                std::map<std::string, std::string>* metadata) {
  std::map<std::string, tensor> out;
  for (const auto& [name, t] : scan_safetensors(file, path, metadata)) out.emplace(name, decode(t));
  return out;
}

std::map<std::string, tensor_bytes> scan_safetensors(std::span<const unsigned char> file, const std::filesystem::path& path,
                                                     std::map<std::string, std::string>* metadata) {
  const byte_view f(file, path);
  const std::uint64_t header_len = load_le(f.read(0, 8, "the 8-byte header length").data(), 8);
  if (header_len > max_header_bytes)
    f.fail("header length " + std::to_string(header_len) + " is absurd (more than 100 MB)");
  if (header_len > f.size() - 8)
    f.fail("truncated: header length " + std::to_string(header_len) + " is larger than the " +
           std::to_string(f.size() - 8) + " bytes after the length field");
  const auto header_bytes = f.read(8, header_len, "the JSON header");
  const std::uint64_t buffer_start = 8 + header_len;
  const std::uint64_t buffer_size = f.size() - buffer_start;

  const json header = json::parse(header_bytes.begin(), header_bytes.end(), nullptr, /*allow_exceptions=*/false);
  if (metadata) metadata->clear();
  if (header.is_discarded()) f.fail("header is not valid JSON");
  if (!header.is_object()) f.fail("header JSON is not an object");

  struct entry { std::string name; dtype type; std::vector<std::int64_t> shape; std::uint64_t begin, end; };
  std::vector<entry> entries;
  for (const auto& [name, desc] : header.items()) {
    const std::string where = "tensor '" + name + "': ";
    if (name == "__metadata__") {
      if (!desc.is_object()) f.fail("__metadata__ is not an object");
      for (const auto& [k, v] : desc.items()) {
        if (!v.is_string()) f.fail("__metadata__ value for '" + k + "' is not a string");
        if (metadata) (*metadata)[k] = v.get<std::string>();
      }
      continue;
    }
    if (!desc.is_object()) f.fail(where + "description is not an object");
    for (const char* key : {"dtype", "shape", "data_offsets"})
      if (!desc.contains(key)) f.fail(where + "missing field \"" + key + "\"");
    const json& jt = desc["dtype"];
    const json& js = desc["shape"];
    const json& jo = desc["data_offsets"];
    if (!jt.is_string()) f.fail(where + "field \"dtype\" has the wrong type (want a string)");
    const auto t = safetensors_dtype(jt.get_ref<const std::string&>());
    if (!t) f.fail(where + "unknown dtype \"" + jt.get<std::string>() + "\" (supported: BF16 F16 F32 F64 I32 I64)");
    if (!js.is_array()) f.fail(where + "field \"shape\" has the wrong type (want an array of integers)");
    std::vector<std::int64_t> shape;
    for (const json& d : js) {
      if (d.is_number_unsigned()) {
        if (d.get<std::uint64_t>() > static_cast<std::uint64_t>(INT64_MAX))
          f.fail(where + "shape's element count overflows int64 (a dimension does not fit)");
        shape.push_back(static_cast<std::int64_t>(d.get<std::uint64_t>()));
      } else if (d.is_number_integer()) {
        shape.push_back(d.get<std::int64_t>());
      } else {
        f.fail(where + "field \"shape\" has the wrong type (want an array of integers)");
      }
    }
    std::int64_t count = 0;
    if (auto problem = element_count(shape, count)) f.fail(where + *problem);
    if (!jo.is_array() || jo.size() != 2 || !jo[0].is_number_unsigned() || !jo[1].is_number_unsigned())
      f.fail(where + "field \"data_offsets\" has the wrong type (want [begin, end], non-negative integers)");
    const auto begin = jo[0].get<std::uint64_t>(), end = jo[1].get<std::uint64_t>();
    if (begin > end) f.fail(where + "data_offsets begin " + std::to_string(begin) + " > end " + std::to_string(end));
    if (end > buffer_size)
      f.fail(where + "data_offsets [" + std::to_string(begin) + ", " + std::to_string(end) +
             ") out of the data buffer of " + std::to_string(buffer_size) + " bytes (truncated file?)");
    std::uint64_t bytes = 0;
    if (__builtin_mul_overflow(static_cast<std::uint64_t>(count), dtype_size(*t), &bytes) || bytes != end - begin)
      f.fail(where + "shape " + shape_string(shape) + " of " + std::string(dtype_name(*t)) + " disagrees with data_offsets size " +
             std::to_string(end - begin) + " bytes");
    entries.push_back({name, *t, std::move(shape), begin, end});
  }

  // Overlap: sort by begin; each non-empty range must start at or after the previous one ends.
  std::vector<const entry*> order;
  for (const auto& e : entries) if (e.end > e.begin) order.push_back(&e);
  std::sort(order.begin(), order.end(), [](const entry* a, const entry* b) { return a->begin < b->begin; });
  for (std::size_t i = 1; i < order.size(); ++i)
    if (order[i]->begin < order[i - 1]->end)
      f.fail("tensors '" + order[i - 1]->name + "' and '" + order[i]->name + "' have overlapping data_offsets");

  std::map<std::string, tensor_bytes> out;
  for (auto& e : entries) {
    // Sizes were checked against the buffer above: a later decode allocates what the file backs.
    const auto bytes = f.read(buffer_start + e.begin, e.end - e.begin, "tensor '" + e.name + "'");
    check_exact(f, e.name, e.type, bytes);
    out.emplace(e.name, tensor_bytes{e.name, e.type, std::move(e.shape), bytes});
  }
  return out;
}

tensor read_npy(const std::filesystem::path& path, std::optional<dtype> declared_bf16) {
  const mapped_file bytes = mapped_file::open(path, true);
  return parse_npy(bytes.bytes(), path, declared_bf16);
}

tensor parse_npy(std::span<const unsigned char> file, const std::filesystem::path& path, std::optional<dtype> declared_bf16) {
  return decode(scan_npy(file, path, declared_bf16));
}

tensor_bytes scan_npy(std::span<const unsigned char> file, const std::filesystem::path& path, std::optional<dtype> declared_bf16) {
  const byte_view f(file, path);
  if (declared_bf16 && *declared_bf16 != dtype::bf16)
    f.fail("only bfloat16 can be declared for uint16 data, not " + std::string(dtype_name(*declared_bf16)));
  const auto pre = f.read(0, 8, "the .npy magic and version");
  if (std::memcmp(pre.data(), "\x93NUMPY", 6) != 0) f.fail("not a .npy file (bad magic)");
  const int major = pre[6];
  if (major < 1 || major > 3)
    f.fail("unsupported .npy version " + std::to_string(major) + "." + std::to_string(pre[7]) + " (want 1.0, 2.0 or 3.0)");
  const std::uint64_t len_width = major == 1 ? 2 : 4;
  const std::uint64_t header_len = load_le(f.read(8, len_width, "the header length").data(), len_width);
  const std::uint64_t header_start = 8 + len_width;
  if (header_len > max_header_bytes)
    f.fail("header length " + std::to_string(header_len) + " is absurd (more than 100 MB)");
  if (header_len > f.size() - header_start)
    f.fail("truncated: header length " + std::to_string(header_len) + " is larger than the " +
           std::to_string(f.size() - header_start) + " bytes after the length field");
  const auto hb = f.read(header_start, header_len, "the header");
  const std::string_view text(reinterpret_cast<const char*>(hb.data()), hb.size());

  const auto dict = py_dict_parser(f, text).parse();
  for (const char* key : {"descr", "fortran_order", "shape"})
    if (!dict.contains(key)) f.fail(std::string("header dict lacks the key '") + key + "'");
  if (dict.size() != 3) f.fail("header dict has keys other than 'descr', 'fortran_order' and 'shape'");
  const npy_value& descr = dict.at("descr");
  const npy_value& fortran = dict.at("fortran_order");
  const npy_value& shape_v = dict.at("shape");
  if (descr.k != npy_value::kind::string) f.fail("header 'descr' has the wrong type (want a string)");
  if (fortran.k != npy_value::kind::boolean) f.fail("header 'fortran_order' has the wrong type (want True or False)");
  if (shape_v.k != npy_value::kind::int_tuple) f.fail("header 'shape' has the wrong type (want a tuple of integers)");
  if (fortran.b) f.fail("Fortran order is not supported: save with np.ascontiguousarray");

  const std::string& d = descr.s;
  if (!d.empty() && d[0] == '>')
    f.fail("big-endian descr '" + d + "' is not supported: save with arr.astype(arr.dtype.newbyteorder('<'))");
  dtype t{};
  if (d == "<f2") t = dtype::f16;
  else if (d == "<f4") t = dtype::f32;
  else if (d == "<f8") t = dtype::f64;
  else if (d == "<i4") t = dtype::i32;
  else if (d == "<i8") t = dtype::i64;
  else if (d == "<u2") {
    if (!declared_bf16) f.fail("uint16 data: pass --bf16 or a sidecar if these are bfloat16 bit patterns");
    t = dtype::bf16;
  } else {
    f.fail("unknown dtype descr '" + d + "' (supported: <f2 <f4 <f8 <i4 <i8, and <u2 as bfloat16)");
  }

  std::int64_t count = 0;
  if (auto problem = element_count(shape_v.ints, count)) f.fail(*problem);
  const std::uint64_t data_start = header_start + header_len;
  const std::uint64_t available = f.size() - data_start;
  std::uint64_t bytes = 0;
  const bool overflow = __builtin_mul_overflow(static_cast<std::uint64_t>(count), dtype_size(t), &bytes);
  if (overflow || bytes > available)
    f.fail("truncated: shape " + shape_string(shape_v.ints) + " of " + d + " needs " +
           (overflow ? std::string("more than 2^64") : std::to_string(bytes)) + " data bytes but the file has " +
           std::to_string(available));
  if (bytes < available)
    f.fail(std::to_string(available - bytes) + " trailing bytes after the data of shape " + shape_string(shape_v.ints));

  tensor_bytes out{path.stem().string(), t, shape_v.ints, f.read(data_start, bytes, "the data")};
  check_exact(f, out.name, t, out.bytes);
  return out;
}

std::map<std::string, tensor> read_npy_dir(const std::filesystem::path& dir, std::optional<dtype> declared_bf16) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) throw input_error(dir, "not a directory");
  std::map<std::string, tensor> out;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    if (!e.is_regular_file() || e.path().extension() != ".npy") continue;
    tensor t = read_npy(e.path(), declared_bf16);
    out.emplace(t.name, std::move(t));
  }
  if (ec) throw input_error(dir, "cannot list directory: " + ec.message());
  return out;
}

tensor decode(const tensor_bytes& t) {
  tensor out{t.name, t.type, t.shape, {}, false};
  decode(t.type, t.bytes, out);
  return out;
}

bool has_non_finite(const tensor_bytes& t) noexcept {
  // An exponent of all ones (infinity or NaN), tested on the bits: one pass the compiler vectorises.
  const unsigned char* p = t.bytes.data();
  const std::size_t n = t.bytes.size() / std::max<std::size_t>(1, dtype_size(t.type));
  auto any = [&](auto word, auto mask) {
    using W = decltype(word);
    W acc = 0;
    for (std::size_t i = 0; i < n; ++i) {
      W w;
      std::memcpy(&w, p + sizeof(W) * i, sizeof(W));
      acc |= static_cast<W>((w & mask) == mask);
    }
    return acc != 0;
  };
  switch (t.type) {
    case dtype::f32: return any(std::uint32_t{}, std::uint32_t{0x7f800000u});
    case dtype::f64: return any(std::uint64_t{}, std::uint64_t{0x7ff0000000000000ull});
    case dtype::bf16: return any(std::uint16_t{}, std::uint16_t{0x7f80u});
    case dtype::f16: return any(std::uint16_t{}, std::uint16_t{0x7c00u});
    case dtype::i32: case dtype::i64: break;
  }
  return false;
}

mapped_tensors map_safetensors(const std::filesystem::path& file, std::map<std::string, std::string>* metadata) {
  mapped_tensors out;
  out.files.push_back(mapped_file::open(file, false));
  out.tensors = scan_safetensors(out.files.back().bytes(), file, metadata);
  return out;
}

mapped_tensors map_npy_dir(const std::filesystem::path& dir, std::optional<dtype> declared_bf16) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) throw input_error(dir, "not a directory");
  mapped_tensors out;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    if (!e.is_regular_file() || e.path().extension() != ".npy") continue;
    mapped_file m = mapped_file::open(e.path(), false);
    tensor_bytes t = scan_npy(m.bytes(), e.path(), declared_bf16);
    out.files.push_back(std::move(m));  // the bytes stay where they are
    std::string name = t.name;
    out.tensors.emplace(std::move(name), std::move(t));
  }
  if (ec) throw input_error(dir, "cannot list directory: " + ec.message());
  return out;
}

}  // namespace ropecheck::audit
