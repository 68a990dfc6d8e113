// tests/config/config_json_bias_test.cpp — a config.json of a family whose attention adds a score-matrix bias ->
// the bias claim (ropecheck/bias_config.hpp). One config per family under tests/data/bias_families/<model_type>.json
// (the class defaults, or a released config's shape), the claim each gives, and every bad input refused by name.
#include "ropecheck/bias_config.hpp"
#include "ropecheck/config_json.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>

#include <nlohmann/json.hpp>

namespace {

using ropecheck::alibi_distance;
using ropecheck::alibi_slope_rule;
using ropecheck::bias_config_parse;
using ropecheck::bias_declaration;
using ropecheck::bias_scheme;
using ropecheck::config_error;
using ropecheck::load_bias_config;
using ropecheck::parse_bias_config;
using json = nlohmann::json;

const std::filesystem::path dir = std::filesystem::path(ROPECHECK_TEST_DATA) / "bias_families";

bias_config_parse load(const std::string& name, const bias_declaration& d = {}) {
  const auto p = load_bias_config(dir / (name + ".json"), d);
  if (!p) throw std::runtime_error(name + ": no bias claim");
  return *p;
}

json file(const std::string& name) {
  std::ifstream in(dir / (name + ".json"));
  return json::parse(in);
}

// The field a refusal names (config_error's message is "<file>: <field>: <problem>").
std::string refusal(const json& j, const bias_declaration& d = {}) {
  try {
    (void)parse_bias_config(j, "cfg.json", d);
  } catch (const config_error& e) {
    return e.what();
  }
  return "(accepted)";
}

const ropecheck::fact* fact_of(const bias_config_parse& p, const std::string& field) {
  for (const auto& f : p.info.facts)
    if (f.field == field) return &f;
  return nullptr;
}

TEST(BiasConfig, BloomDefaultsClaimPressSlopesOfEightHeadsByKeyPosition) {
  const auto p = load("bloom");
  EXPECT_EQ(p.claim.scheme, bias_scheme::alibi);
  EXPECT_EQ(p.claim.alibi.rule, alibi_slope_rule::press);
  EXPECT_EQ(p.claim.alibi.heads, 8);
  EXPECT_EQ(p.claim.alibi.distance, alibi_distance::key_position);
  EXPECT_EQ(p.claim.alibi.bias_scale, 1.0);
  EXPECT_FALSE(p.claim.alibi.slopes_bf16);
  EXPECT_EQ(p.head_dim, 8);  // 64 / 8
  ASSERT_EQ(p.layers.size(), 2u);
  EXPECT_EQ(p.layers[1].kind, "alibi");
  ASSERT_NE(fact_of(p, "heads"), nullptr);
  EXPECT_EQ(fact_of(p, "heads")->origin, ropecheck::fact_origin::file);
  EXPECT_NE(fact_of(p, "distance")->source.find("build_alibi_tensor"), std::string::npos);
}

TEST(BiasConfig, Bloom560mReadsItsHeadsAndNotesOffsetAlibi) {
  const auto p = load("bloom_560m");
  EXPECT_EQ(p.claim.alibi.heads, 16);
  EXPECT_EQ(p.head_dim, 64);
  EXPECT_EQ(p.layers.size(), 24u);
  bool noted = false;
  for (const auto& n : p.notes) noted = noted || n.find("offset_alibi") != std::string::npos;
  EXPECT_TRUE(noted);
}

TEST(BiasConfig, MptClaimsGenSlopesWithBiasMax8Relative) {
  const auto p = load("mpt");
  EXPECT_EQ(p.claim.alibi.rule, alibi_slope_rule::mpt);
  EXPECT_EQ(p.claim.alibi.bias_max, 8.0);
  EXPECT_EQ(p.claim.alibi.heads, 16);
  EXPECT_EQ(p.claim.alibi.distance, alibi_distance::relative);
  EXPECT_EQ(p.claim.alibi.bias_scale, 1.0);
  EXPECT_EQ(p.head_dim, 128);
}

TEST(BiasConfig, FalconRwClaimsBf16SlopesScaledByOneOverSqrtHeadDim) {
  const auto p = load("falcon");
  EXPECT_EQ(p.claim.alibi.rule, alibi_slope_rule::press);
  EXPECT_EQ(p.claim.alibi.heads, 32);
  EXPECT_EQ(p.head_dim, 64);
  EXPECT_EQ(p.claim.alibi.bias_scale, 0.125);  // 1/sqrt(64), exact
  EXPECT_TRUE(p.claim.alibi.slopes_bf16);
  EXPECT_EQ(p.claim.alibi.distance, alibi_distance::key_position);
}

TEST(BiasConfig, FalconUnderVllmKeepsSlopesInFp32) {
  bias_declaration d;
  d.engine = ropecheck::engine_reading::vllm;
  const auto p = load("falcon", d);
  EXPECT_FALSE(p.claim.alibi.slopes_bf16);
  EXPECT_EQ(fact_of(p, "slopes_dtype")->origin, ropecheck::fact_origin::declared);
}

TEST(BiasConfig, FalconWithoutAlibiIsARopeFamily) {
  json j = file("falcon");
  j["alibi"] = false;
  EXPECT_FALSE(parse_bias_config(j, "cfg.json").has_value());
  j.erase("alibi");
  EXPECT_FALSE(parse_bias_config(j, "cfg.json").has_value());
}

TEST(BiasConfig, FalconAlibiRefusedByTheRopeReaderPointsToTheBiasClaim) {
  try {
    (void)ropecheck::parse_hf_config_with_notes(file("falcon"), "cfg.json");
    FAIL() << "accepted";
  } catch (const config_error& e) {
    EXPECT_NE(std::string(e.what()).find("claimed by the bias reader"), std::string::npos) << e.what();
  }
}

TEST(BiasConfig, T5EncoderIsBidirectionalAndOnlyLayer0Computes) {
  const auto p = load("t5");
  EXPECT_EQ(p.claim.scheme, bias_scheme::t5);
  EXPECT_EQ(p.stack, "encoder");
  EXPECT_TRUE(p.claim.t5.bidirectional);
  EXPECT_EQ(p.claim.t5.num_buckets, 32);
  EXPECT_EQ(p.claim.t5.max_distance, 128);
  EXPECT_EQ(p.claim.t5.heads, 8);
  EXPECT_EQ(p.head_dim, 64);
  ASSERT_EQ(p.layers.size(), 6u);
  EXPECT_EQ(p.layers[0].kind, "t5 computes");
  for (std::size_t i = 1; i < 6; ++i) EXPECT_EQ(p.layers[i].kind, "t5 shared") << i;
}

TEST(BiasConfig, T5DecoderIsCausalWithItsOwnLayerCount) {
  json j = file("t5");
  j["num_decoder_layers"] = 3;
  bias_declaration d;
  d.stack = "decoder";
  const auto p = parse_bias_config(j, "cfg.json", d);
  ASSERT_TRUE(p);
  EXPECT_FALSE(p->claim.t5.bidirectional);
  EXPECT_EQ(p->layers.size(), 3u);
  j.erase("num_decoder_layers");  // absent: num_layers (T5Config: num_decoder_layers if not None else num_layers)
  EXPECT_EQ(parse_bias_config(j, "cfg.json", d)->layers.size(), 6u);
}

TEST(BiasConfig, T5WithoutMaxDistanceTakesTheClassDefault) {
  const auto p = load("t5_small_no_max_distance");
  EXPECT_EQ(p.claim.t5.max_distance, 128);
  EXPECT_EQ(fact_of(p, "max_distance")->origin, ropecheck::fact_origin::class_default);
}

TEST(BiasConfig, Mt5AndUmt5ClaimTheirClassDefaultsAndUmt5ComputesInEveryLayer) {
  const auto m = load("mt5");
  EXPECT_EQ(m.claim.t5.heads, 6);
  EXPECT_EQ(m.layers[1].kind, "t5 shared");
  bias_declaration d;
  d.layer = 7;
  const auto u = load("umt5", d);
  EXPECT_EQ(u.claim.t5.heads, 6);
  EXPECT_EQ(u.layer, 7);
  for (const auto& l : u.layers) EXPECT_EQ(l.kind, "t5 computes") << l.index;
}

TEST(BiasConfig, SwitchPop2PianoClaimAsT5) {
  EXPECT_EQ(load("switch_transformers").claim.t5.heads, 12);
  EXPECT_EQ(load("pop2piano").claim.t5.heads, 8);
}

TEST(BiasConfig, ClassDefaultsNotReadAreRequired) {
  json j = file("switch_transformers");
  j.erase("relative_attention_max_distance");
  EXPECT_NE(refusal(j).find("relative_attention_max_distance: missing"), std::string::npos) << refusal(j);
}

TEST(BiasConfig, LongT5ClaimsTheDecoderAndRefusesTheEncoder) {
  const auto p = load("longt5");
  EXPECT_EQ(p.stack, "decoder");
  EXPECT_FALSE(p.claim.t5.bidirectional);
  bias_declaration d;
  d.stack = "encoder";
  EXPECT_NE(refusal(file("longt5"), d).find("--stack: encoder: LongT5's encoder uses local or transient-global"), std::string::npos);
}

TEST(BiasConfig, Pix2StructReadsTheTextDecoder) {
  const auto p = load("pix2struct");
  EXPECT_EQ(p.stack, "decoder");
  EXPECT_EQ(p.claim.t5.heads, 12);
  EXPECT_FALSE(p.claim.t5.bidirectional);
  json j = file("pix2struct");
  j["text_config"]["relative_attention_num_buckets"] = 3;
  EXPECT_NE(refusal(j).find("text_config.relative_attention_num_buckets: 3, need at least 4"), std::string::npos) << refusal(j);
}

// ---- bad input, each named ----

TEST(BiasConfigRefuses, AnAlibiKeyOnARopeFamily) {
  const json llama = {{"model_type", "llama"}, {"hidden_size", 4096}, {"num_attention_heads", 32}, {"alibi", true}};
  EXPECT_NE(refusal(llama).find("alibi: names a score-matrix bias, which model_type \"llama\" does not read"), std::string::npos) << refusal(llama);
  json ok = llama;
  ok.erase("alibi");
  EXPECT_FALSE(parse_bias_config(ok, "cfg.json").has_value());  // a RoPE config: the RoPE reader's
  ok["alibi"] = false;                                           // false claims nothing: accepted
  EXPECT_FALSE(parse_bias_config(ok, "cfg.json").has_value());
  const json t5keys = {{"model_type", "llama"}, {"relative_attention_num_buckets", 32}};
  EXPECT_NE(refusal(t5keys).find("relative_attention_num_buckets: names a score-matrix bias"), std::string::npos);
}

TEST(BiasConfigRefuses, FalconAlibiWithARopeScaling) {
  json j = file("falcon");
  j["rope_scaling"] = {{"type", "linear"}, {"factor", 2.0}};
  EXPECT_NE(refusal(j).find("rope_scaling: set beside alibi true"), std::string::npos) << refusal(j);
  j["rope_scaling"] = nullptr;
  j["rope_parameters"] = {{"rope_type", "default"}, {"rope_theta", 10000.0}};
  EXPECT_EQ(refusal(j), "(accepted)");
  j["rope_parameters"]["factor"] = 4.0;
  EXPECT_NE(refusal(j).find("rope_parameters.factor: set beside alibi true"), std::string::npos) << refusal(j);
}

TEST(BiasConfigRefuses, BucketsBelowFourAtTheBoundary) {
  json j = file("t5");
  j["relative_attention_num_buckets"] = 3;
  EXPECT_NE(refusal(j).find("relative_attention_num_buckets: 3, need at least 4"), std::string::npos) << refusal(j);
  j["relative_attention_num_buckets"] = 4;
  EXPECT_EQ(refusal(j), "(accepted)");
}

TEST(BiasConfigRefuses, MaxDistanceNotAboveMaxExactAtTheBoundary) {
  json j = file("t5");  // encoder, 32 buckets: 16 per direction, 8 exact
  j["relative_attention_max_distance"] = 8;
  EXPECT_NE(refusal(j).find("relative_attention_max_distance: 8, need more than the exact buckets' 8"), std::string::npos) << refusal(j);
  j["relative_attention_max_distance"] = 9;
  EXPECT_EQ(refusal(j), "(accepted)");
  bias_declaration d;  // the decoder (causal): 32 buckets, 16 exact
  d.stack = "decoder";
  j["relative_attention_max_distance"] = 16;
  EXPECT_NE(refusal(j, d).find("relative_attention_max_distance: 16, need more than the exact buckets' 16"), std::string::npos) << refusal(j, d);
}

TEST(BiasConfigRefuses, AHeadOffsetPastTheGlobalHeadsAtTheBoundary) {
  bias_declaration d;
  d.head_offset = 32;
  EXPECT_NE(refusal(file("falcon"), d).find("--head-offset: 32 is past the global head count 32"), std::string::npos) << refusal(file("falcon"), d);
  d.head_offset = 31;
  const auto p = load("falcon", d);
  EXPECT_EQ(p.claim.alibi.head_offset, 31);
  EXPECT_EQ(p.claim.alibi.held_heads(), 1);
  d.local_heads = 2;
  EXPECT_NE(refusal(file("falcon"), d).find("--local-heads: 2 heads from head 31 run past"), std::string::npos) << refusal(file("falcon"), d);
}

TEST(BiasConfigRefuses, UnknownKeysInMptAttnConfig) {
  json j = file("mpt");
  j["attn_config"]["rope_theta"] = 10000;
  EXPECT_NE(refusal(j).find("attn_config.rope_theta: is not a key of MptAttentionConfig"), std::string::npos) << refusal(j);
}

TEST(BiasConfigRefuses, MptReadingsThatDiffer) {
  json j = file("mpt");
  j["attn_config"]["alibi"] = false;
  EXPECT_NE(refusal(j).find("attn_config.alibi: false"), std::string::npos) << refusal(j);
  j = file("mpt");
  j["attn_config"]["alibi_bias_max"] = 16;
  EXPECT_NE(refusal(j).find("attn_config.alibi_bias_max: 16"), std::string::npos) << refusal(j);
  j = file("mpt");
  j["attn_config"]["prefix_lm"] = true;
  EXPECT_NE(refusal(j).find("attn_config.prefix_lm: true"), std::string::npos) << refusal(j);
}

TEST(BiasConfigRefuses, DeclarationsThatDoNotApply) {
  bias_declaration d;
  d.stack = "decoder";
  EXPECT_NE(refusal(file("bloom"), d).find("--stack: decoder: BLOOM is decoder-only"), std::string::npos) << refusal(file("bloom"), d);
  bias_declaration h;
  h.head_offset = 1;
  EXPECT_NE(refusal(file("t5"), h).find("--head-offset: T5's bias claim has no head slice"), std::string::npos);
  bias_declaration l;
  l.layer = 6;
  EXPECT_NE(refusal(file("t5"), l).find("--layer: 6 is outside the encoder's 6 layers"), std::string::npos) << refusal(file("t5"), l);
  l.layer = 5;
  EXPECT_EQ(refusal(file("t5"), l), "(accepted)");
  bias_declaration v;
  v.engine = ropecheck::engine_reading::vllm;
  EXPECT_NE(refusal(file("bloom"), v).find("--engine: vllm: ropecheck has read vLLM's ALiBi for Falcon only"), std::string::npos);
}

TEST(BiasConfigRefuses, SchemeKeysTheFamilyDoesNotRead) {
  json j = file("t5");
  j["rope_theta"] = 10000;
  EXPECT_NE(refusal(j).find("rope_theta: is not read by T5"), std::string::npos) << refusal(j);
  j = file("bloom");
  j["alibi_bias_max"] = 8;
  EXPECT_NE(refusal(j).find("alibi_bias_max: is not read by BLOOM"), std::string::npos) << refusal(j);
}

TEST(BiasConfigRefuses, UdopAndLayoutLMByName) {
  EXPECT_NE(refusal(json{{"model_type", "udop"}}).find("model_type: \"udop\""), std::string::npos);
  EXPECT_NE(refusal(json{{"model_type", "layoutlmv3"}}).find("model_type: \"layoutlmv3\": its self-attention adds a 1-d relative bias"), std::string::npos);
}

TEST(BiasFamilies, EveryRowHasAConfigThatClaimsItsScheme) {
  std::set<std::string> seen;
  for (const auto& row : ropecheck::bias_families()) {
    EXPECT_TRUE(seen.insert(row.model_type).second) << row.model_type;
    const auto p = load(row.model_type);
    EXPECT_EQ(p.claim.scheme, row.scheme) << row.model_type;
    EXPECT_NE(std::string(row.how).find(".py"), std::string::npos) << row.model_type << ": the how cites no file";
  }
  EXPECT_EQ(seen.size(), 10u);
}

}  // namespace
