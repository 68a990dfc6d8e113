// tools/audit/plugin_audit.hpp — `ropecheck audit --plugin lib.so`: the property suite driven
// against a foreign kernel.
//
// audit_plugin(lib) loads a kernel behind the C plugin interface (src/ropecheck/plugin.h, loaded
// by plugin_loader.hpp) and runs it through the same property drivers as ropecheck's own kernels
// (tests/properties/rope_properties.hpp, in the order the mutation table reports): the rotation
// matches the MPFR reference within the error model, norms are preserved, the inverse undoes the
// rotation, rotations compose additively, the materialised matrix is orthogonal, the relative
// offset identity holds, scores are shift invariant. The bound is that of HF's fp32 path stored in
// the plugin's dtype (tools/judge/include/ropecheck/judge/error_model.hpp). Each property is run with RapidCheck's shrinking, so
// a failure comes back as a minimal counterexample with the property's own message (the worst
// coordinate in hex floats, with its position and band) and a string that replays it.
//
// Seed: options.seed, else RC_PARAMS="seed=N" (or options.rc_params), else ROPECHECK_SEED, else
// the suite's fixed default (as the test suites). The same seed and max_success give the same
// results, whether verbose or not. RC_PARAMS="reproduce=..." (a property's `reproduce`) replays
// exactly that shrunk counterexample; the properties it does not name then pass with 0 cases.
//
// Light header: std types only (no RapidCheck, MPFR or loader internals).
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace ropecheck::audit {

struct plugin_property_result {
  std::string name;            // the property, e.g. "rotation_matches_reference"
  bool passed = false;
  int successes = 0;           // cases that passed (all of them when passed)
  std::string description;     // why it failed: the property's message (empty when passed)
  std::string counterexample;  // the shrunk counterexample, one "    name: value" line per input
  std::string reproduce;       // RC_PARAMS value replaying exactly this counterexample (empty when passed)
  std::string replay;          // command line doing so: RC_PARAMS="<reproduce>" ropecheck audit --plugin <lib>
  double seconds = 0;          // wall time of this property, shrinking included
};

struct plugin_audit_options {
  std::optional<std::uint64_t> seed;  // unset: RC_PARAMS="seed=N", ROPECHECK_SEED, the suite's default
  int max_success = 100;              // cases per property (>= 1; the materialised matrix runs 20 per 100)
  bool verbose = false;               // RapidCheck's progress and shrinking on stderr
  // RapidCheck parameters in RC_PARAMS' format, used instead of the RC_PARAMS environment
  // variable: e.g. a property's `reproduce` replays its counterexample. Only its seed (when no
  // `seed` is given), max_size, max_discard_ratio, noshrink and reproduce entries are used.
  std::optional<std::string> rc_params;
  // Called before each property is run (index 0-based, total = the number of properties).
  std::function<void(const std::string& property, int index, int total)> on_property;
};

struct plugin_audit_result {
  std::string plugin_path;
  std::string plugin_name;   // ropecheck_plugin_name(), or the file's stem
  std::string element_type;  // "float32", "float64", "bfloat16", "float16"
  std::string convention;    // one line: head_dim, rotary_dim, base, scaling, factor, layout, ...
  std::uint64_t seed = 0;
  int max_success = 0;
  std::string rerun;         // command line rerunning the whole audit: ropecheck audit --plugin <lib> --seed N ...
  std::vector<plugin_property_result> properties;
  bool passed = false;       // every property passed
};

// Throws ropecheck::plugin::plugin_error (plugin_loader.hpp) when the library cannot be loaded
// (missing file, missing symbol, ABI mismatch, invalid convention; the message names the file),
// std::invalid_argument when max_success < 1 or rc_params cannot be parsed. A plugin whose apply() fails or throws during the
// audit fails the property it happened in (the message is the property's description).
[[nodiscard]] plugin_audit_result audit_plugin(const std::filesystem::path& lib, const plugin_audit_options& options = {});

// The property names audit_plugin runs, in order.
[[nodiscard]] std::vector<std::string> plugin_property_names();

}  // namespace ropecheck::audit
