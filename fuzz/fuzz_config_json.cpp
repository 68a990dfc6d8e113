// fuzz/fuzz_config_json.cpp — libFuzzer target: an HF config.json read as `ropecheck report
// --config` reads it (ropecheck/config_json.hpp), then the resulting schedule.
//
// The input is the file's text. It is parsed as load_hf_config_with_notes parses a file (strict
// JSON, no comments; a syntax error is its config_error, so it is skipped here), then
// parse_hf_config_with_notes. Findings: a crash, a sanitizer report, an exception other than
// config_error (config_json.hpp: "Everything rejected throws config_error"), a config that parse
// accepted but validate() rejects, a schedule of the wrong size, and a non-finite frequency or
// attention factor from an accepted config (the parser now refuses schedules that overflow; the
// reproducers of the three it used to accept are fuzz/corpus/config_json/finding_*.json).
// ROPECHECK_FUZZ_FINITE=0 turns the finiteness check off.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <string>

#include <nlohmann/json.hpp>

#include "fuzz_check.hpp"
#include "ropecheck/config_json.hpp"
#include "ropecheck/schedule.hpp"

namespace {

// Bands up to which the schedule is computed too (real models have <= 256; keep executions fast).
constexpr int max_schedule_bands = 4096;

bool strict_finite() {
  static const bool on = [] {
    const char* v = std::getenv("ROPECHECK_FUZZ_FINITE");
    return !(v && std::string(v) == "0");
  }();
  return on;
}

void check_schedule(const ropecheck::rope_config& c, std::int64_t seq_len) {
  const auto s = ropecheck::compute_frequencies<double>(c, seq_len);
  FUZZ_CHECK(s.inv_freq.size() == static_cast<std::size_t>(c.bands()), "%zu frequencies for %d bands",
             s.inv_freq.size(), c.bands());
  if (!strict_finite()) return;
  FUZZ_CHECK(std::isfinite(s.attention_factor), "attention factor %.17g at seq_len %lld", s.attention_factor,
             static_cast<long long>(seq_len));
  for (std::size_t i = 0; i < s.inv_freq.size(); ++i)
    FUZZ_CHECK(std::isfinite(s.inv_freq[i]), "inv_freq[%zu] = %.17g at seq_len %lld", i, s.inv_freq[i],
               static_cast<long long>(seq_len));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using json = nlohmann::json;
  const json j = json::parse(data, data + size, nullptr, /*allow_exceptions=*/false, /*ignore_comments=*/false);
  if (j.is_discarded()) return 0;

  ropecheck::hf_config_parse parsed;
  try {
    parsed = ropecheck::parse_hf_config_with_notes(j, "fuzz.json");
  } catch (const ropecheck::config_error& e) {
    const std::string m = e.what();
    FUZZ_CHECK(m.rfind("fuzz.json: ", 0) == 0 && !e.problem().empty(), "config_error message: %s", m.c_str());
    return 0;
  }
  const ropecheck::rope_config& c = parsed.config;
  // parse validated it (and would have thrown config_error): validate must agree; an
  // std::invalid_argument escaping here is a finding.
  ropecheck::validate(c);
  FUZZ_CHECK(ropecheck::parse_hf_config(j) == c, "parse_hf_config and parse_hf_config_with_notes disagree");

  // Every layer: a convention iff it rotates, each valid; the primary one is the first RoPE layer's.
  for (const auto& l : parsed.layers) {
    FUZZ_CHECK(l.config.has_value() == (l.kind == ropecheck::layer_kind::rope), "layer %d: kind %s but %s convention", l.index,
               std::string(ropecheck::to_string(l.kind)).c_str(), l.config ? "a" : "no");
    if (l.config) ropecheck::validate(*l.config);
  }
  if (parsed.primary_layer >= 0 && !parsed.layers.empty())
    FUZZ_CHECK(*parsed.layers[static_cast<std::size_t>(parsed.primary_layer)].config == c, "the primary convention is not layer %d's",
               parsed.primary_layer);
  if (parsed.indexer) ropecheck::validate(parsed.indexer->config);
  if (c.bands() > max_schedule_bands) return 0;
  check_schedule(c, 0);
  // Past the training length: dynamic NTK rescales, LongRoPE switches to its long factors.
  const std::int64_t L = c.trained_length();
  check_schedule(c, L < std::numeric_limits<std::int64_t>::max() ? L + 1 : L);
  return 0;
}
