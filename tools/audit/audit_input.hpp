// tools/audit/audit_input.hpp — what `ropecheck audit` reads: a dump (a .safetensors file or a
// directory of .npy files) mapped read-only and seen through a judge::dump_view (x and y judged where
// they lie, in their own dtype; positions and the optional tensors decoded), every rule of the contract
// checked with a message naming the file and the tensor.
//
// The contract (README "Auditing another implementation"):
//   positions  integer [tokens] (or any shape P; float values accepted only when all integral)
//   x          the inputs,  shape P + [head_dim] or P + [heads, head_dim]
//   y          the outputs, the same shape; its dtype (F32, BF16, F16, F64) is the audited dtype
//   cos, sin   optional: the implementation's cache rows for those positions, P + [rotary_dim] or
//              P + [rotary_dim / 2]
//   inv_freq   optional: [rotary_dim / 2] (or [head_dim / 2])
// .npy directories: bf16 is stored as '<u2' bit patterns and must be declared, by the caller
// (`--dtype bfloat16`) or by a sidecar `ropecheck.json` in the directory: {"bfloat16": true}; its
// "metadata" object says what a safetensors file's __metadata__ says ({"layer": "5", "part": "indexer"}).
// Any other tensor is ignored (listed in notes). NaN or infinity in positions, x, cos, sin or
// inv_freq is bad input; in y it is the implementation's failure and is judged (non_finite).
#pragma once

#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "ropecheck/judge/dump_view.hpp"
#include "ropecheck/judge/judge.hpp"
#include "tensor_file.hpp"

namespace ropecheck::audit {

struct optional_tensor {
  std::string dtype;               // "float32", "bfloat16", ...
  std::vector<std::int64_t> shape;
  std::vector<double> values;
};

// Move-only: d's spans point into its own positions and into the mapped files, which move with it.
struct loaded_dump {
  judge::dump_view d;              // positions, x, y where they lie in files, dtype (= y's)
  std::vector<std::int64_t> positions, position_rows;  // what d.positions and d.position_rows span
  std::vector<mapped_file> files;  // the mappings d.x and d.y read
  std::filesystem::path source;
  std::string format;              // "safetensors" or "npy"
  std::string x_dtype;
  std::optional<optional_tensor> cos, sin, inv_freq;
  std::vector<std::string> notes;  // what was assumed or ignored, one line each
  // What the dump says about itself: a safetensors file's __metadata__, an .npy directory's
  // ropecheck.json "metadata" ({} when absent).
  std::map<std::string, std::string> metadata;
  std::vector<std::vector<unsigned char>> owned;  // bytes d.x and d.y read when they are not in files (subset_tokens)

  loaded_dump() = default;
  loaded_dump(const loaded_dump&) = delete;
  loaded_dump& operator=(const loaded_dump&) = delete;
  loaded_dump(loaded_dump&&) noexcept = default;
  loaded_dump& operator=(loaded_dump&&) noexcept = default;
};

// declared_dtype: "bfloat16" declares '<u2' arrays of an .npy directory as bf16; for any format,
// a declared dtype that contradicts y's stored dtype is an input_error.
// y_tensor: the outputs' tensor name ("y"; "prefill.y" / "decode.y" in an outputs file of the probe's
// calls, probe_outputs.hpp, whose other tensors are then not listed as ignored; "prefill.q_out" with x_tensor
// "q" for the queries of the qk form).
[[nodiscard]] loaded_dump load_dump(const std::filesystem::path& path,
                                    const std::optional<std::string>& declared_dtype = {},
                                    const std::string& y_tensor = "y", const std::string& x_tensor = "x");

// The dump of some of in's tokens (in the order given; each an index below in.d.tokens): their
// positions, rows, x and y copied (token-major), the rest as in's (its caches dropped). For a door
// that judges groups of tokens apart (the outputs of the probe's calls, by each call's sequence length).
[[nodiscard]] loaded_dump subset_tokens(const loaded_dump& in, const std::vector<std::size_t>& tokens);

// The dtype names the audit uses ("float32", "bfloat16", "float16", "float64"; integer types by
// their safetensors names).
[[nodiscard]] std::string audit_dtype_name(dtype t);

}  // namespace ropecheck::audit

namespace ropecheck::audit {

// What the optional cos/sin/inv_freq tensors say on their own, against the exact reference of the
// claim (evidence lines for the report; the verdict is the outputs' alone).
struct cache_evidence {
  std::string what;      // "cos/sin", "inv_freq"
  std::string sentence;  // one line with figures
  double max_error = 0;  // cos/sin: absolute (af included); inv_freq: relative
  double max_error_ulps = 0;  // in ulps of the tensor's own dtype
};
[[nodiscard]] std::vector<cache_evidence> check_caches(const loaded_dump& in, const rope_config& claimed,
                                                       std::int64_t seq_len);

}  // namespace ropecheck::audit
