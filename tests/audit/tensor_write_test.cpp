// tests/audit/tensor_write_test.cpp — tools/audit/tensor_write.hpp: the safetensors writer of the files
// ropecheck hands to other languages. What it writes is read back by the project's own reader
// (tensor_file.hpp scan_safetensors / parse_safetensors), names, dtypes, shapes, bytes and __metadata__
// equal; the layout the header states (u64 LE length, header padded with spaces to 8 bytes, the data
// back to back in the order given) is checked on the bytes; each rejection it documents is made; and
// write_safetensors replaces a file without leaving its temporary behind.
#include "tensor_write.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <map>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "tensor_file.hpp"
#include "support/scratch_dir.hpp"

namespace {

namespace fs = std::filesystem;
using ropecheck::audit::dtype;
using ropecheck::audit::dtype_size;
using ropecheck::audit::input_error;
using ropecheck::audit::tensor_out;

std::span<const unsigned char> as_bytes(const std::string& s) {
  return {reinterpret_cast<const unsigned char*>(s.data()), s.size()};
}

// n bytes of a fixed pattern (every byte value appears; nothing in them is decoded as an integer).
std::vector<unsigned char> pattern(std::size_t n, unsigned salt) {
  std::vector<unsigned char> b(n);
  for (std::size_t i = 0; i < n; ++i) b[i] = static_cast<unsigned char>((i * 37 + salt) & 0xff);
  return b;
}

std::size_t elements(const std::vector<std::int64_t>& shape) {
  std::size_t n = 1;
  for (const auto e : shape) n *= static_cast<std::size_t>(e);
  return n;
}

tensor_out floating(std::string name, dtype t, std::vector<std::int64_t> shape, unsigned salt) {
  const std::size_t n = elements(shape) * dtype_size(t);
  return {std::move(name), t, std::move(shape), pattern(n, salt)};
}

// One tensor of every dtype the reader knows, with a scalar, an empty tensor and a 3-D one, given in
// an order that is not the names' order.
std::vector<tensor_out> every_dtype() {
  std::vector<tensor_out> t;
  t.push_back(floating("z.f32", dtype::f32, {2, 3, 4}, 1));
  t.push_back(floating("a.bf16", dtype::bf16, {5}, 2));
  t.push_back(floating("m.f16", dtype::f16, {3, 1}, 3));
  t.push_back(floating("b.f64", dtype::f64, {}, 4));  // a scalar: one element
  t.push_back(floating("empty", dtype::f32, {0, 7}, 5));
  t.push_back({"i32", dtype::i32, {3}, {0x01, 0x00, 0x00, 0x00, 0xff, 0xff, 0xff, 0xff, 0x00, 0x00, 0x00, 0x80}});
  t.push_back({"i64", dtype::i64, {2, 2}, ropecheck::audit::i64_bytes({0, -1, (std::int64_t{1} << 53), -(std::int64_t{1} << 53)})});
  return t;
}

std::uint64_t header_length(const std::string& file) {
  std::uint64_t n = 0;
  for (int k = 0; k < 8; ++k) n |= static_cast<std::uint64_t>(static_cast<unsigned char>(file[static_cast<std::size_t>(k)])) << (8 * k);
  return n;
}

std::string read_file(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}

TEST(I64Bytes, each_value_is_eight_little_endian_twos_complement_bytes) {
  const auto b = ropecheck::audit::i64_bytes({0x0102030405060708, -1, 0, std::numeric_limits<std::int64_t>::min()});
  const std::vector<unsigned char> want{0x08, 0x07, 0x06, 0x05, 0x04, 0x03, 0x02, 0x01,  //
                                        0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,  //
                                        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,  //
                                        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x80};
  EXPECT_EQ(b, want);
  EXPECT_TRUE(ropecheck::audit::i64_bytes({}).empty());
}

TEST(SafetensorsBytes, every_dtype_reads_back_with_names_dtypes_shapes_bytes_and_metadata_equal) {
  const auto tensors = every_dtype();
  const std::map<std::string, std::string> meta{
      {"ropecheck_probe", "1"}, {"empty", ""}, {"quote\"and\\slash", "line\nbreak \u00e9"}, {"claim_args", "[\"--preset\",\"x\"]"}};
  const std::string file = ropecheck::audit::safetensors_bytes(tensors, meta);
  std::map<std::string, std::string> read_meta;
  const auto scanned = ropecheck::audit::scan_safetensors(as_bytes(file), "written.safetensors", &read_meta);
  EXPECT_EQ(read_meta, meta);
  ASSERT_EQ(scanned.size(), tensors.size());
  for (const tensor_out& t : tensors) {
    const auto it = scanned.find(t.name);
    ASSERT_NE(it, scanned.end()) << t.name;
    EXPECT_EQ(it->second.type, t.type) << t.name;
    EXPECT_EQ(it->second.shape, t.shape) << t.name;
    EXPECT_EQ(std::vector<unsigned char>(it->second.bytes.begin(), it->second.bytes.end()), t.bytes) << t.name;
  }
  // The decoding reader accepts it too (the I64 values are within its 2^53), values as written.
  const auto parsed = ropecheck::audit::parse_safetensors(as_bytes(file), "written.safetensors");
  EXPECT_EQ(parsed.at("i64").values, (std::vector<double>{0, -1, 9007199254740992.0, -9007199254740992.0}));
  EXPECT_EQ(parsed.at("i32").values, (std::vector<double>{1, -1, -2147483648.0}));
  EXPECT_EQ(parsed.at("b.f64").values.size(), 1u);
  EXPECT_TRUE(parsed.at("empty").values.empty());
}

TEST(SafetensorsBytes, the_data_follows_the_padded_header_back_to_back_in_the_order_given) {
  const auto tensors = every_dtype();
  const std::string file = ropecheck::audit::safetensors_bytes(tensors, {});
  const std::uint64_t n = header_length(file);
  ASSERT_LE(8 + n, file.size());
  EXPECT_EQ((8 + n) % 8, 0u) << "the data starts 8-byte aligned";
  std::string data;
  for (const auto& t : tensors) data.append(reinterpret_cast<const char*>(t.bytes.data()), t.bytes.size());
  EXPECT_EQ(file.substr(8 + n), data);
  const std::string header = file.substr(8, n);
  EXPECT_EQ(header.front(), '{');
  const auto last = header.find_last_not_of(' ');
  ASSERT_NE(last, std::string::npos);
  EXPECT_EQ(header[last], '}') << "only spaces pad the header";
  EXPECT_LT(n - 1 - last, 8u) << "at most 7 spaces of padding";
  // No tensors and no metadata: still a file the reader takes, with an empty __metadata__.
  std::map<std::string, std::string> meta{{"stale", "x"}};
  const std::string bare = ropecheck::audit::safetensors_bytes({}, {});
  EXPECT_TRUE(ropecheck::audit::scan_safetensors(as_bytes(bare), "bare", &meta).empty());
  EXPECT_TRUE(meta.empty());
}

// The padding: every residue of the JSON's length mod 8 (metadata values 0..15 bytes long) is padded to
// a multiple of 8 and reads back.
TEST(SafetensorsBytes, every_header_length_is_padded_to_a_multiple_of_eight) {
  for (std::size_t len = 0; len < 16; ++len) {
    const std::map<std::string, std::string> meta{{"k", std::string(len, 'v')}};
    const std::string file = ropecheck::audit::safetensors_bytes({floating("x", dtype::bf16, {3}, 9)}, meta);
    const std::uint64_t n = header_length(file);
    EXPECT_EQ(n % 8, 0u) << "value length " << len;
    EXPECT_EQ(file.size(), 8 + n + 6) << "value length " << len;
    std::map<std::string, std::string> back;
    (void)ropecheck::audit::scan_safetensors(as_bytes(file), "padded", &back);
    EXPECT_EQ(back, meta);
  }
}

void expect_invalid(const std::vector<tensor_out>& t, const std::string& words) {
  try {
    (void)ropecheck::audit::safetensors_bytes(t, {});
    ADD_FAILURE() << "accepted; expected a rejection saying: " << words;
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find(words), std::string::npos) << e.what();
  }
}

// At equality the bytes are accepted; one byte fewer or more is rejected, naming the tensor.
TEST(SafetensorsBytes, bytes_not_matching_shape_and_dtype_are_rejected_naming_the_tensor) {
  const tensor_out exact = floating("y", dtype::f16, {2, 3}, 7);  // 12 bytes
  EXPECT_NO_THROW((void)ropecheck::audit::safetensors_bytes({exact}, {}));
  tensor_out fewer = exact, more = exact;
  fewer.bytes.pop_back();
  more.bytes.push_back(0);
  expect_invalid({fewer}, "tensor 'y' holds 11 bytes, its shape and dtype need 12");
  expect_invalid({more}, "tensor 'y' holds 13 bytes, its shape and dtype need 12");
  // The same bytes under a wider dtype are too few: the size is shape x dtype, not the bytes alone.
  tensor_out wider = exact;
  wider.type = dtype::f32;
  expect_invalid({wider}, "tensor 'y' holds 12 bytes, its shape and dtype need 24");
  // An empty tensor needs no bytes, and a scalar one element.
  EXPECT_NO_THROW((void)ropecheck::audit::safetensors_bytes({{"e", dtype::i64, {3, 0}, {}}}, {}));
  expect_invalid({{"s", dtype::f64, {}, {}}}, "tensor 's' holds 0 bytes, its shape and dtype need 8");
}

TEST(SafetensorsBytes, a_repeated_or_reserved_name_is_rejected) {
  const tensor_out a = floating("x", dtype::f32, {1}, 1);
  expect_invalid({a, floating("p", dtype::f32, {2}, 2), a}, "tensor name 'x' repeats or is reserved");
  expect_invalid({floating("__metadata__", dtype::f32, {1}, 3)}, "tensor name '__metadata__' repeats or is reserved");
  // Names that differ only in case are two names.
  EXPECT_NO_THROW((void)ropecheck::audit::safetensors_bytes({a, floating("X", dtype::f32, {1}, 4)}, {}));
}

TEST(SafetensorsBytes, a_negative_extent_is_rejected_naming_the_tensor) {
  expect_invalid({{"neg", dtype::f32, {2, -1}, {}}}, "tensor 'neg' has a negative extent");
  // Two negative extents multiply to a positive count: still rejected.
  expect_invalid({{"neg2", dtype::f32, {-1, -2}, pattern(8, 0)}}, "tensor 'neg2' has a negative extent");
}

class WriteSafetensors : public ::testing::Test {
 protected:
  // The names of the directory's entries.
  std::vector<std::string> listing() const {
    std::vector<std::string> n;
    for (const auto& e : fs::directory_iterator(dir_)) n.push_back(e.path().filename().string());
    std::sort(n.begin(), n.end());
    return n;
  }
  ropecheck::test::scratch_dir dir_{"ropecheck_tensor_write_test"};
};

TEST_F(WriteSafetensors, writes_the_bytes_and_leaves_no_temporary) {
  const auto tensors = every_dtype();
  const std::map<std::string, std::string> meta{{"ropecheck_probe", "1"}};
  const fs::path f = dir_ / "probe.safetensors";
  ropecheck::audit::write_safetensors(f, tensors, meta);
  EXPECT_EQ(read_file(f), ropecheck::audit::safetensors_bytes(tensors, meta));
  EXPECT_EQ(listing(), std::vector<std::string>{"probe.safetensors"});
  std::map<std::string, std::string> back;
  EXPECT_EQ(ropecheck::audit::read_safetensors(f, &back).size(), tensors.size());
  EXPECT_EQ(back, meta);
}

// A longer file replaced by a shorter one: the new bytes exactly, nothing of the old left at the end.
TEST_F(WriteSafetensors, replaces_an_existing_file) {
  const fs::path f = dir_ / "out.safetensors";
  ropecheck::audit::write_safetensors(f, every_dtype(), {{"old", std::string(100, 'o')}});
  const std::vector<tensor_out> small{floating("x", dtype::f32, {1}, 3)};
  ropecheck::audit::write_safetensors(f, small, {{"new", "1"}});
  EXPECT_EQ(read_file(f), ropecheck::audit::safetensors_bytes(small, {{"new", "1"}}));
  EXPECT_EQ(listing(), std::vector<std::string>{"out.safetensors"});
}

// "to a temporary beside it, then renamed": the new file is another inode, so a hard link to the old
// one still holds the old bytes (writing into the file in place would change both).
TEST_F(WriteSafetensors, replaces_by_a_rename_not_by_writing_into_the_old_file) {
  const fs::path f = dir_ / "out.safetensors", link = dir_ / "old_link";
  const std::vector<tensor_out> old_t{floating("x", dtype::f32, {4}, 1)}, new_t{floating("y", dtype::f16, {2}, 2)};
  ropecheck::audit::write_safetensors(f, old_t, {});
  fs::create_hard_link(f, link);
  ropecheck::audit::write_safetensors(f, new_t, {});
  EXPECT_EQ(read_file(f), ropecheck::audit::safetensors_bytes(new_t, {}));
  EXPECT_EQ(read_file(link), ropecheck::audit::safetensors_bytes(old_t, {}));
}

// A bad tensor is found before anything is written: an existing file stays as it was.
TEST_F(WriteSafetensors, a_bad_tensor_writes_nothing) {
  const fs::path f = dir_ / "kept.safetensors";
  const std::vector<tensor_out> good{floating("x", dtype::f32, {2}, 1)};
  ropecheck::audit::write_safetensors(f, good, {});
  tensor_out bad = floating("y", dtype::f32, {2}, 2);
  bad.bytes.pop_back();
  EXPECT_THROW(ropecheck::audit::write_safetensors(f, {bad}, {}), std::invalid_argument);
  EXPECT_EQ(read_file(f), ropecheck::audit::safetensors_bytes(good, {}));
  EXPECT_EQ(listing(), std::vector<std::string>{"kept.safetensors"});
}

TEST_F(WriteSafetensors, an_unwritable_place_is_an_input_error_naming_the_file) {
  const fs::path f = dir_ / "no_such_dir" / "probe.safetensors";
  try {
    ropecheck::audit::write_safetensors(f, every_dtype(), {});
    ADD_FAILURE() << "wrote into a directory that does not exist";
  } catch (const input_error& e) {
    EXPECT_EQ(e.file, f);
    EXPECT_EQ(std::string(e.what()).rfind(f.string() + ": ", 0), 0u) << e.what();
  }
  EXPECT_FALSE(fs::exists(f));
}

// The temporary can be written but not renamed over the target (a directory of that name): an
// input_error naming the file; the directory is untouched.
TEST_F(WriteSafetensors, a_target_that_cannot_be_replaced_is_an_input_error_naming_the_file) {
  const fs::path f = dir_ / "is_a_directory";
  fs::create_directories(f / "inside");
  try {
    ropecheck::audit::write_safetensors(f, every_dtype(), {});
    ADD_FAILURE() << "replaced a directory";
  } catch (const input_error& e) {
    EXPECT_EQ(e.file, f);
    EXPECT_NE(std::string(e.what()).find("cannot be written"), std::string::npos) << e.what();
  }
  EXPECT_TRUE(fs::is_directory(f / "inside"));
}

// "never a half-written file": neither the target nor a temporary beside it is left by a failed write.
TEST_F(WriteSafetensors, a_failed_rename_leaves_no_temporary) {
  const fs::path f = dir_ / "is_a_directory";
  fs::create_directories(f / "inside");
  EXPECT_THROW(ropecheck::audit::write_safetensors(f, every_dtype(), {}), input_error);
  EXPECT_EQ(listing(), std::vector<std::string>{"is_a_directory"}) << "a temporary was left beside the target";
}

}  // namespace
