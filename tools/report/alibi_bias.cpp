// tools/report/alibi_bias.cpp — see alibi_bias.hpp (the computation; the writers are in alibi_bias_output.cpp).
#include "alibi_bias.hpp"

#include <cmath>
#include <stdexcept>

namespace ropecheck::report {

std::string_view to_string(alibi_strategy s) noexcept {
  switch (s) {
    case alibi_strategy::tensor_fp32: return "tensor_fp32";
    case alibi_strategy::tensor_bf16: return "tensor_bf16";
    case alibi_strategy::kernel_fp32: return "kernel_fp32";
    case alibi_strategy::kernel_bf16: return "kernel_bf16";
  }
  return "?";
}

std::string_view source_of(alibi_strategy s) noexcept {
  switch (s) {
    case alibi_strategy::tensor_fp32:
      return "precomputed fp32 tensor, slope x key position: transformers models/bloom/modeling_bloom.py "
             "build_alibi_tensor (fp32 model)";
    case alibi_strategy::tensor_bf16:
      return "the same tensor cast to bf16: build_alibi_tensor's .to(dtype) in a bf16 model";
    case alibi_strategy::kernel_fp32:
      return "slope x index in fp32 inside the kernel: flash-attention csrc/flash_attn/src/alibi.h apply_alibi "
             "(key column), vLLM csrc/attention/attention_kernels.cuh (token_idx - seq_len + 1)";
    case alibi_strategy::kernel_bf16:
      return "slope x index in bf16 arithmetic: transformers models/falcon/modeling_falcon.py build_alibi_tensor "
             "(slopes.bfloat16() x integer positions)";
  }
  return "?";
}

double round_to_fp32(double v) noexcept { return static_cast<double>(static_cast<float>(v)); }

double alibi_bias_by(alibi_strategy s, double slope, std::int64_t x) noexcept {
  const auto xd = static_cast<double>(x);
  switch (s) {
    case alibi_strategy::tensor_fp32:
    case alibi_strategy::kernel_fp32:
      // an fp32 slope times an integer converted to fp32 (exact below 2^24), the product rounded to fp32
      return round_to_fp32(round_to_fp32(slope) * round_to_fp32(xd));
    case alibi_strategy::tensor_bf16:
      return round_to_bf16(round_to_fp32(round_to_fp32(slope) * round_to_fp32(xd)));
    case alibi_strategy::kernel_bf16:
      // 8 x 8 significant bits: the double product is exact, one rounding to bf16
      return round_to_bf16(round_to_bf16(slope) * round_to_bf16(xd));
  }
  return 0;
}

std::vector<std::int64_t> alibi_positions(int log2_max) {
  std::vector<std::int64_t> out{0};
  for (int k = 0; k <= log2_max; ++k) {
    out.push_back(std::int64_t{1} << k);
    if (k < log2_max) out.push_back(std::llround(std::exp2(k + 0.5)));
  }
  std::vector<std::int64_t> u;
  for (const std::int64_t p : out)
    if (u.empty() || p > u.back()) u.push_back(p);  // 2^0.5 rounds to 1: kept once
  return u;
}

alibi_bias_result alibi_bias_errors(const bias_claim& claim, const std::vector<std::int64_t>& positions) {
  validate(claim);
  if (claim.scheme != bias_scheme::alibi)
    throw std::invalid_argument("scheme: the ALiBi bias figure needs an ALiBi claim, not " + std::string(to_string(claim.scheme)));
  alibi_bias_result r;
  r.claim = claim;
  r.slopes = claimed_slopes(claim.alibi);
  for (const alibi_strategy st : alibi_strategies) {
    alibi_bias_series s{st, {}};
    for (const std::int64_t x : positions) {
      alibi_bias_row row{x, -1, 0, 0, 0};
      for (std::size_t h = 0; h < r.slopes.size(); ++h) {
        const double slope = r.slopes[h];
        // the reference: s x in long double (alibi_bias.hpp: 64 bits for a 53 x 21-bit product)
        const long double exact = static_cast<long double>(slope) * static_cast<long double>(x);
        const double got = alibi_bias_by(st, slope, x);
        const auto e = static_cast<double>(std::fabs(static_cast<long double>(got) - exact));
        if (e > row.max_abs_error) row.max_abs_error = e, row.worst_head = static_cast<int>(h), row.worst_slope = slope;
        if (x >= 1 && got == alibi_bias_by(st, slope, x - 1)) ++row.merged_heads;
      }
      s.rows.push_back(row);
    }
    r.series.push_back(std::move(s));
  }
  return r;
}

}  // namespace ropecheck::report
