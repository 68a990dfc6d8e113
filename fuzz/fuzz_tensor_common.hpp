// fuzz/fuzz_tensor_common.hpp — what every tensor the readers return must satisfy, and what every
// rejection must look like (tools/audit/tensor_file.hpp's contract).
#pragma once

#include <cmath>
#include <cstdint>
#include <string>
#include <string_view>

#include "fuzz_check.hpp"
#include "tensor_file.hpp"

namespace ropecheck::fuzz {

// values.size() == product(shape), has_non_finite says whether some value is NaN or +-inf, and the
// decoded bytes fit in the input (nothing allocated beyond what the file backs).
inline void check_tensor(const audit::tensor& t, std::size_t input_size) {
  std::uint64_t count = 1;
  for (const std::int64_t d : t.shape) {
    FUZZ_CHECK(d >= 0, "tensor '%s': negative dimension %lld accepted", t.name.c_str(), static_cast<long long>(d));
    FUZZ_CHECK(!__builtin_mul_overflow(count, static_cast<std::uint64_t>(d), &count), "tensor '%s': shape overflows",
               t.name.c_str());
  }
  FUZZ_CHECK(t.values.size() == count, "tensor '%s': %zu values for %llu elements", t.name.c_str(), t.values.size(),
             static_cast<unsigned long long>(count));
  FUZZ_CHECK(t.values.size() * audit::dtype_size(t.type) <= input_size, "tensor '%s': more data than the input holds",
             t.name.c_str());
  bool non_finite = false;
  for (const double v : t.values) non_finite |= !std::isfinite(v);
  FUZZ_CHECK(t.has_non_finite == non_finite, "tensor '%s': has_non_finite is %d", t.name.c_str(), t.has_non_finite);
  if (t.type == audit::dtype::i64 || t.type == audit::dtype::i32)
    for (const double v : t.values)
      FUZZ_CHECK(std::fabs(v) <= 9007199254740992.0 && v == std::floor(v), "tensor '%s': integer value %.17g",
                 t.name.c_str(), v);
}

// An input_error's message is "<name>: <problem>" with a non-empty problem.
inline void check_rejection(const audit::input_error& e, std::string_view name) {
  const std::string_view m = e.what();
  FUZZ_CHECK(m.size() > name.size() + 2 && m.substr(0, name.size()) == name && m.substr(name.size(), 2) == ": ",
             "message does not start with the file name: %s", e.what());
  FUZZ_CHECK(e.file == name, "input_error::file is %s", e.file.c_str());
}

}  // namespace ropecheck::fuzz
