// tests/audit/bias_table_test.cpp — read_t5_table (tools/audit/bias_table.hpp): the table of a .npy file or of a
// .safetensors file (alone, or the one relative_attention_bias.weight among other tensors) read back exactly; every
// other shape, several candidates, another extension and a non-finite value refused naming the flag and the file.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "bias_table.hpp"
#include "tensor_write.hpp"

namespace ropecheck::audit {
namespace {

namespace fs = std::filesystem;

tensor_out f32(const std::string& name, std::vector<std::int64_t> shape, const std::vector<float>& v) {
  tensor_out t{name, dtype::f32, std::move(shape), std::vector<unsigned char>(v.size() * 4)};
  std::memcpy(t.bytes.data(), v.data(), t.bytes.size());
  return t;
}

std::vector<float> values(int n) {
  std::vector<float> v;
  for (int i = 0; i < n; ++i) v.push_back(0.25f * static_cast<float>(i) - 3.0f);
  return v;
}

std::string refusal(const fs::path& file, int nb, int heads) {
  try {
    (void)read_t5_table(file, nb, heads);
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "";
}

class BiasTable : public ::testing::Test {
 protected:
  fs::path dir = fs::temp_directory_path() / ("bias_table_test_" + std::to_string(::getpid()));
  void SetUp() override { fs::create_directories(dir); }
  void TearDown() override { fs::remove_all(dir); }
};

TEST_F(BiasTable, OneTensorOrTheOneTableAmongOthersIsReadExactly) {
  const std::vector<float> v = values(32 * 4);
  write_safetensors(dir / "alone.safetensors", {f32("anything", {32, 4}, v)}, {});
  const std::vector<double> a = read_t5_table(dir / "alone.safetensors", 32, 4);
  ASSERT_EQ(a.size(), v.size());
  for (std::size_t i = 0; i < v.size(); ++i) EXPECT_EQ(a[i], static_cast<double>(v[i]));
  write_safetensors(dir / "model.safetensors",
                    {f32("encoder.block.0.layer.0.SelfAttention.relative_attention_bias.weight", {32, 4}, v),
                     f32("encoder.block.0.layer.0.SelfAttention.q.weight", {4, 4}, values(16))},
                    {});
  EXPECT_EQ(read_t5_table(dir / "model.safetensors", 32, 4), a);
}

TEST_F(BiasTable, EverythingElseIsRefusedNamingTheFlagAndTheFile) {
  const std::vector<float> v = values(32 * 4);
  write_safetensors(dir / "two.safetensors",
                    {f32("encoder.relative_attention_bias.weight", {32, 4}, v), f32("decoder.relative_attention_bias.weight", {32, 4}, v)},
                    {});
  const std::string two = refusal(dir / "two.safetensors", 32, 4);
  EXPECT_NE(two.find("--t5-table: "), std::string::npos) << two;
  EXPECT_NE(two.find("decoder.relative_attention_bias.weight, encoder.relative_attention_bias.weight"), std::string::npos) << two;
  write_safetensors(dir / "none.safetensors", {f32("a", {32, 4}, v), f32("b", {4}, values(4))}, {});
  EXPECT_NE(refusal(dir / "none.safetensors", 32, 4).find("no single table (a, b)"), std::string::npos);
  write_safetensors(dir / "t.safetensors", {f32("w", {4, 32}, v)}, {});
  const std::string t = refusal(dir / "t.safetensors", 32, 4);
  EXPECT_NE(t.find("shape [4, 32], the claim's table is [num_buckets 32, heads 4]"), std::string::npos) << t;
  EXPECT_NE(t.find("transposed"), std::string::npos) << t;
  EXPECT_EQ(refusal(dir / "t.safetensors", 16, 8).find("transposed"), std::string::npos);  // [4, 32] is not [8, 16]
  std::vector<float> bad = v;
  bad[5] = NAN;
  write_safetensors(dir / "nan.safetensors", {f32("w", {32, 4}, bad)}, {});
  EXPECT_NE(refusal(dir / "nan.safetensors", 32, 4).find("NaN or infinite"), std::string::npos);
  fs::copy_file(dir / "t.safetensors", dir / "t.bin");
  EXPECT_NE(refusal(dir / "t.bin", 32, 4).find("a .npy or .safetensors file"), std::string::npos);
  EXPECT_NE(refusal(dir / "missing.npy", 32, 4).find("--t5-table: "), std::string::npos);
}

}  // namespace
}  // namespace ropecheck::audit
