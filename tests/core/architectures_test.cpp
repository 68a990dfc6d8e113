// tests/core/architectures_test.cpp — each family's config.json gives the convention its modeling code
// implements (ropecheck/architectures.hpp through config_json.hpp), and says which facts came from
// the model type.
//
// The files under tests/data/configs are real-shaped (tests/data/configs/README.md says which are
// copies of the Hub's files and which were written from configuration_*.py defaults). Every test
// asserts the whole derived convention: a field the test does not mention must hold the default of
// a plain rope_config, checked by comparing with an expected rope_config built field by field.
#include "ropecheck/architectures.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "ropecheck/config_json.hpp"

namespace {

using ropecheck::config_error;
using ropecheck::fact_origin;
using ropecheck::hf_config_parse;
using ropecheck::layout;
using ropecheck::load_hf_config_with_notes;
using ropecheck::mrope_kind;
using ropecheck::output_order;
using ropecheck::rope_config;
using ropecheck::scaling_kind;
using json = nlohmann::json;

const std::filesystem::path configs = std::filesystem::path(ROPECHECK_TEST_DATA) / "configs";

::testing::AssertionResult has_note(const hf_config_parse& p, const std::string& part) {
  for (const auto& n : p.notes)
    if (n.find(part) != std::string::npos) return ::testing::AssertionSuccess();
  auto r = ::testing::AssertionFailure() << "no note contains \"" << part << "\"; notes:";
  for (const auto& n : p.notes) r << "\n  " << n;
  return r;
}

// The primary convention has the fact `field` from `origin` whose source contains `part`.
::testing::AssertionResult has_fact(const hf_config_parse& p, const std::string& field, fact_origin origin,
                                    const std::string& part, std::size_t convention = 0) {
  if (convention >= p.conventions.size()) return ::testing::AssertionFailure() << "no convention " << convention;
  for (const auto& f : p.conventions[convention].facts)
    if (f.field == field && f.origin == origin && f.source.find(part) != std::string::npos) return ::testing::AssertionSuccess();
  auto r = ::testing::AssertionFailure() << "no fact " << field << " [" << to_string(origin) << "] from \"" << part << "\"; facts:";
  for (const auto& f : p.conventions[convention].facts)
    r << "\n  " << f.field << " " << f.value << " [" << to_string(f.origin) << "] " << f.source;
  return r;
}

// The convention a plain config of this geometry has; each test changes what its family changes.
rope_config plain(int head_dim, int rotary_dim, double base, std::int64_t max_pe) {
  rope_config c;
  c.head_dim = head_dim;
  c.rotary_dim = rotary_dim;
  c.base = base;
  c.max_position_embeddings = max_pe;
  return c;
}

std::string config_error_of(const std::string& text) {
  try {
    (void)ropecheck::parse_hf_config_with_notes(json::parse(text), "inline.json");
  } catch (const config_error& e) {
    return e.what();
  }
  return "(accepted)";
}

// --- half-split families ----------------------------------------------------------------------------

TEST(Architectures, Llama2IsHalfSplitFromItsModelType) {
  const auto p = load_hf_config_with_notes(configs / "llama2_7b.json");
  EXPECT_EQ(p.config, plain(128, 128, 1e4, 4096));
  EXPECT_TRUE(has_fact(p, "layout", fact_origin::family_code, "model_type \"llama\" (transformers models/llama/modeling_llama.py"));
  EXPECT_EQ(p.num_layers, 32);
  EXPECT_EQ(p.layers.size(), 32u);
  EXPECT_EQ(p.conventions.size(), 1u);  // every layer alike
}

TEST(Architectures, Llama31IsLlama3ScaledHalfSplit) {
  const auto p = load_hf_config_with_notes(configs / "llama3_1_8b.json");
  rope_config want = plain(128, 128, 5e5, 131072);
  want.scaling = scaling_kind::llama3;
  want.factor = 8.0;
  want.low_freq_factor = 1.0;
  want.high_freq_factor = 4.0;
  want.original_max_position_embeddings = 8192;
  EXPECT_EQ(p.config, want);
  EXPECT_TRUE(has_fact(p, "layout", fact_origin::family_code, "model_type \"llama\""));
}

TEST(Architectures, Llama32ReadsHeadDim64AndFactor32) {
  const auto p = load_hf_config_with_notes(configs / "llama3_2_1b.json");
  rope_config want = plain(64, 64, 5e5, 131072);
  want.scaling = scaling_kind::llama3;
  want.factor = 32.0;
  want.low_freq_factor = 1.0;
  want.high_freq_factor = 4.0;
  want.original_max_position_embeddings = 8192;
  EXPECT_EQ(p.config, want);
}

TEST(Architectures, MistralIsHalfSplitWithBase1e6) {
  const auto p = load_hf_config_with_notes(configs / "mistral_7b_v0_3.json");
  EXPECT_EQ(p.config, plain(128, 128, 1e6, 32768));
  EXPECT_TRUE(has_fact(p, "layout", fact_origin::family_code, "model_type \"mistral\""));
}

TEST(Architectures, Qwen2AndQwen25AreHalfSplit) {
  for (const char* f : {"qwen2_7b.json", "qwen2_5_7b.json"}) {
    const auto p = load_hf_config_with_notes(configs / f);
    EXPECT_EQ(p.config, plain(128, 128, 1e6, std::string(f) == "qwen2_7b.json" ? 131072 : 32768)) << f;
    EXPECT_TRUE(has_fact(p, "layout", fact_origin::family_code, "model_type \"qwen2\"")) << f;
  }
}

TEST(Architectures, Qwen3ReadsItsExplicitHeadDim) {
  const auto p = load_hf_config_with_notes(configs / "qwen3_4b.json");
  EXPECT_EQ(p.config, plain(128, 128, 5e6, 262144));  // head_dim 128, not 2560 / 32 = 80
  EXPECT_TRUE(has_fact(p, "head_dim", fact_origin::file, "head_dim"));
}

TEST(Architectures, Gemma2IsHalfSplitOnEveryLayer) {
  const auto p = load_hf_config_with_notes(configs / "gemma2_9b.json");
  EXPECT_EQ(p.config, plain(256, 256, 1e4, 8192));
  EXPECT_TRUE(has_fact(p, "layout", fact_origin::family_code, "model_type \"gemma2\""));
  EXPECT_EQ(p.conventions.size(), 1u);  // sliding and full layers differ in the mask only
}

TEST(Architectures, GptNeoXRotatesRotaryPctOfTheHead) {
  const auto p = load_hf_config_with_notes(configs / "pythia_1_4b.json");
  EXPECT_EQ(p.config.pair_layout, layout::half_split);
  EXPECT_EQ(p.config.head_dim, 128);
  EXPECT_EQ(p.config.rotary_dim, 32);  // int(128 * 0.25)
  EXPECT_TRUE(has_fact(p, "rotary_dim", fact_origin::file, "rotary_pct"));
  EXPECT_TRUE(has_fact(p, "base", fact_origin::file, "rotary_emb_base"));
}

TEST(Architectures, FalconIsHalfSplitWithTheDefaultBase) {
  const auto p = load_hf_config_with_notes(configs / "falcon_7b.json");
  EXPECT_EQ(p.config, plain(64, 64, 1e4, 4096));  // 4544 / 71; no max_position_embeddings in the file
  EXPECT_TRUE(has_fact(p, "layout", fact_origin::family_code, "model_type \"falcon\""));
}

TEST(Architectures, GptOssIsHalfSplitYarnWithoutTruncation) {
  const auto p = load_hf_config_with_notes(configs / "gpt_oss_yarn_no_truncate.json");
  rope_config want = plain(64, 64, 150000, 131072);
  want.scaling = scaling_kind::yarn;
  want.factor = 32.0;
  want.original_max_position_embeddings = 4096;
  want.truncate = false;
  EXPECT_EQ(p.config, want);
  EXPECT_TRUE(has_fact(p, "layout", fact_origin::family_code, "model_type \"gpt_oss\" (transformers models/gpt_oss/"));
}

// --- Phi: longrope and partial rotary --------------------------------------------------------------

TEST(Architectures, Phi3AndPhi35AreLongropeOverTheWholeHead) {
  for (const char* f : {"phi3_mini_128k.json", "phi3_5_mini.json"}) {
    const auto p = load_hf_config_with_notes(configs / f);
    EXPECT_EQ(p.config.pair_layout, layout::half_split) << f;
    EXPECT_EQ(p.config.head_dim, 96) << f;
    EXPECT_EQ(p.config.rotary_dim, 96) << f;
    EXPECT_EQ(p.config.scaling, scaling_kind::longrope) << f;
    EXPECT_EQ(p.config.factor, 32.0) << f;  // 131072 / 4096
    EXPECT_EQ(p.config.short_factor.size(), 48u) << f;
    EXPECT_EQ(p.config.original_max_position_embeddings, 4096) << f;
    EXPECT_TRUE(has_fact(p, "layout", fact_origin::family_code, "model_type \"phi3\"")) << f;
  }
}

TEST(Architectures, Phi4MiniRotatesThreeQuartersOfTheHead) {
  const auto p = load_hf_config_with_notes(configs / "phi4_mini.json");
  EXPECT_EQ(p.config.head_dim, 128);    // 3072 / 24
  EXPECT_EQ(p.config.rotary_dim, 96);   // int(128 * 0.75)
  EXPECT_EQ(p.config.long_factor.size(), 48u);
  EXPECT_EQ(p.config.scaling, scaling_kind::longrope);
  EXPECT_EQ(p.config.pair_layout, layout::half_split);
}

// --- interleaved families ---------------------------------------------------------------------------

TEST(Architectures, Glm4PairsInterleavedCoordinatesOverHalfTheHead) {
  const auto p = load_hf_config_with_notes(configs / "glm4_9b_0414.json");
  rope_config want = plain(128, 64, 1e4, 32768);
  want.pair_layout = layout::interleaved;
  EXPECT_EQ(p.config, want);
  EXPECT_TRUE(has_fact(p, "layout", fact_origin::family_code, "model_type \"glm4\" (transformers models/glm4/"));
}

TEST(Architectures, ChatGlmRotatesHalfOfKvChannelsWithBaseTimesRopeRatio) {
  const auto p = load_hf_config_with_notes(configs / "chatglm4_9b.json");
  rope_config want = plain(128, 64, 5e6, 4096);
  want.pair_layout = layout::interleaved;
  EXPECT_EQ(p.config, want);
  EXPECT_TRUE(has_fact(p, "layout", fact_origin::family_code, "model_type \"chatglm\""));
  EXPECT_TRUE(has_fact(p, "base", fact_origin::file, "10000 * rope_ratio"));
  EXPECT_TRUE(has_fact(p, "rotary_dim", fact_origin::family_code, "RotaryEmbedding(rotary_dim // 2)"));
}

TEST(Architectures, GptJIsInterleavedFromItsModelTypeWithoutTheRopecheckKey) {
  const auto p = load_hf_config_with_notes(configs / "gptj_6b.json");
  rope_config want = plain(256, 64, 1e4, 2048);
  want.pair_layout = layout::interleaved;
  EXPECT_EQ(p.config, want);
  EXPECT_TRUE(has_fact(p, "layout", fact_origin::family_code, "model_type \"gptj\" (transformers models/gptj/"));
  // The old file with an explicit, agreeing ropecheck_layout gives the same convention and no contradiction.
  const auto q = load_hf_config_with_notes(configs / "gptj_6b_interleaved.json");
  EXPECT_EQ(q.config, want);
  EXPECT_FALSE(has_note(q, "contradicts"));
}

TEST(Architectures, CohereIsInterleaved) {
  const auto p = load_hf_config_with_notes(configs / "cohere_command_r.json");
  rope_config want = plain(128, 128, 8e6, 8192);
  want.pair_layout = layout::interleaved;
  EXPECT_EQ(p.config, want);
  EXPECT_TRUE(has_fact(p, "layout", fact_origin::family_code, "model_type \"cohere\" (transformers models/cohere/"));
}

TEST(Architectures, DeepSeekV2IsInterleavedInPlaceWithYarnMscales) {
  const auto p = load_hf_config_with_notes(configs / "deepseek_v2_lite.json");
  rope_config want = plain(64, 64, 1e4, 163840);
  want.pair_layout = layout::interleaved;
  want.scaling = scaling_kind::yarn;
  want.factor = 40.0;
  want.original_max_position_embeddings = 4096;
  want.mscale = 0.707;
  want.mscale_all_dim = 0.707;
  EXPECT_EQ(p.config, want);
  EXPECT_TRUE(has_fact(p, "layout", fact_origin::family_code, "model_type \"deepseek_v2\" (transformers models/deepseek_v2/"));
}

TEST(Architectures, DeepSeekV3ReadsInterleavedPairsAndWritesThemHalfSplit) {
  const auto p = load_hf_config_with_notes(configs / "deepseek_v3_yarn.json");
  rope_config want = plain(64, 64, 1e4, 163840);
  want.pair_layout = layout::interleaved;
  want.outputs = output_order::half_split;
  want.scaling = scaling_kind::yarn;
  want.factor = 40.0;
  want.original_max_position_embeddings = 4096;
  want.mscale = 1.0;
  want.mscale_all_dim = 1.0;
  EXPECT_EQ(p.config, want);
  EXPECT_TRUE(has_fact(p, "layout", fact_origin::class_default, "rope_interleave absent (class default true)"));
  EXPECT_TRUE(has_fact(p, "outputs", fact_origin::family_code, "apply_rotary_pos_emb_interleave"));
}

TEST(Architectures, DeepSeekV3WithRopeInterleaveFalseIsLlamasHalfSplit) {
  json j = json::parse(std::ifstream(configs / "deepseek_v3_yarn.json"));
  j["rope_interleave"] = false;
  const auto p = ropecheck::parse_hf_config_with_notes(j);
  EXPECT_EQ(p.config.pair_layout, layout::half_split);
  EXPECT_EQ(p.config.outputs, output_order::in_place);
  EXPECT_TRUE(has_fact(p, "layout", fact_origin::file, "rope_interleave false"));
  j["rope_interleave"] = true;
  const auto q = ropecheck::parse_hf_config_with_notes(j);
  EXPECT_EQ(q.config.outputs, output_order::half_split);
  EXPECT_TRUE(has_fact(q, "layout", fact_origin::file, "rope_interleave true: model_type \"deepseek_v3\""));
}

TEST(Architectures, Llama4ReadsTextConfigIsInterleavedAndEveryFourthLayerHasNoRope) {
  const auto p = load_hf_config_with_notes(configs / "llama4_scout.json");
  rope_config want = plain(128, 128, 5e5, 10485760);
  want.pair_layout = layout::interleaved;
  want.scaling = scaling_kind::llama3;
  want.factor = 16.0;
  want.low_freq_factor = 1.0;
  want.high_freq_factor = 1.0;  // Scout's: no smooth band
  want.original_max_position_embeddings = 8192;
  EXPECT_EQ(p.config, want);
  EXPECT_TRUE(has_note(p, "rope fields read from text_config"));
  EXPECT_EQ(p.model_type, "llama4_text");
  EXPECT_TRUE(has_fact(p, "layout", fact_origin::family_code, "model_type \"llama4_text\""));
  EXPECT_TRUE(has_note(p, "12 of 48 layers have no RoPE (3, 7, 11, 15, 19, 23, ...): no_rope_layer_interval = 4"));
  ASSERT_EQ(p.layers.size(), 48u);
  for (int i = 0; i < 48; ++i) {
    const bool nope = (i + 1) % 4 == 0;
    EXPECT_EQ(p.layers[static_cast<std::size_t>(i)].config.has_value(), !nope) << i;
    EXPECT_EQ(p.layers[static_cast<std::size_t>(i)].type, nope ? "full_attention" : "chunked_attention") << i;
  }
  EXPECT_EQ(ropecheck::layer_convention(p, 2), want);
  try {
    (void)ropecheck::layer_convention(p, 3);
    ADD_FAILURE() << "a NoPE layer gave a convention";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("layer 3 (full_attention) has no RoPE"), std::string::npos) << e.what();
  }
  EXPECT_THROW((void)ropecheck::layer_convention(p, 48), std::out_of_range);
  (void)ropecheck::layer_convention(p, 47 - 1);  // the last RoPE layer at the boundary
}

TEST(Architectures, Llama4ExplicitNoRopeLayersAreRead) {
  json j = json::parse(std::ifstream(configs / "llama4_scout.json"));
  std::vector<int> nrl(48, 1);
  nrl[0] = 0;
  j["text_config"]["no_rope_layers"] = nrl;
  const auto p = ropecheck::parse_hf_config_with_notes(j);
  EXPECT_FALSE(p.layers[0].config.has_value());
  EXPECT_TRUE(p.layers[3].config.has_value());
  EXPECT_TRUE(has_note(p, "1 of 48 layers have no RoPE (0): no_rope_layers"));
}

// --- Gemma 3: local and global layers --------------------------------------------------------------

TEST(Architectures, Gemma3SlidingLayersUseTheLocalBaseWithoutScaling) {
  const auto p = load_hf_config_with_notes(configs / "gemma3_4b.json");
  rope_config global = plain(256, 256, 1e6, 131072);
  global.scaling = scaling_kind::linear;
  global.factor = 8.0;
  const rope_config local = plain(256, 256, 1e4, 131072);
  EXPECT_EQ(p.config, local);  // the primary convention is the first RoPE layer's: layer 0 slides
  EXPECT_EQ(p.primary_layer, 0);
  ASSERT_EQ(p.layers.size(), 34u);
  for (int i = 0; i < 34; ++i) {
    const bool full = (i + 1) % 6 == 0;
    const auto& l = p.layers[static_cast<std::size_t>(i)];
    EXPECT_EQ(l.type, full ? "full_attention" : "sliding_attention") << i;
    ASSERT_TRUE(l.config) << i;
    EXPECT_EQ(*l.config, full ? global : local) << i;
  }
  EXPECT_EQ(p.model_type, "gemma3_text");
  EXPECT_TRUE(has_fact(p, "base", fact_origin::file, "rope_local_base_freq"));
  EXPECT_TRUE(has_fact(p, "scaling", fact_origin::family_code, "no scaling on sliding_attention layers"));
  EXPECT_TRUE(has_note(p, "layer types from sliding_window_pattern = 6"));
}

TEST(Architectures, V5Gemma3RopeParametersGiveEachLayerTypeItsBlock) {
  const auto p = load_hf_config_with_notes(configs / "v5_gemma3_per_layer.json");
  ASSERT_FALSE(p.layers.empty());
  ASSERT_TRUE(p.layers[0].config);
  EXPECT_EQ(p.layers[0].type, "sliding_attention");
  EXPECT_EQ(p.layers[0].config->base, 1e4);
  EXPECT_EQ(p.layers[0].config->scaling, scaling_kind::none);
  EXPECT_EQ(p.layers[5].config->base, 1e6);
  EXPECT_EQ(p.layers[5].config->scaling, scaling_kind::linear);
}

// --- M-RoPE -----------------------------------------------------------------------------------------

TEST(Architectures, Qwen25VlHasContiguousMropeSections) {
  const auto p = load_hf_config_with_notes(configs / "qwen2_5_vl_7b.json");
  rope_config want = plain(128, 128, 1e6, 128000);
  want.mrope = mrope_kind::contiguous;
  want.mrope_section = {16, 24, 24};
  EXPECT_EQ(p.config, want);
  EXPECT_TRUE(has_fact(p, "mrope", fact_origin::family_code, "qwen2_5_vl"));
}

TEST(Architectures, Qwen3VlHasInterleavedMropeFromTextConfig) {
  const auto p = load_hf_config_with_notes(configs / "qwen3_vl_8b.json");
  rope_config want = plain(128, 128, 5e6, 262144);
  want.mrope = mrope_kind::interleaved;
  want.mrope_section = {24, 20, 20};
  EXPECT_EQ(p.config, want);
  EXPECT_TRUE(has_note(p, "rope fields read from text_config"));
  EXPECT_EQ(p.model_type, "qwen3_vl_text");
}

TEST(Architectures, MropeSectionsThatDoNotCoverTheBandsNameTheField) {
  const std::string e = config_error_of(
      R"({"model_type": "qwen2_vl", "hidden_size": 3584, "num_attention_heads": 28,
          "rope_scaling": {"type": "mrope", "mrope_section": [16, 24, 23]}})");
  EXPECT_NE(e.find("inline.json: rope_scaling.mrope_section: "), std::string::npos) << e;
  EXPECT_NE(e.find("sums to 63 bands"), std::string::npos) << e;
  // At equality (64 = 16 + 24 + 24) it parses.
  EXPECT_EQ(config_error_of(R"({"model_type": "qwen2_vl", "hidden_size": 3584, "num_attention_heads": 28,
          "rope_scaling": {"type": "mrope", "mrope_section": [16, 24, 24]}})"),
            "(accepted)");
  EXPECT_NE(config_error_of(R"({"model_type": "qwen2_vl", "hidden_size": 3584, "num_attention_heads": 28,
          "rope_scaling": {"type": "mrope"}})")
                .find("rope_scaling.mrope_section: missing"),
            std::string::npos);
}

// --- unknown fields and unknown model types ---------------------------------------------------------

TEST(Architectures, AnUnknownKeyInTheRopeBlockIsAnErrorNamingIt) {
  const std::string e = config_error_of(
      R"({"model_type": "llama", "hidden_size": 4096, "num_attention_heads": 32,
          "rope_scaling": {"rope_type": "linear", "factor": 2.0, "low_freq_factor": 1.0}})");
  EXPECT_NE(e.find("rope_scaling.low_freq_factor: not a key ropecheck reads for rope type \"linear\""), std::string::npos)
      << e;
  EXPECT_NE(e.find("it reads: rope_type, type, rope_theta"), std::string::npos) << e;
}

TEST(Architectures, AnUnknownRopeKeyAtTopLevelIsAnErrorListingTheKnownOnes) {
  const std::string e = config_error_of(
      R"({"model_type": "llama", "hidden_size": 4096, "num_attention_heads": 32, "rope_pct": 0.25})");
  EXPECT_NE(e.find("rope_pct: not a rope field model_type \"llama\" reads (it reads: rope_scaling"), std::string::npos) << e;
  const std::string f = config_error_of(
      R"({"model_type": "llama", "hidden_size": 4096, "num_attention_heads": 32, "Rotary_Emb_Fraction": 0.5})");
  EXPECT_NE(f.find("Rotary_Emb_Fraction: not a rope field"), std::string::npos) << f;
  // A key a family reads is refused for another family.
  const std::string g = config_error_of(
      R"({"model_type": "llama", "hidden_size": 4096, "num_attention_heads": 32, "rope_interleave": true})");
  EXPECT_NE(g.find("rope_interleave: not read by model_type \"llama\""), std::string::npos) << g;
  const std::string h = config_error_of(
      R"({"model_type": "gemma3", "text_config": {"head_dim": 256, "rope_theta": 1e6, "rope_scalling": {}}})");
  EXPECT_NE(h.find("text_config.rope_scalling: not a rope field"), std::string::npos) << h;
}

// The claim is never a guess: a model type without facts is refused with how to declare it ...
TEST(Architectures, AModelTypeWithoutFactsIsRefusedSayingHowToDeclareIt) {
  const std::string e = config_error_of(R"({"model_type": "my_new_model", "hidden_size": 4096, "num_attention_heads": 32})");
  EXPECT_NE(e.find("inline.json: model_type: model_type \"my_new_model\": ropecheck has no facts for this family"), std::string::npos) << e;
  EXPECT_NE(e.find("--layout half_split|interleaved"), std::string::npos) << e;
  EXPECT_NE(e.find("--assume-llama"), std::string::npos) << e;
  EXPECT_NE(config_error_of(R"({"hidden_size": 4096, "num_attention_heads": 32})").find("no model_type: ropecheck has no facts"),
            std::string::npos);
}

// ... and a declaration is recorded as an assumption, never made silently.
TEST(Architectures, ADeclaredConventionIsRecordedAsAnAssumption) {
  const json j = json::parse(R"({"model_type": "my_new_model", "hidden_size": 4096, "num_attention_heads": 32, "num_hidden_layers": 2})");
  ropecheck::convention_declaration llama;
  llama.assume_llama = true;
  const auto p = ropecheck::parse_hf_config_with_notes(j, "inline.json", llama);
  EXPECT_EQ(p.config, plain(128, 128, 1e4, 4096));
  ASSERT_EQ(p.assumptions.size(), 1u);
  EXPECT_NE(p.assumptions[0].find("convention declared by --assume-llama"), std::string::npos) << p.assumptions[0];
  ropecheck::convention_declaration inter;
  inter.pair_layout = layout::interleaved;
  inter.rotary_fraction = 0.5;
  const auto q = ropecheck::parse_hf_config_with_notes(j, "inline.json", inter);
  EXPECT_EQ(q.config.pair_layout, layout::interleaved);
  EXPECT_EQ(q.config.rotary_dim, 64);
  EXPECT_TRUE(has_fact(q, "layout", fact_origin::declared, "--layout"));
  EXPECT_TRUE(has_fact(q, "rotary_dim", fact_origin::declared, "--rotary-fraction"));
  // ropecheck_layout in the file is a declaration too.
  const auto r = ropecheck::parse_hf_config_with_notes(
      json::parse(R"({"model_type": "my_new_model", "hidden_size": 4096, "num_attention_heads": 32, "ropecheck_layout": "half_split"})"));
  EXPECT_EQ(r.config.pair_layout, layout::half_split);
  EXPECT_FALSE(r.assumptions.empty());
  // A family known to have no RoPE cannot be declared into one.
  EXPECT_NE(config_error_of(R"({"model_type": "jamba", "hidden_size": 4096, "num_attention_heads": 32})").find("has no RoPE to check"),
            std::string::npos);
}

TEST(Architectures, TheArchitecturesClassNameFindsTheFamilyWhenModelTypeIsUnknown) {
  const auto p = ropecheck::parse_hf_config_with_notes(json::parse(
      R"({"model_type": "kimi_k2", "architectures": ["DeepseekV3ForCausalLM"], "hidden_size": 7168,
          "num_attention_heads": 64, "qk_rope_head_dim": 64})"));
  EXPECT_EQ(p.config.pair_layout, layout::interleaved);
  EXPECT_EQ(p.config.outputs, output_order::half_split);
  EXPECT_EQ(p.via, "architectures \"DeepseekV3ForCausalLM\"");
  EXPECT_TRUE(has_fact(p, "layout", fact_origin::class_default, "architectures \"DeepseekV3ForCausalLM\""));
}

// model_type and architectures naming families that read the file differently: refused, naming both.
TEST(Architectures, AModelTypeAndAClassThatDisagreeAreRefused) {
  const std::string e = config_error_of(
      R"({"model_type": "mixtral", "architectures": ["Grok1ModelForCausalLM"], "hidden_size": 6144,
          "num_attention_heads": 48, "num_hidden_layers": 64})");
  EXPECT_NE(e.find("architectures \"Grok1ModelForCausalLM\""), std::string::npos) << e;
  EXPECT_NE(e.find("base 1000000, default vs half_split, head_dim 128, rotary_dim 128, base 10000"), std::string::npos) << e;
  // With the base in the file both read it alike: accepted.
  EXPECT_EQ(config_error_of(R"({"model_type": "mixtral", "architectures": ["Grok1ModelForCausalLM"], "hidden_size": 6144,
          "num_attention_heads": 48, "num_hidden_layers": 64, "rope_theta": 10000})"),
            "(accepted)");
}

TEST(Architectures, AnExplicitRopecheckLayoutWinsAndSaysItContradicts) {
  const auto p = ropecheck::parse_hf_config_with_notes(json::parse(
      R"({"model_type": "glm4", "head_dim": 128, "num_attention_heads": 32, "partial_rotary_factor": 0.5,
          "rope_theta": 10000, "ropecheck_layout": "half_split"})"));
  EXPECT_EQ(p.config.pair_layout, layout::half_split);
  EXPECT_TRUE(has_note(p, "ropecheck_layout half_split contradicts model_type \"glm4\" (interleaved)"));
}

TEST(Architectures, EveryTableRowCitesItsSource) {
  for (const auto& a : ropecheck::known_architectures()) {
    if (a.support != ropecheck::family_support::rope) {
      EXPECT_FALSE(a.why.empty()) << a.model_type;
    } else {
      EXPECT_FALSE(a.layout_source.empty()) << a.model_type;
      EXPECT_FALSE(a.base_source.empty() && a.quirk != ropecheck::family_quirk::chatglm) << a.model_type;
    }
    EXPECT_EQ(ropecheck::find_architecture(a.model_type), &a) << a.model_type;  // no duplicate rows
    if (a.outputs == output_order::half_split) {
      EXPECT_EQ(a.pair_layout, layout::interleaved) << a.model_type;
    }
    if (a.mrope != mrope_kind::none) {
      EXPECT_FALSE(a.mrope_source.empty()) << a.model_type;
    }
    if (a.layers != ropecheck::layer_rule::uniform) {
      EXPECT_FALSE(a.layers_source.empty()) << a.model_type;
    }
  }
  // An alias finds its row; nothing else does.
  EXPECT_EQ(ropecheck::find_architecture("gemma3_text"), ropecheck::find_architecture("gemma3"));
  EXPECT_EQ(ropecheck::find_architecture("no_such_model"), nullptr);
  EXPECT_EQ(ropecheck::find_architecture(""), nullptr);
}

}  // namespace
