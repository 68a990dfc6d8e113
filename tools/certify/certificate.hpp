// tools/certify/certificate.hpp — certificate.json: writing, reading back, merging shards, the verdict.
//
// Format "ropecheck-certificate", format_version 1 (keys in this order; new keys only at the end of
// an object; positions are integers, null = never; a number that is not finite is the string "inf"):
//   format, format_version, kind ("certificate" | "partial")
//   inputs        { config_name, config {...}, config_notes, implementations [{name, description, dtype,
//                   source}], max_position, seq_len, angle_threshold_rad, position_threshold_tokens,
//                   ropecheck_version, reference, allowance }
//   inputs_sha256 SHA-256 of the compact dump of `inputs`: equal inputs <=> equal hash
//   shard         (partials only) { index, count, first, last }
//   verdict       (certificates only) "pass" when every implementation passes, else "fail"
//   implementations [ { name, dtype,
//       (certificates only:) pass, worst_ratio_to_allowance {value, band, position},
//         worst_angle_rad {value, band, position}, worst_position_tokens {value, band, position},
//         first_angle_over_threshold {position, band}, first_position_error_over_threshold {...},
//         first_adjacent_positions_equal {position, band}, bound {holds, within_2x, worst_over_bound_min,
//         worst_over_bound_max, notes},
//       bands [ { band, inv_freq, worst_angle_rad, worst_angle_position, worst_pair_error,
//                 worst_pair_error_position, worst_ratio_to_allowance, worst_ratio_position,
//                 first_angle_over_threshold, first_position_error_over_threshold, first_equal_to_next,
//                 (certificates only:) worst_position_tokens, worst_position_tokens_position, bound_rad,
//                 worst_over_bound, bound_note } ] } ]
// An implementation passes when its worst ratio to the judge's allowance is <= 1 at every position and
// band (the threshold crossings and the first equal adjacent positions are figures beside it: a correct
// fp32 convention reaches them at large positions, and says where). The bound is the error model of
// the implementation's own arithmetic (bound.hpp), not a verdict: `holds` says whether it held
// everywhere, `within_2x` whether the worst case reached at least half of it in every band.
#pragma once

#include <string>
#include <vector>

#include "certify_data.hpp"
#include "sweep/report_data.hpp"

namespace ropecheck::certify {

// The JSON of a partial (one shard), for `ropecheck merge`.
[[nodiscard]] std::string partial_json(const partial_certificate& p);

// Reads a partial written by partial_json. Throws std::invalid_argument naming `origin` and the key
// for anything else (another format or version, a missing or unknown key, a wrong type).
[[nodiscard]] partial_certificate read_partial(const std::string& text, const std::string& origin);

// Combines the partials of one certificate: the same inputs (hash), the same shard count, every
// index 1..count exactly once (so the slices are disjoint and cover 0..max_position). Throws
// std::invalid_argument saying which file breaks which rule. The result is the unsharded partial:
// range 0..max_position, shard 1/1.
[[nodiscard]] partial_certificate merge_partials(const std::vector<partial_certificate>& parts,
                                                 const std::vector<std::string>& origins);

struct verdict {
  bool pass = true;
  std::vector<std::string> summary;  // one line per implementation, for people
};

// The certificate of a complete partial (range 0..max_position; std::invalid_argument otherwise):
// its JSON, and the verdict.
struct certificate {
  std::string json;
  verdict result;
};
[[nodiscard]] certificate finalize(const partial_certificate& complete);

// The figures of a certificate (kind "certificate") for the report, and the convention it certifies.
// Throws std::invalid_argument naming `origin` for anything but a certificate of this format.
struct certificate_reading {
  sweep::certificate_figures figures;
  rope_config config;
};
[[nodiscard]] certificate_reading read_certificate_figures(const std::string& text, const std::string& origin);

}  // namespace ropecheck::certify
