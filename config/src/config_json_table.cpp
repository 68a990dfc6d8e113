// config/src/config_json_table.cpp — parse_table_config / load_table_config (ropecheck/table_config.hpp): a config.json
// of a family that adds an absolute position vector at the input, read into the table claim of the stack asked.
// Every fact comes from the file, the family's class default (cited) or its modeling code (cited); a class default
// ropecheck has not read is never assumed: the key is then required. The rules per family are the table of
// config_json_table_families.cpp. Covered by tests/config/config_json_table_test.cpp.
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "config_json_reader.hpp"
#include "config_json_table_rules.hpp"
#include "ropecheck/table_config.hpp"

namespace ropecheck {
namespace {

using nlohmann::json;
using detail::json_read::describe;
using detail::json_read::fact_log;
using detail::json_read::reader;
using detail::table_rules::stack_rule;
using detail::table_rules::table_family;

// An integer key (or its alias), the class default when absent ("" default source: required).
std::int64_t int_key(const reader& r, const json& j, const fact_log& log, const char* key, const char* alias,
                     std::optional<std::int64_t> dflt, const char* dflt_source, const std::string& field,
                     const std::string& family) {
  const auto a = r.integer(j, key, key);
  std::optional<std::int64_t> b;
  if (alias) b = r.integer(j, alias, alias);
  const auto v = alias ? r.agree(a, key, b, alias) : a;
  if (v) {
    if (*v < 1 || *v > (std::int64_t{1} << 32)) r.fail(a ? key : alias, "must be in [1, 2^32], got " + std::to_string(*v));
    log.add(field, std::to_string(*v), fact_origin::file, a ? key : alias);
    return *v;
  }
  if (!dflt)
    r.fail(key, std::string("missing: ") + family + "'s class default for it is not one ropecheck has read; give it");
  log.add(field, std::to_string(*dflt), fact_origin::class_default, dflt_source);
  return *dflt;
}

// A key naming another positional scheme than the family's is an error naming it.
void refuse_scheme_keys(const reader& r, const json& j, const table_family& f) {
  for (auto it = j.begin(); it != j.end(); ++it) {
    const std::string& k = it.key();
    bool read = false;
    for (const char* x : f.scheme_keys_read) read = read || (x && k == x);
    if (read || it->is_null()) continue;
    for (const char* p : {"rope", "rotary", "alibi", "relative_attention", "partial_rotary", "position_embedding_type", "sinusoid"})
      if (k.rfind(p, 0) == 0)
        r.fail(k, "is not read by " + std::string(f.family) + " (" + f.adds +
                      "); ropecheck refuses a positional key the family's code would ignore");
  }
}

}  // namespace

std::optional<table_config_parse> parse_table_config(const json& j, const std::string& source, const table_declaration& decl) {
  if (!j.is_object() || detail::json_read::nesting_depth(j) > detail::json_read::max_nesting) return std::nullopt;
  const reader r(source);
  const auto mt = r.string(j, "model_type", "model_type");
  if (!mt) return std::nullopt;
  const table_family* f = detail::table_rules::find_table_family(*mt);
  if (!f) return std::nullopt;
  table_config_parse out;
  out.model_type = *mt;
  out.via = "model_type \"" + *mt + "\"";
  const fact_log log{out.info.facts};
  if (f->choose)  // a family whose scheme a key selects or forbids (DistilBERT's sinusoidal_pos_embds, BERT's type)
    if (const table_family* other = f->choose(r, j)) f = other;
  out.family = f->family;
  refuse_scheme_keys(r, j, *f);
  // The stack: encoder-decoder families have one table per stack.
  const bool two_stacks = f->decoder.rows_key != nullptr;
  if (decl.stack && !two_stacks)
    r.fail("model_type", "\"" + *mt + "\" has one stack; --stack is for encoder-decoder families");
  out.stack = two_stacks ? decl.stack.value_or("encoder") : "";
  const stack_rule& s = out.stack == "decoder" ? f->decoder : f->encoder;
  if (two_stacks)
    log.add("stack", out.stack, decl.stack ? fact_origin::declared : fact_origin::derived,
            decl.stack ? "--stack" : "the default stack (--stack decoder for the other)");
  table_claim& c = out.claim;
  c.scheme = s.sinusoidal ? table_scheme::sinusoidal : table_scheme::learned;
  c.width = static_cast<int>(int_key(r, j, log, f->width_key, f->width_alias, f->width_default, f->width_default_source, "width", f->family));
  const std::int64_t length = int_key(r, j, log, s.rows_key, s.rows_alias, s.rows_default, s.rows_default_source, s.rows_key, f->family);
  std::int64_t pad = -1;
  if (s.pad_key) pad = r.integer(j, s.pad_key, s.pad_key).value_or(s.pad_default);
  if (s.pad_key) {
    if (pad < 0) r.fail(s.pad_key, "must be >= 0 for " + std::string(f->family) + " (its positions start at pad_token_id + 1)");
    log.add("pad_token_id", std::to_string(pad), j.contains(s.pad_key) && !j.at(s.pad_key).is_null() ? fact_origin::file : fact_origin::class_default,
            j.contains(s.pad_key) && !j.at(s.pad_key).is_null() ? s.pad_key : s.pad_default_source);
  }
  c.offset = s.offset_from_pad ? pad + 1 : s.offset;
  log.add("offset", std::to_string(c.offset), fact_origin::family_code, s.offset_source);
  c.padding = s.padding;
  if (c.padding == padding_rule::skipped) {
    c.padding_row = s.padding_row_is_pad ? pad : s.padding_row;
    c.padding_row_zero = s.padding_row_zero;
  }
  log.add("positions", std::string(to_string(c.padding)) + (c.padding == padding_rule::skipped ? " (a padding token reads row " + std::to_string(c.padding_row) + ")" : ""),
          fact_origin::family_code, s.positions_source);
  if (c.scheme == table_scheme::sinusoidal) {
    if (c.width % 2 != 0) r.fail(f->width_key, std::to_string(c.width) + " is odd; ropecheck's sinusoid claims are of even widths");
    c.layout = s.layout;
    c.denominator = s.fairseq_denominator ? c.width / 2.0 - 1 : c.width / 2.0;
    c.base = 10000;
    log.add("sinusoid", std::string(to_string(c.layout)) + ", base 10000, denominator " + (s.fairseq_denominator ? "d/2 - 1" : "d/2"),
            fact_origin::family_code, s.values_source);
  }
  c.rows = s.no_end ? 0 : length + s.rows_extra;
  log.add("rows", s.no_end ? "no end" : std::to_string(c.rows), fact_origin::family_code, s.rows_source);
  if (f->scale_key) {
    const bool scaled = r.boolean(j, f->scale_key, f->scale_key).value_or(false);
    log.add("position_scale", "1", fact_origin::family_code,
            std::string(scaled ? "scale_embedding true: " : "") + f->scale_source);
  }
  if (s.note) out.notes.push_back(s.note);
  try {
    check_table_claim(c);
  } catch (const std::invalid_argument& e) {
    r.fail(s.rows_key, e.what());
  }
  claim& info = out.info;
  info.source = source;
  info.family = out.family;
  info.model_type = out.model_type;
  info.via = out.via;
  info.layer_type = out.stack.empty() ? "" : out.stack;
  info.primary = false;
  log.add("scheme", describe(c), fact_origin::derived, "the facts above (table_config.hpp describe)");
  return out;
}

std::optional<table_config_parse> load_table_config(const std::filesystem::path& path, const table_declaration& decl) {
  return parse_table_config(detail::json_read::read_config_json(path), path.string(), decl);
}

}  // namespace ropecheck
