// tools/ropecheck.cpp — the ropecheck command line.
//
//   ropecheck report [--config config.json | --preset NAME] [--max-position N] [--csv FILE]
//
// `report` measures, for each angle strategy real implementations use, how far its angles and
// cos/sin are from exact mathematics (the MPFR reference) as position grows, and prints an
// error-against-position table with a verdict per strategy: the first position at which the
// angle error passes 1e-3 rad, and the first at which some band is off by half a token or more
// (the position error |angle error| / theta_i: adjacent positions are no longer told apart).
//
// Exit codes: 0 done, 2 bad input or usage.
#include <CLI/CLI.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "ropecheck/angle.hpp"
#include "ropecheck/config_json.hpp"
#include "ropecheck/error.hpp"
#include "ropecheck/presets.hpp"
#include "ropecheck/reference/reference.hpp"

namespace {

using namespace ropecheck;

// One strategy as the report sees it: its angle and cos/sin, widened.
struct measured_strategy {
  std::string name;
  std::function<long double(std::int64_t, int)> angle;
  std::function<std::pair<long double, long double>(std::int64_t, int)> cos_sin;
};

template <angle_strategy S>
measured_strategy measure(S s) {
  auto sp = std::make_shared<S>(std::move(s));
  using V = typename S::value_type;
  return {sp->name(), [sp](std::int64_t p, int b) { return sp->angle(p, b); },
          [sp](std::int64_t p, int b) {
            const auto cs = sp->cos_sin(p, b);
            return std::pair{scalar_traits<V>::widen(cs.cos), scalar_traits<V>::widen(cs.sin)};
          }};
}

std::vector<std::int64_t> report_positions(std::int64_t max_pos) {
  std::vector<std::int64_t> p;
  for (std::int64_t i = 0; i < std::min<std::int64_t>(1024, max_pos + 1); ++i) p.push_back(i);
  for (double x = 1024; x <= static_cast<double>(max_pos); x *= std::exp2(1.0 / 16))
    p.push_back(static_cast<std::int64_t>(x));
  p.push_back(max_pos);
  std::sort(p.begin(), p.end());
  p.erase(std::unique(p.begin(), p.end()), p.end());
  return p;
}

struct row {
  long double angle_err = 0, position_err = 0, cos_sin_err = 0;
};

int run_report(const rope_config& cfg, std::int64_t max_pos, const std::string& csv_path) {
  const reference::rope_reference ref(cfg, max_pos);
  std::vector<measured_strategy> strategies;
  strategies.push_back(measure(hf_angle<float>(cfg, max_pos)));
  strategies.push_back(measure(hf_angle<bfloat16>(cfg, max_pos)));
  strategies.push_back(measure(direct_angle<double>(cfg, max_pos)));
  strategies.push_back(measure(direct_angle<float>(cfg, max_pos)));
  strategies.push_back(measure(ggml_angle(cfg, max_pos)));
  strategies.push_back(measure(direct_angle<bfloat16>(cfg, max_pos)));
  strategies.push_back(measure(storage_positions<bfloat16, float>(cfg, max_pos)));
  strategies.push_back(measure(cached<bfloat16, hf_angle<float>>(hf_angle<float>(cfg, max_pos))));
  strategies.push_back(measure(fast_sincos_angle(cfg, max_pos)));

  const auto positions = report_positions(max_pos);
  const long double af = ref.attention_factor().value();
  std::vector<long double> theta(static_cast<std::size_t>(ref.bands()));
  for (int b = 0; b < ref.bands(); ++b) theta[static_cast<std::size_t>(b)] = ref.inv_freq(b).value();

  std::unique_ptr<std::ofstream> csv;
  if (!csv_path.empty()) {
    csv = std::make_unique<std::ofstream>(csv_path);
    if (!*csv) throw std::runtime_error("cannot write " + csv_path);
    *csv << "strategy,position,max_angle_error_rad,max_position_error_tokens,max_cos_sin_error\n";
  }

  std::printf("ropecheck report: head_dim %d, rotary_dim %d, base %g, scaling %s, attention factor %.6Lg\n",
              cfg.head_dim, cfg.rotary_dim, cfg.base, std::string(to_string(cfg.scaling)).c_str(), af);
  std::printf("error against exact mathematics (MPFR, %d bits), maximum over the %d bands, up to position %lld\n\n",
              ref.precision_bits(), ref.bands(), static_cast<long long>(max_pos));

  // Columns: powers of four up to max_pos.
  std::vector<std::int64_t> columns;
  for (std::int64_t c = 16; c <= max_pos; c *= 4) columns.push_back(c);
  if (columns.empty() || columns.back() != max_pos) columns.push_back(max_pos);

  // One pass per strategy; three tables (angle, cos/sin, position in tokens) printed after.
  struct summary {
    std::string name;
    std::vector<row> col;  // running maxima up to each column position
    std::int64_t first_rad = -1, first_token = -1, first_cs = -1;
  };
  std::vector<summary> sums;
  for (std::size_t si = 0; si < strategies.size(); ++si) {
    const auto& s = strategies[si];
    std::fprintf(stderr, "\r[report] %zu/%zu %-32s", si + 1, strategies.size(), s.name.c_str());
    summary sm{s.name, std::vector<row>(columns.size())};
    for (const std::int64_t p : positions) {
      row r;
      for (int b = 0; b < ref.bands(); ++b) {
        const auto phi = ref.angle(p, b);
        const long double da = std::fabs(signed_difference(s.angle(p, b), phi.hi, phi.lo));
        r.angle_err = std::max(r.angle_err, da);
        r.position_err = std::max(r.position_err, da / theta[static_cast<std::size_t>(b)]);
        const auto exact = ref.cos_sin(p, b);
        const auto [c, sn] = s.cos_sin(p, b);
        r.cos_sin_err = std::max({r.cos_sin_err, std::fabs(c - af * exact.cos.value()),
                                  std::fabs(sn - af * exact.sin.value())});
      }
      if (sm.first_rad < 0 && r.angle_err > 1e-3L) sm.first_rad = p;
      if (sm.first_token < 0 && r.position_err >= 0.5L) sm.first_token = p;
      if (sm.first_cs < 0 && r.cos_sin_err > 1e-3L) sm.first_cs = p;
      for (std::size_t ci = 0; ci < columns.size(); ++ci)
        if (p <= columns[ci]) {
          auto& m = sm.col[ci];
          m.angle_err = std::max(m.angle_err, r.angle_err);
          m.position_err = std::max(m.position_err, r.position_err);
          m.cos_sin_err = std::max(m.cos_sin_err, r.cos_sin_err);
        }
      if (csv)
        *csv << s.name << ',' << p << ',' << static_cast<double>(r.angle_err) << ','
             << static_cast<double>(r.position_err) << ',' << static_cast<double>(r.cos_sin_err) << '\n';
    }
    sums.push_back(std::move(sm));
  }
  auto show = [](std::int64_t v) { return v < 0 ? std::string("never") : std::to_string(v); };
  auto table = [&](const char* title, long double row::*field, std::int64_t summary::*first, const char* first_title) {
    std::printf("%-30s", title);
    for (auto c : columns) std::printf(" %10lld", static_cast<long long>(c));
    std::printf("   %s\n", first_title);
    for (const auto& sm : sums) {
      std::printf("%-30s", sm.name.c_str());
      for (const auto& m : sm.col) std::printf(" %10.2Le", m.*field);
      std::printf("   %s\n", show(sm.*first).c_str());
    }
    std::printf("\n");
  };
  table("max |angle error| (rad)", &row::angle_err, &summary::first_rad, "first position > 1e-3 rad");
  table("max |cos/sin error|", &row::cos_sin_err, &summary::first_cs, "first position > 1e-3");
  table("max position error (tokens)", &row::position_err, &summary::first_token, "first position >= 0.5 token");
  std::fprintf(stderr, "\r%60s\r", "");
  std::printf("\nposition error = |angle error| / theta_i, in tokens: at >= 0.5 a band can no longer tell p from p+1.\n");
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"ropecheck: verification of rotary position embeddings"};
  app.require_subcommand(1);
  auto* report = app.add_subcommand("report", "precision of angle strategies against exact mathematics, by position");
  std::string config_path, preset = "llama3-8b", csv_path;
  std::int64_t max_pos = 0;
  report->add_option("--config", config_path, "HF config.json to read the rope fields from")->check(CLI::ExistingFile);
  report->add_option("--preset", preset, "a built-in model config: " + preset_names())->capture_default_str();
  report->add_option("--max-position", max_pos, "largest position (default: max_position_embeddings, at least 2^17)")
      ->check(CLI::Range(std::int64_t{1}, (std::int64_t{1} << 40)));
  report->add_option("--csv", csv_path, "write every series to this CSV file");
  CLI11_PARSE(app, argc, argv);

  try {
    rope_config cfg;
    if (!config_path.empty()) {
      cfg = load_hf_config(config_path);
    } else {
      const auto found = find_preset(preset);
      if (!found) {
        std::cerr << "ropecheck: unknown preset '" << preset << "' (known: " << preset_names() << ")\n";
        return 2;
      }
      cfg = *found;
    }
    if (max_pos == 0) max_pos = std::max<std::int64_t>(cfg.max_position_embeddings, std::int64_t{1} << 17);
    return run_report(cfg, max_pos, csv_path);
  } catch (const std::exception& e) {
    std::cerr << "ropecheck: " << e.what() << '\n';
    return 2;
  }
}
