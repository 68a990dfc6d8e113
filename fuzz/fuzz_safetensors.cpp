// fuzz/fuzz_safetensors.cpp — libFuzzer target: parse_safetensors on arbitrary bytes.
//
// The input is a whole .safetensors file. Findings: a crash, a sanitizer report, an exception other
// than input_error (tensor_file.hpp documents only that one), a returned tensor that breaks the
// contract (fuzz_tensor_common.hpp), an allocation beyond -malloc_limit_mb (fuzz/run.sh).
#include <cstddef>
#include <cstdint>
#include <span>

#include "fuzz_tensor_common.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  constexpr std::string_view name = "fuzz.safetensors";
  using namespace ropecheck;
  try {
    const auto tensors = audit::parse_safetensors(std::span<const unsigned char>(data, size), name);
    std::size_t total = 0;
    for (const auto& [key, t] : tensors) {
      FUZZ_CHECK(key == t.name, "map key '%s' vs tensor name '%s'", key.c_str(), t.name.c_str());
      FUZZ_CHECK(key != "__metadata__", "__metadata__ returned as a tensor");
      fuzz::check_tensor(t, size);
      total += t.values.size() * audit::dtype_size(t.type);
    }
    // Tensors may not overlap, so together they fit in the file too.
    FUZZ_CHECK(total == 0 || total + 8 <= size, "%zu data bytes from a %zu-byte file", total, size);
  } catch (const audit::input_error& e) {
    fuzz::check_rejection(e, name);
  }
  return 0;
}
