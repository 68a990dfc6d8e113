// tools/audit/bias_table.cpp — see bias_table.hpp.
#include "bias_table.hpp"

#include <cmath>
#include <map>
#include <stdexcept>
#include <string>

#include "tensor_file.hpp"

namespace ropecheck::audit {
namespace {

std::string shape_text(const std::vector<std::int64_t>& shape) {
  std::string s = "[";
  for (std::size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

bool ends_with(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

}  // namespace

std::vector<double> read_t5_table(const std::filesystem::path& file, int num_buckets, int heads) {
  const std::string who = "--t5-table: " + file.string();
  tensor t;
  try {
    if (file.extension() == ".npy") {
      t = read_npy(file);
    } else if (file.extension() == ".safetensors") {
      std::map<std::string, tensor> all = read_safetensors(file);
      std::vector<std::string> names, tables;
      for (const auto& [name, _] : all) {
        names.push_back(name);
        if (ends_with(name, "relative_attention_bias.weight")) tables.push_back(name);
      }
      const std::vector<std::string>& pick = all.size() == 1 ? names : tables;
      if (pick.size() != 1) {
        std::string list;
        for (const std::string& n : pick.empty() ? names : pick) list += (list.empty() ? "" : ", ") + n;
        throw std::invalid_argument(who + ": " + std::to_string(pick.empty() ? names.size() : pick.size()) +
                                    " tensors and no single relative_attention_bias.weight (" + list +
                                    "); save the one table of the layer judged (a .npy file, or a .safetensors of it alone)");
      }
      t = std::move(all.at(pick.front()));
    } else {
      throw std::invalid_argument(who + ": a .npy or .safetensors file of relative_attention_bias.weight [num_buckets, heads]");
    }
  } catch (const input_error& e) {
    throw std::invalid_argument("--t5-table: " + std::string(e.what()));
  }
  const std::vector<std::int64_t> want{num_buckets, heads};
  if (t.shape != want) {
    const bool transposed = t.shape == std::vector<std::int64_t>{heads, num_buckets};
    throw std::invalid_argument(who + ": shape " + shape_text(t.shape) + ", the claim's table is [num_buckets " +
                                std::to_string(num_buckets) + ", heads " + std::to_string(heads) +
                                "] (relative_attention_bias.weight, nn.Embedding(num_buckets, n_heads))" +
                                (transposed ? ": this one is transposed" : ""));
  }
  if (t.has_non_finite) throw std::invalid_argument(who + ": a value is NaN or infinite");
  return std::move(t.values);
}

}  // namespace ropecheck::audit
