// tools/audit/table_dump.cpp — see table_dump.hpp.
#include "table_dump.hpp"

#include <nlohmann/json.hpp>

#include <string>

#include "audit_output.hpp"
#include "explain/claim_json.hpp"
#include "explain/claim_lines.hpp"
#include "ropecheck/judge/render.hpp"
#include "ropecheck/judge/sentence.hpp"
#include "tensor_file.hpp"

namespace ropecheck::audit {
namespace {

std::vector<std::int64_t> integers(const std::filesystem::path& file, const tensor& t, const char* name) {
  if (t.type != dtype::i32 && t.type != dtype::i64)
    throw input_error(file, std::string(name) + ": dtype " + std::string(dtype_name(t.type)) + ", need I32 or I64 (positions are integers)");
  if (t.shape.size() != 1) throw input_error(file, std::string(name) + ": shape " + shape_string(t.shape) + ", need one dimension");
  std::vector<std::int64_t> v;
  v.reserve(t.values.size());
  for (const double x : t.values) v.push_back(static_cast<std::int64_t>(x));
  return v;
}

const char* rows_dtype(dtype t) {
  switch (t) {
    case dtype::bf16: return "bfloat16";
    case dtype::f16: return "float16";
    case dtype::f32: return "float32";
    case dtype::f64: return "float64";
    default: return nullptr;
  }
}

}  // namespace

table_dump load_table_dump(const std::filesystem::path& file) {
  if (file.extension() != ".safetensors")
    throw input_error(file, "a table dump is a .safetensors file of rows [N, width], positions [N] (docs/tables.md)");
  table_dump d;
  std::map<std::string, tensor> all = read_safetensors(file, &d.metadata);
  for (const auto& [name, _] : all)
    if (name != "rows" && name != "positions" && name != "left_padding" && name != "refused")
      throw input_error(file, "tensor \"" + name + "\" is not read by the table door (rows, positions, left_padding, refused)");
  if (!all.count("rows")) throw input_error(file, "no tensor \"rows\" [N, width]: the vectors the implementation added");
  if (!all.count("positions")) throw input_error(file, "no tensor \"positions\" [N]: each row's token index in its sequence");
  const tensor& rows = all.at("rows");
  const char* dt = rows_dtype(rows.type);
  if (!dt) throw input_error(file, "rows: dtype " + std::string(dtype_name(rows.type)) + ", need BF16, F16, F32 or F64");
  if (rows.shape.size() != 2) throw input_error(file, "rows: shape " + shape_string(rows.shape) + ", need [N, width]");
  d.e.dtype = dt;
  d.e.width = static_cast<int>(rows.shape[1]);
  d.e.positions = integers(file, all.at("positions"), "positions");
  if (static_cast<std::int64_t>(d.e.positions.size()) != rows.shape[0])
    throw input_error(file, "positions: " + std::to_string(d.e.positions.size()) + " entries for " + std::to_string(rows.shape[0]) +
                                " rows (one position per row)");
  if (all.count("left_padding")) {
    d.e.left_padding = integers(file, all.at("left_padding"), "left_padding");
    if (d.e.left_padding.size() != d.e.positions.size())
      throw input_error(file, "left_padding: " + std::to_string(d.e.left_padding.size()) + " entries for " +
                                  std::to_string(d.e.positions.size()) + " rows");
  }
  if (all.count("refused")) d.e.refused = integers(file, all.at("refused"), "refused");
  for (const std::int64_t p : d.e.positions)
    if (p < 0) throw input_error(file, "positions: " + std::to_string(p) + " is negative (a token's index in its sequence)");
  d.e.rows = std::move(all.at("rows").values);
  return d;
}

std::string table_summary(const table_report& r) {
  std::string s = "ropecheck audit --table: " + r.source + judge::fmt(" (%lld rows of width %d in %s, %lld positions refused)\n",
                                                                     static_cast<long long>(r.rows), r.claimed.claim.width,
                                                                     r.dtype.c_str(), static_cast<long long>(r.refused));
  for (const auto& line : explain::claim_lines(r.claimed.info)) s += "  " + line + "\n";
  s += "  claimed: " + describe(r.claimed.claim) + (r.claimed.family.empty() ? "" : " (" + r.claimed.family + ")") + "\n";
  for (const auto& n : r.notes) s += "  note: " + n + "\n";
  s += judge::fmt("\n%s: the rows against the claim: worst error/allowance %.3g (position %lld, column %d), %lld entries judged\n",
                  r.v.pass ? "PASS" : "FAIL", r.v.worst_ratio, static_cast<long long>(r.v.worst_position), r.v.worst_column,
                  static_cast<long long>(r.v.cells));
  if (!r.v.tolerance_reason.empty()) s += "  allowance: " + r.v.tolerance_reason + "\n";
  judge::verdict shown;
  shown.pass = r.v.pass;
  shown.findings = r.v.findings;
  s += judge::findings_block(shown, {"\n", "  ", ""});
  s += std::string("\n") + (r.v.pass ? "PASS" : "FAIL") + ": the table " + (r.v.pass ? "passes" : "FAILS") + "\n";
  if (!r.v.pass && !r.v.findings.empty()) s += judge::finding_line(r.v.findings.front(), "  first finding: ");
  s += judge::fmt("  audit %.2f s\n  rerun: %s\n", r.seconds, r.rerun.c_str());
  return s;
}

std::string table_json(const table_report& r) {
  nlohmann::json j;
  j["schema_version"] = 1;
  j["ropecheck_version"] = r.version;
  j["kind"] = "table";
  j["scheme"] = std::string(to_string(r.claimed.claim.scheme));
  j["command"] = r.command;
  j["source"] = r.source;
  j["pass"] = r.v.pass;
  j["exit_code"] = r.v.pass ? 0 : 1;
  j["rerun"] = r.rerun;
  j["metadata"] = r.metadata;
  j["notes"] = r.notes;
  j["claim"] = explain::claim_json(r.claimed.info);
  j["claimed"] = {{"from", r.claimed.info.source}, {"description", describe(r.claimed.claim)}, {"family", r.claimed.family}};
  j["findings"] = nlohmann::json::array();
  for (const auto& x : r.v.findings)
    j["findings"].push_back({{"bug_class", x.bug_class}, {"sentence", x.sentence}, {"confidence", x.confidence}, {"form", "table"}});
  j["table"] = {{"rows", r.rows},
                {"refused", r.refused},
                {"entries_judged", r.v.cells},
                {"rows_past_the_end", r.v.past_rows},
                {"worst_error_over_allowance", r.v.worst_ratio},
                {"worst", {{"position", r.v.worst_position}, {"column", r.v.worst_column}}},
                {"tolerance_reason", r.v.tolerance_reason}};
  j["seconds"] = {{"audit", r.seconds}};
  return j.dump(2) + "\n";
}

std::string table_junit(const table_report& r) {
  judge::finding first{"unexplained", "the rows fail the allowance", 0};
  if (!r.v.findings.empty()) first = r.v.findings.front();
  return one_case_junit("ropecheck.table", r.source + " (" + describe(r.claimed.claim) + ")", r.v.pass, first, table_summary(r));
}

}  // namespace ropecheck::audit
