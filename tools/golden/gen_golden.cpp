// tools/golden/gen_golden.cpp — writes reference/golden/*.csv from the MPFR reference.
//
//   gen_golden [--out DIR] [--precision BITS]
//
// Each file opens with its provenance: the command, the precision, the date.
#include <CLI/CLI.hpp>

#include <chrono>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iostream>

#include "golden.hpp"

int main(int argc, char** argv) {
  CLI::App app{"gen_golden: golden reference data for ropecheck"};
  std::string out = "reference/golden";
  int precision = 256;
  app.add_option("--out", out, "directory to write into")->capture_default_str();
  app.add_option("--precision", precision, "MPFR precision in bits")->check(CLI::Range(200, 4096))->capture_default_str();
  CLI11_PARSE(app, argc, argv);

  const std::time_t now = std::time(nullptr);
  char date[32];
  std::strftime(date, sizeof date, "%Y-%m-%d", std::gmtime(&now));
  const std::string command = "gen_golden --out " + out + " --precision " + std::to_string(precision);
  std::filesystem::create_directories(out);
  auto write = [&](const std::string& stem, const std::string& what, const std::string& body) {
    const auto path = std::filesystem::path(out) / (stem + ".csv");
    std::ofstream f(path);
    f << ropecheck::golden::provenance(command, date, precision, what) << body;
    if (!f) {
      std::cerr << "gen_golden: cannot write " << path << '\n';
      std::exit(2);
    }
    std::cerr << "wrote " << path.string() << '\n';
  };
  for (const auto& c : ropecheck::golden::golden_cases())
    write(c.name, "cos/sin by band and position; " + ropecheck::golden::describe(c.cfg, c.seq_len),
          ropecheck::golden::render_case(c, precision));
  write("figures", "checkable figures of shared/DESIGN.md", ropecheck::golden::render_figures(precision));
  return 0;
}
