// tools/explain/explain_cli.hpp — the `explain` subcommand: what ropecheck derives from a config.json.
//
//   ropecheck explain --config config.json [--layer N] [--json FILE] [--layout L | --rotary-dim N | --assume-llama]
//   ropecheck explain --families [--markdown]
//   ropecheck explain --variants [--markdown]
//
// Prints the convention of every layer, grouped (the layers sharing one convention, and the layers
// without RoPE with their kind and the rule that says so), each fact with its source: a key of the file,
// the family's class default, or the family's code (file and function). Exit 0 when every layer's
// convention was derived, 2 on what cannot be derived (a model type without facts and no declaration, a
// field the family does not read, a contradiction): the message names the field and how to declare it.
// A config.json whose family adds a score-matrix bias (ALiBi: BLOOM, MPT, Falcon with alibi true; T5's buckets:
// T5, mT5, UMT5, ...) prints its bias claim instead (bias_config.hpp): the scheme in one line, the claim's facts with
// their sources, and the stack's layers by kind (T5: the first layer computes, the rest share; UMT5: every layer).
// --families lists the families ropecheck has facts for (--markdown: the README's table); --variants the
// RoPE variants engines ship (src/ropecheck/engine_variants.hpp) and what ropecheck does with each.
#pragma once

#include <CLI/CLI.hpp>

#include <optional>
#include <string>

#include "../cli_common.hpp"

namespace ropecheck::explain {

class explain_command {
 public:
  void add_to(CLI::App& app);
  [[nodiscard]] bool parsed() const { return app_->parsed(); }
  int run();

 private:
  CLI::App* app_ = nullptr;
  cli::convention_flags conv_;
  std::optional<std::string> json_;
  bool families_ = false, variants_ = false, markdown_ = false;
};

// The README's family table (explain --families --markdown), one row per family of the table.
[[nodiscard]] std::string families_markdown();

// The README's table of engines' RoPE variants (explain --variants --markdown), one row per variant.
[[nodiscard]] std::string variants_markdown();

}  // namespace ropecheck::explain
