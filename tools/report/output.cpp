// tools/report/output.cpp — CSV, summary.json, timing.json and the folder (output.hpp). The gnuplot
// scripts are plots.cpp, the HTML html.cpp, what they share output_common.hpp.
#include "output.hpp"

#include "explain/claim_json.hpp"

#include "sweep/config_to_json.hpp"

#include <nlohmann/json.hpp>

#include "html.hpp"
#include "output_common.hpp"
#include "plots.hpp"

namespace ropecheck::report {
namespace {

using namespace detail;

// ---------------------------------------------------------------------------------------------
// JSON pieces

using ojson = nlohmann::ordered_json;

ojson finite_or_null(double v) { return std::isfinite(v) ? ojson(v) : ojson(nullptr); }

}  // namespace

// ---------------------------------------------------------------------------------------------
// Public pieces

std::string file_stem(std::string_view name) {
  std::string s;
  for (char ch : name) {
    const bool keep = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
                      ch == '_' || ch == '-' || ch == '.';
    s += keep ? ch : '_';
  }
  if (s.empty() || s.front() == '.') s.insert(0, "impl");
  return s;
}

std::string implementation_csv(const implementation_series& series) { return error_table(series.points); }

std::string bands_csv(const report_result& r) {
  std::string s =
      "band,inv_freq,inv_freq_unscaled,wavelength,wavelength_unscaled,turns_in_training,"
      "unseen_fraction_unscaled,unseen_fraction_scaled,floor_tokens_bfloat16,floor_tokens_float16,"
      "floor_tokens_float32\n";
  for (const auto& b : r.bands) {
    s += std::to_string(b.band) + ',' + exact_number(b.inv_freq) + ',' + exact_number(b.inv_freq_unscaled) + ',' +
         exact_number(b.wavelength) + ',' + exact_number(b.wavelength_unscaled) + ',' +
         exact_number(b.turns_in_training) + ',' + exact_number(b.unseen_fraction_unscaled) + ',' +
         exact_number(b.unseen_fraction_scaled) + ',' + exact_number(b.floor_tokens_bfloat16) + ',' +
         exact_number(b.floor_tokens_float16) + ',' + exact_number(b.floor_tokens_float32) + '\n';
  }
  return s;
}

// One row per offset bucket, most negative m - n first; abs_offset_lo is the smallest |m - n| of the bucket
// (the plot's x).
std::string score_offsets_csv(const implementation_series& series) {
  std::string s = "offset_lo,offset_hi,abs_offset_lo,pairs,max,rms,worst_m,worst_n\n";
  for (const auto& b : series.score_by_offset)
    s += integer(b.offset_lo) + ',' + integer(b.offset_hi) + ',' +
         integer(b.offset_hi < 0 ? -b.offset_hi : b.offset_lo) + ',' + integer(b.pairs) + ',' + exact_number(b.max) +
         ',' + exact_number(b.rms) + ',' + integer(b.worst_m) + ',' + integer(b.worst_n) + '\n';
  return s;
}

// Long format, band-major: band,bucket,position_begin,position_end,angle_rad. position_end is
// exclusive; past the given edges it is max_position + 1 of the sweep (or -1 when unknown).
std::string heat_csv(const implementation_series& series) {
  std::string s = "band,bucket,position_begin,position_end,angle_rad\n";
  const auto& e = series.heat_bucket_edges;
  const std::int64_t last = series.points.empty() ? -1 : series.points.back().position + 1;
  for (std::size_t b = 0; b < series.band_position_heat.size(); ++b) {
    const auto& row = series.band_position_heat[b];
    for (std::size_t k = 0; k < row.size(); ++k) {
      const std::int64_t begin = k < e.size() ? e[k] : -1;
      const std::int64_t end = k + 1 < e.size() ? e[k + 1] : last;
      s += std::to_string(b) + ',' + std::to_string(k) + ',' + integer(begin) + ',' + integer(end) + ',' +
           exact_number(row[k]) + '\n';
    }
  }
  return s;
}

// summary.json — keys, in this order (stable; add new keys only at the end of an object):
//   format                 "ropecheck-report-summary"
//   format_version         1
//   ropecheck_version, reference_precision
//   request                { config_name, config {head_dim, rotary_dim, base, layout, scaling,
//                            factor, max_position_embeddings, original_max_position_embeddings,
//                            beta_fast, beta_slow, truncate, attention_factor, mscale,
//                            mscale_all_dim, low_freq_factor, high_freq_factor, short_factor,
//                            long_factor}, train_length, eval_length, max_position, exhaustive,
//                            implementations, seed, angle_threshold_rad,
//                            position_threshold_tokens, config_notes }
//   attention_factor
//   bands                  number of bands (the table is data/bands.csv)
//   passes                 true when every implementation passes (the judge's verdict when it ran)
//   implementations        [ { name, description, cos_sin_dtype, csv, heat_csv, passes,
//                              first_angle_over_threshold, first_position_error_over_threshold,
//                              first_adjacent_positions_equal, worst_band, positions, nan_points,
//                              max { angle_rad, position_tokens, cos_sin_abs, cos_sin_ulps,
//                                    rotated_relative, score_violation, source_frequency_rad,
//                                    source_position_rad, source_product_rad, source_sin_cos,
//                                    source_cache, source_rotation, magnitude_rel,
//                                    source_formed_angle_rad: {value, position}},
//                              judge { judged, verdict, pass, dtype, tokens, worst_ratio,
//                                      max_error_ulps, tolerance_ulps, worst_position, worst_band,
//                                      finding },
//                              score_csv, score_by_offset [ { offset_lo, offset_hi, pairs, max, rms,
//                                                             worst_m, worst_n } ] } ]
//   timing                 "timing.json" (timing, thread count and the command line vary from run
//                          to run for the same inputs: they live in that file, so that this one
//                          is byte-identical for the same inputs and seed, whatever --threads)
//   storage_floor          [ { dtype, bits, angle_rad (2^-bits), max_tokens, band (the slowest),
//                              tokens_per_band [2^-bits / theta_i per band] } ] for bfloat16,
//                          float16, float32 (engine.hpp: storage_floor_rad)
// Conventions: positions are integers, -1 = never (as in report_data.hpp); a non-finite number
// is null; "max" ignores NaN points (nan_points counts them) and its position is where the
// maximum is first reached (-1 and null value when there are no points).
std::string mrope_statement(const rope_config& c) {
  if (c.mrope == mrope_kind::none) return {};
  static const char* const names[] = {"temporal", "height", "width"};
  const int rows = c.position_rows();
  auto row_name = [&](int r) { return rows == 3 ? std::string(names[r]) : "row " + std::to_string(r); };
  std::string split;
  if (c.mrope == mrope_kind::contiguous) {
    int start = 0;
    for (int r = 0; r < rows; ++r) {
      const int n = c.mrope_section[static_cast<std::size_t>(r)];
      if (n == 0) continue;
      split += (split.empty() ? "" : ", ") + std::string("bands ") + std::to_string(start) + ".." +
               std::to_string(start + n - 1) + " " + row_name(r);
      start += n;
    }
  } else {
    for (int r = 1; r < rows; ++r)
      split += (split.empty() ? "" : ", ") + row_name(r) + " in bands " + std::to_string(r) + ", " + std::to_string(r + 3) +
               ", ... below " + std::to_string(3 * c.mrope_section[static_cast<std::size_t>(r)]) + " (" +
               std::to_string(c.mrope_section[static_cast<std::size_t>(r)]) + " bands)";
    split += ", " + row_name(0) + " in the other " + std::to_string(c.mrope_section[0]);
  }
  std::string sec;
  for (std::size_t r = 0; r < c.mrope_section.size(); ++r) sec += (r ? ", " : "") + std::to_string(c.mrope_section[r]);
  return "M-RoPE " + std::string(to_string(c.mrope)) + " [" + sec + "]: measured at text positions (every position row " +
         "equal), i.e. plain RoPE over the same frequencies; multimodal tokens turn each band by its own row (" + split +
         "), which `ropecheck audit` judges on a dump";
}

std::string summary_json(const report_result& r, const write_options& /*options: none shape the summary*/) {
  const auto stems = file_stems(r);
  const auto& q = r.request;
  ojson j;
  j["format"] = "ropecheck-report-summary";
  j["format_version"] = 1;
  j["ropecheck_version"] = r.ropecheck_version;
  j["reference_precision"] = r.reference_precision;
  ojson req;
  req["config_name"] = q.config_name;
  req["config"] = sweep::config_to_json(q.config);
  req["train_length"] = q.train_length;
  req["eval_length"] = q.eval_length;
  req["max_position"] = q.max_position;
  req["exhaustive"] = q.exhaustive;
  req["implementations"] = q.implementations;
  req["seed"] = q.seed;
  req["angle_threshold_rad"] = q.angle_threshold_rad;
  req["position_threshold_tokens"] = q.position_threshold_tokens;
  req["config_notes"] = q.config_notes;
  req["claim"] = explain::claim_json(q.claim_info);
  j["request"] = std::move(req);
  j["attention_factor"] = r.attention_factor;
  j["bands"] = r.bands.size();
  j["passes"] = std::all_of(r.series.begin(), r.series.end(), [](const auto& s) { return s.passes; });
  ojson impls = ojson::array();
  for (std::size_t i = 0; i < r.series.size(); ++i) {
    const auto& s = r.series[i];
    ojson e;
    e["name"] = s.name;
    e["description"] = s.description;
    e["cos_sin_dtype"] = s.cos_sin_dtype;
    e["csv"] = "data/" + stems[i] + ".csv";
    e["heat_csv"] = "data/heat_" + stems[i] + ".csv";
    e["passes"] = s.passes;
    e["first_angle_over_threshold"] = s.first_angle_over_threshold;
    e["first_position_error_over_threshold"] = s.first_position_error_over_threshold;
    e["first_adjacent_positions_equal"] = s.first_adjacent_positions_equal;
    e["worst_band"] = s.worst_band;
    e["positions"] = s.points.size();
    e["nan_points"] = nan_points(s);
    ojson mx;
    for (const auto& c : error_columns) {
      const field_max m = max_of(s, c);
      ojson v;
      v["value"] = m.position < 0 ? ojson(nullptr) : ojson(m.value);
      v["position"] = m.position;
      mx[c.name] = std::move(v);
    }
    e["max"] = std::move(mx);
    ojson jv;
    jv["judged"] = s.judge.judged;
    jv["verdict"] = s.judge.verdict;
    jv["pass"] = s.judge.pass;
    jv["dtype"] = s.judge.dtype;
    jv["tokens"] = s.judge.tokens;
    jv["worst_ratio"] = finite_or_null(s.judge.worst_ratio);
    jv["max_error_ulps"] = finite_or_null(s.judge.max_error_ulps);
    jv["tolerance_ulps"] = finite_or_null(s.judge.tolerance_ulps);
    jv["worst_position"] = s.judge.worst_position;
    jv["worst_band"] = s.judge.worst_band;
    jv["finding"] = s.judge.finding;
    e["judge"] = std::move(jv);
    // The score-level figure (added after judge: the keys above keep their order).
    e["score_csv"] = "data/score_" + stems[i] + ".csv";
    ojson rows = ojson::array();
    for (const auto& b : s.score_by_offset)
      rows.push_back({{"offset_lo", b.offset_lo}, {"offset_hi", b.offset_hi}, {"pairs", b.pairs},
                      {"max", finite_or_null(b.max)}, {"rms", finite_or_null(b.rms)}, {"worst_m", b.worst_m},
                      {"worst_n", b.worst_n}});
    e["score_by_offset"] = std::move(rows);
    impls.push_back(std::move(e));
  }
  j["implementations"] = std::move(impls);
  j["timing"] = "timing.json";
  ojson floors = ojson::array();
  for (const auto& f : r.storage_floors) {
    ojson e;
    e["dtype"] = f.dtype;
    e["bits"] = f.bits;
    e["angle_rad"] = f.angle_rad;
    e["max_tokens"] = finite_or_null(f.max_tokens);
    e["band"] = f.band;
    ojson per_band = ojson::array();
    for (const auto& b : r.bands) {
      const double v = f.dtype == "bfloat16" ? b.floor_tokens_bfloat16
                       : f.dtype == "float16" ? b.floor_tokens_float16
                                              : b.floor_tokens_float32;
      per_band.push_back(finite_or_null(v));
    }
    e["tokens_per_band"] = std::move(per_band);
    floors.push_back(std::move(e));
  }
  j["storage_floor"] = std::move(floors);
  if (q.config.mrope != mrope_kind::none)  // added last: the keys above keep their order
    j["mrope"] = {{"kind", std::string(to_string(q.config.mrope))},
                  {"mrope_section", q.config.mrope_section},
                  {"statement", mrope_statement(q.config)}};
  if (r.certificate) {  // `--certificate`: its figures, as read (added last, like mrope)
    const auto& c = *r.certificate;
    ojson rows = ojson::array();
    for (const auto& x : c.rows)
      rows.push_back({{"name", x.name}, {"pass", x.pass}, {"worst_ratio_to_allowance", finite_or_null(x.worst_ratio)},
                      {"worst_ratio_band", x.worst_ratio_band}, {"worst_ratio_position", x.worst_ratio_position},
                      {"worst_angle_rad", finite_or_null(x.worst_angle_rad)},
                      {"worst_position_tokens", finite_or_null(x.worst_position_tokens)},
                      {"first_angle_over_threshold", x.first_angle_over},
                      {"first_position_error_over_threshold", x.first_tokens_over},
                      {"first_adjacent_positions_equal", x.first_equal}});
    j["certificate"] = {{"file", c.file}, {"inputs_sha256", c.inputs_sha256}, {"verdict", c.verdict},
                        {"max_position", c.max_position}, {"implementations", std::move(rows)}};
  }
  return j.dump(2) + "\n";
}

// timing.json — { command, seconds_total, values_per_second, reference_values_per_second,
// mpfr_seconds_estimate, score_seconds, threads, positions, values }: varies from run to run.
std::string timing_json(const report_result& r, const write_options& o) {
  const auto& t = r.time;
  ojson j;
  j["command"] = o.command;
  j["seconds_total"] = t.seconds_total;
  j["values_per_second"] = t.values_per_second;
  j["reference_values_per_second"] = t.reference_values_per_second;
  j["mpfr_seconds_estimate"] = t.mpfr_seconds_estimate;
  j["score_seconds"] = t.score_seconds;
  j["threads"] = t.threads;
  j["positions"] = t.positions;
  j["values"] = t.values;
  return j.dump(2) + "\n";
}

// ---------------------------------------------------------------------------------------------
// The folder

written_report write_report(const report_result& r, const fs::path& folder, const write_options& o) {
  written_report w{folder, {}};
  make_folder(folder);
  make_folder(folder / "data");
  auto emit = [&](const fs::path& rel, std::string_view bytes) {
    write_file(folder / rel, bytes);
    w.files.push_back(rel);
  };

  // Data and JSON first: they are what a CI reads, and must exist even when plotting fails.
  const auto stems = file_stems(r);
  for (std::size_t i = 0; i < r.series.size(); ++i) {
    emit(fs::path("data") / (stems[i] + ".csv"), implementation_csv(r.series[i]));
    emit(fs::path("data") / ("heat_" + stems[i] + ".csv"), heat_csv(r.series[i]));
    emit(fs::path("data") / ("score_" + stems[i] + ".csv"), score_offsets_csv(r.series[i]));
  }
  emit(fs::path("data") / "bands.csv", bands_csv(r));
  emit("summary.json", summary_json(r, o));
  emit("timing.json", timing_json(r, o));

  // Plot scripts.
  std::vector<rendered_plot> main_plots, source_plots, heat_plots;
  std::optional<rendered_plot> bands_plot;
  std::string plot_note;
  std::optional<std::string> plot_error;
  if (o.plots) {
    make_folder(folder / "plots");
    std::vector<plot_source> sources;
    for (std::size_t i = 0; i < r.series.size(); ++i) {
      if (r.series[i].points.size() > max_plotted_points) {
        const std::string file = stems[i] + "_envelope.csv";
        emit(fs::path("plots") / file, error_table(thin(r.series[i].points)));
        sources.push_back({file, true});
      } else {
        sources.push_back({"../data/" + stems[i] + ".csv", false});
      }
    }
    const auto& q = r.request;
    auto add = [](std::vector<rendered_plot>& to, std::optional<plot> p) {
      if (p) to.push_back({std::move(*p), ""});
    };
    add(main_plots,
        field_plot(r, sources, "angle_error", "Applied angle error vs position", "angle_rad",
                   "applied angle error |atan2(sin, cos) - p theta_i|, max over bands (rad)",
                   std::pair{q.angle_threshold_rad, "threshold " + short_number(q.angle_threshold_rad) + " rad"},
                   "The angle of the (cos, sin) pair each implementation really feeds its rotation (after "
                   "every cast and cache), against p theta_i. Look for where a curve crosses the dashed "
                   "threshold: angles formed in fp32 drift in proportion to p; a fast sin/cos or a 16-bit "
                   "cos/sin applies angles a fixed fraction off, which grows with p in the slow bands too.",
                   "errors"));
    add(main_plots,
        field_plot(r, sources, "position_error", "Position error in tokens vs position", "position_tokens",
                   "position error |applied angle error| / theta_i, max over bands (tokens)",
                   std::pair{q.position_threshold_tokens,
                             "threshold " + short_number(q.position_threshold_tokens) + " token"},
                   "A curve above the dashed line no longer tells position p from its neighbours in some "
                   "band: that is a precision failure that changes effective positions, whatever the dtype. "
                   "The grey dash-dotted lines are the storage floors of bf16, fp16 and fp32: a pair stored with "
                   "d significant bits (8, 11, 24) can be off by 2^-d rad, i.e. 2^-d / theta_i tokens in band i, "
                   "however exactly it was computed (drawn: the slowest band's; per band in the band table); an "
                   "error below a dtype's line is one a model keeping q/k in that dtype could not represent anyway.",
                   "errors", floor_lines(r)));
    add(main_plots,
        field_plot(r, sources, "cos_sin_error", "cos/sin error vs position", "cos_sin_abs",
                   "|cos/sin - af cos/sin(p theta)|, max over bands", std::nullopt,
                   "Look for growth with position (angle drift) against a flat floor set by the cos/sin "
                   "dtype; a curve high already at position 0 points to a wrong attention factor.",
                   "errors"));
    add(main_plots,
        field_plot(r, sources, "score_violation", "Relative-offset score violation vs position",
                   "score_violation",
                   "score violation, relative to sum |q_j k_j|", std::nullopt,
                   "The score <R(m)q, R(m-1)k> of a query at m and a key at m-1 should equal "
                   "af <q, R(-1)k>, which depends only on their offset (shown: the difference over "
                   "sum |q_j k_j|); a curve that grows with m means absolute position leaks into attention.",
                   "violations"));
    add(main_plots, score_offset_plot(r, stems));
    for (std::size_t i = 0; i < r.series.size(); ++i) add(source_plots, sources_plot(r, sources[i], r.series[i], stems[i]));
    // Heat maps for the key implementations: failing first, then by largest angle error.
    std::vector<std::size_t> order(r.series.size());
    for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
    auto worst = [&](std::size_t i) {
      const double v = max_of(r.series[i], error_columns[0]).value;
      return std::isnan(v) ? -1.0 : v;
    };
    std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
      if (r.series[a].passes != r.series[b].passes) return !r.series[a].passes;
      return worst(a) > worst(b);
    });
    for (std::size_t k = 0, made = 0; k < order.size() && made < static_cast<std::size_t>(std::max(0, o.heat_map_implementations)); ++k) {
      auto p = heat_plot(r.series[order[k]], stems[order[k]]);
      if (p) {
        heat_plots.push_back({std::move(*p), ""});
        ++made;
      }
    }
    if (auto p = band_plot(r)) bands_plot = rendered_plot{std::move(*p), ""};

    std::vector<rendered_plot*> all;
    for (auto* v : {&main_plots, &source_plots, &heat_plots})
      for (auto& p : *v) all.push_back(&p);
    if (bands_plot) all.push_back(&*bands_plot);
    for (auto* p : all) emit(fs::path("plots") / (p->p.name + ".gp"), gp_preamble(r, p->p) + gp_render(p->p, o.png));

    // Draw.
    const fs::path plots_dir = fs::absolute(folder / "plots");
    const auto gnuplot = find_program(o.gnuplot);
    if (!gnuplot) {
      const char* env = std::getenv("PATH");
      plot_error = "ropecheck report: cannot draw the plots: program '" + o.gnuplot + "' not found" +
                   (o.gnuplot.find('/') == std::string::npos ? " on PATH (" + std::string(env ? env : "") + ")" : "") +
                   ". Plots need gnuplot: install the Debian package gnuplot-nox (apt-get install gnuplot-nox). "
                   "The data (data/*.csv, summary.json, timing.json), the plot scripts (plots/*.gp) and "
                   "report.html without plots were written to '" + folder.string() + "'.";
      plot_note = "Plots were not drawn: gnuplot was not found (install the Debian package gnuplot-nox, then "
                  "run `gnuplot -d NAME.gp` in plots/ or rerun the report).";
    } else {
      for (auto* p : all) {
        const std::string script = p->p.name + ".gp";
        const run_outcome out = run_program(*gnuplot, {"-d", script}, plots_dir);
        const auto svg = read_file(plots_dir / (p->p.name + ".svg"));
        if (out.status != 0 || !svg || svg->find("</svg>") == std::string::npos) {
          if (!plot_error) {
            plot_error = "ropecheck report: gnuplot failed on '" + (plots_dir / script).string() + "' (command: " +
                         gnuplot->string() + " -d " + script + " in " + plots_dir.string() + ", exit status " +
                         std::to_string(out.status) + "): " + tail(out.output);
            plot_note = "Some plots were not drawn: gnuplot failed on plots/" + script + ".";
          }
          continue;
        }
        p->svg = *svg;
        w.files.push_back(fs::path("plots") / (p->p.name + ".svg"));
        if (o.png) w.files.push_back(fs::path("plots") / (p->p.name + ".png"));
      }
    }
  } else {
    plot_note = "Plots were not requested.";
  }

  emit("report.html", report_html(r, o, stems, main_plots, source_plots, heat_plots, bands_plot, plot_note));
  if (plot_error) throw std::runtime_error(*plot_error);
  return w;
}

}  // namespace ropecheck::report
