// ropecheck/judge/table_allowance.hpp — the error model's section for the residual-stream tables (error_model.hpp's
// sections 1-7 are RoPE's, bias_allowance.hpp's 8 the score biases'; judge/table.hpp). Light header: <cmath> only.
//
// 9. A sinusoid row read from an implementation, entry v~ of band i at the evaluated position q (table_claim.hpp's
//    p + offset), exact value v = sin or cos of phi = q w_i, w_i = base^(-i / D). Every implementation read forms
//    the angle in fp32 or wider (docs/tables.md cites them: fairseq's and M2M100's `torch.exp(torch.arange(half_dim)
//    * -emb)` then `arange(num).float() * emb`, Whisper's sinusoids() the same in fp32, Marian's and DistilBERT's
//    in numpy float64 then cast to fp32), then rounds the table once into the model dtype T.
//    a) The frequency in fp32: x = i log(base) / D formed with two roundings and log's own (3 u_32 |x|), exp adds
//       at most 2 u_32 relative: w~ = w (1 + e), |e| <= (3 |x| + 2) u_32 (|x| <= log(base): 9.2 for 10000).
//    b) The angle in fp32: phi~ = fl(q w~), q exact in fp32 below 2^24 (beyond, one more u_32): |phi~ - phi| <=
//       (3 |x| + 2 + 1 + [q >= 2^24]) u_32 |phi|, and sin/cos move by at most that (|d sin| <= |d phi|).
//    c) sin/cos in fp32: 2 u_32 absolute (torch's and glibc's are within 1 ulp of a value <= 1; 2 for margin of the
//       vectorised paths, both below the dtype's rounding for any T narrower than fp32).
//    d) One rounding into T: u_T |v~| for a normal value, denorm_min_T / 2 absolute below T's normal range.
//    The "exact-angle" allowance drops (a)-(b) (an implementation forming the angle in float64 or exactly is inside
//    it); the fp32-angle allowance keeps them. Beyond the first, inside the second: a pass with angle_drift_fp32
//    (a failure under --strict), as RoPE's angles are judged.
//    A learned table's row read from an implementation is the weight row, rounded once into T (d); the weights as
//    the user gives them are exact (a table given in bf16 to a bf16 kernel: the rounding is the identity).
//    Nothing here is tuned: tests/judge/table_test.cpp runs the families' tables under it in fp32, bf16, fp16.
#pragma once

#include <cmath>
#include <cstdint>

namespace ropecheck::judge {

// 9d: one rounding of v into the type of `digits` significand bits (unit roundoff uT, subnormal step dmin).
[[nodiscard]] inline double table_rounding_share(double v, double uT, double dmin) {
  return std::fmax(uT * std::fabs(v), dmin / 2);
}

// 9a-c: the fp32 formation's share for band i of D at evaluated position q (0 when exact_angle).
[[nodiscard]] inline double table_angle_share(std::int64_t q, int band, double denominator, double base, bool exact_angle) {
  constexpr double u32 = 0x1p-24;
  const double x = band / denominator * std::log(base);
  const double phi = std::fabs(static_cast<double>(q)) * std::exp(-x);
  const double k = 3 * std::fabs(x) + 2 + 1 + (std::fabs(static_cast<double>(q)) >= 0x1p24 ? 1 : 0);
  return (exact_angle ? 0.0 : k * u32 * phi) + 2 * u32;
}

}  // namespace ropecheck::judge
