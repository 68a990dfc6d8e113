// tools/cli_common.hpp — pieces every subcommand of the ropecheck command line shares: progress on
// stderr and the convention flags (--config/--preset and the overrides). CLI11 lives here, so only
// command-line translation units include this file.
#pragma once

#include <CLI/CLI.hpp>

#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "explain/claim_lines.hpp"
#include "audit/bias_table.hpp"
#include "audit/table_weights.hpp"
#include "ropecheck/bias_config.hpp"
#include "ropecheck/claim.hpp"
#include "ropecheck/config_json.hpp"
#include "ropecheck/presets.hpp"
#include "ropecheck/schedule.hpp"
#include "ropecheck/table_config.hpp"

namespace ropecheck::cli {

// Progress on stderr: a redrawn bar on a terminal, a line every 10% otherwise (CI logs).
class progress_bar {
 public:
  explicit progress_bar(std::string label) : label_(std::move(label)), tty_(isatty(STDERR_FILENO) != 0), start_(std::chrono::steady_clock::now()) {}
  void operator()(std::int64_t done, std::int64_t total) {
    if (total <= 0) return;
    const double f = static_cast<double>(done) / static_cast<double>(total);
    const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
    if (tty_) {
      const int width = 40, filled = static_cast<int>(f * width);
      std::fprintf(stderr, "\r[%s] [%s%s] %5.1f%%  %.1f s", label_.c_str(), std::string(static_cast<std::size_t>(filled), '#').c_str(),
                   std::string(static_cast<std::size_t>(width - filled), '.').c_str(), 100 * f, secs);
      if (done >= total) std::fprintf(stderr, "\n");
    } else {
      const int decile = static_cast<int>(f * 10);
      if (decile > last_decile_) {
        last_decile_ = decile;
        std::fprintf(stderr, "[%s] %3d%% of %lld, %.1f s\n", label_.c_str(), decile * 10, static_cast<long long>(total), secs);
      }
    }
  }

 private:
  std::string label_;
  bool tty_;
  std::chrono::steady_clock::time_point start_;
  int last_decile_ = 0;
};

// The convention of one decoder layer of a parsed config (the primary one, the first RoPE layer's, when no
// layer is asked for), with a note saying which layer and type it is. A config in which no layer rotates,
// and a layer without RoPE, are errors naming the layer and its kind.
inline rope_config config_for_layer(const hf_config_parse& parsed, std::optional<int> layer, const char* from,
                                    std::vector<std::string>* notes) {
  auto say = [&](const std::string& n) {
    if (notes) notes->push_back(n);
  };
  if (!layer) {
    if (parsed.primary_layer < 0) throw std::invalid_argument(parsed.no_rope + "; nothing to check");
    if (!parsed.layers.empty() && parsed.conventions.size() > 1)
      say("per-layer config: checked against layer " + std::to_string(parsed.primary_layer) + "'s convention (" +
          parsed.layers[static_cast<std::size_t>(parsed.primary_layer)].type + ", the first RoPE layer); --layer N selects another");
    return parsed.config;
  }
  std::string type;
  try {
    const rope_config c = layer_convention(parsed, *layer, &type);
    say("layer " + std::to_string(*layer) + " (" + type + ", from " + from + "): its convention is checked");
    return c;
  } catch (const std::out_of_range& e) {
    throw std::invalid_argument(std::string(from) + ": " + e.what());
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument(std::string(from) + ": " + e.what());
  }
}

// The convention flags both subcommands take (applied on top of --config/--preset).
struct convention_flags {
  std::string config_path, preset;
  std::optional<int> head_dim, rotary_dim;
  std::optional<double> rotary_fraction, base, factor, beta_fast, beta_slow, low_ff, high_ff;
  std::optional<std::string> scaling, layout_name, outputs_name, mrope;
  std::optional<std::vector<int>> mrope_section;
  std::optional<std::int64_t> max_pe, orig_pe;
  std::optional<int> layer;  // decoder layer of a per-layer config (Gemma 3, Llama 4, v5 rope_parameters)
  std::optional<std::string> direction;
  std::optional<int> frozen_bands;
  std::optional<double> attention_factor;
  std::string engine = "transformers";      // whose reading of --config (claim.hpp engine_reading)
  std::optional<std::int64_t> max_model_len;  // vLLM's engine-wide length (LongRoPE's choice)
  bool assume_llama = false;
  bool indexer = false;  // the MLA lightning indexer's RoPE (DeepSeek-V3.2, GLM-5) instead of the attention's
  // A score-matrix bias's declarations (bias_config.hpp bias_declaration): a tensor-parallel rank's heads, the stack.
  std::optional<int> head_offset, local_heads;
  std::optional<std::string> stack;
  std::optional<std::string> t5_table;  // T5's learned table (audit/bias_table.hpp)
  // An absolute position table's claim by flags (table_claim.hpp), and a learned table's weights (audit/table_weights.hpp).
  std::optional<std::string> table_scheme_name, table_layout, table_weights;
  std::optional<double> table_denominator, table_base;
  std::optional<std::int64_t> table_offset, table_rows, padding_idx;

  void add_to(CLI::App* app) {
    app->add_option("--layer", layer,
                    "decoder layer whose convention --config gives (per-layer configs: Gemma 3 local/global, "
                    "Llama 4 NoPE layers); audit default: the dump's __metadata__ \"layer\"")
        ->check(CLI::Range(0, 1 << 20));
    app->add_option("--config", config_path, "HF config.json to read the rope fields from (v4 or v5)")
        ->check(CLI::ExistingFile);
    app->add_option("--preset", preset, "a built-in model convention: " + preset_names());
    app->add_option("--head-dim", head_dim, "coordinates per head");
    app->add_option("--rotary-dim", rotary_dim, "rotated coordinates (even, <= head_dim)");
    app->add_option("--rotary-fraction", rotary_fraction, "partial_rotary_factor: rotary_dim = head_dim * fraction");
    app->add_option("--base", base, "rope_theta");
    app->add_option("--scaling", scaling, "default, linear, ntk, dynamic, yarn, llama3 (longrope needs --config)");
    app->add_option("--factor", factor, "scaling factor s");
    app->add_option("--layout", layout_name, "half_split (GPT-NeoX/HF) or interleaved (GPT-J/Meta/ggml NORM)");
    app->add_option("--outputs", outputs_name,
                    "in_place, or half_split (DeepSeek-V3's rope_interleave writes pair i to (i, i + r/2); engines "
                    "that rotate the same pairs in place, e.g. vLLM's is_neox_style=False, claim in_place)");
    app->add_option("--max-position-embeddings", max_pe, "the config's max_position_embeddings");
    app->add_option("--original-max-position-embeddings", orig_pe, "pre-training length (YaRN, Llama-3, LongRoPE)");
    app->add_option("--beta-fast", beta_fast, "YaRN beta_fast");
    app->add_option("--beta-slow", beta_slow, "YaRN beta_slow");
    app->add_option("--low-freq-factor", low_ff, "Llama-3 low_freq_factor");
    app->add_option("--high-freq-factor", high_ff, "Llama-3 high_freq_factor");
    app->add_option("--mrope", mrope, "M-RoPE kind: contiguous (Qwen2-VL/2.5-VL), interleaved (Qwen3-VL) or none");
    app->add_option("--mrope-section", mrope_section, "M-RoPE bands per position row, e.g. 16,24,24")->delimiter(',');
    app->add_option("--direction", direction, "forward (R(p), every family but nanochat) or reversed (R(-p), nanochat)");
    app->add_option("--frozen-bands", frozen_bands,
                    "proportional RoPE (Gemma 4): the last N bands have frequency 0")->check(CLI::Range(0, 1 << 20));
    app->add_option("--attention-factor", attention_factor,
                    "the factor cos and sin are multiplied by (YaRN, LongRoPE): overrides the rule's")->check(CLI::PositiveNumber);
    app->add_option("--engine", engine,
                    "whose reading of --config is claimed: transformers (the family's code, default) or vllm (vLLM's get_rope "
                    "and rotary classes where they read the file differently; ropecheck explain --variants)")
        ->check(CLI::IsMember({"transformers", "vllm"}));
    app->add_option("--max-model-len", max_model_len,
                    "vLLM's max_model_len (--engine vllm: LongRoPE takes the long factors for every position when it exceeds "
                    "original_max_position_embeddings)")->check(CLI::Range(std::int64_t{1}, std::int64_t{1} << 40));
    app->add_flag("--indexer", indexer,
                  "check the MLA lightning indexer's RoPE (DeepSeek-V3.2, GLM-5: its own layout over the first "
                  "qk_rope_head_dim of index_head_dim coordinates) instead of the attention's; a dump's __metadata__ "
                  "\"part\": \"indexer\" says the same");
    app->add_option("--head-offset", head_offset,
                    "ALiBi: the first global head the kernel holds (a tensor-parallel rank r of local heads L: r x L); "
                    "its slopes are the global rule's from that head")->check(CLI::Range(0, 1 << 20));
    app->add_option("--local-heads", local_heads,
                    "ALiBi: the heads the kernel holds (default: the global heads from --head-offset on)")->check(CLI::Range(1, 1 << 20));
    app->add_option("--stack", stack,
                    "encoder-decoder families (T5's bias): the stack whose self-attention is checked, encoder (bidirectional "
                    "buckets) or decoder (causal); default encoder")->check(CLI::IsMember({"encoder", "decoder"}));
    app->add_option("--t5-table", t5_table,
                    "T5's bias: the learned table relative_attention_bias.weight [num_buckets, heads] (.npy, or .safetensors "
                    "of it) of the layer judged; the judge then checks the values, not only which offsets share a bucket")
        ->check(CLI::ExistingFile);
    app->add_option("--table-scheme", table_scheme_name,
                    "an absolute position table claimed by flags (docs/tables.md): sinusoidal or learned")
        ->check(CLI::IsMember({"sinusoidal", "learned"}));
    app->add_option("--table-layout", table_layout,
                    "the sinusoid's columns: interleaved (the paper's 2i sin, 2i+1 cos), concatenated ([sin | cos]: fairseq, "
                    "tensor2tensor, Marian, Whisper), interleaved_cos_first, concatenated_cos_first")
        ->check(CLI::IsMember({"interleaved", "concatenated", "interleaved_cos_first", "concatenated_cos_first"}));
    app->add_option("--table-denominator", table_denominator,
                    "the sinusoid's D: band i's frequency is base^(-i/D) (default d/2, the paper's; fairseq's is d/2 - 1)")
        ->check(CLI::PositiveNumber);
    app->add_option("--table-base", table_base, "the sinusoid's base (default 10000)");
    app->add_option("--table-offset", table_offset,
                    "the row read by position p is p + offset (OPT, BART: 2; fairseq, RoBERTa: padding_idx + 1)")
        ->check(CLI::Range(std::int64_t{0}, std::int64_t{1} << 40));
    app->add_option("--table-rows", table_rows, "the table's rows (a learned table's length; a sinusoid without it has no end)")
        ->check(CLI::Range(std::int64_t{1}, std::int64_t{1} << 40));
    app->add_option("--padding-idx", padding_idx,
                    "positions skip padding, a padding token reading this row (RoBERTa, fairseq; a sinusoid's row is zeros)")
        ->check(CLI::Range(std::int64_t{0}, std::int64_t{1} << 40));
    app->add_option("--table-weights", table_weights,
                    "a learned table's weight [rows, width] (.npy, or .safetensors of it): the judge reads which row each position took")
        ->check(CLI::ExistingFile);
    app->add_flag("--assume-llama", assume_llama,
                  "read a config.json whose model_type ropecheck has no facts for as HF Llama's code reads it (recorded as an "
                  "assumption)");
  }
  // What the flags declare about a family without facts (config_json.hpp reads the file with it).
  [[nodiscard]] convention_declaration declaration() const {
    convention_declaration d;
    if (layout_name && *layout_name == "half_split") d.pair_layout = layout::half_split;
    if (layout_name && *layout_name == "interleaved") d.pair_layout = layout::interleaved;
    d.rotary_dim = rotary_dim;
    d.rotary_fraction = rotary_fraction;
    d.assume_llama = assume_llama;
    if (max_model_len && engine != "vllm") throw std::invalid_argument("--max-model-len needs --engine vllm (it is vLLM's engine length)");
    d.engine = engine == "vllm" ? engine_reading::vllm : engine_reading::transformers;
    d.max_model_len = max_model_len;
    return d;
  }
  [[nodiscard]] bool any_bias_flag() const { return head_offset || local_heads || stack || t5_table; }
  // What the flags declare about a score-matrix bias (bias_config.hpp).
  [[nodiscard]] bias_declaration bias_decl() const {
    bias_declaration d;
    d.head_offset = head_offset;
    d.local_heads = local_heads;
    d.stack = stack;
    d.layer = layer;
    d.engine = engine == "vllm" ? engine_reading::vllm : engine_reading::transformers;
    return d;
  }
  // The bias claim of --config when its family adds a score-matrix bias (ALiBi, T5's buckets), std::nullopt when it
  // does not (a RoPE claim: resolve() reads it). RoPE's convention flags on a bias claim, and the bias flags on a
  // RoPE claim, are errors naming the flag: neither is silently dropped.
  [[nodiscard]] std::optional<bias_config_parse> resolve_bias() const {
    const auto bias_flag = [&] {
      return std::string(head_offset ? "--head-offset" : local_heads ? "--local-heads" : stack ? "--stack" : "--t5-table");
    };
    if (config_path.empty()) {
      if (any_bias_flag())
        throw std::invalid_argument(bias_flag() + " needs --config (a config.json of a family whose attention adds a bias: "
                                                  "ALiBi's BLOOM, MPT, Falcon; T5's buckets)");
      return std::nullopt;
    }
    std::optional<bias_config_parse> b = load_bias_config(config_path, bias_decl());
    if (!b) {
      if (load_table_config(config_path, {stack})) return std::nullopt;  // an absolute table's family: resolve_table() reads it
      if (any_bias_flag())
        throw std::invalid_argument(bias_flag() + ": " + config_path + " claims no score-matrix bias (its family's attention "
                                                  "adds none), so there is nothing for it to declare");
      return std::nullopt;
    }
    const std::string what = b->claim.scheme == bias_scheme::alibi ? "ALiBi" : "T5's bucketed bias";
    const auto refuse = [&](const std::string& flag) {
      throw std::invalid_argument(flag + ": " + config_path + " claims " + what + " (" + b->family +
                                  "), not RoPE; RoPE's convention flags do not apply to it");
    };
    if (!preset.empty()) throw std::invalid_argument("give --config or --preset, not both");
    if (indexer) refuse("--indexer");
    if (assume_llama) refuse("--assume-llama");
    if (max_model_len) refuse("--max-model-len");
    if (any_override()) refuse(overrides().front().substr(0, overrides().front().find(' ')));
    if (t5_table) {
      if (b->claim.scheme != bias_scheme::t5)
        throw std::invalid_argument("--t5-table: " + config_path + " claims " + what + " (" + b->family +
                                    "), whose bias is a rule, not a learned table");
      b->claim.t5.table = audit::read_t5_table(*t5_table, b->claim.t5.num_buckets, b->claim.t5.heads);
      b->info.facts.push_back({"t5_table", std::to_string(b->claim.t5.num_buckets) + " x " + std::to_string(b->claim.t5.heads) +
                                               " values", fact_origin::declared, "--t5-table " + *t5_table});
    }
    return b;
  }
  [[nodiscard]] bool any_table_flag() const {
    return table_scheme_name || table_layout || table_weights || table_denominator || table_base || table_offset || table_rows || padding_idx;
  }
  [[nodiscard]] std::string first_table_flag() const {
    return table_scheme_name ? "--table-scheme" : table_layout ? "--table-layout" : table_denominator ? "--table-denominator"
           : table_base ? "--table-base" : table_offset ? "--table-offset" : table_rows ? "--table-rows" : padding_idx ? "--padding-idx"
                                                                                                             : "--table-weights";
  }
  // The absolute position table of --config when its family adds one (table_config.hpp), or of the --table-* flags;
  // std::nullopt when neither claims one. width: the rows' width when a dump gives it (a claim by flags takes it; a
  // config's must agree). A flag of another scheme on a table claim, a --table-* flag beside a config, a sinusoid's
  // flag on a learned claim and the reverse are errors naming the flag.
  [[nodiscard]] std::optional<table_config_parse> resolve_table(std::optional<int> width = {}) const {
    std::optional<table_config_parse> t;
    if (!config_path.empty()) {
      table_declaration decl;
      decl.stack = stack;
      t = load_table_config(config_path, decl);
      if (!t) {
        if (any_table_flag() && !table_weights)
          throw std::invalid_argument(first_table_flag() + ": give the table's claim by flags or by --config, not both");
        if (table_weights)
          throw std::invalid_argument("--table-weights: " + config_path + " claims no absolute position table (its family adds none)");
        return std::nullopt;
      }
      if (any_table_flag() && !table_weights)
        throw std::invalid_argument(first_table_flag() + ": " + config_path + " claims the table (" + t->family +
                                    "); a flag may not change what the file says");
      if (width && *width != t->claim.width)
        throw std::invalid_argument("the rows are " + std::to_string(*width) + " wide; " + config_path + " claims a table of width " +
                                    std::to_string(t->claim.width));
    } else if (any_table_flag()) {
      if (!table_scheme_name) throw std::invalid_argument(first_table_flag() + " needs --table-scheme sinusoidal|learned (or --config)");
      if (!width) throw std::invalid_argument("--table-scheme: the width comes from the rows (a dump or a kernel); none here");
      t.emplace();
      table_claim& c = t->claim;
      c.scheme = *table_scheme_name == "learned" ? table_scheme::learned : table_scheme::sinusoidal;
      c.width = *width;
      if (c.scheme == table_scheme::learned && (table_layout || table_denominator || table_base))
        throw std::invalid_argument(std::string(table_layout ? "--table-layout" : table_denominator ? "--table-denominator" : "--table-base") +
                                    ": a learned table has no sinusoid");
      if (c.scheme == table_scheme::sinusoidal && !table_layout)
        throw std::invalid_argument("--table-scheme sinusoidal needs --table-layout (interleaved or concatenated: no default may stand for it)");
      if (table_layout) c.layout = *sinusoid_layout_from(*table_layout);
      if (table_denominator) c.denominator = *table_denominator;
      if (table_base) c.base = *table_base;
      if (table_offset) c.offset = *table_offset;
      if (table_rows) c.rows = *table_rows;
      if (c.scheme == table_scheme::learned && !table_rows)
        throw std::invalid_argument("--table-scheme learned needs --table-rows (the table's length)");
      if (padding_idx) {
        c.padding = padding_rule::skipped;
        c.padding_row = *padding_idx;
        c.padding_row_zero = c.scheme == table_scheme::sinusoidal;
      }
      t->info.source = "flags";
      t->family = "";
      try {
        check_table_claim(c);
      } catch (const std::invalid_argument& e) {
        throw std::invalid_argument(std::string("--table-*: ") + e.what());
      }
    } else {
      return std::nullopt;
    }
    if (!preset.empty()) throw std::invalid_argument("--preset: a position table is claimed; presets are RoPE's");
    if (any_override()) throw std::invalid_argument(overrides().front().substr(0, overrides().front().find(' ')) +
                                                    ": an absolute position table is claimed; RoPE's convention flags do not apply to it");
    if (head_offset || local_heads || t5_table) throw std::invalid_argument("a score-matrix bias flag on an absolute position table claim");
    if (indexer || assume_llama || max_model_len) throw std::invalid_argument("a RoPE flag on an absolute position table claim");
    if (table_weights) {
      if (t->claim.scheme != table_scheme::learned)
        throw std::invalid_argument("--table-weights: the claim is a sinusoid, whose values are a rule, not a learned table");
      t->claim.weights = audit::read_table_weights(*table_weights, t->claim.rows, t->claim.width);
      t->info.facts.push_back({"weights", std::to_string(t->claim.rows) + " x " + std::to_string(t->claim.width) + " values",
                               fact_origin::declared, "--table-weights " + *table_weights});
    }
    return t;
  }
  // A claim by flags alone (no --config, no --preset) must say what no default may stand for, the base and
  // the layout: the missing ones as " --base (rope_theta) --layout (...)"; empty when said (or when a config or
  // preset says them). The rest of such a claim is RoPE's plain rule (no scaling, the whole head).
  [[nodiscard]] std::string unsaid_by_flags_alone() const {
    if (!config_path.empty() || !preset.empty()) return {};
    std::string missing;
    if (!base) missing += " --base (rope_theta)";
    if (!layout_name) missing += " --layout (half_split or interleaved)";
    return missing;
  }
  [[nodiscard]] bool any_override() const {
    return head_dim || rotary_dim || rotary_fraction || base || factor || beta_fast || beta_slow || low_ff || high_ff ||
           scaling || layout_name || outputs_name || max_pe || orig_pe || mrope || mrope_section || direction || frozen_bands ||
           attention_factor;
  }
  // The flags given, as the user typed them (recorded in the claim as overrides).
  [[nodiscard]] std::vector<std::string> overrides() const {
    std::vector<std::string> o;
    auto num = [](double v) {
      char b[32];
      std::snprintf(b, sizeof b, "%.17g", v);
      return std::string(b);
    };
    if (head_dim) o.push_back("--head-dim " + std::to_string(*head_dim));
    if (rotary_dim) o.push_back("--rotary-dim " + std::to_string(*rotary_dim));
    if (rotary_fraction) o.push_back("--rotary-fraction " + num(*rotary_fraction));
    if (base) o.push_back("--base " + num(*base));
    if (scaling) o.push_back("--scaling " + *scaling);
    if (factor) o.push_back("--factor " + num(*factor));
    if (layout_name) o.push_back("--layout " + *layout_name);
    if (outputs_name) o.push_back("--outputs " + *outputs_name);
    if (direction) o.push_back("--direction " + *direction);
    if (frozen_bands) o.push_back("--frozen-bands " + std::to_string(*frozen_bands));
    if (max_pe) o.push_back("--max-position-embeddings " + std::to_string(*max_pe));
    if (orig_pe) o.push_back("--original-max-position-embeddings " + std::to_string(*orig_pe));
    if (beta_fast) o.push_back("--beta-fast " + num(*beta_fast));
    if (beta_slow) o.push_back("--beta-slow " + num(*beta_slow));
    if (low_ff) o.push_back("--low-freq-factor " + num(*low_ff));
    if (high_ff) o.push_back("--high-freq-factor " + num(*high_ff));
    if (mrope) o.push_back("--mrope " + *mrope);
    if (mrope_section) {
      std::string l;
      for (int v : *mrope_section) l += (l.empty() ? "" : ",") + std::to_string(v);
      o.push_back("--mrope-section " + l);
    }
    if (attention_factor) o.push_back("--attention-factor " + num(*attention_factor));
    return o;
  }
  // The convention: config/preset (or `fallback` when neither is given) with the flags on top.
  // name describes where it came from.
  // notes receives what the config parser decided (hf_config_parse::notes) and the layer used;
  // dump_layer is the layer a dump says it came from (used when --layer is not given).
  // claim_out receives what the convention was claimed from (family, layer, the facts and their sources);
  // parsed_out, with --config, the parse itself (for a door that reads other layers of the same file).
  rope_config resolve(std::string& name, const std::optional<rope_config>& fallback = {},
                      std::vector<std::string>* notes = nullptr, std::optional<int> dump_layer = {},
                      claim* claim_out = nullptr, bool dump_indexer = false, hf_config_parse* parsed_out = nullptr) const {
    if (!config_path.empty() && !preset.empty()) throw std::invalid_argument("give --config or --preset, not both");
    if (layer && config_path.empty()) throw std::invalid_argument("--layer needs --config (a per-layer config.json)");
    if (assume_llama && config_path.empty()) throw std::invalid_argument("--assume-llama needs --config (a config.json to read)");
    if (indexer && config_path.empty()) throw std::invalid_argument("--indexer needs --config (a DeepSeek-V3.2 / GLM-5 config.json)");
    if (any_table_flag())
      throw std::invalid_argument(first_table_flag() + " declares an absolute position table, which this door does not judge: the table "
                                                       "door does (`ropecheck audit --table`, Python check_table; docs/tables.md)");
    if (!config_path.empty())
      if (const auto t = load_table_config(config_path, {stack}))
        throw std::invalid_argument(config_path + " claims an absolute position table (" + t->family + ": " + describe(t->claim) +
                                    "), not RoPE: it is judged by the table door (`ropecheck audit --table`, Python check_table; docs/tables.md)");
    if (any_bias_flag())  // the doors that judge a bias ask resolve_bias() first; this door judges RoPE only
      throw std::invalid_argument(std::string(head_offset ? "--head-offset" : local_heads ? "--local-heads" : stack ? "--stack" : "--t5-table") +
                                  " declares a score-matrix bias (ALiBi, T5), which this door does not judge: the score door "
                                  "does (`probe --form attention`, `audit` of its outputs, `audit --scores`)");
    if (engine != "transformers" && config_path.empty())
      throw std::invalid_argument("--engine needs --config (it says whose reading of a config.json is claimed)");
    rope_config cfg;
    claim made;
    if (!config_path.empty()) {
      const convention_declaration decl = declaration();
      hf_config_parse parsed = load_hf_config_with_notes(config_path, decl);
      const std::optional<int> which = layer ? layer : dump_layer;
      cfg = config_for_layer(parsed, which, layer ? "--layer" : "the dump's metadata", notes);
      if (indexer || dump_indexer) {
        if (!parsed.indexer)
          throw std::invalid_argument(std::string(indexer ? "--indexer" : "the dump's metadata \"part\": \"indexer\"") + ": " +
                                      (parsed.family.empty() ? std::string("this config") : parsed.family) +
                                      " has no lightning indexer with a RoPE of its own");
        cfg = parsed.indexer->config;
        if (notes) notes->push_back("the lightning indexer's RoPE is checked (" + std::string(indexer ? "--indexer" : "the dump's metadata") + ")");
      }
      if (notes) notes->insert(notes->end(), parsed.notes.begin(), parsed.notes.end());
      if (notes)
        for (const auto& a : parsed.assumptions) notes->push_back("assumption: " + a);
      made = explain::claim_of(parsed, which ? *which : -1, config_path);
      made.engine = decl.engine;
      if ((indexer || dump_indexer) && parsed.indexer) {
        made.layer_type = "lightning indexer";
        made.facts = parsed.indexer->facts;
      }
      name = config_path;
      if (parsed_out) *parsed_out = std::move(parsed);
    } else if (!preset.empty() || !fallback) {
      const std::string p = preset.empty() ? "llama3-8b" : preset;
      const auto found = find_preset(p);
      if (!found) throw std::invalid_argument("unknown preset '" + p + "' (known: " + preset_names() + ")");
      cfg = *found;
      name = p;
      made.source = "preset " + p;
    } else {
      cfg = *fallback;
      made.source = "flags";
    }
    auto set = [&](auto& field, const auto& opt) {
      if (opt) field = *opt;
    };
    set(cfg.head_dim, head_dim);
    set(cfg.rotary_dim, rotary_dim);
    if (rotary_fraction) cfg.rotary_dim = static_cast<int>(cfg.head_dim * *rotary_fraction);
    else if (head_dim && !rotary_dim) cfg.rotary_dim = cfg.head_dim;
    set(cfg.base, base);
    set(cfg.factor, factor);
    set(cfg.max_position_embeddings, max_pe);
    set(cfg.original_max_position_embeddings, orig_pe);
    set(cfg.beta_fast, beta_fast);
    set(cfg.beta_slow, beta_slow);
    set(cfg.low_freq_factor, low_ff);
    set(cfg.high_freq_factor, high_ff);
    if (scaling) {
      const std::string& s = *scaling;
      if (s == "default" || s == "none") cfg.scaling = scaling_kind::none;
      else if (s == "linear") cfg.scaling = scaling_kind::linear;
      else if (s == "ntk") cfg.scaling = scaling_kind::ntk;
      else if (s == "dynamic") cfg.scaling = scaling_kind::dynamic_ntk;
      else if (s == "yarn") cfg.scaling = scaling_kind::yarn;
      else if (s == "llama3") cfg.scaling = scaling_kind::llama3;
      else throw std::invalid_argument("--scaling: unknown rule '" + s + "' (default, linear, ntk, dynamic, yarn, llama3)");
      cfg = with_scaling(cfg, cfg.scaling);  // another rule than the file's LongRoPE: its mscales go with it
    }
    if (layout_name) {
      if (*layout_name == "half_split") cfg.pair_layout = layout::half_split;
      else if (*layout_name == "interleaved") cfg.pair_layout = layout::interleaved;
      else throw std::invalid_argument("--layout: '" + *layout_name + "' is neither half_split nor interleaved");
      // Half-split outputs (DeepSeek's rope_interleave) exist only for interleaved pairs.
      if (cfg.pair_layout != layout::interleaved) cfg.outputs = output_order::in_place;
    }
    if (outputs_name) {
      if (*outputs_name == "in_place") cfg.outputs = output_order::in_place;
      else if (*outputs_name == "half_split") cfg.outputs = output_order::half_split;
      else throw std::invalid_argument("--outputs: '" + *outputs_name + "' is neither in_place nor half_split");
    }
    if (mrope) {
      if (*mrope == "contiguous") cfg.mrope = mrope_kind::contiguous;
      else if (*mrope == "interleaved") cfg.mrope = mrope_kind::interleaved;
      else if (*mrope == "none") cfg.mrope = mrope_kind::none, cfg.mrope_section.clear();
      else throw std::invalid_argument("--mrope: '" + *mrope + "' is none of contiguous, interleaved, none");
    }
    if (mrope_section) cfg.mrope_section = *mrope_section;
    if (direction) {
      if (*direction == "forward") cfg.direction = rotation_direction::forward;
      else if (*direction == "reversed") cfg.direction = rotation_direction::reversed;
      else throw std::invalid_argument("--direction: '" + *direction + "' is neither forward nor reversed");
    }
    if (frozen_bands) cfg.frozen_bands = *frozen_bands;
    if (attention_factor) {
      if (cfg.scaling != scaling_kind::yarn && cfg.scaling != scaling_kind::longrope)
        throw std::invalid_argument("--attention-factor: only YaRN and LongRoPE multiply cos and sin (the rule is " +
                                    std::string(to_string(cfg.scaling)) + ")");
      cfg.attention_factor = *attention_factor;
      cfg.short_mscale.reset();
      cfg.long_mscale.reset();
    }
    if (any_override()) name += name.empty() ? "flags" : " (with overrides)";
    validate(cfg);  // a clear message naming the field
    made.overrides = overrides();
    if (claim_out) *claim_out = std::move(made);
    return cfg;
  }
};

}  // namespace ropecheck::cli
