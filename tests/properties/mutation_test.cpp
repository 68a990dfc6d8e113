// The suite must catch bugs: one deliberately broken kernel per bug class of shared/DESIGN.md,
// each run through the same property drivers as the correct kernels (quietly), each required to
// fail at least one of them in the default run. Prints the table: mutant, the property that
// caught it, the shrunk counterexample.
#include <gtest/gtest.h>
#include <rapidcheck.h>

#include <cstdio>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

#include "framework.hpp"
#include "mutants.hpp"
#include "rope_properties.hpp"

namespace ropecheck::test {
namespace {

struct catch_row {
  std::string mutant;
  std::vector<std::string> properties;  // every property that failed, in the suite's order
  std::string evidence;                 // the first one's message and shrunk counterexample
};

// The property's own message: the last paragraph of RapidCheck's description (which opens
// with the file, line and the failing expression).
std::string message_of(const property_outcome& out) {
  std::string d = out.description;
  while (!d.empty() && (d.back() == '\n' || d.back() == ' ')) d.pop_back();
  if (const auto blank = d.rfind("\n\n"); blank != std::string::npos) d = d.substr(blank + 2);
  return d;
}

// The counterexample on one line, each value cut to 60 characters.
std::string one_line(const std::string& s) {
  std::string out, line;
  std::istringstream in(s);
  while (std::getline(in, line)) {
    const auto start = line.find_first_not_of(' ');
    if (start == std::string::npos) continue;
    line = line.substr(start);
    if (line.size() > 60) line = line.substr(0, 57) + "...";
    out += (out.empty() ? "" : "; ") + line;
  }
  return out;
}

catch_row catches(const rope_under_test& impl) {
  catch_row row{impl.name, {}, ""};
  for (const auto& p : rope_properties()) {
    const auto out = check_property(std::string("mutant/") + impl.name + "/" + p.name, p.make(impl), /*quiet=*/true);
    if (out.passed) continue;
    if (row.properties.empty()) row.evidence = message_of(out) + " | counterexample:" + one_line(out.counterexample);
    row.properties.push_back(p.name);
  }
  return row;
}

TEST(MutationCheck, every_bug_class_is_caught_by_at_least_one_property_and_the_correct_kernel_by_none) {
  const auto control = correct_control();
  for (const auto& p : rope_properties()) {
    const auto out = check_property(std::string("control/") + p.name, p.make(control), /*quiet=*/true);
    EXPECT_TRUE(out.passed) << "the correct kernel failed " << p.name << ": " << out.report();
  }

  std::vector<catch_row> table;
  for (const auto& m : rope_mutants()) table.push_back(catches(m));
  for (const auto& m : cache_mutants()) {
    const auto out = check_property("mutant/" + m.name, m.property, /*quiet=*/true);
    catch_row row{m.name, {}, ""};
    if (!out.passed) {
      row.properties.push_back(m.property_name);
      row.evidence = message_of(out) + " | counterexample:" + one_line(out.counterexample);
    }
    table.push_back(row);
  }

  std::printf("\n%-32s %s\n", "mutant", "caught by (first: shrunk counterexample)");
  for (const auto& r : table) {
    std::string by;
    for (const auto& p : r.properties) by += (by.empty() ? "" : ", ") + p;
    std::printf("%-32s %s\n%-32s   %s\n", r.mutant.c_str(), by.empty() ? "NOT CAUGHT" : by.c_str(), "",
                r.evidence.c_str());
  }
  std::printf("\n");
  for (const auto& r : table) EXPECT_FALSE(r.properties.empty()) << r.mutant << " was caught by no property";
}

}  // namespace
}  // namespace ropecheck::test
