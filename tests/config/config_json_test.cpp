// tests/config/config_json_test.cpp — HF config.json -> rope_config.
//
// Each sample config under tests/data/configs parses to the fields its model card states; each
// broken one under tests/data/configs/broken throws config_error whose message names the file and
// the offending field.
#include "ropecheck/config_json.hpp"
#include "ropecheck/schedule.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <iostream>
#include <limits>
#include <string>

namespace {

using ropecheck::config_error;
using ropecheck::layout;
using ropecheck::load_hf_config;
using ropecheck::load_hf_config_with_notes;
using ropecheck::parse_hf_config;
using ropecheck::rope_config;
using ropecheck::scaling_kind;
using json = nlohmann::json;

const std::filesystem::path configs = std::filesystem::path(ROPECHECK_TEST_DATA) / "configs";

// Whether one of the parser's notes contains `part` (printed on failure).

TEST(HfConfig, Llama2ParsesToTheDefaultRuleWithBase1e4AndHeadDim128) {
  const rope_config c = load_hf_config(configs / "llama2_7b.json");
  EXPECT_EQ(c.head_dim, 128);
  EXPECT_EQ(c.rotary_dim, 128);
  EXPECT_EQ(c.base, 10000.0);
  EXPECT_EQ(c.scaling, scaling_kind::none);
  EXPECT_EQ(c.max_position_embeddings, 4096);
  EXPECT_EQ(c.original_max_position_embeddings, 0);
  EXPECT_EQ(c.pair_layout, layout::half_split);
}

TEST(HfConfig, Llama31ParsesToTheLlama3RuleWithItsFourParameters) {
  const rope_config c = load_hf_config(configs / "llama3_1_8b.json");
  EXPECT_EQ(c.rotary_dim, 128);
  EXPECT_EQ(c.base, 500000.0);
  EXPECT_EQ(c.scaling, scaling_kind::llama3);
  EXPECT_EQ(c.factor, 8.0);
  EXPECT_EQ(c.low_freq_factor, 1.0);
  EXPECT_EQ(c.high_freq_factor, 4.0);
  EXPECT_EQ(c.original_max_position_embeddings, 8192);
  EXPECT_EQ(c.max_position_embeddings, 131072);
}

TEST(HfConfig, Qwen2ParsesWithBase1e6) {
  const rope_config c = load_hf_config(configs / "qwen2_7b.json");
  EXPECT_EQ(c.head_dim, 128);  // 3584 / 28
  EXPECT_EQ(c.base, 1.0e6);
  EXPECT_EQ(c.scaling, scaling_kind::none);
}

TEST(HfConfig, DeepSeekV3YarnReadsMscalesAndTheRopeSliceOfMla) {
  const auto p = load_hf_config_with_notes(configs / "deepseek_v3_yarn.json");
  const rope_config& c = p.config;
  EXPECT_EQ(c.head_dim, 64);  // qk_rope_head_dim, not hidden_size / heads = 56
  EXPECT_EQ(c.rotary_dim, 64);
  EXPECT_EQ(c.scaling, scaling_kind::yarn);
  EXPECT_EQ(c.factor, 40.0);
  EXPECT_EQ(c.original_max_position_embeddings, 4096);
  EXPECT_EQ(c.max_position_embeddings, 163840);
  EXPECT_EQ(c.beta_fast, 32.0);
  EXPECT_EQ(c.beta_slow, 1.0);
  EXPECT_TRUE(c.truncate);
  ASSERT_TRUE(c.mscale && c.mscale_all_dim);
  EXPECT_EQ(*c.mscale, 1.0);
  EXPECT_EQ(*c.mscale_all_dim, 1.0);
  EXPECT_FALSE(c.attention_factor);
}

TEST(HfConfig, QwenYarnKeepsTheExplicitFactorAndSaysItDiffersFromTheLengthRatio) {
  const auto p = load_hf_config_with_notes(configs / "qwen2_5_yarn.json");
  EXPECT_EQ(p.config.scaling, scaling_kind::yarn);
  EXPECT_EQ(p.config.factor, 4.0);  // transformers v5; 4.4x-4.5x used 32768/32768 = 1
  EXPECT_EQ(p.config.original_max_position_embeddings, 32768);
  bool said = false;
  for (const auto& f : p.conventions.front().facts) said = said || (f.field == "factor" && f.source.find("differs from max_position_embeddings") != std::string::npos);
  EXPECT_TRUE(said) << "the factor's source says it differs from the length ratio";
}

TEST(HfConfig, GptOssYarnReadsTruncateFalse) {
  const rope_config c = load_hf_config(configs / "gpt_oss_yarn_no_truncate.json");
  EXPECT_EQ(c.scaling, scaling_kind::yarn);
  EXPECT_FALSE(c.truncate);
  EXPECT_EQ(c.base, 150000.0);
  EXPECT_EQ(c.rotary_dim, 64);
}

TEST(HfConfig, Phi3LongropeTakesTopLevelOriginalLengthAndDerivesTheFactor) {
  const rope_config c = load_hf_config(configs / "phi3_mini_128k.json");
  EXPECT_EQ(c.scaling, scaling_kind::longrope);  // legacy spelling "longrope" in "type"
  EXPECT_EQ(c.rotary_dim, 96);
  EXPECT_EQ(c.short_factor.size(), 48u);
  EXPECT_EQ(c.long_factor.size(), 48u);
  EXPECT_EQ(c.original_max_position_embeddings, 4096);
  EXPECT_EQ(c.factor, 32.0);  // 131072 / 4096
}

TEST(HfConfig, SuIsTheLegacyNameOfLongrope) {
  json j = json::parse(R"({"model_type": "phi3", "hidden_size": 256, "num_attention_heads": 4, "max_position_embeddings": 8192,
    "original_max_position_embeddings": 2048, "rope_scaling": {"type": "su"}})");
  j["rope_scaling"]["short_factor"] = std::vector<double>(32, 1.0);
  j["rope_scaling"]["long_factor"] = std::vector<double>(32, 2.0);
  const rope_config c = parse_hf_config(j);
  EXPECT_EQ(c.scaling, scaling_kind::longrope);
  EXPECT_EQ(c.factor, 4.0);
}

TEST(HfConfig, PythiaRotaryPctGivesARotaryDimOfAQuarterHead) {
  const rope_config c = load_hf_config(configs / "pythia_1_4b.json");
  EXPECT_EQ(c.head_dim, 128);
  EXPECT_EQ(c.rotary_dim, 32);
  EXPECT_EQ(c.base, 10000.0);  // rotary_emb_base
}

TEST(HfConfig, PartialRotaryFactorTruncatesAsHfDoes) {
  // Phi-2: head 80, partial_rotary_factor 0.4 -> int(32.000000000000004) = 32.
  const rope_config c = parse_hf_config(json::parse(
      R"({"model_type": "phi", "hidden_size": 2560, "num_attention_heads": 32, "partial_rotary_factor": 0.4, "rope_theta": 10000.0})"));
  EXPECT_EQ(c.head_dim, 80);
  EXPECT_EQ(c.rotary_dim, 32);
}

TEST(HfConfig, V5RopeParametersCarryThetaAndTheRule) {
  const rope_config c = load_hf_config(configs / "v5_llama_rope_parameters.json");
  EXPECT_EQ(c.head_dim, 64);
  EXPECT_EQ(c.base, 500000.0);
  EXPECT_EQ(c.scaling, scaling_kind::llama3);
  EXPECT_EQ(c.factor, 32.0);
  EXPECT_EQ(c.original_max_position_embeddings, 8192);
}

TEST(HfConfig, V5PerLayerRopeParametersGiveEachLayerItsTypesBlock) {
  const auto p = load_hf_config_with_notes(configs / "v5_gemma3_per_layer.json");
  // No num_hidden_layers: layer_types says there are 6; layer 0 slides, so the primary convention is its block's.
  ASSERT_EQ(p.layers.size(), 6u);
  EXPECT_EQ(p.primary_layer, 0);
  EXPECT_EQ(p.config.head_dim, 256);
  EXPECT_EQ(p.config.scaling, scaling_kind::none);
  EXPECT_EQ(p.config.base, 1.0e4);
  ASSERT_TRUE(p.layers[5].config);
  EXPECT_EQ(p.layers[5].type, "full_attention");
  EXPECT_EQ(p.layers[5].config->scaling, scaling_kind::linear);
  EXPECT_EQ(p.layers[5].config->factor, 8.0);
  EXPECT_EQ(p.layers[5].config->base, 1.0e6);
}

TEST(HfConfig, V5PerLayerRopeParametersWithOneEntryUseIt) {
  const auto p = ropecheck::parse_hf_config_with_notes(json::parse(
      R"({"model_type": "llama", "head_dim": 64, "num_attention_heads": 8, "rope_parameters": {"sliding_attention": {"rope_type": "default", "rope_theta": 20000.0}}})"));
  EXPECT_EQ(p.config.base, 20000.0);
  EXPECT_EQ(p.conventions.front().type, "sliding_attention");
}

TEST(HfConfig, DynamicNtkReadsItsFactor) {
  const rope_config c = load_hf_config(configs / "dynamic_ntk.json");
  EXPECT_EQ(c.scaling, scaling_kind::dynamic_ntk);
  EXPECT_EQ(c.factor, 2.0);
  EXPECT_EQ(c.max_position_embeddings, 4096);
}

TEST(HfConfig, LinearReadsItsFactor) {
  const rope_config c = load_hf_config(configs / "linear_16k.json");
  EXPECT_EQ(c.scaling, scaling_kind::linear);
  EXPECT_EQ(c.factor, 4.0);
}

TEST(HfConfig, GptJReadsNEmbdNHeadRotaryDimAndTheExplicitLayout) {
  const rope_config c = load_hf_config(configs / "gptj_6b_interleaved.json");
  EXPECT_EQ(c.head_dim, 256);
  EXPECT_EQ(c.rotary_dim, 64);
  EXPECT_EQ(c.max_position_embeddings, 2048);  // n_positions
  EXPECT_EQ(c.pair_layout, layout::interleaved);
}

// rope_type "ntk" exists only in vLLM (NTKScalingRotaryEmbedding; transformers has none), so a file
// holding it means vLLM's fixed NTK: band i divided by s^((i+1)/(d/2)); ropecheck's own static NTK is
// --scaling ntk. (tests/data/engine_variants/vllm.json checks the lists value by value.)
TEST(HfConfig, RopeTypeNtkIsVllmsFixedNtk) {
  const rope_config c = parse_hf_config(json::parse(
      R"({"model_type": "llama", "hidden_size": 4096, "num_attention_heads": 32, "rope_scaling": {"rope_type": "ntk", "factor": 8}})"));
  EXPECT_EQ(c.scaling, scaling_kind::longrope);
  EXPECT_EQ(c.short_factor, c.long_factor);
  ASSERT_EQ(c.short_factor.size(), 64u);
  EXPECT_NEAR(c.short_factor.back(), 8.0, 4 * 8.0 * std::numeric_limits<double>::epsilon());  // exp(ln 8 * 1): libm exp/log, a few ulps
  ASSERT_TRUE(c.attention_factor.has_value());
  EXPECT_EQ(*c.attention_factor, 1.0);
}

TEST(HfConfig, RopeScalingAndRopeParametersMayRepeatEachOther) {
  const rope_config c = parse_hf_config(json::parse(R"({"model_type": "llama", "hidden_size": 4096, "num_attention_heads": 32,
      "rope_scaling": {"type": "linear", "factor": 2.0}, "rope_parameters": {"type": "linear", "factor": 2.0}})"));
  EXPECT_EQ(c.factor, 2.0);
}

// --- broken configs: config_error naming the file and the field ---------------------------------

struct broken_case {
  const char* file;
  const char* field;  // must appear in the message
};
void PrintTo(const broken_case& c, std::ostream* os) { *os << c.file; }

class BrokenConfig : public ::testing::TestWithParam<broken_case> {};

TEST_P(BrokenConfig, IsRejectedWithAMessageNamingFileAndField) {
  const broken_case bc = GetParam();
  const auto path = configs / "broken" / bc.file;
  try {
    (void)load_hf_config(path);
    FAIL() << bc.file << " was accepted";
  } catch (const config_error& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find(bc.field), std::string::npos) << "message: " << msg;
    EXPECT_NE(msg.find(bc.file), std::string::npos) << "message: " << msg;
    EXPECT_EQ(e.file(), path.string());
    std::cout << "  " << msg << "\n";
  }
}

INSTANTIATE_TEST_SUITE_P(
    AllBrokenSamples, BrokenConfig,
    ::testing::Values(broken_case{"unknown_rope_type.json", "rope_scaling.type"},
                      broken_case{"linear_missing_factor.json", "rope_scaling.factor"},
                      broken_case{"yarn_missing_factor.json", "rope_scaling.factor"},
                      broken_case{"theta_contradiction.json", "rope_parameters.rope_theta"},
                      broken_case{"odd_partial_rotary.json", "partial_rotary_factor"},
                      broken_case{"non_numeric_theta.json", "rope_theta"},
                      broken_case{"negative_max_positions.json", "max_position_embeddings"},
                      broken_case{"longrope_wrong_length.json", "rope_scaling.short_factor"},
                      broken_case{"llama3_missing_original.json", "original_max_position_embeddings"},
                      broken_case{"llama3_bad_freq_factors.json", "rope_scaling.high_freq_factor"},
                      broken_case{"theta_not_above_one.json", "rope_theta"},
                      broken_case{"bad_layout.json", "ropecheck_layout"},
                      broken_case{"factor_not_number.json", "rope_scaling.factor"},
                      broken_case{"not_json.json", "not valid JSON"},
                      broken_case{"unknown_block_key.json", "rope_scaling.finetuned"},
                      broken_case{"unknown_rope_key.json", "rope_pct"},
                      broken_case{"mrope_section_short.json", "rope_scaling.mrope_section"},
                      broken_case{"rope_interleave_not_deepseek.json", "rope_interleave"}),
    [](const ::testing::TestParamInfo<broken_case>& case_info) {  // `info` would shadow the macro's own
      std::string n = case_info.param.file;
      n = n.substr(0, n.find('.'));
      return n;
    });

TEST(HfConfig, UnknownRopeTypeListsTheKnownOnes) {
  try {
    (void)parse_hf_config(json::parse(R"({"model_type": "llama", "head_dim": 64, "rope_scaling": {"rope_type": "xpos"}})"));
    FAIL();
  } catch (const config_error& e) {
    const std::string msg = e.what();
    for (const char* known : {"default", "linear", "dynamic", "yarn", "llama3", "longrope"})
      EXPECT_NE(msg.find(known), std::string::npos) << msg;
    EXPECT_TRUE(e.file().empty());
  }
}

TEST(HfConfig, ContradictoryTypeAndRopeTypeAreRejected) {
  EXPECT_THROW((void)parse_hf_config(json::parse(
                   R"({"model_type": "llama", "head_dim": 64, "rope_scaling": {"rope_type": "linear", "type": "dynamic", "factor": 2}})")),
               config_error);
}

TEST(HfConfig, RotaryDimContradictingPartialRotaryFactorIsRejected) {
  EXPECT_THROW((void)parse_hf_config(json::parse(
                   R"({"model_type": "nemotron", "head_dim": 128, "partial_rotary_factor": 0.5, "rotary_dim": 32})")),
               config_error);
}

TEST(HfConfig, ContradictoryOriginalLengthsAreRejected) {
  json j = json::parse(R"({"model_type": "llama", "head_dim": 64, "max_position_embeddings": 65536, "original_max_position_embeddings": 4096,
      "rope_scaling": {"rope_type": "yarn", "factor": 16, "original_max_position_embeddings": 8192}})");
  EXPECT_THROW((void)parse_hf_config(j), config_error);
}

TEST(HfConfig, TruncateMustBeABoolean) {
  EXPECT_THROW((void)parse_hf_config(json::parse(
                   R"({"model_type": "llama", "head_dim": 64, "rope_scaling": {"rope_type": "yarn", "factor": 4, "truncate": "no"}})")),
               config_error);
}

TEST(HfConfig, ANonObjectIsRejected) { EXPECT_THROW((void)parse_hf_config(json::parse("[1, 2]")), config_error); }

TEST(HfConfig, AMissingFileIsAConfigErrorNamingIt) {
  try {
    (void)load_hf_config(configs / "no_such_config.json");
    FAIL();
  } catch (const config_error& e) {
    EXPECT_NE(std::string(e.what()).find("no_such_config.json"), std::string::npos);
  }
}

}  // namespace

namespace {
// Found by fuzz/fuzz_config_json: 20,000 nested brackets overflowed the stack in the messages'
// json::dump(). Now a config_error naming the depth; 64 levels still parse to a message about the
// field, not the depth.
TEST(HfConfig, DeepNestingIsRejectedWithoutRecursion) {
  std::string deep = "{\"rope_scaling\": ";
  for (int i = 0; i < 100000; ++i) deep += '[';
  for (int i = 0; i < 100000; ++i) deep += ']';
  deep += "}";
  try {
    (void)ropecheck::parse_hf_config(nlohmann::json::parse(deep));
    FAIL() << "a 100000-deep config was accepted";
  } catch (const ropecheck::config_error& e) {
    EXPECT_NE(std::string(e.what()).find("nests deeper than 64 levels"), std::string::npos) << e.what();
  }
  std::string shallow = "{\"model_type\": \"llama\", \"hidden_size\": 4096, \"num_attention_heads\": 32, \"rope_scaling\": ";
  for (int i = 0; i < 10; ++i) shallow += '[';
  for (int i = 0; i < 10; ++i) shallow += ']';
  shallow += "}";
  try {
    (void)ropecheck::parse_hf_config(nlohmann::json::parse(shallow));
    FAIL() << "a list as rope_scaling was accepted";
  } catch (const ropecheck::config_error& e) {
    EXPECT_NE(std::string(e.what()).find("rope_scaling"), std::string::npos) << e.what();
  }
}
}  // namespace

namespace {
// Found by fuzz/fuzz_config_json (the reproducers are in fuzz/corpus/config_json/finding_*.json):
// each parameter valid alone, the schedule infinite. Now refused with the field named.
// A layer type the family's code does not scale (OLMo 3's sliding layers: YaRN on full attention only)
// keeps none of the rule's parameters: its convention is a default one, field for field (the dedup of
// conventions and the claim's facts compare whole configs), and no fact of the rule is left on it.
TEST(HfConfig, UnscaledLayersKeepNoParameterOfTheRule) {
  const json j = json::parse(R"({"model_type": "olmo3", "hidden_size": 512, "num_attention_heads": 4, "num_hidden_layers": 4,
    "max_position_embeddings": 65536, "rope_theta": 500000, "sliding_window": 4096,
    "layer_types": ["sliding_attention", "sliding_attention", "sliding_attention", "full_attention"],
    "rope_scaling": {"rope_type": "yarn", "factor": 8.0, "original_max_position_embeddings": 8192,
                     "attention_factor": 1.2, "beta_fast": 16.0, "beta_slow": 2.0}})");
  const auto p = ropecheck::parse_hf_config_with_notes(j);
  const rope_config full = ropecheck::layer_convention(p, 3), sliding = ropecheck::layer_convention(p, 0);
  EXPECT_EQ(full.scaling, scaling_kind::yarn);
  EXPECT_EQ(full.beta_fast, 16.0);
  rope_config plain;  // the sliding layer: the full layer's geometry, base and lengths, no rule
  plain.head_dim = full.head_dim;
  plain.rotary_dim = full.rotary_dim;
  plain.base = full.base;
  plain.pair_layout = full.pair_layout;
  plain.max_position_embeddings = full.max_position_embeddings;
  plain.original_max_position_embeddings = full.original_max_position_embeddings;
  EXPECT_EQ(sliding, plain) << "beta_fast " << sliding.beta_fast << ", beta_slow " << sliding.beta_slow;
  for (const auto& c : p.conventions) {
    if (c.type != "sliding_attention") continue;
    for (const auto& f : c.facts) EXPECT_NE(f.field, "beta_fast/beta_slow") << f.value << " " << f.source;
  }
}

TEST(HfConfig, SchedulesThatOverflowAreRefused) {
  const char* cases[][2] = {
      {R"({"model_type": "llama", "head_dim": 4, "rope_scaling": {"type": "linear", "factor": 1e-320}})", "inv_freq is not finite"},
      {R"({"model_type": "phi3", "head_dim": 4, "max_position_embeddings": 8192, "original_max_position_embeddings": 4096,
           "rope_scaling": {"type": "longrope", "short_factor": [1.0, 5e-324], "long_factor": [1.0, 1.0]}})",
       "inv_freq is not finite"},
      {R"({"model_type": "phi3", "head_dim": 4, "max_position_embeddings": 2, "original_max_position_embeddings": 1,
           "rope_scaling": {"type": "longrope", "short_factor": [1.0, 1.0], "long_factor": [1.0, 1.0]}})",
       "must be > 1 for LongRoPE"},
  };
  for (const auto& [text, want] : cases) {
    try {
      const auto cfg = ropecheck::parse_hf_config(nlohmann::json::parse(text));
      (void)ropecheck::compute_frequencies<double>(cfg);
      (void)ropecheck::compute_frequencies<double>(cfg, cfg.trained_length() + 1);
      ADD_FAILURE() << "accepted: " << text;
    } catch (const std::exception& e) {  // config_error from the parser or invalid_argument from the schedule
      EXPECT_NE(std::string(e.what()).find(want), std::string::npos) << e.what();
    }
  }
}
}  // namespace
