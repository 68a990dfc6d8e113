// tools/sweep/report_data.hpp — what a precision report computes, as plain data.
//
// The contract between the engine (engine.hpp: computes it) and the writers (output.hpp: CSV,
// summary.json, plots, HTML). Everything a writer shows is here; writers compute nothing.
// All numbers are doubles (they are errors and figures, not values under test).
#pragma once

#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ropecheck/claim.hpp"
#include "ropecheck/config.hpp"

namespace ropecheck::sweep {

// How the report was asked for (echoed into summary.json and the HTML header).
struct report_request {
  std::string config_name;          // preset name or config.json path
  rope_config config;
  std::int64_t train_length = 0;    // L_train for the band table (default: config.trained_length())
  std::int64_t eval_length = 0;     // L_eval for the band table (default: max_position)
  std::int64_t max_position = 0;    // largest position in the error-vs-position sweep
  bool exhaustive = false;          // every position 0..max_position, every band
  std::vector<std::string> implementations;  // names (see engine.hpp's registry); empty = defaults
  int threads = 0;                  // 0 = hardware concurrency
  std::uint64_t seed = 0x5eed2026;  // the random vectors of the rotation/score metrics
  double angle_threshold_rad = 1e-3;          // verdict: first position above this angle error
  double position_threshold_tokens = 0.5;     // verdict: first position with a band off by this many tokens
  bool judge = true;                // the judge's verdict per implementation (strategy_outputs.hpp)
  // What reading the config.json decided (hf_config_parse::notes: facts of the model type, the layer).
  std::vector<std::string> config_notes;
  claim claim_info;  // what the convention was claimed from (summary.json "claim"; printed at the top)
};

// One row of the band table.
struct band_row {
  int band = 0;
  double inv_freq = 0;              // theta_i after scaling (rad/token), from the reference
  double inv_freq_unscaled = 0;     // theta_i of the same config without scaling
  double wavelength = 0;            // 2 pi / theta_i (after scaling), tokens
  double wavelength_unscaled = 0;
  double turns_in_training = 0;     // L_train theta_unscaled / 2 pi: full turns seen in training
  double unseen_fraction_unscaled = 0;  // share of the arc [0, min(L_eval theta, 2 pi)) past L_train theta, without scaling
  double unseen_fraction_scaled = 0;    // the same at L_eval with the scaled theta
  // Storage floor (engine.hpp: storage_floor_rad): 2^-d / theta_i, the position resolution in tokens
  // of a pair stored with d significant bits, however exactly it was computed.
  double floor_tokens_bfloat16 = 0;     // d = 8
  double floor_tokens_float16 = 0;      // d = 11
  double floor_tokens_float32 = 0;      // d = 24
};

// The storage floor of one dtype over the band table: its angle 2^-d rad and, in tokens, at the
// slowest band (the largest 2^-d / theta_i), the line the position-error plot draws.
struct storage_floor {
  std::string dtype;        // "bfloat16", "float16", "float32"
  int bits = 0;             // d, significant bits (implicit bit included)
  double angle_rad = 0;     // 2^-d
  double max_tokens = 0;    // max over bands of 2^-d / theta_i
  int band = -1;            // where (the slowest band)
};

// Where the error of one implementation comes from, at one position, max over bands. The angle
// it formed (before sin/cos) is one source: formed_angle_rad = frequency + position + product
// (term by term, up to rounding); sin_cos and cache then move the pair it applies (in cos/sin
// units), so |applied angle error| <= formed_angle_rad + asin(sqrt(2) (sin_cos + cache) / af).
struct error_sources {
  double frequency_rad = 0;   // p (inv_freq_used - theta): rounding of the frequency
  double position_rad = 0;    // (p_used - p) inv_freq_used: the position's representation
  double product_rad = 0;     // angle - p_used inv_freq_used: rounding of the product
  double sin_cos = 0;         // cos_raw - af cos(angle): evaluation of sin/cos at the formed angle
  double cache = 0;           // cos_final - cos_raw: storing cos/sin in the cache dtype
  double rotation = 0;        // |y - R~ x| / |x|: the rotation's arithmetic given the final cos/sin
  double formed_angle_rad = 0;  // |angle formed - p theta| reduced to (-pi, pi]: the angle before sin/cos
};

// One implementation's error at one position (max over bands unless said otherwise).
struct position_errors {
  std::int64_t position = 0;
  // The rotation the implementation applies, from the (c, s) = (cos_final, sin_final) it feeds its
  // rotation (after every cast and cache): applied angle atan2(s, c), magnitude hypot(c, s).
  double angle_rad = 0;            // |atan2(s, c) - p theta| reduced to (-pi, pi]
  double position_tokens = 0;      // max over bands of |applied angle error| / theta_i
  double cos_sin_abs = 0;          // |c - af cos(p theta)|, |s - af sin(p theta)|
  double cos_sin_ulps = 0;         // the same in ulps of the implementation's cos/sin dtype
  double rotated_relative = 0;     // |y - y*| / |y*| for a seeded random head vector
  double score_violation = 0;      // |<R(m)q, R(n)k> - af <q, R(n-m)k>| / sum |q_j k_j|, n = m - 1
  double magnitude_rel = 0;        // |hypot(c, s) - af| / af
  error_sources sources;
};

// m = the fieldwise maximum of m and e (a NaN in m is replaced; a NaN in e is ignored). Used
// wherever points are pooled: buckets of the exhaustive sweep, plot envelopes.
inline void raise_to(position_errors& m, const position_errors& e) {
  auto mx = [](double& a, double b) {
    if (std::isnan(a) || b > a) a = b;
  };
  mx(m.angle_rad, e.angle_rad);
  mx(m.position_tokens, e.position_tokens);
  mx(m.cos_sin_abs, e.cos_sin_abs);
  mx(m.cos_sin_ulps, e.cos_sin_ulps);
  mx(m.rotated_relative, e.rotated_relative);
  mx(m.score_violation, e.score_violation);
  mx(m.magnitude_rel, e.magnitude_rel);
  mx(m.sources.formed_angle_rad, e.sources.formed_angle_rad);
  mx(m.sources.frequency_rad, e.sources.frequency_rad);
  mx(m.sources.position_rad, e.sources.position_rad);
  mx(m.sources.product_rad, e.sources.product_rad);
  mx(m.sources.sin_cos, e.sources.sin_cos);
  mx(m.sources.cache, e.sources.cache);
  mx(m.sources.rotation, e.sources.rotation);
}

// The judge's verdict on one implementation (strategy_outputs.hpp): the implementation driven on the
// judge's probe set (ropecheck/judge/probe.hpp) in its own storage/compute types and judged by
// ropecheck::audit::audit against exact mathematics, as `ropecheck audit` judges a dump of the same
// outputs. This is the report's verdict; the threshold crossings are figures beside it.
struct judge_column {
  bool judged = false;          // false: not asked for (report_request::judge), every field below empty
  std::string verdict;          // "pass"; "drift" (a pass with an angle_drift_fp32 warning); else the
                                // first finding's bug_class ("fail" when the judge names none)
  bool pass = false;            // the judge's pass (drift included)
  std::string dtype;            // the dtype judged: the implementation's storage ("float32", "bfloat16", ...)
  int tokens = 0;               // probe tokens (x heads x head_dim values each)
  double worst_ratio = 0;       // largest error / allowance (<= 1: within the error model)
  double max_error_ulps = 0;    // largest error, ulps of dtype relative to af(|x_a| + |x_b|)
  double tolerance_ulps = 0;    // the allowance where the error is largest
  std::int64_t worst_position = 0;
  int worst_band = -1;
  std::string finding;          // the first finding's sentence ("" when none)
};

// The positional score error of one implementation in one bucket of offsets d = m - n (engine.hpp,
// tools/report/score_offsets.hpp): over the pairs (query at m, key at n) of the bucket,
//   |<R~_m q, R~_n k> - af^2 <q, R(n - m) k>| / (af^2 |q| |k|)
// over the rotary coordinates (the judge's normalisation, ropecheck/judge/scores.hpp score_identity), R~ the
// implementation's rotation and R the reference's.
struct score_offset_row {
  std::int64_t offset_lo = 0, offset_hi = 0;  // the bucket: lo <= m - n <= hi
  std::int64_t pairs = 0;
  double max = 0;                             // the largest error of the bucket (infinity: a non-finite score)
  double rms = 0;                             // sqrt(mean of the squared errors)
  std::int64_t worst_m = 0, worst_n = 0;      // where the largest is
};

// One implementation of the report: a named storage/compute pairing and angle strategy.
struct implementation_series {
  std::string name;          // e.g. "hf_float", "bf16_positions"
  std::string description;   // one line: what it models ("HF transformers, fp32 angle, cos/sin cast to bf16")
  std::string cos_sin_dtype; // dtype its cos/sin are held in
  std::vector<position_errors> points;  // in position order
  // Per band, max applied angle error over all positions (for the heat map: band x position bucket).
  std::vector<std::vector<double>> band_position_heat;  // [band][bucket], applied angle error rad
  std::vector<std::int64_t> heat_bucket_edges;          // bucket b covers [edges[b], edges[b+1])
  // Verdicts: first position (in the sweep) where the threshold is passed; -1 = never.
  std::int64_t first_angle_over_threshold = -1;
  std::int64_t first_position_error_over_threshold = -1;
  // All three from the applied angle.
  std::int64_t first_adjacent_positions_equal = -1;  // smallest p with applied(p) == applied(p+1) in some band
  int worst_band = -1;                               // band of the largest applied angle error
  // The verdict: the judge's pass when it ran (judge.judged), else no threshold passed up to max_position.
  bool passes = true;
  judge_column judge;
  std::vector<score_offset_row> score_by_offset;  // by offset bucket, most negative m - n first
};

struct timing {
  double seconds_total = 0;
  double values_per_second = 0;        // (position, band) values evaluated per second, all threads
  double reference_values_per_second = 0;  // the fast reference's own throughput on this machine
  double mpfr_seconds_estimate = 0;    // what a plain MPFR reference would have needed for the same grid
  double score_seconds = 0;            // the score-level figure (score_by_offset), all implementations
  int threads = 1;
  std::int64_t positions = 0;
  std::int64_t values = 0;             // positions x bands x implementations
};

// A certificate's figures shown beside the report (`ropecheck report --certificate FILE`): read from a
// certificate.json of the same convention (tools/certify/certificate.hpp's read_certificate_figures).
struct certificate_row {
  std::string name;
  bool pass = false;
  double worst_ratio = 0;          // worst error / the judge's allowance, over every position and band
  int worst_ratio_band = -1;
  std::int64_t worst_ratio_position = -1;
  double worst_angle_rad = 0;      // worst applied angle error
  double worst_position_tokens = 0;
  std::int64_t first_angle_over = -1, first_tokens_over = -1, first_equal = -1;  // -1 = never
};
struct certificate_figures {
  std::string file;
  std::string inputs_sha256;
  std::string verdict;             // "pass" / "fail"
  std::int64_t max_position = 0;   // every position 0..max_position was checked
  std::vector<certificate_row> rows;
};

struct report_result {
  report_request request;
  double attention_factor = 1;
  std::vector<band_row> bands;
  std::vector<storage_floor> storage_floors;  // bfloat16, float16, float32
  std::vector<implementation_series> series;
  timing time;
  std::string ropecheck_version;
  std::string reference_precision;     // "MPFR 256 bits (fast path: 64.192 fixed point + double-double)"
  std::optional<certificate_figures> certificate;  // --certificate: shown beside the sweep's figures
};

}  // namespace ropecheck::sweep
