// tests/audit/plugin_abi2_test.cpp — plugin.h ABI 2 as the loader reads it (tools/audit/plugin_loader.hpp):
// the claim by a config.json (config_path, layer, part) read exactly as the config reader reads it, the
// kernel's limits (max_position, negative_positions, supports_inverse, position_rows) validated against
// the claim, every bad declaration an error naming its field, and ABI 1 plugins unchanged.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "plugin_child.hpp"
#include "plugin_loader.hpp"
#include "ropecheck/config_json.hpp"

namespace ropecheck::plugin {
namespace {

const std::string configs = ROPECHECK_TEST_CONFIGS;  // tests/data/configs

void expect_error(const std::function<void()>& f, const std::vector<std::string>& needles) {
  try {
    f();
    ADD_FAILURE() << "expected plugin_error";
  } catch (const plugin_error& e) {
    const std::string what = e.what();
    for (const auto& n : needles) EXPECT_NE(what.find(n), std::string::npos) << "'" << n << "' not in: " << what;
  }
}

// An ABI 2 convention claiming `path` (flat fields left 0, as plugin.h asks).
ropecheck_convention by_config(const char* path) {
  ropecheck_convention c{};
  c.abi = 2;
  c.dtype = ROPECHECK_DTYPE_F32;
  c.config_path = path;
  c.layer = -1;
  c.position_rows = 1;
  return c;
}

TEST(PluginAbi2, an_abi_1_plugin_loads_with_abi_1_s_contract_as_its_limits) {
  const loaded_plugin p = load_plugin(ROPECHECK_HF_F32_PLUGIN);
  EXPECT_EQ(p.convention().abi, 1u);
  EXPECT_EQ(p.limits().max_position, 0);
  EXPECT_TRUE(p.limits().negative_positions);
  EXPECT_TRUE(p.limits().supports_inverse);
  EXPECT_EQ(p.limits().rows, 1);
}

TEST(PluginAbi2, a_longrope_claim_by_config_path_is_the_config_reader_s_convention) {
  const loaded_plugin p = load_plugin(ROPECHECK_LONGROPE_PLUGIN);
  const rope_config want = load_hf_config(configs + "/phi3_mini_128k.json");
  EXPECT_EQ(p.declared(), want);
  EXPECT_EQ(p.declared().scaling, scaling_kind::longrope);
  ASSERT_FALSE(p.claim_notes().empty());
  EXPECT_NE(p.claim_notes().front().find("phi3_mini_128k.json"), std::string::npos) << p.claim_notes().front();
}

TEST(PluginAbi2, with_a_config_path_the_flat_fields_are_not_read_but_a_nonzero_head_dim_must_agree) {
  const std::string path = configs + "/llama3_1_8b.json";
  ropecheck_convention c = by_config(path.c_str());
  c.base = 1234.5;  // not read
  c.scaling = 99;   // not read (it would be "unknown scaling kind" in the flat claim)
  EXPECT_EQ(to_rope_config(c, "x.so"), load_hf_config(path));
  c.head_dim = 128;  // agrees
  EXPECT_NO_THROW((void)to_rope_config(c, "x.so"));
  c.head_dim = 64;
  expect_error([&] { (void)to_rope_config(c, "x.so"); }, {"x.so", "ropecheck_convention.head_dim", "64", "128"});
}

TEST(PluginAbi2, an_unreadable_config_path_names_the_field_and_the_resolved_file) {
  ropecheck_convention c = by_config("missing.json");
  expect_error([&] { (void)to_rope_config(c, "x.so", "/opt/kernels/libk.so"); },
               {"x.so: ropecheck_convention.config_path: cannot read '/opt/kernels/missing.json'"});
}

TEST(PluginAbi2, a_relative_config_path_is_resolved_beside_the_library_an_absolute_one_kept) {
  EXPECT_EQ(resolve_config_path("c/config.json", "/a/b/libk.so"), std::filesystem::path("/a/b/c/config.json"));
  EXPECT_EQ(resolve_config_path("/etc/config.json", "/a/b/libk.so"), std::filesystem::path("/etc/config.json"));
}

TEST(PluginAbi2, layer_and_part_select_as_audit_config_does_and_bad_values_name_their_field) {
  const std::string path = configs + "/llama4_scout.json";
  const hf_config_parse parsed = load_hf_config_with_notes(path);
  ropecheck_convention c = by_config(path.c_str());
  EXPECT_EQ(to_rope_config(c), parsed.config);  // -1: the primary layer
  c.layer = 0;
  EXPECT_EQ(to_rope_config(c), layer_convention(parsed, 0));
  c.layer = parsed.num_layers;  // one past the last layer
  expect_error([&] { (void)to_rope_config(c); }, {"ropecheck_convention.layer", std::to_string(parsed.num_layers)});
  c.layer = -2;
  expect_error([&] { (void)to_rope_config(c); }, {"ropecheck_convention.layer", "-2"});
  c.layer = -1;
  c.part = "attention";
  EXPECT_EQ(to_rope_config(c), parsed.config);
  c.part = "indexer";  // Llama 4 has no lightning indexer
  expect_error([&] { (void)to_rope_config(c); }, {"ropecheck_convention.part", "no lightning indexer"});
  c.part = "mlp";
  expect_error([&] { (void)to_rope_config(c); }, {"ropecheck_convention.part", "\"mlp\""});
}

TEST(PluginAbi2, an_abi_the_loader_does_not_know_is_refused_naming_the_field) {
  ropecheck_convention c = by_config(nullptr);
  c.abi = 4;
  expect_error([&] { (void)to_rope_config(c); }, {"ropecheck_convention.abi", "plugin declares 4, loader implements 1 to 3"});
  c.abi = 0;
  expect_error([&] { (void)to_rope_config(c); }, {"ropecheck_convention.abi", "plugin declares 0"});
}

TEST(PluginAbi2, max_position_must_cover_the_probe_s_dense_positions_0_to_63) {
  const rope_config claim;
  ropecheck_convention c = by_config(nullptr);
  c.max_position = min_max_position;  // 63: exactly the dense positions, accepted
  EXPECT_EQ(limits_of(c, claim, false).max_position, 63);
  c.max_position = min_max_position - 1;
  expect_error([&] { (void)limits_of(c, claim, false); },
               {"ropecheck_convention.max_position", "62 is below the probe's dense positions 0..63", "positions 63..63"});
  c.max_position = -1;
  expect_error([&] { (void)limits_of(c, claim, false); }, {"ropecheck_convention.max_position", "-1"});
  c.max_position = 0;  // no limit
  EXPECT_EQ(limits_of(c, claim, false).max_position, 0);
}

TEST(PluginAbi2, position_rows_must_be_the_claim_s_rows_and_m_rope_needs_apply2) {
  const rope_config mrope = load_hf_config(configs + "/qwen2_5_vl_7b.json");
  ASSERT_EQ(mrope.position_rows(), 3);
  ropecheck_convention c = by_config(nullptr);
  c.position_rows = 1;
  expect_error([&] { (void)limits_of(c, mrope, true); },
               {"ropecheck_convention.position_rows", "1, but the claim is M-RoPE with 3 position rows"});
  c.position_rows = 4;
  expect_error([&] { (void)limits_of(c, mrope, true); }, {"ropecheck_convention.position_rows", "4, but"});
  c.position_rows = 3;
  expect_error([&] { (void)limits_of(c, mrope, false); }, {"ropecheck_convention.position_rows", "ropecheck_plugin_apply2"});
  EXPECT_EQ(limits_of(c, mrope, true).rows, 3);
  c.position_rows = 0;  // read as 1: right for 1-D RoPE
  EXPECT_EQ(limits_of(c, rope_config{}, false).rows, 1);
  c.position_rows = 3;
  expect_error([&] { (void)limits_of(c, rope_config{}, true); }, {"ropecheck_convention.position_rows", "1-D RoPE"});
  c.abi = 1;  // an M-RoPE claim cannot be ABI 1
  expect_error([&] { (void)limits_of(c, mrope, true); }, {"ropecheck_convention.abi", "M-RoPE"});
}

TEST(PluginAbi2, a_cache_kernel_s_limits_come_through_and_it_errs_past_its_cache) {
  const loaded_plugin p = load_plugin(ROPECHECK_CACHE_PLUGIN);
  EXPECT_EQ(p.limits().max_position, 8191);
  EXPECT_FALSE(p.limits().negative_positions);
  EXPECT_TRUE(p.limits().supports_inverse);
  const int hd = p.declared().head_dim;
  std::vector<float> x(static_cast<std::size_t>(hd), 0.5f), y(x.size());
  const std::int64_t last = 8191, past = 8192;
  EXPECT_EQ(p.apply_raw(x.data(), y.data(), &last, 1, 1, false), 0);
  EXPECT_NE(p.apply_raw(x.data(), y.data(), &past, 1, 1, false), 0);
}

TEST(PluginAbi2, without_supports_inverse_or_negative_positions_the_inverse_is_never_asked) {
  const loaded_plugin p = load_plugin(ROPECHECK_CACHE_NO_INVERSE_PLUGIN);
  EXPECT_FALSE(p.limits().has_inverse());
  const int hd = p.declared().head_dim;
  std::vector<float> x(static_cast<std::size_t>(hd), 0.5f), y(x.size());
  const std::int64_t pos = 5;
  EXPECT_THROW((void)p.apply_raw(x.data(), y.data(), &pos, 1, 1, true), std::logic_error);
  in_process_door door(p);
  EXPECT_FALSE(door.limits().has_inverse());
}

}  // namespace
}  // namespace ropecheck::plugin
