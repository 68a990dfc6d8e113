// tests/core/families_test.cpp — every family of architectures.hpp (src/ropecheck/families/) derives, from a
// config.json written the way the family's checkpoints write it, the convention its code applies, layer
// by layer. The cases are data: tests/data/families/<model_type>.json, each written from the family's
// transformers / vLLM / mlx-lm code (the file's "sources"), never from ropecheck's output. A row of the
// table that is wrong (a layout, a class default, a layer rule) turns its family's cases red.
//
// A case's "layers" maps a layer index (or "*", every layer) to the facts expected there: kind (rope,
// nope, linear_attention, mamba, recurrent, conv, cross_attention) and, for rope layers, any of
// head_dim, rotary_dim, base, layout, outputs, direction, scaling, factor, frozen_bands,
// original_max_position_embeddings, attention_factor, mrope, mrope_section. MLA layers
// ("rotated_part": "last") are judged on their rope slice: its head is the rotary_dim coordinates. A case
// with "error" must be refused, the message containing that phrase; "declaration" holds what a user
// declared with flags ({"engine": "vllm", "max_model_len": N}), "factor_list" LongRoPE's one list.
// tests/data/engine_variants/ holds the same kind of cases for engines' RoPE variants (engine_variants.hpp).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "ropecheck/config_json.hpp"
#include "ropecheck/engine_variants.hpp"
#include "ropecheck/schedule.hpp"

namespace {

using json = nlohmann::json;
using namespace ropecheck;

const std::filesystem::path families = std::filesystem::path(ROPECHECK_TEST_DATA) / "families";
const std::filesystem::path variants = std::filesystem::path(ROPECHECK_TEST_DATA) / "engine_variants";

// One case: its file and its index there. Only the case list is read when the tests are registered
// (every test process registers all of them); a case's content is read when it runs.
struct family_case {
  std::filesystem::path path;
  std::string file, name;
  std::size_t index = 0;
  [[nodiscard]] json content() const {
    std::ifstream in(path);
    return json::parse(in).at("cases").at(index);
  }
};

void PrintTo(const family_case& c, std::ostream* os) { *os << c.file << " case " << c.name; }

std::vector<std::filesystem::path> case_files(const std::filesystem::path& dir) {
  std::vector<std::filesystem::path> files;
  for (const auto& e : std::filesystem::directory_iterator(dir))
    if (e.path().extension() == ".json") files.push_back(e.path());
  std::sort(files.begin(), files.end());
  return files;
}

std::vector<family_case> all_cases(const std::filesystem::path& dir = families) {
  std::vector<family_case> out;
  for (const auto& f : case_files(dir)) {
    std::ifstream in(f);
    // The cases' members are dropped while parsing (depth 3: top object, "cases", a case): only their count.
    const json d = json::parse(in, [](int depth, json::parse_event_t event, json&) { return !(event == json::parse_event_t::key && depth >= 3); });
    for (std::size_t k = 0; k < d.at("cases").size(); ++k) {
      std::string id = f.stem().string() + "_" + std::to_string(k);
      for (char& ch : id)
        if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
      out.push_back({f, f.filename().string(), id, k});
    }
  }
  return out;
}

std::string show(const rope_config& c) {
  std::string s = "head_dim " + std::to_string(c.head_dim) + ", rotary_dim " + std::to_string(c.rotary_dim) + ", base " +
                  std::to_string(c.base) + ", " + std::string(to_string(c.pair_layout)) + ", outputs " +
                  std::string(to_string(c.outputs)) + ", " + std::string(to_string(c.direction)) + ", scaling " +
                  std::string(to_string(c.scaling)) + " factor " + std::to_string(c.factor) + ", frozen " +
                  std::to_string(c.frozen_bands) + ", mrope " + std::string(to_string(c.mrope));
  return s;
}

std::string scaling_name(const rope_config& c) {
  if (c.frozen_bands > 0) return "proportional";
  return std::string(to_string(c.scaling));
}

// The facts `want` names hold in c.
::testing::AssertionResult matches(const rope_config& c, const json& want, const std::string& where) {
  auto fail = [&](const std::string& what) {
    return ::testing::AssertionFailure() << where << ": " << what << "\n  derived: " << show(c) << "\n  expected: " << want.dump();
  };
  const bool mla_slice = want.value("rotated_part", "first") == "last";
  for (const auto& [k, v] : want.items()) {
    if (k == "kind" || k == "rotated_part" || k == "source" || k == "note") continue;
    if (k == "head_dim") {
      const int expect = mla_slice ? want.value("rotary_dim", v.get<int>()) : v.get<int>();
      if (c.head_dim != expect) return fail("head_dim " + std::to_string(c.head_dim));
    } else if (k == "rotary_dim") {
      if (c.rotary_dim != v.get<int>()) return fail("rotary_dim " + std::to_string(c.rotary_dim));
    } else if (k == "base") {
      if (c.base != v.get<double>()) return fail("base " + std::to_string(c.base));
    } else if (k == "layout") {
      if (to_string(c.pair_layout) != v.get<std::string>()) return fail("layout");
    } else if (k == "outputs") {
      if (to_string(c.outputs) != v.get<std::string>()) return fail("outputs");
    } else if (k == "direction") {
      if (to_string(c.direction) != v.get<std::string>()) return fail("direction");
    } else if (k == "scaling") {
      if (scaling_name(c) != v.get<std::string>()) return fail("scaling " + scaling_name(c));
    } else if (k == "factor") {
      if (c.factor != v.get<double>()) return fail("factor " + std::to_string(c.factor));
    } else if (k == "frozen_bands") {
      if (c.frozen_bands != v.get<int>()) return fail("frozen_bands " + std::to_string(c.frozen_bands));
    } else if (k == "original_max_position_embeddings") {
      if (c.original_max_position_embeddings != v.get<std::int64_t>()) return fail("original_max_position_embeddings");
    } else if (k == "attention_factor") {
      // The factor the rule applies (explicit, or computed as HF computes it in Python double: the same
      // libm log/sqrt on the same doubles, so at most a few ulps apart from the operation order).
      const double af = compute_frequencies<double>(c).attention_factor;
      if (!(std::abs(af - v.get<double>()) <= 4 * std::numeric_limits<double>::epsilon() * std::abs(af)))
        return fail("attention_factor " + std::to_string(af));
    } else if (k == "truncate") {
      if (c.truncate != v.get<bool>()) return fail(std::string("truncate ") + (c.truncate ? "true" : "false"));
    } else if (k == "mrope") {
      if (to_string(c.mrope) != v.get<std::string>()) return fail("mrope");
    } else if (k == "mrope_section") {
      if (c.mrope_section != v.get<std::vector<int>>()) return fail("mrope_section");
    } else if (k == "factor_list") {
      // LongRoPE's per-band divisors, one list for every position (equal short and long lists), within 4
      // ulps of values the case computed in Python double (exp/log/pow in another order).
      const auto want_list = v.get<std::vector<double>>();
      if (c.short_factor != c.long_factor) return fail("short and long factor lists differ");
      if (c.short_factor.size() != want_list.size()) return fail("factor list of " + std::to_string(c.short_factor.size()) + " entries");
      for (std::size_t i = 0; i < want_list.size(); ++i)
        if (!(std::abs(c.short_factor[i] - want_list[i]) <= 4 * std::numeric_limits<double>::epsilon() * want_list[i]))
          return fail("factor_list[" + std::to_string(i) + "] = " + std::to_string(c.short_factor[i]));
    } else {
      return fail("the case names a field the harness does not know: " + k);
    }
  }
  return ::testing::AssertionSuccess();
}

std::string kind_name(const std::string& k) { return k == "other:cross_attention" ? "cross_attention" : k; }

class Family : public ::testing::TestWithParam<family_case> {};

// A case's "declaration": what the user declared with flags (--engine, --max-model-len).
convention_declaration declaration_of(const json& c) {
  convention_declaration d;
  if (!c.contains("declaration")) return d;
  for (const auto& [k, v] : c.at("declaration").items()) {
    if (k == "engine") d.engine = v.get<std::string>() == "vllm" ? engine_reading::vllm : engine_reading::transformers;
    else if (k == "max_model_len") d.max_model_len = v.get<std::int64_t>();
    else ADD_FAILURE() << "the case declares a field the harness does not know: " << k;
  }
  return d;
}

void derives_what_the_code_does(const family_case& fc) {
  const json c = fc.content();
  SCOPED_TRACE(fc.file + ": " + c.value("name", std::string()));
  const convention_declaration decl = declaration_of(c);
  if (c.contains("error")) {
    std::string message = "(accepted)";
    try {
      (void)parse_hf_config_with_notes(c.at("config"), fc.file, decl);
    } catch (const config_error& e) {
      message = e.what();
    }
    EXPECT_NE(message.find(c.at("error").get<std::string>()), std::string::npos)
        << "refusal expected, containing \"" << c.at("error").get<std::string>() << "\"; got: " << message;
    return;
  }
  hf_config_parse p;
  try {
    p = parse_hf_config_with_notes(c.at("config"), fc.file, decl);
  } catch (const std::exception& e) {
    FAIL() << "refused: " << e.what();
  }
  const int n = static_cast<int>(p.layers.size());
  for (const auto& [key, want] : c.at("layers").items()) {
    std::vector<int> which;
    if (key == "*") {
      for (int i = 0; i < std::max(n, 1); ++i) which.push_back(i);
    } else {
      which.push_back(std::stoi(key));
    }
    for (int i : which) {
      const std::string where = "layer " + std::to_string(i);
      const std::string kind = kind_name(want.value("kind", std::string("rope")));
      if (n == 0) {
        ASSERT_EQ(i, 0) << "the config names no layers";
        ASSERT_EQ(kind, "rope");
        EXPECT_TRUE(matches(p.config, want, where));
        continue;
      }
      ASSERT_LT(i, n) << where << " past the " << n << " layers";
      const layer_rope& l = p.layers[static_cast<std::size_t>(i)];
      EXPECT_EQ(std::string(to_string(l.kind)), kind) << where << " (" << l.type << "): " << l.why;
      if (kind == "rope" && l.config) {
        EXPECT_TRUE(matches(*l.config, want, where));
      }
      if (kind != "rope") {
        std::string type;
        EXPECT_THROW((void)layer_convention(p, i, &type), std::invalid_argument) << where << " has no RoPE: --layer must refuse it";
      }
    }
  }
  if (c.contains("indexer_expect")) {
    ASSERT_TRUE(p.indexer.has_value()) << "the family has a lightning indexer with a RoPE of its own";
    EXPECT_TRUE(matches(p.indexer->config, c.at("indexer_expect"), "indexer"));
  }
}

TEST_P(Family, DerivesWhatTheFamilysCodeDoesLayerByLayer) { derives_what_the_code_does(GetParam()); }

INSTANTIATE_TEST_SUITE_P(Families, Family, ::testing::ValuesIn(all_cases()),
                         [](const ::testing::TestParamInfo<family_case>& i) { return i.param.name; });

// Engines' RoPE variants (src/ropecheck/engine_variants.hpp): tests/data/engine_variants/<engine>.json,
// each case naming its "variant", read with the case's declaration (--engine vllm) or without it.
class EngineVariant : public ::testing::TestWithParam<family_case> {};

TEST_P(EngineVariant, IsClaimedAsTheEngineComputesItOrRefusedByName) { derives_what_the_code_does(GetParam()); }

INSTANTIATE_TEST_SUITE_P(EngineVariants, EngineVariant, ::testing::ValuesIn(all_cases(variants)),
                         [](const ::testing::TestParamInfo<family_case>& i) { return i.param.name; });

// Every variant a config.json can select (all but the kernels and the ones only a model file builds)
// has a case; every case names a variant of the table.
TEST(EngineVariants, EveryVariantAConfigCanSelectHasACase) {
  const auto cases = all_cases(variants);
  std::vector<json> contents;
  for (const auto& c : cases) contents.push_back(c.content());
  for (const auto& v : engine_variants) {
    if (v.status == variant_status::kernel) continue;
    const bool model_file_only = v.status == variant_status::refused && v.rope_type.empty() && v.key.empty();
    if (model_file_only) continue;
    const bool has = std::any_of(contents.begin(), contents.end(), [&](const json& c) { return c.value("variant", "") == v.name; });
    EXPECT_TRUE(has) << v.name << " (" << to_string(v.status) << ") has no case in tests/data/engine_variants";
  }
  for (std::size_t i = 0; i < cases.size(); ++i)
    EXPECT_NE(find_variant(contents[i].value("variant", "")), nullptr) << cases[i].name << " names no variant of engine_variants.hpp";
}

// Every row of the table has a test file, and every test file a row (or is a refusal of a model_type
// without one).
TEST(Families, EveryRowOfTheTableHasATestFile) {
  for (const auto& a : known_architectures())
    EXPECT_TRUE(std::filesystem::exists(families / (std::string(a.model_type) + ".json")))
        << a.model_type << " (" << a.family << ") has no tests/data/families file";
}

}  // namespace
