// tests/audit/attention_outputs_test.cpp — tools/audit/attention_outputs.hpp: the outputs file of the probe's
// attention form, made as the Python door makes it (the probe's tensors, probe::probe_tensors_attention, plus
// attention.o and attention.o_again; here every row of o uniform over its call's keys: valid softmax weights).
// The layout is checked tensor by tensor; the probe made again from the claim must be the file's.
#include "attention_outputs.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "probe_file.hpp"
#include "ropecheck/judge/readout.hpp"
#include "ropecheck/judge/sentence.hpp"
#include "ropecheck/presets.hpp"
#include "support/scratch_dir.hpp"
#include "tensor_write.hpp"

namespace {

namespace fs = std::filesystem;
using namespace ropecheck;
using audit::tensor_out;

rope_config claim() { return *find_preset("llama3-8b"); }

const judge::attention_probe& probe() {
  static const judge::attention_probe p = judge::make_attention_probe(claim(), 4, 2, 128);
  return p;
}

std::vector<tensor_out> uniform_outputs() {
  const auto& p = probe();
  std::vector<tensor_out> t = probe::probe_tensors_attention(p, plugin::dtype::f32);
  std::vector<double> o(p.q_positions.size() * static_cast<std::size_t>(p.q_heads * p.value_dim));
  for (int c = 0; c < p.calls_count(); ++c) {
    const auto nk = static_cast<std::size_t>(p.key_calls[static_cast<std::size_t>(c) + 1] - p.key_calls[static_cast<std::size_t>(c)]);
    const auto e = static_cast<std::size_t>(p.calls[static_cast<std::size_t>(c)]);
    for (std::size_t h = 0; h < static_cast<std::size_t>(p.q_heads); ++h)
      for (std::size_t j = 0; j < nk; ++j) o[(e * static_cast<std::size_t>(p.q_heads) + h) * static_cast<std::size_t>(p.value_dim) + j] = 1.0 / static_cast<double>(nk);
  }
  tensor_out out{"attention.o", audit::dtype::f32, {static_cast<std::int64_t>(p.q_positions.size()), p.q_heads, p.value_dim}, {}};
  out.bytes.resize(o.size() * 4);
  plugin::to_wire(plugin::dtype::f32, o, out.bytes.data());
  t.push_back(out);
  out.name = "attention.o_again";
  t.push_back(out);
  return t;
}

std::map<std::string, std::string> metadata() {
  return {{"ropecheck_probe", "1"}, {"ropecheck_probe_outputs", "1"}, {"form", "attention"}, {"heads", "4"}, {"kv_heads", "2"},
          {"head_dim", "128"}, {"value_dim", "128"}, {"softmax_scale", judge::fmt("%.17g", probe().softmax_scale)},
          {"max_position", "0"}, {"dtype", "float32"}};
}

class AttentionOutputs : public ::testing::Test {
 protected:
  fs::path write(const std::vector<tensor_out>& t, const std::map<std::string, std::string>& meta = metadata()) {
    const fs::path f = dir_ / "outputs.safetensors";
    audit::write_safetensors(f, t, meta);
    return f;
  }
  void expect_rejected(const fs::path& f, const std::string& word, const rope_config& c = claim()) {
    try {
      const auto contents = audit::read_attention_outputs(f);
      (void)audit::matching_probe(f, contents, c);
      ADD_FAILURE() << "read; expected a rejection naming " << word;
    } catch (const audit::input_error& e) {
      EXPECT_NE(std::string(e.what()).find(word), std::string::npos) << e.what();
    }
  }
  test::scratch_dir dir_{"ropecheck_attention_outputs_test"};
};

TEST_F(AttentionOutputs, a_valid_file_reads_and_its_probe_is_the_claims) {
  const fs::path f = write(uniform_outputs());
  EXPECT_TRUE(audit::is_attention_outputs(f));
  const auto c = audit::read_attention_outputs(f);
  EXPECT_EQ(c.heads, 4);
  EXPECT_EQ(c.value_dim, 128);
  EXPECT_EQ(c.dtype, "float32");
  const auto p = audit::matching_probe(f, c, claim());
  EXPECT_EQ(p.q_positions, probe().q_positions);
  auto meta = metadata();
  meta["form"] = "qk";
  EXPECT_FALSE(audit::is_attention_outputs(write(uniform_outputs(), meta)));
}

TEST_F(AttentionOutputs, each_missing_tensor_and_metadata_field_is_named) {
  for (const char* name : {"attention.o", "attention.o_again", "attention.calls", "attention.k", "attention.v"}) {
    auto t = uniform_outputs();
    std::erase_if(t, [&](const tensor_out& x) { return x.name == name; });
    expect_rejected(write(t), name);
  }
  for (const char* key : {"value_dim", "softmax_scale", "kv_heads"}) {
    auto meta = metadata();
    meta.erase(key);
    expect_rejected(write(uniform_outputs(), meta), key);
  }
}

TEST_F(AttentionOutputs, an_output_of_another_shape_is_named_with_the_expected_shape) {
  auto t = uniform_outputs();
  auto& o = *std::find_if(t.begin(), t.end(), [](const tensor_out& x) { return x.name == "attention.o"; });
  o.shape.back() = 64;
  o.bytes.resize(o.bytes.size() / 2);
  expect_rejected(write(t), "attention.o is F32 [");
}

TEST_F(AttentionOutputs, a_probe_made_for_another_claim_is_refused) {
  auto interleaved = claim();
  interleaved.pair_layout = layout::interleaved;  // another design of q and k
  expect_rejected(write(uniform_outputs()), "attention.q", interleaved);
  auto longer = claim();
  longer.max_position_embeddings = 1 << 20;  // other query positions
  expect_rejected(write(uniform_outputs()), "attention.calls", longer);
}

}  // namespace
