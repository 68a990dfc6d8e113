// tools/certify/certify_cli.hpp — the `certify` and `merge` subcommands of the ropecheck command line.
//
//   ropecheck certify [--config config.json | --preset NAME] [overrides] [--impl NAME ...] [--plugin lib.so]
//                     [--max-position N] [--shard k/N] [--out certificate.json] [--threads T]
//   ropecheck merge PART.json ... [--out certificate.json]
//
// Exit codes: certify 0 pass, 1 fail (a certificate whose verdict is fail), 2 bad input or I/O; a
// shard (--shard k/N with N > 1) writes a partial and exits 0 (the verdict is merge's); merge 0 pass,
// 1 fail, 2 bad input (partials of other inputs, a shard missing or given twice, an unreadable file).
#pragma once

#include <CLI/CLI.hpp>

#include <string>
#include <vector>

#include "../cli_common.hpp"
#include "certify_data.hpp"

namespace ropecheck::certify {

class certify_commands {
 public:
  void add_to(CLI::App& app);
  [[nodiscard]] bool parsed() const { return certify_->parsed() || merge_->parsed(); }
  int run(const std::string& command_line);

 private:
  int certify_main(const std::string& command_line);
  int merge_main();

  CLI::App* certify_ = nullptr;
  CLI::App* merge_ = nullptr;
  cli::convention_flags conv_;
  certify_request req_;
  std::string shard_, out_, timing_out_;
  bool list_ = false, quiet_ = false;
  std::vector<std::string> parts_;
  std::string merge_out_ = "certificate.json";
};

}  // namespace ropecheck::certify
