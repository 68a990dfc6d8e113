// ropecheck/reference/reference.hpp — the high-precision RoPE reference.
//
// Contract: every value here is computed from the rope_config's parameters taken as exact
// rationals, in MPFR at `precision_bits` (>= 200), by code that shares nothing with src/ (no
// kernel, schedule or scalar header of ropecheck is used by the implementation). Results are
// handed out as double-double (hi + lo), which carries ~106 bits: far below the 2^-53 of the
// widest hardware type any kernel is checked in (long double has 2^-64).
//
// Three paths:
//   * cos_sin_mpfr(): the angle pos * inv_freq formed and reduced in MPFR, then mpfr_sin_cos.
//     Slow (microseconds a value) and obviously right: the yardstick.
//   * cos_sin(): the fast path for reports and audits. inv_freq / (2 pi) is held as a 64.192-bit
//     fixed-point number; pos * f mod 1 is formed exactly in integer arithmetic; sin/cos of the
//     reduced angle is evaluated in double-double. Absolute error <= 2^-90 for |pos| <= 2^62,
//     validated against the MPFR path (tests/reference/).
//   * dense_cos_sin(): every band over a run of consecutive positions, for exhaustive sweeps: a
//     double-double rotation recurrence re-anchored on the fast path every 128 positions, same
//     2^-90 contract, same bits on every instruction set and for any shard of a sweep.
//
// MPFR and GMP headers stay inside reference/src: including this header costs nothing.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "ropecheck/config.hpp"

namespace ropecheck::reference {

// An unevaluated sum hi + lo with |lo| <= ulp(hi) / 2.
struct dd {
  double hi = 0.0;
  double lo = 0.0;
  [[nodiscard]] long double value() const noexcept {
    return static_cast<long double>(hi) + static_cast<long double>(lo);
  }
};

struct cos_sin_dd {
  dd cos;
  dd sin;
};

// cos and sin of an angle given as a double (taken as the exact rational it is), in MPFR at
// `precision_bits`: for references of a framework's convention, where the angle itself is the
// convention's rounded product (HF: fp32(fp32(p) * fp32 inv_freq)) and only cos/sin are exact.
[[nodiscard]] cos_sin_dd cos_sin_of_angle(double angle, int precision_bits = 160);

// cos and sin of the absolute sinusoid's exact angle q * base^(-band / denominator) (table_claim.hpp: the paper's
// denominator d/2, fairseq's d/2 - 1), base, band and denominator taken as the exact rationals they are: the power,
// the product and the reduction are formed in MPFR at `precision_bits` (the judge's table reference,
// judge/src/table_judge.cpp). Throws std::invalid_argument for base <= 1, a denominator <= 0 or a precision outside
// [120, 2^16].
[[nodiscard]] cos_sin_dd sinusoid_cos_sin(std::int64_t q, double base, int band, double denominator, int precision_bits = 160);

// M-RoPE: the position row of every band (frequency index), rebuilt as Hugging Face builds it and
// sharing nothing with config.hpp's position_row (reference/src/mrope.cpp):
//   contiguous  (transformers models/qwen2_vl/modeling_qwen2_vl.py, apply_multimodal_rotary_pos_emb)
//               the cos/sin rows, [rows, rotary_dim] = cat(freqs, freqs), split along the last axis
//               into chunks of mrope_section * 2; chunk i is taken from row i % rows
//   interleaved (models/qwen3_vl/modeling_qwen3_vl.py, apply_interleaved_mrope) freqs of row 0, then
//               for dim = 1, 2: freqs_t[..., offset::3 up to 3 * section[dim]] = freqs[dim, ...]
// A 1-D config gives all zeros. Throws std::invalid_argument when the sections do not cover the
// bands the way HF's split needs (sum of sections != rotary_dim / 2).
[[nodiscard]] std::vector<int> mrope_band_rows(const rope_config& cfg);

class rope_reference {
 public:
  // Frequencies of `cfg` for a sequence of length `seq_len` (read by dynamic NTK and LongRoPE;
  // 0 = not given: dynamic NTK then uses its base schedule, LongRoPE its short factors).
  // Throws std::invalid_argument on a config no rule can evaluate (odd rotary_dim, base <= 1, ...).
  explicit rope_reference(const rope_config& cfg, std::int64_t seq_len = 0,
                          int precision_bits = 256);
  ~rope_reference();
  rope_reference(rope_reference&&) noexcept;
  rope_reference& operator=(rope_reference&&) noexcept;
  rope_reference(const rope_reference&) = delete;
  rope_reference& operator=(const rope_reference&) = delete;

  [[nodiscard]] const rope_config& config() const noexcept;
  [[nodiscard]] int bands() const noexcept;  // rotary_dim / 2
  [[nodiscard]] int precision_bits() const noexcept;

  // Effective angular frequency of `band` in rad/token, after scaling (PI's 1/s folded in).
  [[nodiscard]] dd inv_freq(int band) const;
  // Decimal digits of the MPFR value of inv_freq(band), for golden files.
  [[nodiscard]] std::string inv_freq_decimal(int band, int digits = 40) const;
  // Factor multiplying cos and sin (YaRN mscale, LongRoPE); exactly 1 for rules without one.
  [[nodiscard]] dd attention_factor() const;

  // pos * inv_freq(band), unreduced, relative error <= 2^-100.
  [[nodiscard]] dd angle(std::int64_t pos, int band) const;
  // (approx - exact angle), reduced to (-pi, pi]: how far an implementation's angle is from the
  // true one modulo a turn. Accurate to 2^-80 absolute.
  [[nodiscard]] double angle_error(std::int64_t pos, int band, double approx) const;

  // angle(pos, b) and cos_sin(pos, b) for every band b at once (same values, bit for bit): one
  // call per position for sweeps over all bands. angles and cs must hold bands() entries.
  void all_bands(std::int64_t pos, std::span<dd> angles, std::span<cos_sin_dd> cs) const;

  // cos and sin of pos * inv_freq(band), NOT multiplied by the attention factor.
  [[nodiscard]] cos_sin_dd cos_sin(std::int64_t pos, int band) const;       // fast path
  [[nodiscard]] cos_sin_dd cos_sin_mpfr(std::int64_t pos, int band) const;  // direct MPFR

  // The dense path (reference/src/dense.cpp, algorithm and error budget there; README "The dense
  // path"): cos_sin of every band at every position of [first, first + count).
  // Four arrays of count * bands() doubles each, position-major with bands contiguous: element
  // (p - first) * bands() + b holds band b at position p.
  struct dense_block {
    std::span<double> cos_hi, cos_lo, sin_hi, sin_lo;
  };
  enum class dense_isa { automatic, generic, avx2_fma };
  // cos and sin (NOT multiplied by the attention factor) of p * inv_freq(b) for every band b and
  // every p in [first, first + count), as double-double (hi + lo, |lo| <= ulp(hi)/2 not required).
  // Preconditions: first >= 0, count >= 0, first + count <= 2^62 (std::invalid_argument otherwise,
  // also for spans shorter than count * bands()). dense_isa::avx2_fma on a CPU without AVX2 and FMA
  // throws std::runtime_error; automatic takes it when the CPU has it, generic otherwise.
  // Every value depends only on (config, p, b): the recurrence is anchored at absolute positions
  // (multiples of dense_anchor_interval()), so any sub-sweep gives the same bits as a longer sweep,
  // whatever first/count. Same bits on every isa. Error <= 2^-90 absolute against the exact cos/sin
  // of p * inv_freq(b) (error budget < 2^-96 in reference/src/dense.cpp). Thread-safe: const, no shared mutable state; concurrent
  // calls on disjoint outputs are fine.
  void dense_cos_sin(std::int64_t first, std::int64_t count, const dense_block& out,
                     dense_isa isa = dense_isa::automatic) const;
  [[nodiscard]] static int dense_anchor_interval() noexcept;
  [[nodiscard]] static bool dense_avx2_fma_available() noexcept;  // CPU check (__builtin_cpu_supports)

  // The exact rotation of one head vector at `pos` (attention factor included), in the config's
  // layout and direction (R(p), or R(-p) = R(p)^T for rotation_direction::reversed: inv_freq, angle
  // and cos_sin above are always those of the forward angle p * inv_freq); coordinates at rotary_dim
  // and beyond pass through. Proportional RoPE's frozen bands have inv_freq 0: their pairs are copied
  // (times the attention factor). x.size() == y.size() == head_dim.
  // Inputs are doubles: every value of every checked storage type but long double is one, and
  // tests choose long double inputs representable in the narrowest type.
  void rotate(std::int64_t pos, std::span<const double> x, std::span<dd> y) const;

  // M-RoPE: the exact rotation of one head vector whose position rows are `row_positions` (one per
  // row, rows = mrope_section.size(); 1 for a 1-D config): band i turns by row_positions[row(i)]
  // with row(i) = mrope_band_rows(config())[i]. Same arithmetic as rotate(), so rows all equal to p
  // give rotate(p, ...) bit for bit.
  void rotate_rows(std::span<const std::int64_t> row_positions, std::span<const double> x, std::span<dd> y) const;
  // The band-to-row map this reference uses (mrope_band_rows of its config).
  [[nodiscard]] const std::vector<int>& band_rows() const noexcept;

 private:
  struct impl;
  std::unique_ptr<impl> impl_;
};

}  // namespace ropecheck::reference
