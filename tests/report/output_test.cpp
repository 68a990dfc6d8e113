// tests/report/output_test.cpp — the writers of `ropecheck report` (tools/report/output.hpp).
//
// A small report_result made by hand (2 implementations, 10 positions, 4 bands) is written to
// folders and the files are checked: CSV/JSON/gnuplot scripts byte-identical across writes, the
// HTML self-contained with the verdict rows and inline SVG, and clear errors when the folder
// cannot be made or gnuplot is missing or fails.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>
#include <string>

#include "report/output.hpp"

namespace {

namespace fs = std::filesystem;
using namespace ropecheck::report;

// 4 bands of head_dim 8, base 10000: theta_i = 10^-i, trained at 64, evaluated at 256.
report_result synthetic_report() {
  report_result r;
  auto& q = r.request;
  q.config_name = "synthetic d8";
  q.config.head_dim = 8;
  q.config.rotary_dim = 8;
  q.config.base = 10000;
  q.config.max_position_embeddings = 64;
  q.train_length = 64;
  q.eval_length = 256;
  q.max_position = 256;
  q.implementations = {"exact_double", "bf16_positions"};
  q.threads = 2;
  r.attention_factor = 1;
  for (int i = 0; i < 4; ++i) {
    band_row b;
    b.band = i;
    b.inv_freq = b.inv_freq_unscaled = std::pow(10.0, -i);
    b.wavelength = b.wavelength_unscaled = 2 * M_PI / b.inv_freq;
    b.turns_in_training = 64 * b.inv_freq / (2 * M_PI);
    b.unseen_fraction_unscaled = b.unseen_fraction_scaled = i < 2 ? 0.0 : 0.75;
    b.floor_tokens_bfloat16 = 0x1p-8 / b.inv_freq;
    b.floor_tokens_float16 = 0x1p-11 / b.inv_freq;
    b.floor_tokens_float32 = 0x1p-24 / b.inv_freq;
    r.bands.push_back(b);
  }
  r.storage_floors = {{"bfloat16", 8, 0x1p-8, 0x1p-8 * 1000, 3}, {"float16", 11, 0x1p-11, 0x1p-11 * 1000, 3},
                      {"float32", 24, 0x1p-24, 0x1p-24 * 1000, 3}};
  const std::int64_t positions[10] = {0, 1, 2, 4, 8, 16, 32, 64, 128, 256};

  implementation_series exact{"exact_double", "double angle, double cos/sin", "double", {}, {}, {}, -1, -1, -1, 3, true, {}, {}};
  implementation_series bf16{"bf16_positions", "positions held in bf16 (HF with bf16 position_ids)", "bfloat16",
                             {}, {}, {}, 64, 128, 128, 0, false, {}, {}};
  for (std::int64_t p : positions) {
    const double pd = static_cast<double>(p);
    position_errors e;
    e.position = p;
    e.angle_rad = 1e-16 * pd;
    e.position_tokens = 1e-13 * pd;
    e.cos_sin_abs = 1.1e-16 * (p > 0);
    e.cos_sin_ulps = 0.5 * (p > 0);
    e.rotated_relative = 2e-16;
    e.score_violation = 3e-16 * pd;
    e.sources = {1e-17 * pd, 0, 5e-17 * pd, 1.1e-16, 0, 2e-16};
    exact.points.push_back(e);

    position_errors f = e;
    f.angle_rad = p >= 128 ? 0.5 : 1e-5 * pd;
    f.position_tokens = p >= 128 ? 0.9 : 1e-3 * pd;
    f.cos_sin_abs = 4e-3 + 1e-5 * pd;
    f.cos_sin_ulps = 1 + pd;
    f.rotated_relative = p == 8 ? std::numeric_limits<double>::quiet_NaN() : 4e-3;
    f.score_violation = 1e-4 * pd;
    f.sources = {1e-6 * pd, p >= 128 ? 0.5 : 0.0, 1e-8 * pd, 2e-3, 3.9e-3, 1e-3};
    bf16.points.push_back(f);
  }
  exact.heat_bucket_edges = bf16.heat_bucket_edges = {0, 1, 4, 16, 64, 257};
  for (int b = 0; b < 4; ++b) {
    std::vector<double> ex, bf;
    for (int k = 0; k < 5; ++k) {
      ex.push_back(k == 0 ? 0.0 : 1e-16 * std::pow(4.0, k));
      bf.push_back(k == 0 ? 0.0 : 1e-6 * std::pow(8.0, k) * std::pow(10.0, -b));
    }
    exact.band_position_heat.push_back(ex);
    bf16.band_position_heat.push_back(bf);
  }
  // The judge's verdict on the second (the first was not judged: its verdict is the thresholds').
  bf16.judge.judged = true;
  bf16.judge.verdict = "positions_low_precision";
  bf16.judge.dtype = "float32";
  bf16.judge.tokens = 242;
  bf16.judge.worst_ratio = 364.25;
  bf16.judge.max_error_ulps = 1.65e7;
  bf16.judge.tolerance_ulps = 5.6e5;
  bf16.judge.worst_position = 257;
  bf16.judge.worst_band = 1;
  bf16.judge.finding = "positions are held in bfloat16 (8 significant bits): 257 -> 256";
  r.series = {exact, bf16};
  r.time = {1.25, 2.0e7, 5.0e7, 3600, 2, 10, 80};
  r.ropecheck_version = "0.1.0";
  r.reference_precision = "MPFR 256 bits (fast path: 64.192 fixed point + double-double)";
  return r;
}

write_options options() {
  write_options o;
  o.command = "ropecheck report --preset synthetic --max-position 256";
  return o;
}

// Every folder of this run lives under one directory, removed at the end unless
// ROPECHECK_KEEP_TEST_OUTPUT is set (to look at the reports).
fs::path run_folder() {
  return fs::temp_directory_path() / ("ropecheck_report_output_test_" + std::to_string(::getpid()));
}

fs::path fresh_folder(const std::string& name) {
  const fs::path p = run_folder() / name;
  fs::remove_all(p);
  return p;
}

struct remove_run_folder : ::testing::Environment {
  void TearDown() override {
    if (!std::getenv("ROPECHECK_KEEP_TEST_OUTPUT")) fs::remove_all(run_folder());
  }
};
const auto* const cleanup = ::testing::AddGlobalTestEnvironment(new remove_run_folder);

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  EXPECT_TRUE(in) << "cannot read " << p;
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// Restores PATH when the test ends, however it ends.
struct path_override {
  std::string saved;
  explicit path_override(const std::string& value) : saved(std::getenv("PATH") ? std::getenv("PATH") : "") {
    ::setenv("PATH", value.c_str(), 1);
  }
  ~path_override() { ::setenv("PATH", saved.c_str(), 1); }
};

TEST(report_output, writing_the_same_report_twice_gives_byte_identical_csv_json_and_scripts) {
  const report_result r = synthetic_report();
  const fs::path a = fresh_folder("twice_a"), b = fresh_folder("twice_b");
  const written_report wa = write_report(r, a, options());
  const written_report wb = write_report(r, b, options());
  ASSERT_EQ(wa.files, wb.files);
  int compared = 0;
  for (const auto& f : wa.files) {
    const auto ext = f.extension();
    if (ext != ".csv" && ext != ".gp" && f != "summary.json") continue;
    EXPECT_EQ(slurp(a / f), slurp(b / f)) << f << " differs between two writes";
    ++compared;
  }
  // 2 x (csv + heat csv) + bands.csv + summary.json + 8 scripts (4 fields, 2 sources, 1+ heat, bands).
  EXPECT_GE(compared, 14);
  for (const char* f : {"data/exact_double.csv", "data/bf16_positions.csv", "data/bands.csv",
                        "data/heat_bf16_positions.csv", "summary.json", "timing.json", "report.html",
                        "plots/angle_error.svg", "plots/angle_error.png", "plots/heat_bf16_positions.svg"})
    EXPECT_TRUE(fs::exists(a / f)) << f;
}

TEST(report_output, the_csv_has_a_header_one_row_per_position_and_round_trip_numbers) {
  const report_result r = synthetic_report();
  const std::string csv = implementation_csv(r.series[1]);
  std::istringstream in(csv);
  std::string line;
  std::getline(in, line);
  EXPECT_EQ(line,
            "position,angle_rad,position_tokens,cos_sin_abs,cos_sin_ulps,rotated_relative,score_violation,"
            "source_frequency_rad,source_position_rad,source_product_rad,source_sin_cos,source_cache,"
            "source_rotation,magnitude_rel,source_formed_angle_rad");
  int rows = 0;
  while (std::getline(in, line)) ++rows;
  EXPECT_EQ(rows, 10);
  // Shortest round-trip spelling, NaN kept visible.
  EXPECT_NE(csv.find("\n8,8e-05,0.008,0.00408,9,nan,"), std::string::npos) << csv;
  EXPECT_NE(csv.find(",0.0041600000000000005,"), std::string::npos) << "not the shortest round trip";
  EXPECT_NE(bands_csv(r).find("band,inv_freq,inv_freq_unscaled,wavelength,wavelength_unscaled,"), std::string::npos);
  const std::string heat = heat_csv(r.series[1]);
  EXPECT_EQ(heat.substr(0, heat.find('\n')), "band,bucket,position_begin,position_end,angle_rad");
  EXPECT_NE(heat.find("\n3,4,64,257,"), std::string::npos) << heat;
}

TEST(report_output, summary_json_has_its_documented_keys_in_a_fixed_order_and_no_timing) {
  const report_result r = synthetic_report();
  const std::string j = summary_json(r, options());
  std::size_t last = 0;
  for (const char* key : {"\"format\"", "\"format_version\"", "\"ropecheck_version\"", "\"reference_precision\"",
                          "\"request\"", "\"attention_factor\"", "\"bands\"", "\"passes\"",
                          "\"implementations\"", "\"timing\": \"timing.json\""}) {
    const std::size_t at = j.find(key, last);
    ASSERT_NE(at, std::string::npos) << key << " missing or out of order in\n" << j;
    last = at;
  }
  EXPECT_NE(j.find("\"first_angle_over_threshold\": -1"), std::string::npos);
  EXPECT_NE(j.find("\"first_angle_over_threshold\": 64"), std::string::npos);
  EXPECT_NE(j.find("\"nan_points\": 1"), std::string::npos);
  EXPECT_EQ(j.find("seconds_total"), std::string::npos) << "timing must stay in timing.json";
  EXPECT_EQ(j.find("\"command\""), std::string::npos) << "the command line (with --threads, --out) is in timing.json";
  EXPECT_EQ(j.find("\"threads\""), std::string::npos) << "results do not depend on the thread count";
  EXPECT_NE(timing_json(r, options()).find("\"command\""), std::string::npos);
  EXPECT_NE(timing_json(r, {}).find("\"seconds_total\": 1.25"), std::string::npos);
}

TEST(report_output, the_html_is_self_contained_with_verdict_rows_and_inline_svg) {
  const report_result r = synthetic_report();
  const fs::path a = fresh_folder("html");
  write_report(r, a, options());
  const std::string html = slurp(a / "report.html");
  EXPECT_NE(html.find("<td class=\"text\"><code>exact_double</code></td>"), std::string::npos);
  EXPECT_NE(html.find("<td class=\"text\"><code>bf16_positions</code></td>"), std::string::npos);
  EXPECT_NE(html.find("<tr class=\"pass\" id=\"impl-exact_double\">"), std::string::npos);
  EXPECT_NE(html.find("<tr class=\"fail\" id=\"impl-bf16_positions\">"), std::string::npos);
  EXPECT_NE(html.find("<svg role=\"img\""), std::string::npos);
  EXPECT_EQ(html.find("<?xml"), std::string::npos) << "the XML prolog must not be inlined";
  // Nothing fetched from outside: no scripts, stylesheets or remote images.
  for (const char* external : {"<script", "<link", "src=\"http", "href=\"http", "href='http", "@import"})
    EXPECT_EQ(html.find(external), std::string::npos) << external;
  // Ids are per plot, so the first two plots do not share gnuplot's marker ids.
  EXPECT_NE(html.find("id='f0_gpPt0'"), std::string::npos);
  EXPECT_NE(html.find("id='f1_gpPt0'"), std::string::npos);
  EXPECT_NE(html.find(options().command), std::string::npos);
  EXPECT_NE(html.find("MPFR 256 bits"), std::string::npos);
}

TEST(report_output, the_verdict_column_is_the_judges_class_with_its_figures) {
  const report_result r = synthetic_report();
  const std::string j = summary_json(r, options());
  // Per implementation, "judge" comes last (after "max"), with its keys in the documented order.
  const std::size_t max_at = j.find("\"max\"", j.find("\"name\": \"bf16_positions\""));
  std::size_t last = max_at;
  for (const char* key : {"\"judge\"", "\"judged\": true", "\"verdict\": \"positions_low_precision\"",
                          "\"pass\": false", "\"dtype\": \"float32\"", "\"tokens\": 242", "\"worst_ratio\": 364.25",
                          "\"max_error_ulps\"", "\"tolerance_ulps\"", "\"worst_position\": 257", "\"worst_band\": 1",
                          "\"finding\": \"positions are held in bfloat16"}) {
    const std::size_t at = j.find(key, last);
    ASSERT_NE(at, std::string::npos) << key << " missing or out of order in\n" << j;
    last = at;
  }
  EXPECT_NE(j.find("\"judged\": false"), std::string::npos) << "the unjudged implementation says so";
  write_options o = options();
  o.plots = false;
  const fs::path a = fresh_folder("judge_column");
  write_report(r, a, o);
  const std::string html = slurp(a / "report.html");
  EXPECT_NE(html.find("<td class=\"verdict\" title=\"positions are held in bfloat16 (8 significant bits): 257 -&gt; "
                      "256\">positions_low_precision</td><td class=\"text\">float32</td><td>364 at 257, band 1</td>"),
            std::string::npos) << html;
  EXPECT_NE(html.find("<td class=\"verdict\">PASS</td>"), std::string::npos) << "unjudged: the thresholds' verdict";
}

TEST(report_output, the_storage_floor_is_in_the_band_table_the_summary_and_the_position_error_plot) {
  const report_result r = synthetic_report();
  const std::string bands = bands_csv(r);
  EXPECT_EQ(bands.substr(0, bands.find('\n')),
            "band,inv_freq,inv_freq_unscaled,wavelength,wavelength_unscaled,turns_in_training,"
            "unseen_fraction_unscaled,unseen_fraction_scaled,floor_tokens_bfloat16,floor_tokens_float16,"
            "floor_tokens_float32");
  EXPECT_NE(bands.find(",3.90625,0.48828125,5.9604644775390625e-05\n"), std::string::npos) << bands;  // band 3, 10^-3
  const std::string j = summary_json(r, options());
  const std::size_t at = j.find("\"storage_floor\"", j.find("\"timing\": \"timing.json\""));
  ASSERT_NE(at, std::string::npos) << "storage_floor comes after timing (new keys at the end)\n" << j;
  EXPECT_NE(j.find("\"dtype\": \"bfloat16\",\n      \"bits\": 8,\n      \"angle_rad\": 0.00390625,\n      "
                   "\"max_tokens\": 3.90625,\n      \"band\": 3", at), std::string::npos) << j;
  const fs::path a = fresh_folder("floors");
  write_report(r, a, options());
  const std::string gp = slurp(a / "plots/position_error.gp");
  for (const char* line : {"3.90625 with lines dt 4", "'bf16 floor 3.91 tok'", "'fp16 floor 0.488 tok'",
                           "'fp32 floor 5.96e-05 tok'"})
    EXPECT_NE(gp.find(line), std::string::npos) << line << " not in\n" << gp;
  EXPECT_EQ(slurp(a / "plots/angle_error.gp").find(" floor "), std::string::npos) << "floors are in tokens";
  EXPECT_NE(slurp(a / "report.html").find("<th>storage floor bf16 (tokens)</th>"), std::string::npos);
}

TEST(report_output, a_missing_gnuplot_is_a_clear_error_after_the_data_are_written) {
  const report_result r = synthetic_report();
  const fs::path a = fresh_folder("no_gnuplot");
  const fs::path empty_bin = fresh_folder("empty_bin");
  fs::create_directories(empty_bin);
  path_override path(empty_bin.string());
  try {
    write_report(r, a, options());
    FAIL() << "write_report succeeded without gnuplot on PATH";
  } catch (const std::runtime_error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("'gnuplot' not found"), std::string::npos) << what;
    EXPECT_NE(what.find("gnuplot-nox"), std::string::npos) << what;
  }
  for (const char* f : {"data/exact_double.csv", "data/bands.csv", "summary.json", "timing.json",
                        "plots/angle_error.gp", "report.html"})
    EXPECT_TRUE(fs::exists(a / f)) << f;
}

TEST(report_output, a_failing_gnuplot_is_an_error_naming_the_script_and_command) {
  const report_result r = synthetic_report();
  write_options o = options();
  o.gnuplot = "/bin/false";
  try {
    write_report(r, fresh_folder("false_gnuplot"), o);
    FAIL() << "write_report succeeded although gnuplot failed";
  } catch (const std::runtime_error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("angle_error.gp"), std::string::npos) << what;
    EXPECT_NE(what.find("/bin/false"), std::string::npos) << what;
    EXPECT_NE(what.find("exit status 1"), std::string::npos) << what;
  }
}

TEST(report_output, a_folder_that_cannot_be_created_is_an_error_naming_it) {
  const fs::path base = fresh_folder("blocked");
  fs::create_directories(base);
  std::ofstream(base / "a_file") << "not a folder";
  const fs::path target = base / "a_file" / "report";
  try {
    write_report(synthetic_report(), target, options());
    FAIL() << "write_report wrote under a regular file";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find(target.string()), std::string::npos) << e.what();
  }
}

TEST(report_output, without_plots_no_gnuplot_is_needed) {
  write_options o = options();
  o.plots = false;
  o.gnuplot = "/nonexistent/gnuplot";
  const fs::path a = fresh_folder("no_plots");
  EXPECT_NO_THROW(write_report(synthetic_report(), a, o));
  EXPECT_TRUE(fs::exists(a / "report.html"));
  EXPECT_FALSE(fs::exists(a / "plots"));
}

TEST(report_output, colliding_implementation_names_get_distinct_files) {
  report_result r = synthetic_report();
  r.series[0].name = "a/b";
  r.series[1].name = "a b";
  r.series.push_back(r.series[1]);
  r.series.back().name = "heat_a_b";
  write_options o = options();
  o.plots = false;
  const fs::path a = fresh_folder("collisions");
  write_report(r, a, o);
  for (const char* f : {"data/a_b.csv", "data/a_b-2.csv", "data/impl_heat_a_b.csv", "data/heat_a_b.csv",
                        "data/heat_a_b-2.csv", "data/heat_impl_heat_a_b.csv"})
    EXPECT_TRUE(fs::exists(a / f)) << f;
  EXPECT_NE(slurp(a / "summary.json").find("\"csv\": \"data/a_b-2.csv\""), std::string::npos);
}

TEST(report_output, implementation_names_become_safe_file_stems) {
  EXPECT_EQ(file_stem("hf_float"), "hf_float");
  EXPECT_EQ(file_stem("ggml/NEOX fp16"), "ggml_NEOX_fp16");
  EXPECT_EQ(file_stem("../x"), "impl.._x");
  EXPECT_EQ(file_stem(""), "impl");
}

}  // namespace
