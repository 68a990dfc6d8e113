// tools/report/registry.hpp — the implementations `ropecheck report` knows (internal to the report
// engine; the public view is known_implementations() in engine.hpp).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "engine.hpp"
#include "sweep/measure.hpp"
#include "ropecheck/judge/judge.hpp"
#include "ropecheck/judge/probe.hpp"

namespace ropecheck::report::detail {

using sweep::detail::rope_reference;
using sweep::detail::runner;  // one implementation measured (tools/sweep/measure.hpp)

struct registry_entry {
  implementation_info info;
  std::unique_ptr<runner> (*make)(const rope_config&, std::int64_t seq_len, const rope_reference&) = nullptr;
  // The same strategy driven on the probe set (probe_outputs.hpp).
  judge::dump (*outputs)(const rope_config&, std::int64_t seq_len, const judge::probe_set&) = nullptr;
  std::string storage_dtype;  // its Storage type as the judge names dtypes ("float32", "bfloat16", ...)
};

// In report order; names are stable.
[[nodiscard]] const std::vector<registry_entry>& registry();

// The entries of `names` in the order given, duplicates dropped; empty = the default set.
// Throws std::invalid_argument for an unknown name (the message lists the known ones).
[[nodiscard]] std::vector<const registry_entry*> select_implementations(const std::vector<std::string>& names);

}  // namespace ropecheck::report::detail
