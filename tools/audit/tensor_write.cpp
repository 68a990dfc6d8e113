// tools/audit/tensor_write.cpp — see tensor_write.hpp.
#include "tensor_write.hpp"

#include <nlohmann/json.hpp>

#include <bit>
#include <fstream>
#include <set>
#include <stdexcept>
#include <system_error>

namespace ropecheck::audit {

std::vector<unsigned char> i64_bytes(const std::vector<std::int64_t>& v) {
  static_assert(std::endian::native == std::endian::little, "the writer assumes a little-endian host");
  std::vector<unsigned char> b(v.size() * sizeof(std::int64_t));
  for (std::size_t i = 0; i < v.size(); ++i) {
    const auto u = static_cast<std::uint64_t>(v[i]);
    for (std::size_t k = 0; k < 8; ++k) b[i * 8 + k] = static_cast<unsigned char>(u >> (8 * k));
  }
  return b;
}

std::string safetensors_bytes(const std::vector<tensor_out>& tensors, const std::map<std::string, std::string>& metadata) {
  nlohmann::ordered_json header = nlohmann::ordered_json::object();
  std::set<std::string> names;
  std::size_t offset = 0;
  for (const tensor_out& t : tensors) {
    if (t.name == "__metadata__" || !names.insert(t.name).second)
      throw std::invalid_argument("safetensors_bytes: tensor name '" + t.name + "' repeats or is reserved");
    std::size_t count = 1;
    for (const auto e : t.shape) {
      if (e < 0) throw std::invalid_argument("safetensors_bytes: tensor '" + t.name + "' has a negative extent");
      count *= static_cast<std::size_t>(e);
    }
    if (count * dtype_size(t.type) != t.bytes.size())
      throw std::invalid_argument("safetensors_bytes: tensor '" + t.name + "' holds " + std::to_string(t.bytes.size()) +
                                  " bytes, its shape and dtype need " + std::to_string(count * dtype_size(t.type)));
    header[t.name] = {{"dtype", std::string(dtype_name(t.type))},
                      {"shape", t.shape},
                      {"data_offsets", {offset, offset + t.bytes.size()}}};
    offset += t.bytes.size();
  }
  header["__metadata__"] = metadata;
  std::string h = header.dump();
  h.append((8 - h.size() % 8) % 8, ' ');
  std::string out;
  out.reserve(8 + h.size() + offset);
  const auto n = static_cast<std::uint64_t>(h.size());
  for (int k = 0; k < 8; ++k) out.push_back(static_cast<char>(n >> (8 * k)));
  out += h;
  for (const tensor_out& t : tensors) out.append(reinterpret_cast<const char*>(t.bytes.data()), t.bytes.size());
  return out;
}

void write_safetensors(const std::filesystem::path& file, const std::vector<tensor_out>& tensors,
                       const std::map<std::string, std::string>& metadata) {
  const std::string bytes = safetensors_bytes(tensors, metadata);
  std::filesystem::path tmp = file;
  tmp += ".part";
  const auto fail = [&](const std::string& why) {
    std::error_code ignored;
    std::filesystem::remove(tmp, ignored);  // never leave the temporary behind
    throw input_error(file, why);
  };
  {
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    if (!f) throw input_error(file, "cannot be opened for writing");
    f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    if (!f.flush()) {
      f.close();
      fail("write failed");
    }
  }
  std::error_code ec;
  std::filesystem::rename(tmp, file, ec);
  if (ec) fail("cannot be written (" + ec.message() + ")");
}

}  // namespace ropecheck::audit
