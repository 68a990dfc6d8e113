// judge/src/passes.hpp — the diagnosis, one pass per hypothesis family (internal to
// ropecheck::judge). judge.cpp runs them in this order on a failing dump:
//   pass_pairing      which (layout, rotary dim) rotates rigidly across heads: layout_swapped,
//                     rotary_dim_wrong (every coordinate rotated, or pass-through coordinates changed)
//   pass_magnitude    the implied attention factor: attention_factor_wrong
//   pass_positions    the position each token acts at: scaling_wrong (linear), positions_constant,
//                     positions_offset, positions_low_precision, positions_wrong
//   pass_frequencies  per-band frequencies when positions alone do not explain the angles: base_wrong,
//                     scaling_wrong, dynamic_ntk_not_reset, rotary_dim_wrong (theta over head_dim),
//                     inv_freq_low_precision
//   pass_scaling_fit  (called by pass_frequencies) parameter fits inside a scaling rule: scaling_wrong
//   pass_angle_precision  angles formed in a 16-bit type (eager bf16/fp16): angle_low_precision, when
//                     inv_freq alone in 16 bits does not explain as much (positions alone are named
//                     by pass_positions, earlier); before pass_frequencies when positions do not
//                     explain, else after pass_cos_sin
//   pass_cos_sin      the cos/sin error at small positions: fast_sincos, cos_sin_low_precision
//   pass_drift        angle error growing with position: angle_drift_fp32, or unexplained
//   pass_accumulated  (called from pass_drift / pass_frequencies where unexplained would be named) the
//                     error resets at anchors every P positions: cos_sin_accumulated
// Every pass after pass_pairing works on the cells of the pairing it chose (an explanation), so
// findings never contradict each other; each pass adds only what the explanation so far leaves open.
// Covered by tests/judge/pass_<family>_test.cpp, one per pass (their thresholds tested at equality on
// these declarations: pass_positions_test, pass_cos_sin_test, pass_drift_test, pass_angle_precision_test).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "evidence.hpp"
#include "ropecheck/judge/allowance.hpp"
#include "ropecheck/judge/judge.hpp"
#include "ropecheck/reference/reference.hpp"

namespace ropecheck::judge::detail {

// What every pass reads (the diagnosis subset and the claim) and where it writes (the verdict).
struct context {
  const dump& d;                         // the diagnosis subset
  const rope_config& claimed;
  const reference::rope_reference& ref;  // exact reference of the claimed convention
  const judge::allowance& AL;            // the exact-angle allowance of the dump's dtype
  std::int64_t seq_len = 0, pmin = 0, pmax = 0;
  double pabs = 0;  // largest |claimed position|
  double af = 1;    // the claimed (exact) attention factor
  double uT = 0;    // unit roundoff of the dump dtype
  verdict& v;
};

// The explanation the passes refine: the chosen pairing and the claimed frequencies over its rotary dim.
struct explanation {
  const pairing& P;
  rope_config cfg;                     // the claim with rotary_dim = P.rd
  const reference::rope_reference& R;  // its exact reference
  std::vector<double> th;              // its exact frequencies
  [[nodiscard]] int bands() const { return P.bands(); }
  [[nodiscard]] const cell& at(int t, int i) const { return P.at(t, i); }
};

struct judging_frame;  // judging.hpp

// ---- pass_pairing.cpp ----
struct pairing_choice {
  std::vector<pairing> cands;  // cands[0] is the claimed pairing
  std::size_t best = 0;
};
[[nodiscard]] pairing_choice pass_pairing(const context& c, std::vector<cell> claimed_cells);

// ---- pass_magnitude.cpp ----  returns the median |g| (the implied attention factor).
double pass_magnitude(const context& c, const explanation& e);

// ---- pass_positions.cpp ----
struct position_evidence {
  std::vector<implied> imp;      // per token, with the claimed frequencies (resolvable tokens only)
  std::vector<char> resolvable;  // per token: fp32 angles can resolve its position (pass_positions.cpp)
  int resolved = 0;              // how many are
  double worst_fit = 0;          // largest rms angle residual over the resolvable tokens (rad)
  bool explain = false;          // every resolvable token is explained by some position (worst_fit < 0.1 rad)
  bool named = false;            // a position class was named
  [[nodiscard]] bool used(int t) const { return resolvable[static_cast<std::size_t>(t)] != 0; }
  // "; N tokens past fp32's position resolution left out" when some are.
  [[nodiscard]] std::string left_out() const {
    const int n = static_cast<int>(resolvable.size()) - resolved;
    return n > 0 ? fmt("; %d tokens past fp32's position resolution left out", n) : std::string();
  }
};
[[nodiscard]] position_evidence pass_positions(const context& c, const explanation& e);
// fp32 can resolve a token's position when the rms over bands of a careful fp32 implementation's
// allowed angle error is at most 0.05 rad (half the 0.1 rad acceptance); 0.05 itself resolves.
[[nodiscard]] bool fp32_resolves_position(double rms_allowed_error);

// ---- pass_frequencies.cpp ----  run when positions do not explain the angles (name_or_unexplained),
// and, named_only, when they explain them to 0.1 rad but no cos/sin class fits: a short dense prompt
// with inv_freq in bf16 is off by 0.035 rad at position 299, within the position fit's reach.
struct frequency_evidence {
  bool named = false;   // a frequency class (or unexplained for too few positions) was named
  double max_rel = 0;   // largest relative frequency error of the line fits, and its band
  int max_rel_band = 0;
};
enum class frequency_mode : std::uint8_t { name_or_unexplained, named_only };
[[nodiscard]] frequency_evidence pass_frequencies(const context& c, const explanation& e,
                                                  frequency_mode mode = frequency_mode::name_or_unexplained);

// ---- pass_angle_precision.cpp ----  true when angle_low_precision was named.
bool pass_angle_precision(const context& c, const explanation& e);
// The candidate angles fl_F(fl_F(p) fl_F(theta32)) for a 16-bit F of `digits` significant bits (8
// bf16, 11 fp16), with theta32 the fp32 inv_freq within kf u_f32 of theta and fl_F(p) or
// fl_F(fl32(p)) as the position (pass_angle_precision.cpp); distinct values, at most 4.
[[nodiscard]] std::vector<double> angles16(std::int64_t p, double theta, double kf, int digits);
struct angle16_fit {
  double residual = std::numeric_limits<double>::infinity();  // |wrap(phi - a)| of the nearest candidate a
  double angle = 0;                                           // that a
  bool fits = false;                                          // residual <= delta
};
[[nodiscard]] angle16_fit fit_angle16(double phi, std::int64_t p, double theta, double kf, int digits, double delta);
// n of `of` is nearly all: at least 99%.
[[nodiscard]] bool nearly_all(int n, int of);
// An angle error of more than half a token in a band of frequency theta.
[[nodiscard]] bool past_half_token(double angle_error, double theta);

// ---- pass_cos_sin.cpp ----  true when a cos/sin class was named.
bool pass_cos_sin(const context& c, const explanation& e, double m_med, const position_evidence& pos);
// A cos/sin error independent of position: the largest error at p 1..7 is at least a quarter of the
// largest at 32..63 (a frequency error, growing as p, gives at most 7/32); exactly a quarter does not grow.
[[nodiscard]] bool error_does_not_grow(double small_p_max, double late_p_max);

// ---- pass_drift.cpp ----
struct drift_stats {
  double max_err = 0, max_tokens = 0, max_k = 0, small_p_max = 0;
  std::int64_t at_pos = 0;
  int at_band = 0;
};
// Angle errors of the pairing's cells against R's exact angles.
[[nodiscard]] drift_stats drift_of(const context& c, const pairing& P, const reference::rope_reference& R);
// What fp32 angle formation may be off by at |p theta| = abs_angle: floor + K u_f32 |p theta|.
[[nodiscard]] double fp32_drift_bound(const context& c, double abs_angle);
// An angle error within fp32 drift: error / bound <= 1 (the ratio the findings report); at the bound
// itself it is within, the bound being the largest error fp32 angle formation may reach.
[[nodiscard]] bool within_fp32_drift(double error, double bound);
// On a pass that needed the fp32 angle allowance: the drift, as a warning.
void drift_warning(const context& c, const pairing& claimed_pairing);
// Frequencies fitted within 1e-3 of the claim but the dump fails: fp32 drift when every angle is
// within its bound (pass_drift.cpp), else unexplained.
void drift_after_frequencies(const context& c, const explanation& e, const frequency_evidence& f);
// Positions explain every token, no cos/sin class, nothing named so far.
void drift_after_cos_sin(const context& c, const explanation& e);
// `unexplained`, naming the tokens and bands whose angles exceed the fp32 drift bound; `what` says
// which hypotheses were tried.
void residual_unexplained(const context& c, const explanation& e, const std::string& what);

// ---- pass_scaling_fit.cpp ----  run by pass_frequencies before `unexplained`: when the claimed rule
// (or linear scaling) has the shape of the fitted frequencies but not the numbers, the parameter
// values that fit (factor, original length, YaRN betas, Llama-3 band factors, the blend weight
// inverted), each evaluated through the rule itself. True when scaling_wrong was named.
struct fitted_frequencies {
  const std::vector<double>& fit;    // per band: the line fit's slope
  const std::vector<double>& noise;  // per band: its relative noise
  double claim_max_rel = 0;          // the claim's largest relative error over every band, and its band
  int claim_max_rel_band = 0;
};
bool pass_scaling_fit(const context& c, const explanation& e, const fitted_frequencies& F);
// Largest |fit_i / hyp_i - 1| over the bands fitted precisely enough to judge (noise < 5e-4: in bf16
// dumps the slowest bands turn too little to be fitted to 1e-3); infinity unless a quarter of the
// bands (at least 2) are. The one measure every schedule hypothesis is judged by.
[[nodiscard]] double frequency_mismatch(const std::vector<double>& fit, const std::vector<double>& noise,
                                        const std::vector<double>& hyp);
// A fit is named when it agrees within the schedule hypotheses' tolerance (mismatch < 1e-3; 1e-3
// itself does not), the claim does not (>= 1e-3) and the claim leaves more than 10x the fit's mismatch.
[[nodiscard]] bool scaling_fit_accepted(double fit_mismatch, double claim_mismatch);

// ---- pass_accumulated.cpp ----  a cos/sin table grown by recurrence from anchors every P positions:
// the error resets at the anchors. True when cos_sin_accumulated was named (called where pass_drift.cpp
// and pass_frequencies.cpp would name unexplained).
bool pass_accumulated(const context& c, const explanation& e);
// The reset's window: the tokens m .. m + 8 after a multiple m of P, m - 8 .. m - 1 before it (the probe
// set's +-8 straddles, ropecheck/judge/probe.hpp); a token at p mod P <= 8 is <= 8 steps from an anchor.
inline constexpr std::int64_t kResetWindow = 8;
// An element's error / allowance inside the allowance: <= 1 (the allowance itself is inside).
[[nodiscard]] bool within_allowance(double ratio);
// A reset: the largest error/allowance before m outside (> 1), after it inside (<= 1), and before at
// least 4 times after. A smooth error (drift, a frequency error) changes by 16/m relative over the
// window (< 7% for m >= 256); 4 leaves the margin of a step-wise recurrence. 4 itself is a reset.
inline constexpr double kResetRatio = 4;
[[nodiscard]] bool is_reset(double before, double after);
// The smallest period considered: the window (0..8) is at most about a quarter of it.
inline constexpr std::int64_t kMinPeriod = 32;
struct accumulated_evidence {
  std::vector<std::int64_t> resets;  // the reset points m
  double reset_ratio = 0;            // the largest before/after at a reset
  double before = 0;                 // the largest error/allowance just before a reset
  std::int64_t p_lo = 0;             // the smallest period every token near its multiples allows (0: none)
  std::int64_t p_hi = 0;             // the largest power of two dividing every reset point
  std::int64_t p_up = 0;             // the largest period leaving every probed multiple of p_lo an anchor
  double worst = 0;                  // the largest error/allowance and its position
  std::int64_t worst_pos = 0;
};
// From r(p), each position's largest |g / af - e^{i phi}| / allowance (pass_accumulated.cpp's rule).
[[nodiscard]] accumulated_evidence accumulated_of(const std::map<std::int64_t, double>& r);
// A reset seen and a period that explains it: P_lo found, and P_lo <= P_hi (every reset at its multiple).
// Its place among the findings: above unexplained (0.3) and the drift findings (<= 0.7) it replaces.
inline constexpr double kAccumulatedConfidence = 0.8;
[[nodiscard]] bool accumulated_named(const accumulated_evidence& a);

// ---- pass_heads.cpp ----  each head of the diagnosis subset judged alone, in the claim's frame.
enum class head_state : std::uint8_t { right, copied, unwritten, other_head, wrong };
struct head_judgement {
  head_state state = head_state::right;
  int source = -1;         // other_head: the head whose input it was rotated from
  double worst_ratio = 0;  // its own largest error / allowance
};
struct heads_evidence {
  std::vector<head_judgement> heads;  // one per head (empty for one head)
  bool named = false;                 // heads_wrong was named
  std::vector<int> wrong;             // the heads rotated wrong: the rest of the diagnosis is theirs
};
[[nodiscard]] heads_evidence pass_heads(const context& c, const judging_frame& jf);
// heads_wrong's place among the findings: before every class a pass names on the wrong heads (<= 0.96).
inline constexpr double kHeadsWrongConfidence = 0.97;
// Head h's output can be a rotation of head s's input only if each pair's length is af |x_s pair| to 1%:
// far above any rounding (bf16 stores 2^-8), far below the spread of two random inputs' pairs. The cheap test
// before judging h against s's input (pass_heads.cpp); 1% itself agrees.
inline constexpr double kPairLengthSlack = 0.01;
[[nodiscard]] bool pair_lengths_agree(double output_length, double rotated_input_length);
// The heads differ: not all in one state among copied / unwritten / wrong (a bug they share is the
// other passes'), at least 2 of them.
[[nodiscard]] bool heads_differ(const std::vector<head_judgement>& heads);
// "head 2", "heads 1..3", "heads 0, 2..3".
[[nodiscard]] std::string head_list(const std::vector<int>& heads);
// Those heads of d (in that order), every token.
[[nodiscard]] dump heads_of(const dump& d, const std::vector<int>& heads);

}  // namespace ropecheck::judge::detail
