// tests/audit/tensor_file_test.cpp — tools/audit/tensor_file.hpp: the safetensors and .npy readers.
//
// Valid files are written byte by byte here (no NumPy, no safetensors library) and must read back
// bit for bit; the expected values are built with ldexp from their definitions, never by the
// conversions under test. Every class of bad input throws input_error naming the file and the
// problem, and a header claiming 2^60 elements in a tiny file is rejected without a large allocation
// (measured by the replaced operator new below).
#include "tensor_file.hpp"
#include "support/scratch_dir.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <bit>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <new>
#include <string>
#include <vector>

// The largest single allocation request since the last reset, to show that a lying header does
// not make the reader allocate what the header claims.
namespace {
std::atomic<std::size_t> largest_request{0};
}
void* operator new(std::size_t n) {
  std::size_t seen = largest_request.load(std::memory_order_relaxed);
  while (n > seen && !largest_request.compare_exchange_weak(seen, n, std::memory_order_relaxed)) {}
  if (void* p = std::malloc(n ? n : 1)) return p;
  throw std::bad_alloc();
}
// g++ 12 pairs the free() in these replacements with the `new` they are inlined into and reports a
// mismatch (-Wmismatched-new-delete): a false positive, as the operator new above is malloc.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
#pragma GCC diagnostic pop

namespace {

namespace fs = std::filesystem;
using ropecheck::audit::dtype;
using ropecheck::audit::input_error;
using ropecheck::audit::read_npy;
using ropecheck::audit::read_npy_dir;
using ropecheck::audit::read_safetensors;
using ropecheck::audit::tensor;
using ropecheck::audit::map_npy_dir;
using ropecheck::audit::map_safetensors;
using ropecheck::audit::mapped_file;

// ---- writing files byte by byte ----

std::string le(std::uint64_t v, int width) {
  std::string s;
  for (int i = 0; i < width; ++i) s += static_cast<char>((v >> (8 * i)) & 0xFF);
  return s;
}
std::string le16s(std::initializer_list<std::uint16_t> v) { std::string s; for (auto x : v) s += le(x, 2); return s; }
std::string le32s(std::initializer_list<std::uint32_t> v) { std::string s; for (auto x : v) s += le(x, 4); return s; }
std::string le64s(std::initializer_list<std::uint64_t> v) { std::string s; for (auto x : v) s += le(x, 8); return s; }

std::string safetensors_bytes(const std::string& header, const std::string& data) {
  return le(header.size(), 8) + header + data;
}
// .npy of the given major version; the header is padded with spaces and '\n' to 64 bytes as NumPy does.
std::string npy_bytes(int major, std::string dict, const std::string& data) {
  const std::size_t len_width = major == 1 ? 2 : 4;
  const std::size_t pre = 8 + len_width;
  dict += ' ';
  while ((pre + dict.size() + 1) % 64 != 0) dict += ' ';
  dict += '\n';
  return std::string("\x93NUMPY", 6) + static_cast<char>(major) + '\0' + le(dict.size(), static_cast<int>(len_width)) + dict + data;
}

class TensorFile : public ::testing::Test {
 protected:

  fs::path write(const std::string& name, const std::string& bytes) {
    const fs::path p = dir_ / name;
    std::ofstream(p, std::ios::binary).write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    return p;
  }
  ropecheck::test::scratch_dir dir_{"ropecheck_tensor_file_test"};
};

// f throws input_error whose message names the file and contains keyword.
void expect_input_error(const std::function<void()>& f, const fs::path& file, const std::string& keyword) {
  try {
    f();
    ADD_FAILURE() << "no input_error for " << file << " (expected \"" << keyword << "\")";
  } catch (const input_error& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find(file.string()), std::string::npos) << "message does not name the file: " << m;
    EXPECT_NE(m.find(keyword), std::string::npos) << "message lacks \"" << keyword << "\": " << m;
  }
}
void expect_safetensors_error(const fs::path& p, const std::string& keyword) {
  expect_input_error([&] { (void)read_safetensors(p); }, p, keyword);
}
void expect_npy_error(const fs::path& p, const std::string& keyword, std::optional<dtype> bf16 = {}) {
  expect_input_error([&] { (void)read_npy(p, bf16); }, p, keyword);
}

// Bitwise: +0 and -0 differ, NaN equals itself only as the same kind (checked separately).
void expect_bits(const std::vector<double>& got, const std::vector<double>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (std::size_t i = 0; i < got.size(); ++i) {
    if (std::isnan(want[i])) { EXPECT_TRUE(std::isnan(got[i])) << "index " << i; continue; }
    EXPECT_EQ(std::bit_cast<std::uint64_t>(got[i]), std::bit_cast<std::uint64_t>(want[i]))
        << "index " << i << ": got " << std::hexfloat << got[i] << " want " << want[i];
  }
}

const double inf = std::numeric_limits<double>::infinity();
const double nan = std::numeric_limits<double>::quiet_NaN();

// bf16 bit patterns across regimes: 1, smallest and largest subnormal, -0, largest finite,
// +-inf, NaN, and 1 + 2^-7 (last significand bit); expected values by definition.
const std::string bf16_bits = le16s({0x3F80, 0x0001, 0x007F, 0x8000, 0x7F7F, 0x7F80, 0xFF80, 0x7FC1, 0x3F81});
const std::vector<double> bf16_values = {1.0, std::ldexp(1.0, -133), std::ldexp(127.0, -133), -0.0,
                                         std::ldexp(255.0, 120), inf, -inf, nan, 1.0 + std::ldexp(1.0, -7)};

// ---- valid files read back exactly ----

TEST_F(TensorFile, SafetensorsOfEverySupportedDtypeReadsBackBitForBit) {
  const std::string f16 = le16s({0x3C00, 0x0001, 0x03FF, 0x8000, 0x7BFF, 0x7C00});
  const std::string f32 = le32s({0x00000001, 0x3F800001, 0x7F7FFFFF, 0x80000000});
  const std::string f64 = le64s({0x0000000000000001ull, 0x3FB999999999999Aull, 0x8000000000000000ull});
  const std::string i32 = le32s({0x80000000u, 0xFFFFFFFFu, 0u, 0x7FFFFFFFu});
  const std::string i64 = le64s({1ull << 53, static_cast<std::uint64_t>(-(std::int64_t{1} << 53)), 0ull, 123456789012345ull});
  std::string data;
  auto at = [&](const std::string& bytes) {
    const std::string r = "[" + std::to_string(data.size()) + ", " + std::to_string(data.size() + bytes.size()) + "]";
    data += bytes;
    return r;
  };
  const std::string header = std::string("{\"__metadata__\": {\"format\": \"pt\"}, ") +
      "\"bf\": {\"dtype\": \"BF16\", \"shape\": [3, 3], \"data_offsets\": " + at(bf16_bits) + "}, " +
      "\"h\": {\"dtype\": \"F16\", \"shape\": [6], \"data_offsets\": " + at(f16) + "}, " +
      "\"f\": {\"dtype\": \"F32\", \"shape\": [2, 2], \"data_offsets\": " + at(f32) + "}, " +
      "\"d\": {\"dtype\": \"F64\", \"shape\": [3], \"data_offsets\": " + at(f64) + "}, " +
      "\"i\": {\"dtype\": \"I32\", \"shape\": [4], \"data_offsets\": " + at(i32) + "}, " +
      "\"pos\": {\"dtype\": \"I64\", \"shape\": [1, 4], \"data_offsets\": " + at(i64) + "}, " +
      "\"empty\": {\"dtype\": \"F32\", \"shape\": [0, 5], \"data_offsets\": " + at("") + "}}  ";
  const auto m = read_safetensors(write("all.safetensors", safetensors_bytes(header, data)));

  ASSERT_EQ(m.size(), 7u);
  EXPECT_EQ(m.at("bf").type, dtype::bf16);
  EXPECT_EQ(m.at("bf").shape, (std::vector<std::int64_t>{3, 3}));
  expect_bits(m.at("bf").values, bf16_values);
  EXPECT_TRUE(m.at("bf").has_non_finite);

  expect_bits(m.at("h").values, {1.0, std::ldexp(1.0, -24), std::ldexp(1023.0, -24), -0.0, 65504.0, inf});
  EXPECT_TRUE(m.at("h").has_non_finite);
  expect_bits(m.at("f").values, {std::ldexp(1.0, -149), 1.0 + std::ldexp(1.0, -23), std::ldexp(16777215.0, 104), -0.0});
  EXPECT_FALSE(m.at("f").has_non_finite);
  expect_bits(m.at("d").values, {std::numeric_limits<double>::denorm_min(), 0.1, -0.0});
  expect_bits(m.at("i").values, {-2147483648.0, -1.0, 0.0, 2147483647.0});
  EXPECT_EQ(m.at("pos").type, dtype::i64);
  expect_bits(m.at("pos").values, {std::ldexp(1.0, 53), -std::ldexp(1.0, 53), 0.0, 123456789012345.0});
  EXPECT_EQ(m.at("empty").shape, (std::vector<std::int64_t>{0, 5}));
  EXPECT_TRUE(m.at("empty").values.empty());
}

TEST_F(TensorFile, NpyV1Float32ReadsBackInCOrder) {
  const auto p = write("q.npy", npy_bytes(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }",
                                          le32s({0x3F800000, 0x40000000, 0x00000001, 0x80000000, 0x7FC00000, 0xBF800000})));
  const tensor t = read_npy(p);
  EXPECT_EQ(t.name, "q");
  EXPECT_EQ(t.type, dtype::f32);
  EXPECT_EQ(t.shape, (std::vector<std::int64_t>{2, 3}));
  expect_bits(t.values, {1.0, 2.0, std::ldexp(1.0, -149), -0.0, nan, -1.0});
  EXPECT_TRUE(t.has_non_finite);
}

TEST_F(TensorFile, NpyUint16DeclaredBfloat16ReadsBitPatternsIncludingSubnormalsZeroInfAndNaN) {
  const auto p = write("k_bf16.npy", npy_bytes(1, "{'descr': '<u2', 'fortran_order': False, 'shape': (9,), }", bf16_bits));
  const tensor t = read_npy(p, dtype::bf16);
  EXPECT_EQ(t.type, dtype::bf16);
  expect_bits(t.values, bf16_values);
  EXPECT_TRUE(t.has_non_finite);
}

TEST_F(TensorFile, NpyV2AndV3HeadersWithFourByteLengthRead) {
  const auto p2 = write("pos.npy", npy_bytes(2, "{'descr': '<i8', 'fortran_order': False, 'shape': (4,), }",
                                             le64s({0, 1, 4095, 1ull << 40})));
  const tensor t2 = read_npy(p2);
  EXPECT_EQ(t2.type, dtype::i64);
  expect_bits(t2.values, {0.0, 1.0, 4095.0, std::ldexp(1.0, 40)});
  EXPECT_FALSE(t2.has_non_finite);

  // v3 (utf-8 header), a 0-d scalar, double quotes and Python 2 long suffixes tolerated elsewhere.
  const auto p3 = write("theta.npy", npy_bytes(3, "{\"descr\": \"<f8\", \"fortran_order\": False, \"shape\": ()}",
                                               le64s({0x40C3880000000000ull})));
  const tensor t3 = read_npy(p3);
  EXPECT_TRUE(t3.shape.empty());
  expect_bits(t3.values, {10000.0});

  const auto ph = write("h.npy", npy_bytes(1, "{'descr': '<f2', 'fortran_order': False, 'shape': (1L, 2L), }", le16s({0x0001, 0xFC00})));
  expect_bits(read_npy(ph).values, {std::ldexp(1.0, -24), -inf});
  const auto pi = write("i.npy", npy_bytes(1, "{'descr': '<i4', 'fortran_order': False, 'shape': (2,), }", le32s({0x80000000u, 7})));
  expect_bits(read_npy(pi).values, {-2147483648.0, 7.0});
}

TEST_F(TensorFile, NpyDirReadsEveryNpyFileByStemAndSkipsOthers) {
  write("q.npy", npy_bytes(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (1,), }", le32s({0x3F800000})));
  write("positions.npy", npy_bytes(1, "{'descr': '<i8', 'fortran_order': False, 'shape': (2,), }", le64s({3, 4})));
  write("k.npy", npy_bytes(1, "{'descr': '<u2', 'fortran_order': False, 'shape': (1,), }", le16s({0x4000})));
  write("README.txt", "not a tensor");
  const auto m = read_npy_dir(dir_, dtype::bf16);
  ASSERT_EQ(m.size(), 3u);
  expect_bits(m.at("q").values, {1.0});
  expect_bits(m.at("positions").values, {3.0, 4.0});
  expect_bits(m.at("k").values, {2.0});
  expect_input_error([&] { (void)read_npy_dir(dir_ / "README.txt"); }, dir_ / "README.txt", "not a directory");
}

// ---- bad input: one test per class ----

TEST_F(TensorFile, I64PositionsBeyond2To53AreRejectedAsNotExact) {
  const auto p = write("big.safetensors", safetensors_bytes(
      "{\"pos\": {\"dtype\": \"I64\", \"shape\": [2], \"data_offsets\": [0, 16]}}", le64s({1, (1ull << 53) + 1})));
  expect_safetensors_error(p, "2^53");
  const auto n = write("bigneg.npy", npy_bytes(1, "{'descr': '<i8', 'fortran_order': False, 'shape': (1,), }",
                                               le64s({static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::min())})));
  expect_npy_error(n, "2^53");
}

TEST_F(TensorFile, TruncatedFilesAreRejected) {
  expect_safetensors_error(write("short.safetensors", "\x10\x00\x00"), "truncated");
  expect_safetensors_error(write("header.safetensors", le(200, 8) + "{\"a\": {}}"), "truncated");
  // Data shorter than the offsets claim.
  expect_safetensors_error(write("data.safetensors", safetensors_bytes(
      "{\"a\": {\"dtype\": \"F32\", \"shape\": [4], \"data_offsets\": [0, 16]}}", le32s({1, 2}))), "out of the data buffer");
  expect_npy_error(write("short.npy", std::string("\x93NUMPY\x01", 7)), "truncated");
  expect_npy_error(write("header.npy", std::string("\x93NUMPY\x01\x00", 8) + le(500, 2) + "{'descr'"), "truncated");
  expect_npy_error(write("data.npy", npy_bytes(1, "{'descr': '<f8', 'fortran_order': False, 'shape': (3,), }", le64s({1, 2}))),
                   "truncated");
  expect_npy_error(write("trailing.npy", npy_bytes(1, "{'descr': '<f8', 'fortran_order': False, 'shape': (1,), }", le64s({1, 2}))),
                   "trailing");
}

TEST_F(TensorFile, AbsurdHeaderLengthsAreRejectedBeforeAllocating) {
  largest_request = 0;
  expect_safetensors_error(write("huge.safetensors", le(1ull << 40, 8) + "{}"), "absurd");
  expect_npy_error(write("huge.npy", std::string("\x93NUMPY\x02\x00", 8) + le(0xFFFFFFFFu, 4) + "{}"), "absurd");
  EXPECT_LT(largest_request.load(), std::size_t{1} << 20);
}

TEST_F(TensorFile, HeadersThatAreNotAJsonObjectOrLackFieldsOrHaveWrongTypesAreRejected) {
  auto st = [&](const std::string& name, const std::string& header, const std::string& keyword) {
    expect_safetensors_error(write(name, safetensors_bytes(header, std::string(16, '\0'))), keyword);
  };
  st("syntax.safetensors", "{\"a\": ", "not valid JSON");
  st("array.safetensors", "[1, 2]", "not an object");
  st("desc.safetensors", "{\"a\": 3}", "not an object");
  st("nodtype.safetensors", "{\"a\": {\"shape\": [1], \"data_offsets\": [0, 4]}}", "missing field \"dtype\"");
  st("noshape.safetensors", "{\"a\": {\"dtype\": \"F32\", \"data_offsets\": [0, 4]}}", "missing field \"shape\"");
  st("nooffsets.safetensors", "{\"a\": {\"dtype\": \"F32\", \"shape\": [1]}}", "missing field \"data_offsets\"");
  st("dtypetype.safetensors", "{\"a\": {\"dtype\": 7, \"shape\": [1], \"data_offsets\": [0, 4]}}", "wrong type");
  st("shapetype.safetensors", "{\"a\": {\"dtype\": \"F32\", \"shape\": [1.5], \"data_offsets\": [0, 4]}}", "wrong type");
  st("offsettype.safetensors", "{\"a\": {\"dtype\": \"F32\", \"shape\": [1], \"data_offsets\": [0]}}", "wrong type");
  st("offsetneg.safetensors", "{\"a\": {\"dtype\": \"F32\", \"shape\": [1], \"data_offsets\": [-4, 0]}}", "wrong type");
  st("metadata.safetensors", "{\"__metadata__\": {\"k\": 1}}", "__metadata__");
}

TEST_F(TensorFile, UnknownDtypesAreRejected) {
  expect_safetensors_error(write("u8.safetensors", safetensors_bytes(
      "{\"a\": {\"dtype\": \"U8\", \"shape\": [1], \"data_offsets\": [0, 1]}}", "x")), "unknown dtype");
  expect_npy_error(write("c8.npy", npy_bytes(1, "{'descr': '<c8', 'fortran_order': False, 'shape': (1,), }", le64s({0}))),
                   "unknown dtype");
}

TEST_F(TensorFile, ShapesWithNegativeDimsOverflowOrDisagreeingWithOffsetsAreRejected) {
  auto st = [&](const std::string& name, const std::string& shape, const std::string& offsets, const std::string& keyword) {
    expect_safetensors_error(write(name, safetensors_bytes(
        "{\"a\": {\"dtype\": \"F32\", \"shape\": " + shape + ", \"data_offsets\": " + offsets + "}}", std::string(16, '\0'))), keyword);
  };
  st("negative.safetensors", "[2, -2]", "[0, 16]", "negative");
  st("overflow.safetensors", "[4294967296, 4294967296]", "[0, 16]", "overflows int64");
  st("disagree.safetensors", "[3]", "[0, 16]", "disagrees with data_offsets");
  // count * itemsize wraps to 16 bytes in uint64 (2^62 * 4 = 2^64): must still disagree.
  st("wrap.safetensors", "[4611686018427387904, 1]", "[0, 16]", "disagrees with data_offsets");
  expect_npy_error(write("negative.npy", npy_bytes(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (-1,), }", "")),
                   "negative");
  expect_npy_error(write("overflow.npy", npy_bytes(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (4294967296, 4294967296), }", "")),
                   "overflows int64");
}

TEST_F(TensorFile, OffsetsOutOfTheBufferReversedOrOverlappingAreRejected) {
  const std::string data(16, '\0');
  expect_safetensors_error(write("out.safetensors", safetensors_bytes(
      "{\"a\": {\"dtype\": \"F32\", \"shape\": [1], \"data_offsets\": [16, 20]}}", data)), "out of the data buffer");
  expect_safetensors_error(write("reversed.safetensors", safetensors_bytes(
      "{\"a\": {\"dtype\": \"F32\", \"shape\": [1], \"data_offsets\": [8, 4]}}", data)), "begin");
  expect_safetensors_error(write("overlap.safetensors", safetensors_bytes(
      "{\"a\": {\"dtype\": \"F32\", \"shape\": [2], \"data_offsets\": [0, 8]},"
      " \"b\": {\"dtype\": \"F32\", \"shape\": [2], \"data_offsets\": [4, 12]}}", data)), "overlapping");
}

TEST_F(TensorFile, NonFiniteDataIsReportedNotRejected) {
  const auto p = write("nan.safetensors", safetensors_bytes(
      "{\"a\": {\"dtype\": \"F32\", \"shape\": [2], \"data_offsets\": [0, 8]}}", le32s({0x7FC00000, 0x3F800000})));
  const auto m = read_safetensors(p);
  EXPECT_TRUE(m.at("a").has_non_finite);
  EXPECT_TRUE(std::isnan(m.at("a").values[0]));
}

TEST_F(TensorFile, NpyBigEndianIsRejected) {
  expect_npy_error(write("be.npy", npy_bytes(1, "{'descr': '>f4', 'fortran_order': False, 'shape': (1,), }", le32s({0}))),
                   "big-endian");
}

TEST_F(TensorFile, NpyFortranOrderIsRejectedWithTheFix) {
  expect_npy_error(write("fortran.npy", npy_bytes(1, "{'descr': '<f4', 'fortran_order': True, 'shape': (2, 2), }", le32s({0, 0, 0, 0}))),
                   "Fortran order is not supported: save with np.ascontiguousarray");
}

TEST_F(TensorFile, NpyHeaderThatIsNotADictOrLacksKeysIsRejected) {
  expect_npy_error(write("list.npy", npy_bytes(1, "['<f4', False, (1,)]", le32s({0}))), "not a Python dict");
  expect_npy_error(write("noshape.npy", npy_bytes(1, "{'descr': '<f4', 'fortran_order': False, }", le32s({0}))),
                   "lacks the key 'shape'");
  expect_npy_error(write("shapetype.npy", npy_bytes(1, "{'descr': '<f4', 'fortran_order': False, 'shape': 'x', }", le32s({0}))),
                   "wrong type");
  expect_npy_error(write("structured.npy", npy_bytes(1, "{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (1,), }", le32s({0}))),
                   "structured");
  expect_npy_error(write("magic.npy", std::string("\x93NUMPZ\x01\x00", 8) + le(4, 2) + "{}  "), "magic");
}

TEST_F(TensorFile, NpyUint16WithoutADeclarationAsksForBf16) {
  expect_npy_error(write("u2.npy", npy_bytes(1, "{'descr': '<u2', 'fortran_order': False, 'shape': (1,), }", le16s({0x3F80}))),
                   "uint16 data: pass --bf16 or a sidecar if these are bfloat16 bit patterns");
}

TEST_F(TensorFile, AHeaderClaiming2To60ElementsInATinyFileFailsFastWithoutAllocating) {
  const auto st = write("lie.safetensors", safetensors_bytes(
      "{\"a\": {\"dtype\": \"BF16\", \"shape\": [1152921504606846976], \"data_offsets\": [0, 4]}}", "abcd"));
  const auto np = write("lie.npy", npy_bytes(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (1152921504606846976,), }", "abcdefgh"));
  largest_request = 0;
  const auto start = std::chrono::steady_clock::now();
  expect_safetensors_error(st, "disagrees with data_offsets");
  expect_npy_error(np, "truncated");
  const auto elapsed = std::chrono::steady_clock::now() - start;
  EXPECT_LT(elapsed, std::chrono::seconds(1));
  EXPECT_LT(largest_request.load(), std::size_t{1} << 20) << "largest single allocation in bytes";
}

}  // namespace

// ---- in-memory forms (parse_safetensors, parse_npy): what fuzz/ drives; the file readers wrap them ----

namespace {

using ropecheck::audit::parse_npy;
using ropecheck::audit::parse_safetensors;

std::span<const unsigned char> bytes_of(const std::string& s) {
  return {reinterpret_cast<const unsigned char*>(s.data()), s.size()};
}

// The message of the input_error f throws; a failure if it throws none.
std::string rejection(const std::function<void()>& f) {
  try {
    f();
  } catch (const input_error& e) {
    return e.what();
  }
  ADD_FAILURE() << "no input_error";
  return "";
}

void expect_same_tensor(const tensor& got, const tensor& want) {
  EXPECT_EQ(got.name, want.name);
  EXPECT_EQ(got.type, want.type);
  EXPECT_EQ(got.shape, want.shape);
  expect_bits(got.values, want.values);
  EXPECT_EQ(got.has_non_finite, want.has_non_finite);
}

TEST_F(TensorFile, InMemoryParsersReadWhatTheFileReadersReadBitForBit) {
  const std::string st = safetensors_bytes(
      "{\"bf\": {\"dtype\": \"BF16\", \"shape\": [9], \"data_offsets\": [0, 18]},"
      " \"pos\": {\"dtype\": \"I64\", \"shape\": [1, 2], \"data_offsets\": [18, 34]}}",
      bf16_bits + le64s({0, 1ull << 53}));
  const auto from_file = read_safetensors(write("m.safetensors", st));
  const auto in_memory = parse_safetensors(bytes_of(st), "m.safetensors");
  ASSERT_EQ(in_memory.size(), 2u);
  ASSERT_EQ(from_file.size(), 2u);
  for (const auto& [name, t] : from_file) expect_same_tensor(in_memory.at(name), t);
  expect_bits(in_memory.at("bf").values, bf16_values);

  // The tensor is named after the stem of the name given, as after the file's stem.
  const std::string np = npy_bytes(2, "{'descr': '<u2', 'fortran_order': False, 'shape': (3, 3), }", bf16_bits);
  const tensor t = parse_npy(bytes_of(np), "some/dir/k_bf16.npy", dtype::bf16);
  EXPECT_EQ(t.name, "k_bf16");
  EXPECT_EQ(t.shape, (std::vector<std::int64_t>{3, 3}));
  expect_same_tensor(t, read_npy(write("k_bf16.npy", np), dtype::bf16));
}

TEST_F(TensorFile, InMemoryRejectionsNameTheGivenNameAndSayWhatTheFileReadersSay) {
  const std::vector<std::pair<std::string, std::string>> bad_safetensors = {
      {"short.safetensors", "\x10\x00\x00"},
      {"absurd.safetensors", le(1ull << 40, 8) + "{}"},
      {"json.safetensors", safetensors_bytes("{\"a\": ", "")},
      {"wrap.safetensors", safetensors_bytes(
           "{\"a\": {\"dtype\": \"F32\", \"shape\": [4611686018427387904, 1], \"data_offsets\": [0, 16]}}", std::string(16, '\0'))},
      {"overlap.safetensors", safetensors_bytes(
           "{\"a\": {\"dtype\": \"F32\", \"shape\": [2], \"data_offsets\": [0, 8]},"
           " \"b\": {\"dtype\": \"F32\", \"shape\": [2], \"data_offsets\": [4, 12]}}", std::string(16, '\0'))},
      {"i64.safetensors", safetensors_bytes("{\"p\": {\"dtype\": \"I64\", \"shape\": [1], \"data_offsets\": [0, 8]}}",
                                            le64s({(1ull << 53) + 1}))},
  };
  for (const auto& [name, bytes] : bad_safetensors) {
    const fs::path p = write(name, bytes);
    const std::string from_file = rejection([&] { (void)read_safetensors(p); });
    const std::string in_memory = rejection([&] { (void)parse_safetensors(bytes_of(bytes), name); });
    ASSERT_EQ(in_memory.rfind(name + ": ", 0), 0u) << in_memory;
    ASSERT_EQ(from_file.rfind(p.string() + ": ", 0), 0u) << from_file;
    EXPECT_EQ(in_memory.substr(name.size()), from_file.substr(p.string().size())) << name;
  }
  const std::vector<std::pair<std::string, std::string>> bad_npy = {
      {"short.npy", std::string("\x93NUMPY\x01", 7)},
      {"absurd.npy", std::string("\x93NUMPY\x02\x00", 8) + le(0xFFFFFFFFu, 4) + "{}"},
      {"trailing.npy", npy_bytes(1, "{'descr': '<f8', 'fortran_order': False, 'shape': (1,), }", le64s({1, 2}))},
      {"u2.npy", npy_bytes(1, "{'descr': '<u2', 'fortran_order': False, 'shape': (1,), }", le16s({0x3F80}))},
      {"fortran.npy", npy_bytes(1, "{'descr': '<f4', 'fortran_order': True, 'shape': (1,), }", le32s({0}))},
  };
  for (const auto& [name, bytes] : bad_npy) {
    const fs::path p = write(name, bytes);
    const std::string from_file = rejection([&] { (void)read_npy(p); });
    const std::string in_memory = rejection([&] { (void)parse_npy(bytes_of(bytes), name); });
    ASSERT_EQ(in_memory.rfind(name + ": ", 0), 0u) << in_memory;
    EXPECT_EQ(in_memory.substr(name.size()), from_file.substr(p.string().size())) << name;
  }
  // A declaration other than bf16 is refused before the bytes are looked at.
  EXPECT_NE(rejection([] { (void)parse_npy({}, "x.npy", dtype::f32); }).find("only bfloat16 can be declared"), std::string::npos);
}

TEST_F(TensorFile, EmptyInputIsTruncatedInMemoryAndOnDisk) {
  EXPECT_NE(rejection([] { (void)parse_safetensors({}, "e.safetensors"); }).find("e.safetensors: truncated"), std::string::npos);
  EXPECT_NE(rejection([] { (void)parse_npy({}, "e.npy"); }).find("e.npy: truncated"), std::string::npos);
  expect_safetensors_error(write("e.safetensors", ""), "truncated");
  expect_npy_error(write("e.npy", ""), "truncated");
}

// nlohmann::json parses iteratively, but dump() and operator== recurse per level: the reader must
// never call them on header values (config_json.hpp did; see fuzz/corpus/config_json/finding_*).
TEST_F(TensorFile, DeeplyNestedJsonHeadersAreRejectedWithoutRecursingPerLevel) {
  const std::size_t depth = 200000;  // ~400 KB of brackets; recursion per level would overflow an 8 MB stack
  const std::string deep = std::string(depth, '[') + std::string(depth, ']');
  const std::vector<std::pair<std::string, std::string>> headers = {
      {"whole", deep},
      {"desc", "{\"a\": " + deep + "}"},
      {"metadata", "{\"__metadata__\": {\"k\": " + deep + "}}"},
      {"dtype", "{\"a\": {\"dtype\": " + deep + ", \"shape\": [], \"data_offsets\": [0, 0]}}"},
      {"shape", "{\"a\": {\"dtype\": \"F32\", \"shape\": [" + deep + "], \"data_offsets\": [0, 0]}}"},
      {"offsets", "{\"a\": {\"dtype\": \"F32\", \"shape\": [], \"data_offsets\": [" + deep + ", 4]}}"},
  };
  for (const auto& [what, header] : headers) {
    const std::string bytes = safetensors_bytes(header, "");
    EXPECT_FALSE(rejection([&] { (void)parse_safetensors(bytes_of(bytes), what + ".safetensors"); }).empty()) << what;
  }
}

// The fuzz seed corpus (fuzz/make_corpus.py) is what its file names say: valid_* read, bad_* are rejected.
TEST_F(TensorFile, FuzzSeedsNamedValidReadAndSeedsNamedBadAreRejected) {
  // The corpus is part of the source tree: its absolute path comes from CMake (__FILE__ is relative to
  // the build directory, where the test used to look and always skipped).
  const fs::path corpus = ROPECHECK_FUZZ_CORPUS;
  ASSERT_TRUE(fs::is_directory(corpus)) << "no fuzz corpus at " << corpus;
  int valid = 0, bad = 0;
  for (const char* target : {"safetensors", "npy"}) {
    for (const auto& e : fs::directory_iterator(corpus / target)) {
      const std::string stem = e.path().filename().string();
      const bool st = std::string(target) == "safetensors";
      auto read = [&] { st ? (void)read_safetensors(e.path()) : (void)read_npy(e.path(), dtype::bf16); };
      if (stem.rfind("valid_", 0) == 0) {
        EXPECT_NO_THROW(read()) << e.path();
        ++valid;
      } else if (stem.rfind("bad_", 0) == 0) {
        EXPECT_THROW(read(), input_error) << e.path();
        ++bad;
      }
    }
  }
  EXPECT_GE(valid, 12);
  EXPECT_GE(bad, 12);
}

}  // namespace

namespace ropecheck::audit {
namespace {
// Found by fuzz/fuzz_npy after the fast decode paths landed: an empty tensor of each float dtype
// (a zero in its shape) passed a null pointer to memcpy. Empty tensors read as empty.
TEST(TensorFileEmpty, ZeroElementTensorsOfEveryFloatDtypeReadAsEmpty) {
  for (const char* descr : {"<f2", "<f4", "<f8", "<u2"}) {
    const std::string dict = std::string("{'descr': '") + descr + "', 'fortran_order': False, 'shape': (0, 4294967296), }";
    std::string h = dict;
    while ((10 + h.size() + 1) % 64 != 0) h += ' ';
    h += '\n';
    std::string bytes = std::string("\x93NUMPY\x01\x00", 8) + static_cast<char>(h.size() & 0xff) +
                        static_cast<char>(h.size() >> 8) + h;
    const auto* p = reinterpret_cast<const unsigned char*>(bytes.data());
    const tensor t = parse_npy(std::span<const unsigned char>(p, bytes.size()), "empty.npy", dtype::bf16);
    EXPECT_TRUE(t.values.empty()) << descr;
    EXPECT_FALSE(t.has_non_finite) << descr;
  }
}
}  // namespace
}  // namespace ropecheck::audit

namespace {
using ropecheck::audit::read_safetensors;
// The header's __metadata__ (the dump's "layer" and "part" are read from it by `ropecheck audit`),
// read with the tensors: string values kept, a missing object gives nothing, a value that is not a
// string is refused.
TEST_F(TensorFile, SafetensorsMetadataIsReadWithTheTensors) {
  const std::string data = le32s({1});
  const auto with = write("with.safetensors",
                          safetensors_bytes(R"({"__metadata__":{"layer":"5","impl":"hf"},"positions":{"dtype":"I32","shape":[1],"data_offsets":[0,4]}})", data));
  std::map<std::string, std::string> meta{{"stale", "from before"}};
  const auto ts = read_safetensors(with, &meta);
  EXPECT_EQ(ts.size(), 1u);
  ASSERT_EQ(meta.size(), 2u);
  EXPECT_EQ(meta.at("layer"), "5");
  EXPECT_EQ(meta.at("impl"), "hf");
  const auto without = write("without.safetensors",
                             safetensors_bytes(R"({"positions":{"dtype":"I32","shape":[1],"data_offsets":[0,4]}})", data));
  (void)read_safetensors(without, &meta);
  EXPECT_TRUE(meta.empty());
  const auto not_string = write("bad.safetensors",
                                safetensors_bytes(R"({"__metadata__":{"layer":5},"positions":{"dtype":"I32","shape":[1],"data_offsets":[0,4]}})", data));
  expect_input_error([&] { (void)read_safetensors(not_string, &meta); }, not_string, "is not a string");
}

// ---- the mapped readers (the audit's door): the same rules, the bytes left where they lie ----

// The bytes the mapped reader locates are the file's own (inside its mapping, not a copy), and their
// decode is what read_safetensors reads, for every storage type; the non-finite flag agrees.
TEST_F(TensorFile, MappedSafetensorsLocatesEachTensorsBytesInTheMappingAndDecodesThemAsTheReaderDoes) {
  const std::string f16 = le16s({0x3C00, 0x0001, 0x03FF, 0x8000, 0x7BFF, 0x7C00});
  const std::string f32 = le32s({0x00000001, 0x3F800001, 0x7F7FFFFF, 0x80000000});
  const std::string f64 = le64s({0x0000000000000001ull, 0x3FB999999999999Aull, 0x8000000000000000ull});
  const std::string i64 = le64s({1ull << 53, 0ull, 7ull});
  std::string data;
  auto at = [&](const std::string& bytes) {
    const std::string r = "[" + std::to_string(data.size()) + ", " + std::to_string(data.size() + bytes.size()) + "]";
    data += bytes;
    return r;
  };
  const std::string header = std::string("{\"bf\": {\"dtype\": \"BF16\", \"shape\": [9], \"data_offsets\": ") + at(bf16_bits) +
      "}, \"h\": {\"dtype\": \"F16\", \"shape\": [6], \"data_offsets\": " + at(f16) +
      "}, \"f\": {\"dtype\": \"F32\", \"shape\": [2, 2], \"data_offsets\": " + at(f32) +
      "}, \"d\": {\"dtype\": \"F64\", \"shape\": [3], \"data_offsets\": " + at(f64) +
      "}, \"pos\": {\"dtype\": \"I64\", \"shape\": [3], \"data_offsets\": " + at(i64) + "}}";
  const std::string file = safetensors_bytes(header, data);
  const auto p = write("mapped.safetensors", file);
  const auto want = read_safetensors(p);
  const auto mapped = map_safetensors(p);
  ASSERT_EQ(mapped.files.size(), 1u);
  const auto whole = mapped.files[0].bytes();
  EXPECT_TRUE(mapped.files[0].mapped());
  ASSERT_EQ(whole.size(), file.size());
  ASSERT_EQ(mapped.tensors.size(), want.size());
  const std::size_t buffer = 8 + header.size();
  for (const auto& [name, t] : mapped.tensors) {
    SCOPED_TRACE(name);
    EXPECT_EQ(t.type, want.at(name).type);
    EXPECT_EQ(t.shape, want.at(name).shape);
    ASSERT_GE(t.bytes.data(), whole.data());
    ASSERT_LE(t.bytes.data() + t.bytes.size(), whole.data() + whole.size());
    EXPECT_EQ(std::string(reinterpret_cast<const char*>(t.bytes.data()), t.bytes.size()),
              data.substr(static_cast<std::size_t>(t.bytes.data() - whole.data()) - buffer, t.bytes.size()));
    expect_same_tensor(ropecheck::audit::decode(t), want.at(name));
    EXPECT_EQ(ropecheck::audit::has_non_finite(t), want.at(name).has_non_finite);
  }
}

// A truncated file, a header lying about sizes (shape against offsets, offsets past the end, more
// elements than the file holds) and an I64 beyond 2^53: the mapped reader rejects each with the
// message read_safetensors / read_npy gives, byte for byte.
TEST_F(TensorFile, MappedReadersRejectTruncatedAndLyingFilesWithTheReadersMessages) {
  const std::vector<std::pair<std::string, std::string>> bad_safetensors = {
      {"short.safetensors", "\x10\x00\x00"},
      {"header.safetensors", le(200, 8) + "{\"a\": {}}"},
      {"data.safetensors", safetensors_bytes("{\"a\": {\"dtype\": \"F32\", \"shape\": [4], \"data_offsets\": [0, 16]}}",
                                             le32s({1, 2}))},
      {"shape.safetensors", safetensors_bytes("{\"a\": {\"dtype\": \"F32\", \"shape\": [3], \"data_offsets\": [0, 8]}}",
                                              le32s({1, 2}))},
      {"huge.safetensors", safetensors_bytes(
           "{\"a\": {\"dtype\": \"F32\", \"shape\": [1152921504606846976], \"data_offsets\": [0, 8]}}", le32s({1, 2}))},
      {"i64.safetensors", safetensors_bytes("{\"a\": {\"dtype\": \"F32\", \"shape\": [1], \"data_offsets\": [0, 4]},"
                                            " \"p\": {\"dtype\": \"I64\", \"shape\": [2], \"data_offsets\": [4, 20]}}",
                                            le32s({1}) + le64s({3, (1ull << 53) + 1}))},
  };
  for (const auto& [name, bytes] : bad_safetensors) {
    const fs::path p = write(name, bytes);
    const std::string want = rejection([&] { (void)read_safetensors(p); });
    const std::string got = rejection([&] { (void)map_safetensors(p); });
    ASSERT_FALSE(want.empty()) << name;
    EXPECT_EQ(got, want) << name;
  }
  write("x.npy", npy_bytes(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }", le32s({1})));
  const std::string want = rejection([&] { (void)read_npy_dir(dir_); });
  ASSERT_NE(want.find("truncated"), std::string::npos) << want;
  EXPECT_EQ(rejection([&] { (void)map_npy_dir(dir_); }), want);
  expect_input_error([&] { (void)map_npy_dir(dir_ / "x.npy"); }, dir_ / "x.npy", "not a directory");
  expect_input_error([&] { (void)map_safetensors(dir_ / "none.safetensors"); }, dir_ / "none.safetensors", "not a regular file");
}

// Each .npy file of a directory mapped on its own, its tensor's bytes inside that file's mapping.
TEST_F(TensorFile, MappedNpyDirMapsEachFileAndDecodesWhatReadNpyDirReads) {
  write("x.npy", npy_bytes(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 2), }",
                           le32s({0x3F800000, 0x80000000, 0x00000001, 0x7F800000})));
  write("positions.npy", npy_bytes(2, "{'descr': '<i8', 'fortran_order': False, 'shape': (2,), }", le64s({3, 4})));
  write("y.npy", npy_bytes(1, "{'descr': '<u2', 'fortran_order': False, 'shape': (9,), }", bf16_bits));
  write("notes.txt", "not a tensor");
  const auto want = read_npy_dir(dir_, dtype::bf16);
  const auto got = map_npy_dir(dir_, dtype::bf16);
  ASSERT_EQ(got.files.size(), 3u);
  ASSERT_EQ(got.tensors.size(), 3u);
  for (const auto& [name, t] : got.tensors) {
    SCOPED_TRACE(name);
    const auto in_a_file = std::count_if(got.files.begin(), got.files.end(), [&](const mapped_file& f) {
      const auto b = f.bytes();
      return t.bytes.data() >= b.data() && t.bytes.data() + t.bytes.size() == b.data() + b.size();
    });
    EXPECT_EQ(in_a_file, 1);
    expect_same_tensor(ropecheck::audit::decode(t), want.at(name));
    EXPECT_EQ(ropecheck::audit::has_non_finite(t), want.at(name).has_non_finite);
  }
  expect_bits(ropecheck::audit::decode(got.tensors.at("y")).values, bf16_values);
}

// One NaN or infinity anywhere in a long tensor of any float storage is found, at the first and the
// last element too; the largest finite values (exponent one below all ones) and integers never are.
TEST_F(TensorFile, NonFiniteScanFindsOneNaNOrInfinityAnywhereAndNothingElse) {
  struct kind { dtype t; std::uint64_t largest_finite, inf, nan; };
  const kind kinds[] = {{dtype::f32, 0x7F7FFFFFull, 0x7F800000ull, 0x7FC00001ull},
                        {dtype::f64, 0x7FEFFFFFFFFFFFFFull, 0x7FF0000000000000ull, 0x7FF0000000000001ull},
                        {dtype::bf16, 0x7F7Full, 0x7F80ull, 0xFFC1ull},
                        {dtype::f16, 0x7BFFull, 0x7C00ull, 0xFE01ull}};
  const std::size_t n = 1000;
  for (const kind& k : kinds) {
    const int w = static_cast<int>(ropecheck::audit::dtype_size(k.t));
    const std::uint64_t sign = std::uint64_t{1} << (8 * w - 1);
    auto tensor_of = [&](std::size_t at, std::uint64_t bits) {
      std::string s;
      for (std::size_t i = 0; i < n; ++i) s += le(i == at ? bits : (i % 2 ? k.largest_finite | sign : k.largest_finite), w);
      return s;
    };
    for (std::size_t at : {std::size_t{0}, std::size_t{1}, std::size_t{517}, n - 1})
      for (std::uint64_t bits : {k.inf, k.inf | sign, k.nan}) {
        const std::string s = tensor_of(at, bits);
        const ropecheck::audit::tensor_bytes t{"t", k.t, {static_cast<std::int64_t>(n)}, bytes_of(s)};
        EXPECT_TRUE(ropecheck::audit::has_non_finite(t)) << ropecheck::audit::dtype_name(k.t) << " at " << at;
      }
    const std::string finite = tensor_of(n, 0);
    const ropecheck::audit::tensor_bytes t{"t", k.t, {static_cast<std::int64_t>(n)}, bytes_of(finite)};
    EXPECT_FALSE(ropecheck::audit::has_non_finite(t)) << ropecheck::audit::dtype_name(k.t);
  }
  const std::string ints = le64s({~0ull, 0x7FF0000000000000ull});
  EXPECT_FALSE(ropecheck::audit::has_non_finite({"i", dtype::i64, {2}, bytes_of(ints)}));
}
}  // namespace
