// tools/audit/table_dump.hpp — `ropecheck audit --table DUMP`: the position vectors an implementation adds to the tokens
// (a sinusoid or a learned table's rows), read from a .safetensors file and judged against the table claim
// (ropecheck/judge/table.hpp; docs/tables.md):
//   rows          [N, width]  bf16 / f16 / f32 / f64: the vector added to token n (its dtype is the rows' dtype)
//   positions     [N]         i32 / i64: the token's index in its sequence (0 for the first token)
//   left_padding  [N]         optional: the padding tokens at the start of the token's sequence (0 when absent)
//   refused       [K]         optional: positions asked alone that the implementation refused with an error
// Nothing else may be in the file (a tensor ropecheck does not read is an error naming it); __metadata__ is kept.
#pragma once

#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "ropecheck/judge/table.hpp"
#include "ropecheck/table_config.hpp"

namespace ropecheck::audit {

struct table_dump {
  judge::table_evidence e;
  std::map<std::string, std::string> metadata;
};

// Throws input_error (bad file) naming the tensor and what does not fit.
[[nodiscard]] table_dump load_table_dump(const std::filesystem::path& file);

struct table_report {
  std::string version, command, source, rerun;
  std::map<std::string, std::string> metadata;
  table_config_parse claimed;
  std::vector<std::string> notes;
  judge::table_verdict v;
  std::string dtype;
  std::int64_t rows = 0, refused = 0;
  double seconds = 0;
};

[[nodiscard]] std::string table_summary(const table_report& r);
[[nodiscard]] std::string table_json(const table_report& r);
[[nodiscard]] std::string table_junit(const table_report& r);

}  // namespace ropecheck::audit
