// tests/config/config_json_table_test.cpp — a config.json of a family that adds an absolute position vector -> the table
// claim (ropecheck/table_config.hpp). One config per family under tests/data/table_families/<name>.json (a released
// config's shape), the claim each gives, the class defaults where a key is absent, and every bad input refused by name.
#include "ropecheck/table_config.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "ropecheck/bias_config.hpp"
#include "ropecheck/config_json.hpp"

namespace {

using namespace ropecheck;
using json = nlohmann::json;

const std::filesystem::path dir = std::filesystem::path(ROPECHECK_TEST_DATA) / "table_families";

table_config_parse load(const std::string& name, const table_declaration& d = {}) {
  const auto p = load_table_config(dir / (name + ".json"), d);
  if (!p) throw std::runtime_error(name + ": no table claim");
  return *p;
}

json file(const std::string& name) {
  std::ifstream in(dir / (name + ".json"));
  return json::parse(in);
}

std::string refusal(const json& j, const table_declaration& d = {}) {
  try {
    (void)parse_table_config(j, "cfg.json", d);
  } catch (const config_error& e) {
    return e.what();
  }
  return "(accepted)";
}

TEST(TableConfig, EachFamilyGivesItsTable) {
  struct want {
    const char* name;
    const char* stack;
    table_scheme scheme;
    int width;
    std::int64_t rows, offset;
    padding_rule padding;
    std::int64_t padding_row;
  };
  const want cases[] = {
      {"gpt2", nullptr, table_scheme::learned, 768, 1024, 0, padding_rule::counted, -1},
      {"bert", nullptr, table_scheme::learned, 768, 512, 0, padding_rule::counted, -1},
      {"roberta", nullptr, table_scheme::learned, 768, 514, 2, padding_rule::skipped, 1},
      {"opt", nullptr, table_scheme::learned, 768, 2050, 2, padding_rule::skipped, 1},
      {"bart", "decoder", table_scheme::learned, 768, 1026, 2, padding_rule::counted, -1},
      {"whisper", "decoder", table_scheme::learned, 384, 448, 0, padding_rule::counted, -1},
      {"whisper", "encoder", table_scheme::sinusoidal, 384, 1500, 0, padding_rule::counted, -1},
      {"m2m_100", nullptr, table_scheme::sinusoidal, 1024, 0, 2, padding_rule::skipped, 1},
      {"speech_to_text", "decoder", table_scheme::sinusoidal, 256, 0, 2, padding_rule::skipped, 1},
      {"xglm", nullptr, table_scheme::sinusoidal, 1024, 0, 2, padding_rule::counted, -1},
      {"marian", nullptr, table_scheme::sinusoidal, 512, 512, 0, padding_rule::counted, -1},
      {"distilbert_sinusoidal", nullptr, table_scheme::sinusoidal, 768, 512, 0, padding_rule::counted, -1},
  };
  for (const want& w : cases) {
    table_declaration d;
    if (w.stack) d.stack = w.stack;
    const table_config_parse p = load(w.name, d);
    const table_claim& c = p.claim;
    EXPECT_EQ(c.scheme, w.scheme) << w.name;
    EXPECT_EQ(c.width, w.width) << w.name;
    EXPECT_EQ(c.rows, w.rows) << w.name;
    EXPECT_EQ(c.offset, w.offset) << w.name;
    EXPECT_EQ(c.padding, w.padding) << w.name;
    if (w.padding == padding_rule::skipped) {
      EXPECT_EQ(c.padding_row, w.padding_row) << w.name;
    }
    EXPECT_FALSE(p.info.facts.empty()) << w.name;
  }
  // The sinusoids' layouts and denominators, each from its family's code.
  EXPECT_EQ(load("distilbert_sinusoidal").claim.layout, sinusoid_layout::interleaved);
  EXPECT_EQ(load("distilbert_sinusoidal").claim.effective_denominator(), 384);
  EXPECT_EQ(load("marian").claim.layout, sinusoid_layout::concatenated);
  EXPECT_EQ(load("marian").claim.effective_denominator(), 256);
  EXPECT_EQ(load("m2m_100").claim.effective_denominator(), 511);
  EXPECT_TRUE(load("m2m_100").claim.padding_row_zero);
  EXPECT_EQ(load("whisper").claim.effective_denominator(), 191);
}

TEST(TableConfig, AbsentKeysTakeTheClassDefaultsRead) {
  json j = file("gpt2");
  j.erase("n_positions");
  j.erase("n_embd");
  const auto p = parse_table_config(j, "cfg.json");
  ASSERT_TRUE(p);
  EXPECT_EQ(p->claim.rows, 1024);
  EXPECT_EQ(p->claim.width, 768);
  // A family whose class default ropecheck has not read requires the key.
  json d = file("distilbert_sinusoidal");
  d.erase("dim");
  EXPECT_NE(refusal(d).find("dim: missing"), std::string::npos) << refusal(d);
  d = file("distilbert_sinusoidal");
  d.erase("sinusoidal_pos_embds");
  EXPECT_NE(refusal(d).find("sinusoidal_pos_embds: missing"), std::string::npos) << refusal(d);
  d["sinusoidal_pos_embds"] = false;
  const auto learned = parse_table_config(d, "cfg.json");
  ASSERT_TRUE(learned);
  EXPECT_EQ(learned->claim.scheme, table_scheme::learned);
  // RoBERTa's padding_idx is its pad_token_id: another one moves the offset.
  json r = file("roberta");
  r["pad_token_id"] = 0;
  const auto r0 = parse_table_config(r, "cfg.json");
  ASSERT_TRUE(r0);
  EXPECT_EQ(r0->claim.offset, 1);
  EXPECT_EQ(r0->claim.padding_row, 0);
}

TEST(TableConfig, BadInputIsRefusedNamingTheField) {
  json b = file("bert");
  b["position_embedding_type"] = "relative_key";
  EXPECT_NE(refusal(b).find("position_embedding_type"), std::string::npos) << refusal(b);
  json g = file("gpt2");
  g["rope_theta"] = 10000;
  EXPECT_NE(refusal(g).find("rope_theta: is not read by GPT-2"), std::string::npos) << refusal(g);
  g = file("gpt2");
  g["n_positions"] = 0;
  EXPECT_NE(refusal(g).find("n_positions"), std::string::npos) << refusal(g);
  g = file("gpt2");
  g["max_position_embeddings"] = 2048;  // the alias disagreeing with n_positions
  EXPECT_NE(refusal(g).find("n_positions"), std::string::npos) << refusal(g);
  table_declaration dec;
  dec.stack = "decoder";
  EXPECT_NE(refusal(file("gpt2"), dec).find("one stack"), std::string::npos);
  json m = file("m2m_100");
  m["d_model"] = 1023;
  EXPECT_NE(refusal(m).find("d_model: 1023 is odd"), std::string::npos) << refusal(m);
  json o = file("roberta");
  o["pad_token_id"] = -1;
  EXPECT_NE(refusal(o).find("pad_token_id"), std::string::npos) << refusal(o);
}

TEST(TableConfig, NoOtherReaderClaimsATableFamily) {
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    std::ifstream in(e.path());
    const json j = json::parse(in);
    EXPECT_FALSE(parse_bias_config(j, e.path().string())) << e.path();
    EXPECT_THROW((void)parse_hf_config_with_notes(j, e.path().string()), config_error) << e.path();
  }
  // A RoPE family is not a table family.
  json llama{{"model_type", "llama"}, {"hidden_size", 64}, {"num_attention_heads", 1}, {"rope_theta", 10000}};
  EXPECT_FALSE(parse_table_config(llama, "cfg.json"));
  // Every family of the table has its row for `explain --families`.
  EXPECT_GE(table_families().size(), 18u);
}

}  // namespace
