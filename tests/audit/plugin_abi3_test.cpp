// tests/audit/plugin_abi3_test.cpp — plugin.h ABI 3 as the loader and the doors read it (tools/audit/plugin_loader.hpp,
// plugin_child.hpp): ropecheck_plugin_apply_qk resolved for an ABI 3 plugin and called in this process and in the
// isolated child alike, never resolved for ABI 1 or 2; an ABI 2 plugin rebuilt with abi = ROPECHECK_PLUGIN_ABI (3)
// read field for field as its ABI 2 build (ABI 3 adds no field); an M-RoPE claim exporting apply_qk refused.
#include <gtest/gtest.h>

#include <csignal>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <vector>

#include "plugin_child.hpp"
#include "plugin_loader.hpp"

namespace ropecheck::plugin {
namespace {

// struct ropecheck_convention as ABI 2 laid it out (plugin.h at ABI 2, field for field). ABI 3 adds no field, so an
// ABI 2 plugin rebuilt against the ABI 3 header fills the same bytes with the same meanings; a field added later
// must break these assertions and keep its old meaning at zero (plugin.h).
struct abi2_convention {
  uint32_t abi;
  int32_t head_dim, rotary_dim;
  double base;
  int32_t layout, scaling;
  double factor;
  int64_t max_position_embeddings, original_max_position_embeddings;
  double beta_fast, beta_slow, low_freq_factor, high_freq_factor, attention_factor;
  int32_t dtype;
  const char* config_path;
  int32_t layer;
  const char* part;
  int64_t max_position;
  int32_t negative_positions, supports_inverse, position_rows;
};
static_assert(sizeof(ropecheck_convention) == sizeof(abi2_convention), "ABI 3 adds no field to ropecheck_convention");
static_assert(offsetof(ropecheck_convention, position_rows) == offsetof(abi2_convention, position_rows),
              "ABI 2's fields keep their places");
static_assert(offsetof(ropecheck_convention, max_position) == offsetof(abi2_convention, max_position),
              "ABI 2's fields keep their places");
static_assert(ROPECHECK_PLUGIN_ABI == 3, "this file tests ABI 3");

TEST(PluginAbi3, an_abi_3_plugin_exporting_apply_qk_has_it_and_an_abi_1_or_2_plugin_never_does) {
  EXPECT_TRUE(load_plugin(ROPECHECK_QK_PLUGIN).has_apply_qk());
  EXPECT_FALSE(load_plugin(ROPECHECK_HF_F32_PLUGIN).has_apply_qk());  // ABI 1, no such symbol
  // An ABI 1 and an ABI 2 plugin given a symbol of that name (their apply, under the qk name): not resolved, as
  // an ABI 1 plugin's apply2 is not.
  load_options o;
  o.apply_qk_symbol = "ropecheck_plugin_apply";
  EXPECT_FALSE(load_plugin(ROPECHECK_HF_F32_PLUGIN, o).has_apply_qk());
  EXPECT_FALSE(load_plugin(ROPECHECK_CACHE_NO_INVERSE_PLUGIN, o).has_apply_qk());
  EXPECT_FALSE(load_plugin(ROPECHECK_REBUILT_ABI3_PLUGIN).has_apply_qk());  // ABI 3 without the symbol
  EXPECT_THROW((void)load_plugin(ROPECHECK_HF_F32_PLUGIN).apply_qk_raw(nullptr, nullptr, nullptr, nullptr, nullptr, 0, 8, 2),
               std::logic_error);
}

TEST(PluginAbi3, an_abi_2_plugin_rebuilt_with_the_header_s_abi_reads_as_its_abi_2_build) {
  const loaded_plugin abi2 = load_plugin(ROPECHECK_CACHE_NO_INVERSE_PLUGIN);
  const loaded_plugin abi3 = load_plugin(ROPECHECK_REBUILT_ABI3_PLUGIN);
  EXPECT_EQ(abi2.convention().abi, 2u);
  EXPECT_EQ(abi3.convention().abi, 3u);
  EXPECT_EQ(abi3.declared(), abi2.declared());
  EXPECT_EQ(abi3.limits().max_position, abi2.limits().max_position);
  EXPECT_EQ(abi3.limits().negative_positions, abi2.limits().negative_positions);
  EXPECT_EQ(abi3.limits().supports_inverse, abi2.limits().supports_inverse);
  EXPECT_EQ(abi3.limits().rows, abi2.limits().rows);
  EXPECT_EQ(abi3.claim_notes(), abi2.claim_notes());
  EXPECT_FALSE(abi3.has_apply_qk());
  // What those limits are: the cache's last row, no negative positions, no inverse (each a check the audit
  // then leaves out and says so, as for the ABI 2 build).
  EXPECT_EQ(abi3.limits().max_position, 8191);
  EXPECT_FALSE(abi3.limits().negative_positions);
  EXPECT_FALSE(abi3.limits().supports_inverse);
}

TEST(PluginAbi3, an_m_rope_claim_exporting_apply_qk_is_refused_naming_position_rows) {
  try {
    (void)load_plugin(ROPECHECK_BAD_MROPE_QK_PLUGIN);
    ADD_FAILURE() << "an M-RoPE plugin exporting apply_qk was loaded";
  } catch (const plugin_error& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("ropecheck_convention.position_rows: 3 rows, but ropecheck_plugin_apply_qk takes one position per token"),
              std::string::npos)
        << m;
  }
}

// Two tokens at `positions`, 8 query and 2 key heads of 128 fp32 coordinates, through `door`'s apply_qk.
struct qk_answer {
  apply_outcome outcome;
  std::vector<float> q_out, k_out;
};
qk_answer call_qk(kernel_door& door, const std::vector<std::int64_t>& positions) {
  const std::size_t T = positions.size(), D = 128, Hq = 8, Hk = 2;
  std::vector<float> q(T * Hq * D), k(T * Hk * D);
  for (std::size_t i = 0; i < q.size(); ++i) q[i] = static_cast<float>(static_cast<int>(i % 255) - 127) / 128.0f;
  for (std::size_t i = 0; i < k.size(); ++i) k[i] = static_cast<float>(static_cast<int>((i * 7) % 255) - 127) / 128.0f;
  qk_answer a;
  a.q_out.assign(q.size(), 0.0f);
  a.k_out.assign(k.size(), 0.0f);
  const auto bytes = [](auto& v) { return std::span<unsigned char>(reinterpret_cast<unsigned char*>(v.data()), v.size() * 4); };
  a.outcome = door.apply_qk({bytes(q), bytes(k), bytes(a.q_out), bytes(a.k_out), positions, static_cast<int>(Hq), static_cast<int>(Hk)});
  return a;
}

TEST(PluginAbi3, apply_qk_crosses_the_child_mapping_as_the_in_process_call_takes_it) {
  const loaded_plugin p = load_plugin(ROPECHECK_QK_PLUGIN);
  in_process_door here(p);
  child_process_door child(p, 10);
  EXPECT_TRUE(here.has_apply_qk());
  EXPECT_TRUE(child.has_apply_qk());
  const std::vector<std::int64_t> positions = {4095, 4096};
  const qk_answer want = call_qk(here, positions), got = call_qk(child, positions);
  ASSERT_TRUE(want.outcome.ok()) << want.outcome.message;
  ASSERT_TRUE(got.outcome.ok()) << got.outcome.message;
  EXPECT_EQ(std::memcmp(got.q_out.data(), want.q_out.data(), got.q_out.size() * 4), 0);
  EXPECT_EQ(std::memcmp(got.k_out.data(), want.k_out.data(), got.k_out.size() * 4), 0);
  // Rotated (not copied): at position 4096 the outputs differ from the inputs.
  EXPECT_NE(want.q_out[8 * 128 + 1], static_cast<float>(static_cast<int>((8 * 128 + 1) % 255) - 127) / 128.0f);
  // A door that cannot call apply_qk says so instead of calling something else.
  in_process_door abi1(load_plugin(ROPECHECK_HF_F32_PLUGIN));
  EXPECT_FALSE(abi1.has_apply_qk());
}

TEST(PluginAbi3, a_crash_in_apply_qk_is_named_with_its_signal_and_the_entry) {
  child_process_door door(load_plugin(ROPECHECK_FAULT_QK_SEGV_PLUGIN), 10);
  EXPECT_TRUE(call_qk(door, {4095, 4096}).outcome.ok());  // the kernel crashes past 4096 only
  const apply_outcome o = call_qk(door, {4096, 4097}).outcome;
  EXPECT_EQ(o.status, apply_status::crashed) << o.message;
  EXPECT_EQ(o.signal, SIGSEGV) << o.message;
  EXPECT_NE(o.message.find("ropecheck_plugin_apply_qk crashed with SIGSEGV"), std::string::npos) << o.message;
  EXPECT_NE(o.message.find("8 query and 2 key heads"), std::string::npos) << o.message;
  EXPECT_TRUE(call_qk(door, {1, 2}).outcome.ok());  // a new child serves the next call
  EXPECT_EQ(door.forks(), 2);
}

}  // namespace
}  // namespace ropecheck::plugin
