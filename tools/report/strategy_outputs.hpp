// tools/report/strategy_outputs.hpp — the report's implementations as the judge sees them: driven on
// the probe set, judged like a dump. Reusable by any door that wants a registered implementation's
// outputs (the conformance suite, the plugin audit's comparisons).
//
// strategy_outputs(name, cfg, probe): implementation `name` of the registry (engine.hpp's
// known_implementations) with its strategy built for cfg at seq_len = the largest probe position + 1
// (the length the judge assumes by default); every probe head narrowed to the implementation's
// storage type (exact: the probe's values are k/128), rotated with the strategy's own cos/sin at each
// probe position in its compute type (rotate_heads<Compute, Storage>, as the report's sweep rotates
// its head vectors), widened to double. dtype = the storage type ("float32", "bfloat16", "float16",
// "float64"). Throws std::invalid_argument for an unknown name or a probe of another head_dim.
//
// judge_implementation(name, cfg, seed, threads): the judge's verdict on those outputs for the probe
// set judge::make_probe(cfg, seed), reference exact, default options (fp32 drift a warning): see
// report_data.hpp's judge_column. Deterministic: the same for any `threads`.
#pragma once

#include <cstdint>
#include <string>

#include "data.hpp"
#include "ropecheck/config.hpp"
#include "ropecheck/judge/judge.hpp"
#include "ropecheck/judge/probe.hpp"

namespace ropecheck::report {

[[nodiscard]] judge::dump strategy_outputs(const std::string& name, const rope_config& cfg,
                                           const judge::probe_set& probe);

[[nodiscard]] judge_column judge_implementation(const std::string& name, const rope_config& cfg, std::uint64_t seed,
                                                int threads = 0);

}  // namespace ropecheck::report
