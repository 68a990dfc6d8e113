// Foreign kernels behind the C plugin interface (src/ropecheck/plugin.h), audited with the same
// property drivers as ropecheck's own kernels (bind_plugin of rope_under_test.hpp, defined in the
// library behind `ropecheck audit --plugin`, tools/audit/plugin_audit.cpp): the example fp32 HF
// plugin must pass every property, the same kernel with positions held in bf16 must fail at least
// one (its shrunk counterexample is printed), and the loader must reject a missing file, a missing
// symbol, an ABI mismatch and an invalid convention with a message naming what is wrong.
#include <gtest/gtest.h>
#include <rapidcheck.h>

#include <algorithm>
#include <iostream>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "framework.hpp"
#include "plugin_loader.hpp"
#include "rope_properties.hpp"
#include "rope_under_test.hpp"

#ifndef ROPECHECK_EXAMPLE_PLUGIN
#error "ROPECHECK_EXAMPLE_PLUGIN must name the example plugin's .so"
#endif
#ifndef ROPECHECK_EXAMPLE_PLUGIN_BUGGY
#error "ROPECHECK_EXAMPLE_PLUGIN_BUGGY must name the buggy example plugin's .so"
#endif

namespace ropecheck::test {
namespace {

using ropecheck::plugin::load_options;
using ropecheck::plugin::load_plugin;
using ropecheck::plugin::loaded_plugin;
using ropecheck::plugin::plugin_error;

// The ABI-4 variant (an ABI the loader does not know) sits next to the example plugin (same directory,
// tools/CMakeLists.txt).
std::string abi4_plugin_path() {
  std::string p = ROPECHECK_EXAMPLE_PLUGIN;
  const auto dot = p.rfind(".so");
  return p.substr(0, dot) + "_abi4" + p.substr(dot);
}

const rope_under_test& correct_plugin() {
  static const rope_under_test r = bind_plugin(load_plugin(ROPECHECK_EXAMPLE_PLUGIN));
  return r;
}
const rope_under_test& buggy_plugin() {
  static const rope_under_test r = bind_plugin(load_plugin(ROPECHECK_EXAMPLE_PLUGIN_BUGGY));
  return r;
}

// Expect `f` to throw E whose message contains every one of `needles`.
template <class E, class F>
void expect_throw_containing(F&& f, const std::vector<std::string>& needles) {
  try {
    f();
    ADD_FAILURE() << "expected an exception containing '" << needles.front() << "'";
  } catch (const E& e) {
    const std::string what = e.what();
    for (const auto& n : needles) EXPECT_NE(what.find(n), std::string::npos) << "'" << n << "' not in: " << what;
  }
}

// ---------------------------------------------------------------------------------------------
// The loader.

TEST(PluginLoader, loads_the_example_plugin_and_its_declared_convention) {
  const auto p = load_plugin(ROPECHECK_EXAMPLE_PLUGIN);
  EXPECT_EQ(p.name(), "example hf fp32");
  EXPECT_EQ(p.element_type(), ropecheck::plugin::dtype::f32);
  EXPECT_EQ(p.convention().abi, 1u);  // an ABI 1 plugin built against the ABI 2 header
  EXPECT_EQ(p.declared(), *find_preset("llama2-7b"));
}

TEST(PluginLoader, a_missing_file_is_reported_with_its_path) {
  const std::string path = "/nonexistent/dir/libno_such_plugin.so";
  expect_throw_containing<plugin_error>([&] { (void)load_plugin(path); }, {path, "cannot load plugin"});
}

TEST(PluginLoader, a_missing_symbol_is_reported_with_the_file_and_the_symbol) {
  load_options o;
  o.apply_symbol = "ropecheck_plugin_apply_v0";  // test hook: a name the library does not export
  expect_throw_containing<plugin_error>([&] { (void)load_plugin(ROPECHECK_EXAMPLE_PLUGIN_BUGGY, o); },
                                        {ROPECHECK_EXAMPLE_PLUGIN_BUGGY, "missing required symbol 'ropecheck_plugin_apply_v0'"});
  load_options d;
  d.describe_symbol = "describe";
  expect_throw_containing<plugin_error>([&] { (void)load_plugin(ROPECHECK_EXAMPLE_PLUGIN, d); },
                                        {ROPECHECK_EXAMPLE_PLUGIN, "'describe'"});
}

TEST(PluginLoader, an_optional_name_symbol_may_be_missing) {
  load_options o;
  o.name_symbol = "no_name_here";
  const auto p = load_plugin(ROPECHECK_EXAMPLE_PLUGIN, o);
  EXPECT_EQ(p.name(), "libropecheck_example_plugin");  // the file's stem
}

TEST(PluginLoader, an_abi_mismatch_is_rejected) {
  const auto path = abi4_plugin_path();
  expect_throw_containing<plugin_error>([&] { (void)load_plugin(path); },
                                        {path, "ropecheck_convention.abi", "ABI mismatch: plugin declares 4, loader implements 1 to 3"});
}

TEST(PluginLoader, an_invalid_convention_is_rejected_naming_the_field) {
  const auto good = load_plugin(ROPECHECK_EXAMPLE_PLUGIN).convention();
  auto odd = good;
  odd.rotary_dim = 127;
  expect_throw_containing<plugin_error>([&] { (void)ropecheck::plugin::to_rope_config(odd, "x.so"); },
                                        {"x.so", "rope_config.rotary_dim"});
  auto base = good;
  base.base = 1.0;
  expect_throw_containing<plugin_error>([&] { (void)ropecheck::plugin::to_rope_config(base); }, {"rope_config.base"});
  auto lay = good;
  lay.layout = 7;
  expect_throw_containing<plugin_error>([&] { (void)ropecheck::plugin::to_rope_config(lay); }, {"ropecheck_convention.layout"});
  auto dt = good;
  dt.dtype = 9;
  expect_throw_containing<plugin_error>([&] { (void)ropecheck::plugin::to_rope_config(dt); }, {"ropecheck_convention.dtype"});
  auto lr = good;
  lr.scaling = ROPECHECK_SCALING_LONGROPE;
  lr.factor = 4;
  expect_throw_containing<plugin_error>([&] { (void)ropecheck::plugin::to_rope_config(lr); }, {"ropecheck_convention.scaling"});
  auto yarn = good;
  yarn.scaling = ROPECHECK_SCALING_YARN;
  yarn.factor = 4;
  yarn.attention_factor = 1.25;
  const auto cfg = ropecheck::plugin::to_rope_config(yarn);
  EXPECT_EQ(cfg.scaling, scaling_kind::yarn);
  ASSERT_TRUE(cfg.attention_factor.has_value());
  EXPECT_EQ(*cfg.attention_factor, 1.25);
}

TEST(PluginLoader, apply_rejects_inputs_not_representable_in_the_plugin_dtype_and_wrong_sizes) {
  const auto p = load_plugin(ROPECHECK_EXAMPLE_PLUGIN);
  std::vector<long double> x(128, 0.5L), y(128);
  x[3] = 1.0L + 0x1p-40L;  // not a float
  expect_throw_containing<std::domain_error>([&] { p.apply(x, y, 1, 7, false); }, {"x[3]", "float"});
  std::vector<long double> short_x(100), short_y(100);
  EXPECT_THROW(p.apply(short_x, short_y, 1, 7, false), std::invalid_argument);
}

// The correct plugin computes bit for bit what ropecheck's own fp32 HF kernel computes.
TEST(PluginLoader, the_correct_plugin_matches_ropecheck_s_fp32_hf_kernel_bit_for_bit) {
  const auto& plug = correct_plugin();
  const named_config nc{"llama2-7b", *find_preset("llama2-7b"), 0};
  const auto own = bind_kernel<float, float>("hf_float", nc, hf_angle<float>(nc.cfg), hf_model<float>(nc));
  std::vector<long double> x(256);
  for (std::size_t j = 0; j < x.size(); ++j) x[j] = static_cast<long double>(static_cast<float>(j) * 0.125f - 7.0f);
  for (const std::int64_t pos : {std::int64_t{0}, std::int64_t{1}, std::int64_t{257}, std::int64_t{4095},
                                 std::int64_t{1} << 20, (std::int64_t{1} << 24) + 1})
    for (const auto sense : {rotation_sense::forward, rotation_sense::inverse}) {
      std::vector<long double> a(x.size()), b(x.size());
      plug.rotate(x, a, 2, pos, sense);
      own.rotate(x, b, 2, pos, sense);
      EXPECT_EQ(a, b) << "position " << pos;
    }
}

#if defined(ROPECHECK_FOREIGN_HF_F32) && defined(ROPECHECK_FOREIGN_GGML_NORM_F32)
// The example plugins of tools/audit/plugins/ are written from the frameworks' sources, sharing no
// code with ropecheck: where ropecheck emulates the same framework (hf_angle<float>, ggml_angle), the
// two must agree bit for bit — evidence that each side reads its framework right.
TEST(PluginLoader, the_foreign_hf_and_ggml_plugins_match_ropecheck_s_emulations_bit_for_bit) {
  struct pair_case {
    const char* path;
    rope_config cfg;
    bool ggml;
  };
  rope_config hf = *find_preset("llama2-7b");
  hf.max_position_embeddings = 4096;
  rope_config norm = hf;
  norm.pair_layout = layout::interleaved;
  for (const auto& c : {pair_case{ROPECHECK_FOREIGN_HF_F32, hf, false}, pair_case{ROPECHECK_FOREIGN_GGML_NORM_F32, norm, true}}) {
    SCOPED_TRACE(c.path);
    const auto plug = bind_plugin(load_plugin(c.path));
    const named_config nc{"foreign", c.cfg, 0};
    const auto own = c.ggml ? bind_kernel<float, float>("ggml_float", nc, ggml_angle(nc.cfg), ggml_model(nc))
                            : bind_kernel<float, float>("hf_float", nc, hf_angle<float>(nc.cfg), hf_model<float>(nc));
    std::vector<long double> x(256);
    for (std::size_t j = 0; j < x.size(); ++j) x[j] = static_cast<long double>(static_cast<float>(j) * 0.125f - 7.0f);
    for (const std::int64_t pos : {std::int64_t{0}, std::int64_t{1}, std::int64_t{257}, std::int64_t{4095},
                                   std::int64_t{1} << 20, (std::int64_t{1} << 24) + 1})
      for (const auto sense : {rotation_sense::forward, rotation_sense::inverse}) {
        std::vector<long double> a(x.size()), b(x.size());
        plug.rotate(x, a, 2, pos, sense);
        own.rotate(x, b, 2, pos, sense);
        EXPECT_EQ(a, b) << "position " << pos << (sense == rotation_sense::inverse ? " inverse" : "");
      }
  }
}
#endif

// ---------------------------------------------------------------------------------------------
// The audit: every property of the suite.

class PluginProperty : public ::testing::TestWithParam<std::size_t> {};

TEST_P(PluginProperty, the_correct_example_plugin_passes) {
  const auto p = rope_properties()[GetParam()];
  // p.cases: the materialised matrix checks a whole 128 x 128 matrix per case, 20 cases per 100
  // (as in rope_properties_test.cpp).
  const auto out = check_property(std::string("plugin/correct/") + p.name, p.make(correct_plugin()), false, p.cases);
  EXPECT_TRUE(out.passed) << p.name << ": " << out.report();
}

INSTANTIATE_TEST_SUITE_P(AllProperties, PluginProperty, ::testing::Range<std::size_t>(0, rope_properties().size()),
                         [](const auto& c) { return std::string(rope_properties()[c.param].name); });  // not `info`: the macro's own

TEST(PluginAudit, the_buggy_plugin_with_positions_in_bf16_fails_and_its_shrunk_counterexample_is_printed) {
  const auto& impl = buggy_plugin();
  std::vector<std::string> failed;
  for (const auto& p : rope_properties()) {
    const auto out = check_property(std::string("plugin/buggy/") + p.name, p.make(impl), /*quiet=*/true, p.cases);
    if (out.passed) continue;
    failed.push_back(p.name);
    std::cout << "[plugin audit] " << impl.name << " FAILS " << p.name << ": " << out.report() << "\n";
  }
  EXPECT_FALSE(failed.empty()) << impl.name << " passed every property: the audit missed a real bug";
  // rotation_matches_reference compares with the MPFR reference directly: positions > 256 are
  // rounded in bf16, so it must be among the failures.
  EXPECT_NE(std::find(failed.begin(), failed.end(), "rotation_matches_reference"), failed.end());
}

}  // namespace
}  // namespace ropecheck::test
