// ropecheck/judge/bias_allowance.hpp — the error model's bias section (error_model.hpp's sections 1-7 are RoPE's;
// this is the score-matrix schemes' share, judge/bias.hpp). Light header: <cmath> only.
//
// 8. A bias read back from attention outputs (judge/src/bias_probe.cpp, bias_alibi.cpp). With v one-hot per key
//    and q.k one constant c per row, a row of o is the softmax weights w_j, stored in T; key j's score minus the
//    reference key's is log(w_j / w_ref).
//    a) The read-out, per key (bias_weight_share): one rounding of the fp32 softmax's weight into T, u_T relative
//       for a normal w and denorm_min_T / 2 absolute for a subnormal one (fp16 reaches its subnormals at
//       w < 6e-5: slope x distance > 10), plus 3 u_32 for the fp32 softmax's exp, sum and division (section 7).
//       In log units a relative error r costs at most r / (1 - r) (r <= 1/2 for any nonzero stored weight).
//       Key j's difference carries its share and the reference key's.
//    b) The bias rounded once in T in the form the claim stores it (bias_rounding_share): HF BLOOM's
//       build_alibi_tensor and Falcon's hold slopes x key position in the model dtype, so the stored bias is
//       |slope n|, not |slope (m - n)|: at n = 65536 with slope 1/2 the bf16 spacing is 256, keys share a score.
//       (huggingface/transformers models/bloom/modeling_bloom.py build_alibi_tensor: `alibi = slopes[..., None] *
//       arange_tensor`, `.to(dtype)`; models/falcon/modeling_falcon.py build_alibi_tensor: `slopes[...,
//       None].bfloat16() * arange_tensor`, `.to(dtype)`; flash-attention csrc/flash_attn/src/alibi.h: causal
//       `+= alibi_slope * col_idx`, the key position, in fp32.) A relative form stores |slope (m - n)|. u_T
//       |b_stored|. HF Falcon forms the product in bf16 whatever the model dtype: its slopes rounded to bf16 (the
//       claim's slopes_bf16 rounds them, bias_claim.hpp claimed_slopes), the int64 positions promoted to bf16 by
//       torch's type promotion (exact to 256, then rounded), the product rounded to bf16; its SDPA path then
//       divides by sqrt(head_dim) in the model dtype (FalconModel._update_causal_mask). u_S |b_stored| with
//       u_S = (1 + u_bf16)^2 (1 + u_T) - 1, u_bf16 = 2^-8 (tests/python/toys' hf_falcon: 3.5e4 of an fp32
//       allowance without the bf16 roundings, 1.08 with one only; tests/judge/bias_test.cpp's HF Falcon SDPA
//       emulation at 0.789 of it without the u_T term, 0.763 with it: the term is there because the code rounds).
//    c) The score's own rounding in T: s = c + b summed in T (an eager kernel's baddbmm / +=): u_T (|c| + |b|).
//    A kernel that forms its bias in fp32 (flash-attn's alibi_slopes) is inside (b) and (c) for any T >= fp32's.
//    Nothing here is tuned: tests/judge/bias_test.cpp runs the engines' conventions under it in fp32, bf16, fp16.
#pragma once

#include <cmath>

namespace ropecheck::judge {

// The smallest positive (subnormal) value of the type with `digits` significand bits (bf16 8, fp16 11, fp32
// 24, fp64 53).
[[nodiscard]] inline double denorm_min_of_digits(int digits) {
  switch (digits) {
    case 8: return std::ldexp(1.0, -133);
    case 11: return std::ldexp(1.0, -24);
    case 24: return std::ldexp(1.0, -149);
    default: return std::ldexp(1.0, -1074);
  }
}

// 8a: the log-units error of one stored weight w (> 0) in T (unit roundoff uT, subnormal step dmin).
[[nodiscard]] inline double bias_weight_share(double w, double uT, double dmin) {
  const double r = std::fmax(uT, dmin / 2 / w) + 3 * 0x1p-24;
  return r >= 1 ? INFINITY : r / (1 - r);
}

// 8b + 8c: the bias b_stored (in the claim's stored form) rounded once at u_stored (u_T, or u_bf16 for a family
// forming it in bf16) and the score c + b rounded in T. u_stored < 0: u_T.
[[nodiscard]] inline double bias_rounding_share(double b_stored, double c, double uT, double u_stored = -1) {
  return (u_stored < 0 ? uT : u_stored) * std::fabs(b_stored) + uT * (std::fabs(c) + std::fabs(b_stored));
}

}  // namespace ropecheck::judge
