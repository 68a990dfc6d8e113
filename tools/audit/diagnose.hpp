// tools/audit/diagnose.hpp — the diagnosis core of `ropecheck audit`: given what an implementation
// produced (inputs x, outputs y, the positions it was told) and the convention it claims, say
// whether it is right and, when it is not, which bug class it has, with the figures that show it.
//
// Method (details in diagnose.cpp):
//   1. Judge. y* = the exact rotation of x at each claimed position (reference::rope_reference).
//      Each element's error |y - y*| is taken relative to af (|x_a| + |x_b|) of its pair and
//      counted in ulps of the dump dtype (eps_T = 2^(1 - digits(T))). The allowance per element
//      is the error model of tests/error_model.hpp for a careful implementation in that dtype:
//      angles formed in fp32 (fp64 for float64 dumps), k u_angle |p theta| with k from the fp32
//      inv_freq bound; cos/sin rounded in the dtype; rotation arithmetic; the final store.
//   2. Diagnose (only when it fails, except the fp32 drift warning on a pass). Per (token, band)
//      the complex gain g = y_pair / x_pair, least squares over heads, gives the implied angle
//      arg g and the implied magnitude ratio |g|. Hypotheses are tested on these, each finding
//      carrying its figures: pairing (layout, rotary dim), attention factor, implied positions
//      (offset, constant, bf16/fp16 grid), fitted frequencies (base, rotary dim, low-precision
//      inv_freq, fp32 drift), and the cos/sin error at small positions (fast sin/cos, a bf16/fp16
//      cos/sin cache).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ropecheck/config.hpp"

namespace ropecheck::audit {

// What an implementation was given and what it returned, all values widened exactly to double.
struct dump {
  std::vector<std::int64_t> positions;  // one per token
  int tokens = 0, heads = 0, head_dim = 0;
  std::vector<double> x, y;  // [tokens][heads][head_dim]
  std::string dtype;         // "float32", "bfloat16", "float16", "float64"
};

struct finding {
  // Stable ids: layout_swapped, base_wrong, positions_offset, positions_constant, rotary_dim_wrong,
  // attention_factor_wrong, positions_low_precision, inv_freq_low_precision, angle_drift_fp32,
  // fast_sincos, cos_sin_low_precision.
  std::string bug_class;
  std::string sentence;  // one line, with the evidence figures
  double confidence = 0; // 0..1; findings are ordered by it
};

struct verdict {
  bool pass = false;
  double max_error_ulps = 0;  // max over elements of |y - y*| / (af (|x_a|+|x_b|)) / eps_T
  double max_error_abs = 0;   // max over elements of |y - y*|
  double tolerance = 0;       // allowance (ulps, same unit) at the element closest to / furthest over it
  std::string tolerance_reason;
  std::vector<finding> findings;  // ordered by evidence (confidence, descending)
};

struct audit_options {
  // fp32 angle drift beyond the exact-angle allowance is a warning by default; strict makes the
  // tolerance use exact angles for every dtype (the drift then fails and is named).
  bool strict = false;
};

// Throws std::invalid_argument on an inconsistent dump (sizes, unknown dtype) or a config the
// reference cannot evaluate.
[[nodiscard]] verdict audit(const dump& d, const rope_config& claimed, const audit_options& opt = {});

}  // namespace ropecheck::audit
