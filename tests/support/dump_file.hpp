// tests/support/dump_file.hpp — a judged dump (judge::dump) written as the safetensors file a user would write of
// those outputs (docs/audit.md's contract): positions [tokens] (M-RoPE: [rows, tokens], every row), x and y
// [tokens, heads, head_dim] in the dump's dtype, converted exactly (the values were widened exactly from it).
// For the tests that audit a door's outputs with `ropecheck audit` (tests/audit/plugin_door_test.cpp,
// tests/doors/plugin_doors_test.cpp, tests/doors/three_doors_test.cpp).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "plugin_loader.hpp"
#include "ropecheck/judge/judge.hpp"
#include "support/safetensors_writer.hpp"

namespace ropecheck::test {

// The safetensors dtype and the plugin wire type of a judge dtype ("float32", "float64", "bfloat16", "float16").
inline std::string safetensors_dtype(const std::string& judge_dtype) {
  return judge_dtype == "float32" ? "F32" : judge_dtype == "float64" ? "F64" : judge_dtype == "bfloat16" ? "BF16" : "F16";
}
inline plugin::dtype wire_dtype(const std::string& judge_dtype) {
  return judge_dtype == "float32"    ? plugin::dtype::f32
         : judge_dtype == "float64"  ? plugin::dtype::f64
         : judge_dtype == "bfloat16" ? plugin::dtype::bf16
                                     : plugin::dtype::f16;
}

inline void write_dump_file(const std::string& path, const judge::dump& d) {
  const plugin::dtype t = wire_dtype(d.dtype);
  const std::vector<std::int64_t> shape = {d.tokens, d.heads, d.head_dim};
  std::vector<unsigned char> x(d.x.size() * plugin::element_bytes(t)), y(d.y.size() * plugin::element_bytes(t));
  plugin::to_wire(t, d.x, x.data());
  plugin::to_wire(t, d.y, y.data());
  const bool rows = !d.position_rows.empty();
  const std::vector<std::int64_t> pos_shape =
      rows ? std::vector<std::int64_t>{static_cast<std::int64_t>(d.position_rows.size()) / d.tokens, d.tokens}
           : std::vector<std::int64_t>{d.tokens};
  write_safetensors(path, {{"positions", "I64", pos_shape, raw_bytes(rows ? d.position_rows : d.positions)},
                           {"x", safetensors_dtype(d.dtype), shape, x},
                           {"y", safetensors_dtype(d.dtype), shape, y}});
}

}  // namespace ropecheck::test
