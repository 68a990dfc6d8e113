// tools/ropecheck.cpp — the ropecheck command line.
//
//   ropecheck report [--config config.json | --preset NAME] [convention overrides] [options]
//
// `report` measures how far each implementation real engines use (HF's fp32 path, eager bf16,
// fused bf16 storage with fp32 compute, fp16, fp64, ggml's repeated products, and the known-bad
// ones) is from exact mathematics (the MPFR reference) as position grows, explains where the error
// comes from, tabulates the bands of the convention, and writes a folder: report.html with plots,
// CSV of every series, summary.json with the verdicts (deterministic), timing.json.
//
// Exit codes: 0 report written, 2 bad input, usage, or a file that cannot be written.
#include <CLI/CLI.hpp>

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include "engine.hpp"
#include "output.hpp"
#include "ropecheck/config_json.hpp"
#include "ropecheck/presets.hpp"
#include "ropecheck/schedule.hpp"

namespace {

using namespace ropecheck;

// Progress on stderr: a redrawn bar on a terminal, a line every 10% otherwise (CI logs).
class progress_bar {
 public:
  progress_bar() : tty_(isatty(STDERR_FILENO) != 0), start_(std::chrono::steady_clock::now()) {}
  void operator()(std::int64_t done, std::int64_t total) {
    if (total <= 0) return;
    const double f = static_cast<double>(done) / static_cast<double>(total);
    const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
    if (tty_) {
      const int width = 40, filled = static_cast<int>(f * width);
      std::fprintf(stderr, "\r[report] [%s%s] %5.1f%%  %.1f s", std::string(static_cast<std::size_t>(filled), '#').c_str(),
                   std::string(static_cast<std::size_t>(width - filled), '.').c_str(), 100 * f, secs);
      if (done >= total) std::fprintf(stderr, "\n");
    } else {
      const int decile = static_cast<int>(f * 10);
      if (decile > last_decile_) {
        last_decile_ = decile;
        std::fprintf(stderr, "[report] %3d%% of %lld values, %.1f s\n", decile * 10, static_cast<long long>(total), secs);
      }
    }
  }

 private:
  bool tty_;
  std::chrono::steady_clock::time_point start_;
  int last_decile_ = 0;
};

std::string show_position(std::int64_t p) { return p < 0 ? "never" : std::to_string(p); }

void print_summary(const report::report_result& r, const report::written_report& w) {
  const auto& q = r.request;
  std::printf("ropecheck report: %s — head_dim %d, rotary_dim %d, base %g, scaling %s, %s, attention factor %.6g\n",
              q.config_name.c_str(), q.config.head_dim, q.config.rotary_dim, q.config.base,
              std::string(to_string(q.config.scaling)).c_str(), std::string(to_string(q.config.pair_layout)).c_str(),
              r.attention_factor);
  std::printf("positions 0..%lld%s, reference %s\n\n", static_cast<long long>(q.max_position),
              q.exhaustive ? " (every position)" : " (dense to 1023, log-spaced beyond, dense at regime edges)",
              r.reference_precision.c_str());
  std::printf("%-22s %-6s %12s %12s %14s %16s %16s %16s\n", "implementation", "passes", "max angle", "max tokens",
              "max cos/sin", "first >thr rad", "first >=0.5 tok", "first p~p+1");
  for (const auto& s : r.series) {
    double angle = 0, tokens = 0, cs = 0;
    for (const auto& p : s.points) {
      angle = std::max(angle, p.angle_rad);
      tokens = std::max(tokens, p.position_tokens);
      cs = std::max(cs, p.cos_sin_abs);
    }
    std::printf("%-22s %-6s %12.3e %12.3e %14.3e %16s %16s %16s\n", s.name.c_str(), s.passes ? "yes" : "NO", angle, tokens,
                cs, show_position(s.first_angle_over_threshold).c_str(),
                show_position(s.first_position_error_over_threshold).c_str(),
                show_position(s.first_adjacent_positions_equal).c_str());
  }
  std::printf("\n%lld values (positions x bands x implementations) in %.1f s on %d threads: %.3g values/s "
              "(fast reference alone %.3g values/s; a plain MPFR reference would have needed ~%.3g s)\n",
              static_cast<long long>(r.time.values), r.time.seconds_total, r.time.threads, r.time.values_per_second,
              r.time.reference_values_per_second, r.time.mpfr_seconds_estimate);
  std::printf("report: %s\n", (w.folder / "report.html").string().c_str());
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"ropecheck: verification of rotary position embeddings"};
  app.require_subcommand(1);
  auto* rep = app.add_subcommand("report", "precision of RoPE implementations against exact mathematics, by position");

  std::string config_path, preset, out = "ropecheck-report";
  report::report_request req;
  std::vector<std::string> impls;
  bool no_plots = false, list = false;
  // Convention overrides (applied on top of --config/--preset; alone they start from Llama-2's defaults).
  std::optional<int> head_dim, rotary_dim;
  std::optional<double> rotary_fraction, base, factor, beta_fast, beta_slow, low_ff, high_ff;
  std::optional<std::string> scaling, layout_name;
  std::optional<std::int64_t> max_pe, orig_pe;

  rep->add_option("--config", config_path, "HF config.json to read the rope fields from (v4 or v5)")
      ->check(CLI::ExistingFile);
  rep->add_option("--preset", preset, "a built-in model convention: " + preset_names());
  rep->add_option("--head-dim", head_dim, "coordinates per head");
  rep->add_option("--rotary-dim", rotary_dim, "rotated coordinates (even, <= head_dim)");
  rep->add_option("--rotary-fraction", rotary_fraction, "partial_rotary_factor: rotary_dim = head_dim * fraction");
  rep->add_option("--base", base, "rope_theta");
  rep->add_option("--scaling", scaling, "default, linear, ntk, dynamic, yarn, llama3 (longrope needs --config)");
  rep->add_option("--factor", factor, "scaling factor s");
  rep->add_option("--layout", layout_name, "half_split (GPT-NeoX/HF) or interleaved (GPT-J/Meta/ggml NORM)");
  rep->add_option("--max-position-embeddings", max_pe, "the config's max_position_embeddings");
  rep->add_option("--original-max-position-embeddings", orig_pe, "pre-training length (YaRN, Llama-3, LongRoPE)");
  rep->add_option("--beta-fast", beta_fast, "YaRN beta_fast");
  rep->add_option("--beta-slow", beta_slow, "YaRN beta_slow");
  rep->add_option("--low-freq-factor", low_ff, "Llama-3 low_freq_factor");
  rep->add_option("--high-freq-factor", high_ff, "Llama-3 high_freq_factor");

  rep->add_option("--max-position", req.max_position, "largest position of the sweep (default: max_position_embeddings, at least 2^17)")
      ->check(CLI::Range(std::int64_t{1}, (std::int64_t{1} << 31) - 1));
  rep->add_option("--train-length", req.train_length, "training length for the band table (default: the config's)");
  rep->add_option("--eval-length", req.eval_length, "evaluation length for the band table (default: max position)");
  rep->add_flag("--exhaustive", req.exhaustive, "every position 0..max, every band");
  rep->add_option("--impl", impls, "implementations to include (repeatable; default: all that matter)");
  rep->add_flag("--list-implementations", list, "print the implementations and exit");
  rep->add_option("--threads", req.threads, "worker threads (default: all cores); results do not depend on it")
      ->check(CLI::Range(0, 256));
  rep->add_option("--seed", req.seed, "seed of the random head vectors (rotation and score metrics)");
  rep->add_option("--angle-threshold", req.angle_threshold_rad, "verdict threshold on the angle error (rad)")
      ->capture_default_str();
  rep->add_option("--token-threshold", req.position_threshold_tokens, "verdict threshold on the position error (tokens)")
      ->capture_default_str();
  rep->add_option("--out", out, "output folder")->capture_default_str();
  rep->add_flag("--no-plots", no_plots, "write CSV/JSON and an HTML without plots (no gnuplot needed)");
  CLI11_PARSE(app, argc, argv);

  try {
    if (list) {
      for (const auto& i : report::known_implementations())
        std::printf("%-22s %-8s %s%s\n", i.name.c_str(), i.cos_sin_dtype.c_str(), i.description.c_str(),
                    i.in_default_set ? "" : " (not in the default set)");
      return 0;
    }
    if (!config_path.empty() && !preset.empty()) throw std::invalid_argument("give --config or --preset, not both");
    rope_config cfg;
    if (!config_path.empty()) {
      cfg = load_hf_config(config_path);
      req.config_name = config_path;
    } else {
      const std::string name = preset.empty() ? "llama3-8b" : preset;
      const auto found = find_preset(name);
      if (!found) throw std::invalid_argument("unknown preset '" + name + "' (known: " + preset_names() + ")");
      cfg = *found;
      req.config_name = name;
    }
    bool overridden = false;
    auto set = [&](auto& field, const auto& opt) {
      if (opt) {
        field = *opt;
        overridden = true;
      }
    };
    set(cfg.head_dim, head_dim);
    set(cfg.rotary_dim, rotary_dim);
    if (rotary_fraction) {
      cfg.rotary_dim = static_cast<int>(cfg.head_dim * *rotary_fraction);
      overridden = true;
    } else if (head_dim && !rotary_dim) {
      cfg.rotary_dim = cfg.head_dim;
    }
    set(cfg.base, base);
    set(cfg.factor, factor);
    set(cfg.max_position_embeddings, max_pe);
    set(cfg.original_max_position_embeddings, orig_pe);
    set(cfg.beta_fast, beta_fast);
    set(cfg.beta_slow, beta_slow);
    set(cfg.low_freq_factor, low_ff);
    set(cfg.high_freq_factor, high_ff);
    if (scaling) {
      const std::string s = *scaling;
      if (s == "default" || s == "none") cfg.scaling = scaling_kind::none;
      else if (s == "linear") cfg.scaling = scaling_kind::linear;
      else if (s == "ntk") cfg.scaling = scaling_kind::ntk;
      else if (s == "dynamic") cfg.scaling = scaling_kind::dynamic_ntk;
      else if (s == "yarn") cfg.scaling = scaling_kind::yarn;
      else if (s == "llama3") cfg.scaling = scaling_kind::llama3;
      else throw std::invalid_argument("--scaling: unknown rule '" + s + "' (default, linear, ntk, dynamic, yarn, llama3)");
      overridden = true;
    }
    if (layout_name) {
      if (*layout_name == "half_split") cfg.pair_layout = layout::half_split;
      else if (*layout_name == "interleaved") cfg.pair_layout = layout::interleaved;
      else throw std::invalid_argument("--layout: '" + *layout_name + "' is neither half_split nor interleaved");
      overridden = true;
    }
    if (overridden) req.config_name += " (with overrides)";
    validate(cfg);  // a clear message naming the field
    req.config = cfg;
    if (req.max_position == 0) req.max_position = std::max<std::int64_t>(cfg.max_position_embeddings, std::int64_t{1} << 17);
    req.implementations = impls;

    std::string command;
    for (int i = 0; i < argc; ++i) command += (i ? " " : "") + std::string(argv[i]);
    progress_bar bar;
    const auto result = report::run_report(req, [&bar](std::int64_t d, std::int64_t t) { bar(d, t); });
    report::write_options wo;
    wo.command = command;
    wo.plots = !no_plots;
    const auto written = report::write_report(result, out, wo);
    print_summary(result, written);
    return 0;
  } catch (const std::exception& e) {
    std::cerr << "ropecheck: " << e.what() << '\n';
    return 2;
  }
}
