// tools/report/registry.cpp — the registry of report implementations (registry.hpp).
#include "registry.hpp"

#include "probe_outputs.hpp"
#include "sweep/strategies.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>
#include <utility>

namespace ropecheck::report {
namespace detail {
namespace {

// One entry: MakeS is a captureless lambda (cfg, seq_len) -> the strategy, so that the runner and
// the probe driver are made from the same strategy with the same Compute/Storage types.
template <class Compute, class Storage, class MakeS>
void add_entry(std::vector<registry_entry>& r, std::string name, std::string description, std::string dtype,
               bool in_default_set, MakeS) {
  registry_entry e;
  e.info = {std::move(name), std::move(description), std::move(dtype), in_default_set};
  e.make = [](const rope_config& c, std::int64_t n, const rope_reference& ref) -> std::unique_ptr<runner> {
    auto s = MakeS{}(c, n);
    return std::make_unique<sweep::detail::typed_runner<decltype(s), Compute, Storage>>(std::move(s), ref);
  };
  e.outputs = [](const rope_config& c, std::int64_t n, const judge::probe_set& probe) {
    return probe_outputs<Compute, Storage>(MakeS{}(c, n), c, probe);
  };
  e.storage_dtype = judge_dtype_name<Storage>();
  r.push_back(std::move(e));
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// The registry.
const std::vector<registry_entry>& registry() {
  static const std::vector<registry_entry> entries = [] {
    std::vector<registry_entry> r;
    sweep::for_each_strategy([&r]<class Compute, class Storage>(const char* name, const char* description, const char* dtype,
                                                         bool in_default_set, auto make, const sweep::arithmetic&) {
      add_entry<Compute, Storage>(r, name, description, dtype, in_default_set, make);
    });
    return r;
  }();
  return entries;
}

std::vector<const registry_entry*> select_implementations(const std::vector<std::string>& names) {
  std::vector<const registry_entry*> out;
  if (names.empty()) {
    for (const auto& e : registry())
      if (e.info.in_default_set) out.push_back(&e);
    return out;
  }
  for (const auto& n : names) {
    const auto it = std::find_if(registry().begin(), registry().end(), [&](const auto& e) { return e.info.name == n; });
    if (it == registry().end()) {
      std::string known;
      for (const auto& e : registry()) known += (known.empty() ? "" : ", ") + e.info.name;
      throw std::invalid_argument("report: unknown implementation '" + n + "' (known: " + known + ")");
    }
    if (std::find(out.begin(), out.end(), &*it) == out.end()) out.push_back(&*it);
  }
  return out;
}

}  // namespace detail

std::vector<implementation_info> known_implementations() {
  std::vector<implementation_info> out;
  for (const auto& e : detail::registry()) out.push_back(e.info);
  return out;
}

}  // namespace ropecheck::report
