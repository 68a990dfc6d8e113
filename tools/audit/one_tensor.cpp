// tools/audit/one_tensor.cpp — see one_tensor.hpp.
#include "one_tensor.hpp"

#include <map>
#include <stdexcept>

namespace ropecheck::audit {
namespace {

bool ends_with(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

}  // namespace

tensor read_one_tensor(const std::filesystem::path& file, const std::string& flag, std::initializer_list<const char*> name_suffixes,
                       const std::vector<std::int64_t>& want, const std::string& layout) {
  const std::string who = flag + ": " + file.string();
  tensor t;
  try {
    if (file.extension() == ".npy") {
      t = read_npy(file);
    } else if (file.extension() == ".safetensors") {
      std::map<std::string, tensor> all = read_safetensors(file);
      std::vector<std::string> names, tables;
      for (const auto& [name, _] : all) {
        names.push_back(name);
        for (const char* suffix : name_suffixes)
          if (ends_with(name, suffix)) {
            tables.push_back(name);
            break;
          }
      }
      const std::vector<std::string>& pick = all.size() == 1 ? names : tables;
      if (pick.size() != 1) {
        std::string list;
        for (const std::string& n : pick.empty() ? names : pick) list += (list.empty() ? "" : ", ") + n;
        throw std::invalid_argument(who + ": " + std::to_string(pick.empty() ? names.size() : pick.size()) +
                                    " tensors and no single table (" + list +
                                    "); save the one table judged (a .npy file, or a .safetensors of it alone)");
      }
      t = std::move(all.at(pick.front()));
    } else {
      throw std::invalid_argument(who + ": a .npy or .safetensors file of the table " + layout);
    }
  } catch (const input_error& e) {
    throw std::invalid_argument(flag + ": " + std::string(e.what()));
  }
  if (t.shape != want) {
    const bool transposed = want.size() == 2 && t.shape == std::vector<std::int64_t>{want[1], want[0]};
    throw std::invalid_argument(who + ": shape " + shape_string(t.shape) + ", the claim's table is " + layout +
                                (transposed ? ": this one is transposed" : ""));
  }
  if (t.has_non_finite) throw std::invalid_argument(who + ": a value is NaN or infinite");
  return t;
}

}  // namespace ropecheck::audit
