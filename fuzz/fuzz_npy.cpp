// fuzz/fuzz_npy.cpp — libFuzzer target: parse_npy on arbitrary bytes, with and without the
// bfloat16 declaration.
//
// The input is a whole .npy file. Findings: a crash, a sanitizer report, an exception other than
// input_error, a tensor that breaks the contract (fuzz_tensor_common.hpp), and a disagreement
// between the two modes: declared_bf16 may change only '<u2' files (tensor_file.hpp), so a file
// read without it must read identically with it.
#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>

#include "fuzz_tensor_common.hpp"

namespace {

using namespace ropecheck;

std::optional<audit::tensor> read(std::span<const unsigned char> bytes, std::string_view name,
                                  std::optional<audit::dtype> declared, std::string& message) {
  try {
    audit::tensor t = audit::parse_npy(bytes, name, declared);
    FUZZ_CHECK(t.name == "fuzz", "tensor name '%s' is not the stem of %s", t.name.c_str(), std::string(name).c_str());
    fuzz::check_tensor(t, bytes.size());
    return t;
  } catch (const audit::input_error& e) {
    fuzz::check_rejection(e, name);
    message = e.what();
    return std::nullopt;
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  constexpr std::string_view name = "fuzz.npy";
  const std::span<const unsigned char> bytes(data, size);
  std::string plain_message, bf16_message;
  const auto plain = read(bytes, name, std::nullopt, plain_message);
  const auto bf16 = read(bytes, name, audit::dtype::bf16, bf16_message);
  if (plain) {
    FUZZ_CHECK(bf16.has_value(), "read without --bf16 but rejected with it: %s", bf16_message.c_str());
    FUZZ_CHECK(plain->type == bf16->type && plain->shape == bf16->shape &&
                   std::ranges::equal(plain->values, bf16->values,
                                      [](double a, double b) { return std::bit_cast<std::uint64_t>(a) == std::bit_cast<std::uint64_t>(b); }),
               "the bf16 declaration changed a non-uint16 file");
  } else if (!bf16) {
    FUZZ_CHECK(plain_message == bf16_message || plain_message.find("uint16") != std::string::npos,
               "different rejections: '%s' vs '%s'", plain_message.c_str(), bf16_message.c_str());
  } else {
    FUZZ_CHECK(bf16->type == audit::dtype::bf16, "only '<u2' may need the declaration: %s", plain_message.c_str());
  }
  // Declaring anything but bf16 is rejected whatever the file holds (after it was read).
  std::string other_message;
  FUZZ_CHECK(!read(bytes, name, audit::dtype::f32, other_message), "declared F32 accepted");
  return 0;
}
