// tools/explain/claim_json.hpp — a claim (ropecheck/claim.hpp) as JSON, for the writers of summary.json,
// the audit's JSON and explain's --json. Heavy (nlohmann/json): include it only from writer sources.
#pragma once

#include <nlohmann/json.hpp>

#include "ropecheck/claim.hpp"

namespace ropecheck::explain {

[[nodiscard]] nlohmann::json claim_json(const claim& c);
[[nodiscard]] nlohmann::json fact_json(const fact& f);

}  // namespace ropecheck::explain
