// tools/probe/probe_cli.cpp — see probe_cli.hpp.
#include "probe_cli.hpp"

#include <nlohmann/json.hpp>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <map>

#include "plugin_limits.hpp"
#include "probe_file.hpp"
#include "ropecheck/judge/bias.hpp"
#include "ropecheck/judge/describe.hpp"
#include "ropecheck/judge/sentence.hpp"
#include "ropecheck/judge/table.hpp"

namespace ropecheck::probe {

std::vector<std::string> claim_arguments(const cli::convention_flags& f) {
  std::vector<std::string> a;
  if (!f.config_path.empty()) a.insert(a.end(), {"--config", std::filesystem::absolute(f.config_path).string()});
  if (!f.preset.empty()) a.insert(a.end(), {"--preset", f.preset});
  if (f.layer) a.insert(a.end(), {"--layer", std::to_string(*f.layer)});
  if (f.indexer) a.emplace_back("--indexer");
  if (f.assume_llama) a.emplace_back("--assume-llama");
  if (f.engine != "transformers") a.insert(a.end(), {"--engine", f.engine});
  if (f.max_model_len) a.insert(a.end(), {"--max-model-len", std::to_string(*f.max_model_len)});
  if (f.head_offset) a.insert(a.end(), {"--head-offset", std::to_string(*f.head_offset)});
  if (f.local_heads) a.insert(a.end(), {"--local-heads", std::to_string(*f.local_heads)});
  if (f.stack) a.insert(a.end(), {"--stack", *f.stack});
  if (f.t5_table) a.insert(a.end(), {"--t5-table", std::filesystem::absolute(*f.t5_table).string()});
  const auto num = [](double v) { return judge::fmt("%.17g", v); };
  if (f.table_scheme_name) a.insert(a.end(), {"--table-scheme", *f.table_scheme_name});
  if (f.table_layout) a.insert(a.end(), {"--table-layout", *f.table_layout});
  if (f.table_denominator) a.insert(a.end(), {"--table-denominator", num(*f.table_denominator)});
  if (f.table_base) a.insert(a.end(), {"--table-base", num(*f.table_base)});
  if (f.table_offset) a.insert(a.end(), {"--table-offset", std::to_string(*f.table_offset)});
  if (f.table_rows) a.insert(a.end(), {"--table-rows", std::to_string(*f.table_rows)});
  if (f.padding_idx) a.insert(a.end(), {"--padding-idx", std::to_string(*f.padding_idx)});
  if (f.table_weights) a.insert(a.end(), {"--table-weights", std::filesystem::absolute(*f.table_weights).string()});
  for (const std::string& o : f.overrides()) {  // "--flag value"
    const auto space = o.find(' ');
    a.push_back(o.substr(0, space));
    if (space != std::string::npos) a.push_back(o.substr(space + 1));
  }
  return a;
}

std::string vllm_reading_if_other(const cli::convention_flags& f, const rope_config& claimed, const rope_config& fallback) {
  if (f.config_path.empty() || f.engine == "vllm") return "";
  cli::convention_flags v = f;
  v.engine = "vllm";
  std::string from;
  try {
    const rope_config r = v.resolve(from, fallback);
    return r == claimed ? "" : judge::convention_line(r);
  } catch (const std::exception& e) {
    return std::string("not derived without more: ") + e.what();  // e.g. LongRoPE's --max-model-len
  }
}

void probe_command::add_to(CLI::App& app) {
  app_ = app.add_subcommand("probe", "write the judge's probe set and call plan for a claimed convention (for the Python door)");
  conv_.add_to(app_);
  app_->add_option("--dtype", dtype_, "the kernel's dtype: float32, bfloat16, float16 or float64")->required();
  app_->add_option("--out", out_, "the probe file to write (safetensors; layout: docs/python.md)")->required();
  app_->add_option("--seed", seed_, "seed of the probe's inputs (default: ROPECHECK_SEED, else the suites' default)");
  app_->add_option("--heads", heads_,
                   "heads per token (the query heads of --form qk and attention; default 4, attention 8, a bias claim its "
                   "held heads)")->check(CLI::Range(1, 1 << 12));
  app_->add_option("--table-width", table_width_, "--form table by flags: the rows' width (a config says its own)")
      ->check(CLI::Range(1, 1 << 20));
  app_->add_option("--form", form_, "x: fn(x, positions) -> y; qk: fn(q, k, positions) -> (q', k'), judged together; table: the rows "
                                    "an absolute position table adds (docs/tables.md)")
      ->check(CLI::IsMember({"x", "qk", "attention", "table"}))
      ->capture_default_str();
  app_->add_option("--kv-heads", kv_heads_,
                   "--form qk or attention: the key heads (dividing --heads: query head h reads key head h / (heads / kv_heads))")
      ->check(CLI::Range(1, 64));
  app_->add_option("--value-dim", value_dim_, "--form attention: v's width (default head_dim; a call carries at most that many keys)")
      ->check(CLI::Range(2, 4096));
  app_->add_option("--softmax-scale", softmax_scale_, "--form attention: the claim's softmax scale (default head_dim^-0.5; a T5 bias claim 1: T5 scales nothing)")
      ->check(CLI::PositiveNumber);
  app_->add_option("--max-position", max_position_,
                   "the kernel's last position (a cos/sin cache of N rows: N - 1); 0: no limit")
      ->check(CLI::Range(std::int64_t{0}, std::int64_t{1} << 40));
}

int probe_command::run(const std::string& command) {
  try {
    if (const std::optional<table_config_parse> table = conv_.resolve_table(table_width_)) return run_table(*table, command);
    if (form_ == "table")
      throw std::invalid_argument("--form table: no absolute position table claimed (--config of such a family, or --table-scheme "
                                  "with its flags and --table-width)");
    if (table_width_) throw std::invalid_argument("--table-width is for a table claimed by flags (--form table)");
    if (conv_.config_path.empty() && conv_.preset.empty() && !conv_.head_dim)
      throw std::invalid_argument("no claimed convention: give --config config.json, --preset NAME, or convention flags "
                                  "with --head-dim (the probe is made for the convention the kernel is judged against)");
    // Flags alone are the whole claim: what the flags do not say is not assumed (no base, no layout by default).
    if (const std::string missing = conv_.unsaid_by_flags_alone(); !missing.empty())
      throw std::invalid_argument("a claim by flags alone must say" + missing +
                                  " (or give --config config.json / --preset NAME, which say them)");
    if (const std::optional<bias_config_parse> bias = conv_.resolve_bias()) return run_bias(*bias, command);
    if (form_ == "attention" && !heads_ && !kv_heads_) heads_ = 8, kv_heads_ = 2;
    const int heads = heads_.value_or(4);
    if (heads > 64) throw std::invalid_argument("--heads " + std::to_string(heads) + ": at most 64 for a RoPE claim");
    if (form_ != "x" && !kv_heads_)
      throw std::invalid_argument("--form " + form_ + " needs --kv-heads N (the key heads; equal to --heads without GQA)");
    if (form_ == "x" && kv_heads_)
      throw std::invalid_argument("--kv-heads is for --form qk or attention (the x form has one tensor)");
    if (form_ != "attention" && (value_dim_ || softmax_scale_))
      throw std::invalid_argument("--value-dim and --softmax-scale are for --form attention");
    std::string claimed_from;
    std::vector<std::string> notes;
    rope_config fallback;  // flags alone: --head-dim, --base and --layout given (checked above), the rest RoPE's plain rule
    if (conv_.head_dim) fallback.head_dim = fallback.rotary_dim = *conv_.head_dim;
    const rope_config claimed = conv_.resolve(claimed_from, fallback, &notes);
    const std::string vllm_reading = vllm_reading_if_other(conv_, claimed, fallback);
    const plugin::dtype t = parse_dtype(dtype_);
    std::uint64_t seed = judge::default_seed;
    if (seed_) seed = *seed_;
    else if (const char* env = std::getenv("ROPECHECK_SEED")) seed = std::strtoull(env, nullptr, 0);
    plugin::kernel_limits limits;
    limits.max_position = max_position_;
    if (max_position_ > 0 && max_position_ < judge::max_prefill_tokens - 1)
      throw std::invalid_argument("--max-position " + std::to_string(max_position_) + " is below the probe's dense positions 0.." +
                                  std::to_string(judge::max_prefill_tokens - 1) + ": a kernel that cannot take those cannot be judged");
    const audit::limited_probe probe = audit::limit_probe(judge::make_probe(claimed, seed, heads), claimed, limits,
                                                                  "--max-position; in Python check(max_position=) or the adapter's");
    if (!probe.note.empty() && form_ != "attention") notes.push_back(probe.note);  // the attention form's positions are its own
    const judge::probe_set& p = probe.set;
    std::map<std::string, std::string> meta{
        {"ropecheck_probe", "1"},
        {"form", form_},
        {"dtype", dtype_},
        {"seed", std::to_string(seed)},
        {"heads", std::to_string(p.heads)},
        {"head_dim", std::to_string(p.head_dim)},
        {"tokens", std::to_string(p.tokens())},
        {"rows", std::to_string(p.position_rows.empty() ? 1 : p.position_rows.size() / p.positions.size())},
        {"convention", judge::convention_line(claimed)},
        {"claim_args", nlohmann::json(claim_arguments(conv_)).dump()},
        {"max_position", std::to_string(max_position_)},
        {"notes", nlohmann::json(notes).dump()},
        {"ropecheck_version", ROPECHECK_VERSION},
        {"command", command}};
    if (!vllm_reading.empty()) meta["vllm_reading"] = vllm_reading;
    if (!probe.skipped.empty() && form_ != "attention") meta["positions_not_asked"] = nlohmann::json(probe.skipped).dump();
    if (form_ != "x") meta["kv_heads"] = std::to_string(*kv_heads_);
    if (form_ == "attention") {
      const judge::attention_probe a = judge::make_attention_probe(claimed, heads, *kv_heads_, value_dim_.value_or(claimed.head_dim),
                                                                   softmax_scale_.value_or(0), max_position_);
      meta["value_dim"] = std::to_string(a.value_dim);
      meta["softmax_scale"] = judge::fmt("%.17g", a.softmax_scale);
      meta["calls"] = std::to_string(a.calls_count());
      meta["tokens"] = std::to_string(a.q_positions.size());
      audit::write_safetensors(out_, probe_tensors_attention(a, t), meta);
      std::printf("ropecheck probe: %s: %d attention calls (queries at one position and its %d keys before it each) x %d query and %d key heads x %d, "
                  "values %d (%s), %s; claim %s\n", out_.c_str(), a.calls_count(), std::min(a.value_dim, judge::max_attention_keys),
                  heads, *kv_heads_, a.head_dim, a.value_dim, dtype_.c_str(), judge::convention_line(claimed).c_str(),
                  claimed_from.c_str());
      for (const auto& n : notes) std::printf("note: %s\n", n.c_str());
      return 0;
    }
    audit::write_safetensors(out_, form_ == "qk" ? probe_tensors_qk(p, *kv_heads_, t) : probe_tensors(p, t), meta);
    const std::string heads_text = form_ == "qk" ? std::to_string(p.heads) + " query and " + std::to_string(*kv_heads_) + " key heads"
                                                 : std::to_string(p.heads) + " heads";
    std::printf("ropecheck probe: %s: %d tokens x %s x %d (%s), %s; claim %s\n", out_.c_str(), p.tokens(), heads_text.c_str(),
                p.head_dim, dtype_.c_str(), judge::convention_line(claimed).c_str(), claimed_from.c_str());
    for (const auto& n : notes) std::printf("note: %s\n", n.c_str());
    return 0;
  } catch (const std::exception& e) {
    std::cerr << "ropecheck probe: " << e.what() << '\n';
    return 2;
  }
}

int probe_command::run_table(const table_config_parse& t, const std::string& command) {
  const table_claim& c = t.claim;
  if (form_ != "table")
    throw std::invalid_argument("--form " + form_ + ": " + (conv_.config_path.empty() ? std::string("the flags") : conv_.config_path) +
                                " claim an absolute position table (" + describe(c) + "), added to the tokens at the input: --form table");
  if (heads_ || kv_heads_ || value_dim_ || softmax_scale_ || max_position_)
    throw std::invalid_argument("--heads, --kv-heads, --value-dim, --softmax-scale and --max-position are not a table's (a table's end is its rows)");
  (void)parse_dtype(dtype_);
  const judge::table_probe p = judge::make_table_probe(c);
  std::map<std::string, std::string> meta{
      {"ropecheck_probe", "1"},
      {"form", "table"},
      {"scheme", std::string(to_string(c.scheme))},
      {"dtype", dtype_},
      {"width", std::to_string(c.width)},
      {"rows", std::to_string(c.rows)},
      {"offset", std::to_string(c.offset)},
      {"padding", std::string(to_string(c.padding))},
      {"padded_length", std::to_string(p.padded_length)},
      {"left_padding", std::to_string(p.left_padding)},
      {"convention", describe(c)},
      {"claim_args", nlohmann::json(claim_arguments(conv_)).dump()},
      {"notes", nlohmann::json(t.notes).dump()},
      {"ropecheck_version", ROPECHECK_VERSION},
      {"command", command}};
  if (c.padding == padding_rule::skipped) meta["padding_idx"] = std::to_string(c.padding_row);
  std::vector<audit::tensor_out> tensors{{"positions", audit::dtype::i64, {static_cast<std::int64_t>(p.positions.size())}, audit::i64_bytes(p.positions)}};
  if (!p.past.empty()) tensors.push_back({"past", audit::dtype::i64, {static_cast<std::int64_t>(p.past.size())}, audit::i64_bytes(p.past)});
  audit::write_safetensors(out_, tensors, meta);
  std::printf("ropecheck probe: %s: %zu positions inside the table%s; claim %s (%s)\n", out_.c_str(), p.positions.size(),
              p.past.empty() ? "" : judge::fmt(", %zu past its end (each must be refused)", p.past.size()).c_str(), describe(c).c_str(),
              t.family.empty() ? "flags" : t.family.c_str());
  for (const auto& n : t.notes) std::printf("note: %s\n", n.c_str());
  return 0;
}

int probe_command::run_bias(const bias_config_parse& b, const std::string& command) {
  const bias_claim& c = b.claim;
  const std::string scheme = c.scheme == bias_scheme::alibi ? "ALiBi" : "T5's bucketed bias";
  if (form_ != "attention")
    throw std::invalid_argument("--form " + form_ + ": " + conv_.config_path + " claims " + scheme + " (" + b.family +
                                "), a bias on the scores, not a rotation of q or k: it is judged at the score, --form attention");
  const int held = c.scheme == bias_scheme::alibi ? c.alibi.held_heads() : c.t5.heads;
  if (heads_ && *heads_ != held)
    throw std::invalid_argument("--heads " + std::to_string(*heads_) + ": the claim's kernel holds " + std::to_string(held) +
                                " heads (" + describe(c) + "; a tensor-parallel rank: --head-offset, --local-heads)");
  const int kv_heads = kv_heads_.value_or(held);
  if (b.head_dim < 1) throw std::invalid_argument(conv_.config_path + ": the claim gives no head_dim (the probe's q, k width)");
  const plugin::dtype t = parse_dtype(dtype_);
  const judge::attention_probe a = judge::make_bias_probe(c, kv_heads, value_dim_.value_or(b.head_dim), b.head_dim,
                                                          softmax_scale_.value_or(0), max_position_);
  std::uint64_t seed = judge::default_seed;
  if (seed_) seed = *seed_;
  else if (const char* env = std::getenv("ROPECHECK_SEED")) seed = std::strtoull(env, nullptr, 0);
  std::map<std::string, std::string> meta{
      {"ropecheck_probe", "1"},
      {"form", "attention"},
      {"scheme", std::string(to_string(c.scheme))},
      {"dtype", dtype_},
      {"seed", std::to_string(seed)},
      {"heads", std::to_string(a.q_heads)},
      {"kv_heads", std::to_string(a.k_heads)},
      {"head_dim", std::to_string(a.head_dim)},
      {"value_dim", std::to_string(a.value_dim)},
      {"softmax_scale", judge::fmt("%.17g", a.softmax_scale)},
      {"calls", std::to_string(a.calls_count())},
      {"tokens", std::to_string(a.q_positions.size())},
      {"convention", describe(c)},
      {"claim_args", nlohmann::json(claim_arguments(conv_)).dump()},
      {"max_position", std::to_string(max_position_)},
      {"notes", nlohmann::json(b.notes).dump()},
      {"ropecheck_version", ROPECHECK_VERSION},
      {"command", command}};
  audit::write_safetensors(out_, probe_tensors_attention(a, t), meta);
  std::printf("ropecheck probe: %s: %d attention calls (a query and up to %d keys each) x %d query and %d key heads x %d, values %d "
              "(%s); claim %s (%s, %s)\n", out_.c_str(), a.calls_count(), std::min(a.value_dim, judge::max_attention_keys), a.q_heads,
              a.k_heads, a.head_dim, a.value_dim, dtype_.c_str(), describe(c).c_str(), b.family.c_str(), conv_.config_path.c_str());
  for (const auto& n : b.notes) std::printf("note: %s\n", n.c_str());
  return 0;
}

}  // namespace ropecheck::probe
