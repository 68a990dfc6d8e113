// tools/certify/certify_data.hpp — what `ropecheck certify` computes, as plain data.
//
// The contract between the sweep (engine.hpp: computes a partial over one slice of positions), the
// merge (certificate.hpp: combines partials, exactly) and the writer (certificate.hpp: the JSON).
// A partial holds, per implementation and band, only order-free statistics (maxima with the first
// position reaching them, first positions of events), so that combining slices in any grouping or
// order gives the same numbers: a sharded and merged certificate is byte-identical to one run.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ropecheck/config.hpp"

namespace ropecheck::certify {

// How a certificate was asked for. Everything here is an input of the certificate (hashed into it);
// threads and progress are not (they do not change a single byte).
struct certify_request {
  std::string config_name;                   // preset name or config.json path, as given
  rope_config config;
  std::vector<std::string> config_notes;     // what reading config.json decided (hf_config_parse::notes)
  std::vector<std::string> implementations;  // registry names; empty = the default set
  std::string plugin_path;                   // a kernel behind src/ropecheck/plugin.h instead ("" = none)
  std::int64_t max_position = 0;             // N: positions 0..N (0 = max_position_embeddings - 1)
  double angle_threshold_rad = 1e-3;         // figures: first position whose applied angle error exceeds it
  double position_threshold_tokens = 0.5;    // figures: first position with a band off by >= this many tokens
  int shard_index = 1, shard_count = 1;      // --shard k/N: slice k (1-based) of N contiguous slices
  int threads = 0;                           // 0 = hardware concurrency; never changes the result
  double plugin_timeout_seconds = 10;        // per apply() of a plugin (its child process); never changes the result
};

// The slice of positions shard k of n covers, for positions 0..max_position: [first, last] with
// first = floor((k - 1) M / n), last = floor(k M / n) - 1, M = max_position + 1 (empty when first > last).
struct position_range {
  std::int64_t first = 0, last = -1;
};
[[nodiscard]] position_range shard_range(std::int64_t max_position, int index, int count);

// A maximum and the first (smallest) position where it is reached; position -1 = no value yet.
struct worst_at {
  double value = 0;
  std::int64_t position = -1;
  // Keeps the larger value, and on a tie the smaller position: associative and commutative.
  void raise(double v, std::int64_t p) {
    if (position < 0 || v > value || (v == value && p < position)) {
      value = v;
      position = p;
    }
  }
  void raise(const worst_at& o) {
    if (o.position >= 0) raise(o.value, o.position);
  }
};

inline void first_of(std::int64_t& acc, std::int64_t p) {
  if (p >= 0 && (acc < 0 || p < acc)) acc = p;
}

// One band of one implementation over a slice of positions.
struct band_stats {
  worst_at angle;      // |applied angle error| (rad); +inf for a non-finite or zero pair
  worst_at pair;       // max(|c - af cos|, |s - af sin|) / af: the judge's element error for unit inputs
  worst_at ratio;      // pair / the judge's allowance at (p, band): > 1 fails
  std::int64_t first_angle_over = -1;   // first p with angle > angle_threshold_rad
  std::int64_t first_tokens_over = -1;  // first p with angle / theta_b >= position_threshold_tokens
  std::int64_t first_equal_next = -1;   // first p (p + 1 <= N) whose applied pair is parallel to p + 1's
  void merge(const band_stats& o) {
    angle.raise(o.angle);
    pair.raise(o.pair);
    ratio.raise(o.ratio);
    first_of(first_angle_over, o.first_angle_over);
    first_of(first_tokens_over, o.first_tokens_over);
    first_of(first_equal_next, o.first_equal_next);
  }
};

// An implementation under test, as the certificate names it.
struct implementation_id {
  std::string name;
  std::string description;
  std::string dtype;   // the judge's dtype of its q/k storage ("float32", "bfloat16", ...): sets its allowance
  std::string source;  // "builtin" or "plugin <sha256 of the library file>"
};

// The certificate's inputs: equal for every shard of one certificate (merge checks it).
struct certificate_inputs {
  std::string config_name;
  rope_config config;
  std::vector<std::string> config_notes;
  std::vector<implementation_id> implementations;
  std::int64_t max_position = 0;
  std::int64_t seq_len = 0;  // what dynamic NTK / LongRoPE are evaluated at: max_position + 1
  double angle_threshold_rad = 0, position_threshold_tokens = 0;
  std::string ropecheck_version;
  std::string reference;  // the reference's precision and path
  std::string allowance;  // where the pass/fail allowance comes from
};

// A slice's statistics: stats[implementation][band].
struct partial_certificate {
  certificate_inputs inputs;
  int shard_index = 1, shard_count = 1;
  position_range range;
  std::vector<std::vector<band_stats>> stats;
};

}  // namespace ropecheck::certify
