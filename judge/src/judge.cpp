// judge/src/judge.cpp — see ropecheck/judge/judge.hpp for the contract. The orchestration only:
// where each part of a verdict comes from.
//
// Notation: p the claimed position of a token, theta_i the exact frequency of band i (reference),
// af the exact attention factor, T the dump dtype with unit roundoff u_T = 2^-digits(T) and
// eps_T = 2 u_T (one ulp at 1), z = x_a + i x_b the complex view of a rotated pair.
//
// 1. Judging (every element): judging.cpp, with the allowance of judge::allowance (allowance.cpp,
//    from error_model.hpp). Pass iff every element is within its allowance (and finite).
// 2. Diagnosis (only when it fails, except the fp32 drift warning on a pass), on the diagnosis
//    subset of a large dump (evidence.cpp: the implied gains g per (token, band) for a pairing,
//    implied positions, line fits). One pass per hypothesis family (passes.hpp):
//      pass_heads.cpp        each head alone: copied, unwritten, another head's (then the rest on the
//                            heads rotated wrong)
//      pass_pairing.cpp      layout, rotary dim (the pairing every later pass works on)
//      pass_magnitude.cpp    attention factor
//      pass_positions.cpp    offset, constant, wrong tokens, low-precision positions, linear factor
//      pass_frequencies.cpp  base, scaling, dynamic NTK, theta over head_dim, inv_freq precision
//      pass_angle_precision.cpp  angles formed in bf16/fp16 (eager 16-bit RoPE)
//      pass_cos_sin.cpp      fast sin/cos, low-precision cos/sin
//      pass_drift.cpp        fp32 drift
//    Then, on a failure, the other layer types of the same config (layer_hypothesis.cpp).
//    M-RoPE claims go to pass_mrope.cpp instead: the row permutations, section splits and single rows
//    re-judged, and the passes above on the text tokens (all rows equal) as plain RoPE.
//    One head gives no rigidity test: the pairing is then judged by the spread of the pair magnitude
//    ratios. Line fits need positions dense enough to unwrap; otherwise hypotheses are scanned
//    against the wrapped angles.
#include "ropecheck/judge/judge.hpp"

#include <algorithm>
#include <cmath>
#include <optional>
#include <span>
#include <stdexcept>

#include "evidence.hpp"
#include "judging.hpp"
#include "layer_hypothesis.hpp"
#include "direction.hpp"
#include "output_order.hpp"
#include "pass_mrope.hpp"
#include "passes.hpp"

namespace ropecheck::judge::detail {
namespace {

constexpr const char* sizes_disagree = "audit: dump sizes disagree (tokens x heads x head_dim, positions)";

// A widened dump's values against its shape (a view has no sizes beyond its shape's).
void check_sizes(const dump& d) {
  const auto n = static_cast<std::size_t>(d.tokens) * static_cast<std::size_t>(d.heads) *
                 static_cast<std::size_t>(d.head_dim);
  if (d.tokens <= 0 || d.heads <= 0 || d.head_dim <= 0 || d.x.size() != n || d.y.size() != n ||
      d.positions.size() != static_cast<std::size_t>(d.tokens))
    throw std::invalid_argument(sizes_disagree);
}

// The view's positions and rows as a dump without values: what the checks and the choice of the
// diagnosis subset read (positions are small; x and y stay where they lie).
dump positions_only(const dump_view& v) {
  dump d;
  d.positions.assign(v.positions.begin(), v.positions.end());
  d.position_rows.assign(v.position_rows.begin(), v.position_rows.end());
  d.tokens = v.tokens, d.heads = v.heads, d.head_dim = v.head_dim;
  d.dtype = v.dtype;
  return d;
}

void check_dump(const dump_view& d, const rope_config& claimed, const audit_options& opt) {
  if (d.tokens <= 0 || d.heads <= 0 || d.head_dim <= 0 || !d.x.data || !d.y.data ||
      d.positions.size() != static_cast<std::size_t>(d.tokens))
    throw std::invalid_argument(sizes_disagree);
  check_position_rows(positions_only(d), claimed);
  if (!d.allowance_positions.empty() && d.allowance_positions.size() != static_cast<std::size_t>(d.tokens))
    throw std::invalid_argument(sizes_disagree);
  if (d.head_dim != claimed.head_dim)
    throw std::invalid_argument(fmt("audit: dump head_dim %d but the config says %d", d.head_dim, claimed.head_dim));
  if (opt.tolerance_ulps && !(*opt.tolerance_ulps > 0 && std::isfinite(*opt.tolerance_ulps)))
    throw std::invalid_argument("audit: the tolerance override must be a positive number of ulps");
  if (opt.diagnosis_tokens < kDiagnosisSmallest)  // the subset always holds the 64 smallest positions
    throw std::invalid_argument(fmt("audit: diagnosis_tokens must be at least %d (the smallest positions are always "
                                    "diagnosed), not %d", kDiagnosisSmallest, opt.diagnosis_tokens));
}

void order_findings(verdict& v) {
  std::stable_sort(v.findings.begin(), v.findings.end(),
                   [](const finding& l, const finding& r) { return l.confidence > r.confidence; });
}

// The passes after the pairing, on the chosen explanation.
void diagnose(const context& c, const pairing& P) {
  std::optional<reference::rope_reference> own;
  rope_config cfg = c.claimed;
  cfg.rotary_dim = P.rd;
  if (P.rd != c.claimed.rotary_dim) own.emplace(cfg);
  const reference::rope_reference& R = own ? *own : c.ref;
  const explanation e{P, cfg, R, thetas(R)};

  const double m_med = pass_magnitude(c, e);
  const position_evidence pos = pass_positions(c, e);
  if (!pos.explain && pass_angle_precision(c, e)) return;
  if (!pos.explain) {
    const frequency_evidence f = pass_frequencies(c, e);
    if (!f.named && f.max_rel <= 1e-3) drift_after_frequencies(c, e, f);
  }
  if (pos.explain && !pos.named && !pass_frequencies(c, e, frequency_mode::named_only).named &&
      !pass_cos_sin(c, e, m_med, pos) && c.v.findings.empty() && !pass_angle_precision(c, e))
    drift_after_cos_sin(c, e);
}

// Sequence length for dynamic NTK and LongRoPE: HF derives it from the position ids.
std::int64_t sequence_length(std::span<const std::int64_t> positions, const audit_options& opt) {
  std::int64_t pmax = positions.front();
  for (auto p : positions) pmax = std::max(pmax, p);
  return opt.seq_len > 0 ? opt.seq_len : std::max<std::int64_t>(pmax + 1, 1);
}

// A forward claim (the reversed one is mapped onto it by direction.cpp). try_reversed: on a failure,
// test whether the dump turns the other way (rotation_reversed) before the diagnosis.
// stated: the user's claim (claimed, or the reversed claim audit() mapped onto it), for the finding's words.
verdict audit_forward(const dump_view& given, const rope_config& claimed, const audit_options& opt, bool try_reversed,
                      const rope_config& stated) {
  const dump index = positions_only(given);
  // M-RoPE without rows: text-only tokens, every row the given positions.
  const std::vector<std::int64_t> rows =
      claimed.mrope != mrope_kind::none && given.position_rows.empty() ? text_rows(index, claimed).position_rows
                                                                        : std::vector<std::int64_t>{};
  dump_view full = given;
  if (!rows.empty()) full.position_rows = rows;
  // The allowance for exact angles (the flat override is applied in the judging, where both
  // references need it).
  const judge::allowance AL(claimed, full.dtype, reference_kind::exact, opt.strict, std::nullopt, opt.extra_allowance);
  std::int64_t pmin = full.positions.front(), pmax = full.positions.front();
  for (auto p : full.positions) pmin = std::min(pmin, p), pmax = std::max(pmax, p);
  const std::int64_t seq_len = sequence_length(full.positions, opt);
  const reference::rope_reference ref(claimed, seq_len);

  verdict v;
  const judging_frame jf{full, claimed, opt, ref, AL, seq_len};
  const judgement J = judge_elements(jf, v);

  // The diagnosis works on a spread subset of a large dump (its fits need hundreds of tokens, not
  // millions), widened to doubles (every token of a small dump); d is that subset from here on.
  const std::vector<int> subset = diagnosis_subset(index, opt.diagnosis_tokens);
  const bool partial = static_cast<int>(subset.size()) < full.tokens;
  const dump d = widen_tokens(full, subset);
  v.tokens_diagnosed = d.tokens;
  score_violation(d, claimed, ref, v);

  const context c{d,
                  claimed,
                  ref,
                  AL,
                  seq_len,
                  pmin,
                  pmax,
                  static_cast<double>(std::max(std::llabs(pmin), std::llabs(pmax))),
                  static_cast<double>(ref.attention_factor().value()),
                  AL.dtype().u(),
                  v};
  if (claimed.mrope != mrope_kind::none) {  // pass_mrope.cpp: the rows, the sections, then the text tokens
    diagnose_mrope(mrope_frame{jf, d, v.pass, J.needed_angle_allowance}, v);
    order_findings(v);
    return v;
  }
  std::vector<cell> claimed_cells = gains(d, claimed.pair_layout, claimed.rotary_dim);
  if (v.pass) {
    if (J.needed_angle_allowance && AL.fp32_angles())
      drift_warning(c, pairing{claimed.pair_layout, claimed.rotary_dim, std::move(claimed_cells)});
    return v;
  }
  if (not_framework_convention(jf, J, v)) {
    order_findings(v);
    return v;
  }
  // The other direction first: one finding explains every cell (direction.cpp), the subset as a cheap
  // test before the whole dump.
  if (try_reversed && reversed_hypothesis(jf, partial ? &d : nullptr, stated, v)) {
    order_findings(v);
    return v;
  }
  // Each head alone (pass_heads.cpp): when some heads are not rotated as the others, heads_wrong, and the
  // rest of the diagnosis on the heads rotated wrong only (none: heads_wrong alone).
  if (const heads_evidence H = pass_heads(c, jf); H.named) {
    if (!H.wrong.empty()) {
      const dump dw = heads_of(d, H.wrong);
      const context cw{dw, claimed, ref, AL, seq_len, c.pmin, c.pmax, c.pabs, c.af, c.uT, v};
      const pairing_choice pw = pass_pairing(cw, gains(dw, claimed.pair_layout, claimed.rotary_dim));
      diagnose(cw, pw.cands[pw.best]);
    }
    order_findings(v);
    return v;
  }
  const pairing_choice pc = pass_pairing(c, std::move(claimed_cells));
  diagnose(c, pc.cands[pc.best]);
  order_findings(v);
  return v;
}

}  // namespace

verdict judge_in_frame(const judging_frame& f, const dump& d) { return judge_in_frame(f, view_of(d)); }

verdict judge_in_frame(const judging_frame& f, const dump_view& d) {
  audit_options quiet = f.opt;
  quiet.progress = nullptr;
  verdict v;
  (void)judge_elements(judging_frame{d, f.claimed, quiet, f.ref, f.AL, f.seq_len}, v);
  return v;
}

}  // namespace ropecheck::judge::detail

namespace ropecheck::judge {

namespace {

verdict audit_claim(const dump_view& given, const rope_config& claimed, const audit_options& opt) {
  // DeepSeek's rope_interleave writes its outputs half-split: judged in the input's order.
  if (claimed.outputs == output_order::half_split) return detail::audit_half_split_outputs(given, claimed, opt);
  // A reversed rotation (nanochat) is judged as the forward one on the conjugated pairs (direction.cpp):
  // the same judgement, diagnosis and rotation_reversed test, worded in the reversed claim's terms.
  const bool one_d = claimed.mrope == mrope_kind::none;  // M-RoPE keeps its own passes: no rotation_reversed test
  if (claimed.direction == rotation_direction::reversed) {
    rope_config forward = claimed;
    forward.direction = rotation_direction::forward;
    return detail::audit_forward(detail::conjugate_pairs(given, claimed), forward, opt, one_d, claimed);
  }
  return detail::audit_forward(given, claimed, opt, one_d, claimed);
}

}  // namespace

verdict audit(const dump& given, const rope_config& claimed, const audit_options& opt) {
  detail::check_sizes(given);
  return audit(view_of(given), claimed, opt);
}

verdict audit(const dump_view& given, const rope_config& claimed, const audit_options& opt) {
  detail::check_dump(given, claimed, opt);
  if (opt.other_layers.empty()) return audit_claim(given, claimed, opt);
  // The claim judged without the other layers (the passes' own re-judgements must not try them), then,
  // on a failure, each other layer type: layer_convention_wrong, first (layer_hypothesis.cpp).
  audit_options claim_only = opt;
  claim_only.other_layers.clear();
  verdict v = audit_claim(given, claimed, claim_only);
  detail::other_layer_hypothesis(given, claimed, opt, v);
  return v;
}

}  // namespace ropecheck::judge
