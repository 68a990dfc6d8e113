// tools/audit/table_weights.cpp — see table_weights.hpp.
#include "table_weights.hpp"

#include <map>
#include <stdexcept>
#include <string>

#include "tensor_file.hpp"

namespace ropecheck::audit {
namespace {

bool ends_with(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

}  // namespace

std::vector<double> read_table_weights(const std::filesystem::path& file, std::int64_t rows, int width) {
  const std::string who = "--table-weights: " + file.string();
  tensor t;
  try {
    if (file.extension() == ".npy") {
      t = read_npy(file);
    } else if (file.extension() == ".safetensors") {
      std::map<std::string, tensor> all = read_safetensors(file);
      std::vector<std::string> names, tables;
      for (const auto& [name, _] : all) {
        names.push_back(name);
        if (ends_with(name, "wpe.weight") || ends_with(name, "position_embeddings.weight") || ends_with(name, "embed_positions.weight"))
          tables.push_back(name);
      }
      const std::vector<std::string>& pick = all.size() == 1 ? names : tables;
      if (pick.size() != 1) {
        std::string list;
        for (const std::string& n : pick.empty() ? names : pick) list += (list.empty() ? "" : ", ") + n;
        throw std::invalid_argument(who + ": " + std::to_string(pick.empty() ? names.size() : pick.size()) +
                                    " tensors and no single position table (" + list +
                                    "); save the one table judged (a .npy file, or a .safetensors of it alone)");
      }
      t = std::move(all.at(pick.front()));
    } else {
      throw std::invalid_argument(who + ": a .npy or .safetensors file of the position table's weight [rows, width]");
    }
  } catch (const input_error& e) {
    throw std::invalid_argument("--table-weights: " + std::string(e.what()));
  }
  const std::vector<std::int64_t> want{rows, width};
  if (t.shape != want) {
    const bool transposed = t.shape == std::vector<std::int64_t>{width, rows};
    throw std::invalid_argument(who + ": shape " + shape_string(t.shape) + ", the claim's table is [rows " + std::to_string(rows) +
                                ", width " + std::to_string(width) + "] (nn.Embedding(num_positions, dim).weight)" +
                                (transposed ? ": this one is transposed" : ""));
  }
  if (t.has_non_finite) throw std::invalid_argument(who + ": a value is NaN or infinite");
  return std::move(t.values);
}

}  // namespace ropecheck::audit
