// ropecheck/judge/judge.hpp — the one judge every door calls (`ropecheck audit` on a dump, `audit --plugin`,
// the report's verdicts): given what an implementation
// produced (inputs x, outputs y, the positions it was told) and the convention it claims, say
// whether it is right and, when it is not, which bug class it has, with the figures that show it.
//
// Method (details in judge/src/judge.cpp, the orchestration; judging.cpp; one pass per
// hypothesis family behind judge/src/passes.hpp):
//   1. Judge. y* = the exact rotation of x at each claimed position (reference::rope_reference).
//      Each element's error |y - y*| is taken relative to af (|x_a| + |x_b|) of its pair and
//      counted in ulps of the dump dtype (eps_T = 2^(1 - digits(T))). The allowance per element
//      is the error model of ropecheck/judge/error_model.hpp for a careful implementation in that dtype:
//      angles formed in fp32 (fp64 for float64 dumps), k u_angle |p theta| with k from the fp32
//      inv_freq bound; cos/sin rounded in the dtype; rotation arithmetic; the final store.
//   2. Diagnose (only when it fails, except the fp32 drift warning on a pass). Per (token, band)
//      the complex gain g = y_pair / x_pair, least squares over heads, gives the implied angle
//      arg g and the implied magnitude ratio |g|. Hypotheses are tested on these, each finding
//      carrying its figures: pairing (layout, rotary dim), attention factor, implied positions
//      (offset, constant, bf16/fp16 grid), fitted frequencies (base, rotary dim, low-precision
//      inv_freq, fp32 drift), and the cos/sin error at small positions (fast sin/cos, a bf16/fp16
//      cos/sin cache). Every pass after the pairing works on the pairing it chose, and a finding is
//      named only inside its own error model; what no hypothesis explains is `unexplained`, with
//      the tokens (position range) and bands where the residual sits.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string_view>
#include <string>
#include <vector>

#include "ropecheck/config.hpp"
#include "ropecheck/judge/allowance.hpp"

namespace ropecheck::judge {

// What an implementation was given and what it returned, all values widened exactly to double.
struct dump {
  std::vector<std::int64_t> positions;  // one per token (M-RoPE: row 0, the temporal/text position)
  // M-RoPE: the position rows, [rows][tokens] row-major (row 0 temporal, 1 height, 2 width, as HF's
  // position_ids[:, batch, :]); band i is judged at row claimed.position_row(i). Empty for 1-D RoPE, and
  // for an M-RoPE claim it means text-only tokens (every row = positions).
  std::vector<std::int64_t> position_rows;
  // Where the allowance takes each token's angle error from (empty: its position). Evidence read from scores is
  // judged at m - n, but its angles were formed at m (the query) and at n (the key), each in fp32: the angle
  // term of the allowance is linear in |p|, so m + n grants both (judge/src/readout.cpp).
  std::vector<std::int64_t> allowance_positions;
  int tokens = 0, heads = 0, head_dim = 0;
  std::vector<double> x, y;  // [tokens][heads][head_dim]
  std::string dtype;         // "float32", "bfloat16", "float16", "float64"
};

struct finding {
  // Stable ids: layout_swapped, base_wrong, positions_offset, positions_constant, positions_wrong,
  // rotary_dim_wrong, attention_factor_wrong, positions_low_precision, inv_freq_low_precision,
  // angle_drift_fp32, fast_sincos, cos_sin_low_precision, dynamic_ntk_not_reset, scaling_wrong,
  // non_finite, not_hf_convention / not_ggml_convention (a framework's convention was asked for,
  // exact angles found), unexplained (no hypothesis fits).
  // layer_convention_wrong: the dump fails the layer convention it was checked against and passes under
  // another layer type's of the same config.json (audit_options::other_layers).
  // outputs_in_place: a warning on a pass (fails as layout_swapped under strict): a half-split
  // output claim (DeepSeek's rope_interleave) whose outputs are a correct rotation left in the
  // input's order (judge/src/output_order.cpp).
  // M-RoPE (judge/src/pass_mrope.cpp; each re-judged under the alternative it names, which
  // passes): mrope_rows_swapped (the dump fits another permutation of the position rows),
  // mrope_section_wrong (another band-to-row split: contiguous vs interleaved, or other sections,
  // fitted band by band from the implied angles), mrope_text_positions (the multimodal tokens, whose
  // rows differ, were rotated with one row for every band). The 1-D classes above are named on M-RoPE
  // dumps from the text tokens (all rows equal), judged as plain RoPE over the same frequencies.
  std::string bug_class;
  std::string sentence;  // one line, with the evidence figures
  double confidence = 0; // 0..1; findings are ordered by it
};

// How far a dump is from one reference: the largest element error (unit: ulps of the dump dtype
// relative to af (|x_a| + |x_b|)), where it is, and the largest error / allowance under that
// reference's own allowance (<= 1: within it).
struct distance {
  double max_ulps = 0;
  double max_abs = 0;
  std::int64_t at_position = 0;
  int at_band = -1;          // -1: a pass-through coordinate (or nothing measured)
  double worst_ratio = 0;    // max over elements of error / allowance
  std::int64_t worst_position = 0;
  int worst_band = -1;
};

// Which mathematics the dump is judged against.
//   exact  cos/sin of p theta_i with theta_i the exact schedule (the default): what the model means.
//   hf     Hugging Face's convention computed exactly: inv_freq as HF computes it in fp32
//          (hf_frequencies_fp32), the product fp32(fp32(p) inv_freq_i) rounded to fp32, then exact
//          cos/sin of that angle times the exact attention factor. A model trained with HF's fp32
//          angles is served faithfully only by reproducing them. (Meta's llama forms its angles
//          the same way: torch.outer of fp32 positions and the same fp32 inv_freq.)
//   ggml   llama.cpp's convention computed exactly: theta = fp32(p), multiplied band by band by
//          theta_scale = powf(base, -2/d) in fp32 (ggml_angle::fill_angles, with its YaRN ramp,
//          freq_scale and rope_freqs divisors), then exact cos/sin times the exact attention factor.

// One token's largest error against the chosen reference (ulps, as max_error_ulps) and its largest
// error / allowance.
struct token_error {
  std::int64_t position = 0;
  double max_ulps = 0;
  double worst_ratio = 0;
};

struct verdict {
  bool pass = false;
  reference_kind reference = reference_kind::exact;
  double max_error_ulps = 0;  // against the chosen reference (= from_exact or from_framework .max_ulps)
  double max_error_abs = 0;
  double tolerance = 0;       // allowance (ulps, same unit) at the element closest to / furthest over it
  double worst_ratio = 0;     // error / allowance there: pass iff <= 1 (and every value finite)
  std::string tolerance_reason;
  // How far the dump is from exact mathematics and from a framework's convention: `framework` is
  // "ggml" when the ggml reference was chosen, else "hf".
  distance from_exact, from_framework;
  std::string framework = "hf";
  std::int64_t elements = 0;     // values judged
  std::vector<token_error> per_position;  // one per token, in the dump's order
  // Relative-offset identity of the scores the outputs imply: max over checked pairs (m, n) and
  // heads of |<y_m, y_n> - af^2 <x_m, R(n - m) x_n>| / (af^2 |x_m| |x_n|) over the rotated part
  // (pairs: each token of the diagnosis subset with the smallest position and with its predecessor).
  double score_violation = 0;
  std::int64_t score_violation_m = 0, score_violation_n = 0;
  int tokens_diagnosed = 0;      // tokens the diagnosis looked at (a spread subset of a large dump)
  std::vector<finding> findings;  // ordered by evidence (confidence, descending)
  // The hf reference's inv_freq: "emulated" (hf_frequencies_fp32) or "from the dump" (with the
  // number of bands where the dump's differs from the emulation).
  std::string hf_inv_freq_source = "emulated";
};

struct audit_options {
  // fp32 angle drift beyond the exact-angle allowance is a warning by default; strict makes the
  // tolerance use exact angles for every dtype (the drift then fails and is named).
  bool strict = false;
  reference_kind reference = reference_kind::exact;
  // Replaces the derived allowance by a flat one: this many ulps of the dump dtype, relative to
  // af (|x_a| + |x_b|) (pass-through coordinates keep theirs).
  std::optional<double> tolerance_ulps;
  // Sequence length for dynamic NTK (and LongRoPE's factor choice); 0 = max position + 1, the
  // length HF's dynamic rule derives from the position ids.
  std::int64_t seq_len = 0;
  // HF's fp32 inv_freq as the framework really computed it, when known (a dump's own fp32
  // inv_freq): torch's vectorised pow can differ from the emulation's glibc powf by an ulp in some
  // bands, and one ulp of inv_freq is 0.3 rad at position 10^5 in band 0. Used by the hf
  // reference only, and only when every band is within 2 ulps of the emulation (else ignored).
  std::optional<std::vector<float>> hf_inv_freq;
  // Other layer types' conventions of the same config.json (per-layer configs: Gemma 3's sliding and
  // full layers, ...): when the dump fails its claim and passes under one of them, layer_convention_wrong
  // is the first finding (judge/src/layer_hypothesis.cpp). A door lists every layer it read; the judge
  // skips the claim itself, repeats and other head dims. Empty: not tried.
  struct other_layer {
    int index = 0;     // the first layer of that type
    std::string type;  // its layer type as the config names it ("sliding_attention", ...)
    rope_config config;
  };
  std::vector<other_layer> other_layers;
  // Added to every rotated element's allowance (relative to af (|x_a| + |x_b|)): evidence read from attention
  // scores (judge/src/readout.cpp) carries its read-out's error and a second side's (error_model.hpp section 7).
  double extra_allowance = 0;
  int threads = 0;                     // 0: all cores; the verdict does not depend on it
  int diagnosis_tokens = 4096;         // a larger dump is diagnosed on a spread subset (at least 64)
  std::function<void(std::int64_t done, std::int64_t total)> progress;  // tokens judged
};

// Throws std::invalid_argument on an inconsistent dump (sizes, unknown dtype) or a config the
// reference cannot evaluate.
[[nodiscard]] verdict audit(const dump& d, const rope_config& claimed, const audit_options& opt = {});

// The same judge on a dump read where it lies (ropecheck/judge/dump_view.hpp: a file mapping, in the
// dump's own dtype): every element judged through the view, chunk by chunk; the diagnosis on its
// spread subset widened to doubles. The verdict equals audit() of the widened dump, field for field;
// the overload above is this one on a view of its doubles.
struct dump_view;
[[nodiscard]] verdict audit(const dump_view& d, const rope_config& claimed, const audit_options& opt = {});

}  // namespace ropecheck::judge
