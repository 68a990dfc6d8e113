// tools/certify/engine.cpp — see engine.hpp for the contract of every figure computed here.
#include "engine.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <memory>
#include <span>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "allowance_line.hpp"
#include "implementations.hpp"
#include "measure_kernels.hpp"
#include "sweep/measure.hpp"
#include "sweep/parallel.hpp"
#include "ropecheck/judge/allowance.hpp"
#include "ropecheck/reference/reference.hpp"

#ifndef ROPECHECK_VERSION
#define ROPECHECK_VERSION "unknown"
#endif

namespace ropecheck::certify {
namespace {

using clock_type = std::chrono::steady_clock;
using reference::rope_reference;
constexpr int reference_bits = 256;
constexpr std::int64_t max_supported_position = (std::int64_t{1} << 31) - 1;

double seconds_since(clock_type::time_point t0) {
  return std::chrono::duration<double>(clock_type::now() - t0).count();
}

struct resolved {
  certificate_inputs inputs;
  std::vector<implementation> impls;
};

resolved resolve(const certify_request& q) {
  resolved r;
  certificate_inputs& in = r.inputs;
  rope_config cfg = q.config;
  if (!q.plugin_path.empty()) {
    if (!q.implementations.empty()) throw std::invalid_argument("certify: give --impl or --plugin, not both");
    plugin_implementation p = load_plugin_implementation(q.plugin_path, q.plugin_timeout_seconds);
    cfg = p.declared;
    r.impls.push_back(std::move(p.impl));
    in.config_name = "declared by the plugin";
  } else {
    in.config_name = q.config_name;
  }
  validate(cfg);
  in.config = cfg;
  in.config_notes = q.config_notes;
  in.max_position = q.max_position == 0 ? std::max<std::int64_t>(1, cfg.max_position_embeddings - 1) : q.max_position;
  if (in.max_position < 1 || in.max_position > max_supported_position)
    throw std::invalid_argument("certify: max_position must be in [1, 2^31 - 1], got " + std::to_string(in.max_position));
  if (q.shard_count < 1 || q.shard_index < 1 || q.shard_index > q.shard_count)
    throw std::invalid_argument("certify: shard " + std::to_string(q.shard_index) + "/" + std::to_string(q.shard_count) +
                                " is not k/N with 1 <= k <= N");
  if (!(q.angle_threshold_rad > 0) || !(q.position_threshold_tokens > 0))
    throw std::invalid_argument("certify: the thresholds must be positive");
  in.seq_len = in.max_position + 1;
  if (q.plugin_path.empty()) r.impls = builtin_implementations(q.implementations, cfg, in.seq_len);
  for (const auto& i : r.impls) in.implementations.push_back(i.id);
  in.angle_threshold_rad = q.angle_threshold_rad;
  in.position_threshold_tokens = q.position_threshold_tokens;
  in.ropecheck_version = ROPECHECK_VERSION;
  in.reference = "MPFR " + std::to_string(reference_bits) +
                 " bits; dense path: double-double rotation recurrence re-anchored from the exact 64.192 fixed-point "
                 "phase, |error| <= 2^-90";
  in.allowance = "ropecheck::judge::allowance (error_model.hpp) for the implementation's dtype, exact reference";
  return r;
}

// Everything the workers share, read-only.
struct sweep_run {
  const rope_reference* ref = nullptr;
  const std::vector<implementation>* impls = nullptr;
  std::vector<allowance_line> lines;  // per implementation
  std::vector<double> theta;  // per band, rad/token
  std::vector<double> key_token_threshold;  // per band: measure_kernels.hpp's diamond key of token_threshold * theta
  thresholds limits;
  double af = 1;
  std::int64_t max_position = 0;
  double angle_threshold = 0, token_threshold = 0;
  position_range range;
};

// One implementation's statistics in one thread, band by band as arrays, so that the update loop
// vectorises (certify_data.hpp's band_stats is their order-free summary). Values start at -1: every
// figure is >= 0 (or +inf), so the first position always takes the maximum.
struct band_arrays {
  std::vector<double> angle, angle_key, pair, ratio;
  std::vector<double> angle_at, pair_at, ratio_at, first_angle, first_tokens;  // positions, exact as doubles (< 2^53)
  std::vector<double> first_equal;
  std::size_t open_crossings;  // bands without both first crossings yet
  std::size_t equal_open;    // bands without a first equal adjacent pair yet
  explicit band_arrays(std::size_t nb)
      : angle(nb, -1), angle_key(nb, -1), pair(nb, -1), ratio(nb, -1), angle_at(nb, -1), pair_at(nb, -1), ratio_at(nb, -1),
        first_angle(nb, -1), first_tokens(nb, -1), first_equal(nb, -1), open_crossings(nb), equal_open(nb) {}
  [[nodiscard]] band_stats summary(std::size_t b) const {
    band_stats s;
    auto at = [](double p) { return static_cast<std::int64_t>(p); };
    if (angle_at[b] >= 0) s.angle = {angle[b], at(angle_at[b])};
    if (pair_at[b] >= 0) s.pair = {pair[b], at(pair_at[b])};
    if (ratio_at[b] >= 0) s.ratio = {ratio[b], at(ratio_at[b])};
    s.first_angle_over = at(first_angle[b]);
    s.first_tokens_over = at(first_tokens[b]);
    s.first_equal_next = at(first_equal[b]);
    return s;
  }
};

// One thread's buffers and statistics.
struct worker {
  std::vector<std::unique_ptr<block_source>> sources;
  std::vector<double> ref_c_hi, ref_c_lo, ref_s_hi, ref_s_lo;  // af included
  std::vector<double> c, s;                                     // one implementation's block (+ halo row)
  std::vector<double> err, key, allow, pair, need;              // one row's figures
  std::vector<band_arrays> stats;                               // [implementation]
  double t_ref = 0, t_impl = 0, t_measure = 0;
};

// The reference over a block: the dense path (a double-double rotation recurrence re-anchored from the
// exact phase, |error| <= 2^-90), then af (when != 1) applied in long double (2^-64) and held as
// double-double.
void reference_block(const sweep_run& w, worker& k, std::int64_t first, std::int64_t n) {
  const auto cells = static_cast<std::size_t>(n) * static_cast<std::size_t>(w.ref->bands());
  w.ref->dense_cos_sin(first, n, {std::span(k.ref_c_hi).first(cells), std::span(k.ref_c_lo).first(cells),
                                  std::span(k.ref_s_hi).first(cells), std::span(k.ref_s_lo).first(cells)});
  if (w.af == 1) return;
  const long double af = w.af;
  for (std::size_t j = 0; j < cells; ++j) {
    const reference::dd c = sweep::detail::split(af * (static_cast<long double>(k.ref_c_hi[j]) + k.ref_c_lo[j]));
    const reference::dd s = sweep::detail::split(af * (static_cast<long double>(k.ref_s_hi[j]) + k.ref_s_lo[j]));
    k.ref_c_hi[j] = c.hi, k.ref_c_lo[j] = c.lo, k.ref_s_hi[j] = s.hi, k.ref_s_lo[j] = s.lo;
  }
}


template <bool Precise>
void measure_block(const sweep_run& w, worker& k, std::size_t impl, std::int64_t first, std::int64_t n, bool halo) {
  const auto nb = static_cast<std::size_t>(w.ref->bands());
  const allowance_line& line = w.lines[impl];
  band_arrays& st = k.stats[impl];
  const double inv_af = 1.0 / w.af;
  double* err = k.err.data();
  double* allow = k.allow.data();
  double* pair = k.pair.data();
  for (std::int64_t i = 0; i < n; ++i) {
    const std::int64_t p = first + i;
    const std::size_t r0 = static_cast<std::size_t>(i) * nb;
    const double* c = k.c.data() + r0;
    const double* s = k.s.data() + r0;
    const row_stats rs{st.angle.data(), st.angle_key.data(), st.pair.data(), st.ratio.data(), st.angle_at.data(),
                       st.pair_at.data(), st.ratio_at.data(), st.first_angle.data(), st.first_tokens.data()};
    const row_figures rf{err, k.key.data(), pair, allow, k.need.data()};
    const row_inputs ri{c, s, k.ref_c_hi.data() + r0, k.ref_s_hi.data() + r0, w.theta.data()};
    const double* slope = p > line.kpos_from ? line.slope_rounded.data() : line.slope_exact.data();
    if constexpr (Precise) {
      measure_row_precise(c, s, ri.C, k.ref_c_lo.data() + r0, ri.S, k.ref_s_lo.data() + r0, nb, inv_af, line.fixed, slope,
                          p, rf);
    } else {
      measure_row_double(c, s, ri.C, ri.S, nb, inv_af, line.fixed, slope, p, rf);
    }
    update_row(rs, rf, ri, nb, p, st.open_crossings, w.limits);
    if ((i + 1 < n || halo) && st.equal_open > 0) {
      if constexpr (Precise) {
        double* fe = st.first_equal.data();
        for (std::size_t b = 0; b < nb; ++b)
          if (fe[b] < 0 && parallel_exact(c[b], s[b], c[nb + b], s[nb + b])) fe[b] = static_cast<double>(p);
      } else {
        update_equal_next(st.first_equal.data(), c, s, c + nb, s + nb, nb, p);
      }
      st.equal_open = static_cast<std::size_t>(std::count(st.first_equal.begin(), st.first_equal.end(), -1.0));
    }
  }
}

void run_block(const sweep_run& w, worker& k, std::int64_t first, std::int64_t last) {
  const std::int64_t n = last - first + 1;
  const bool halo = last + 1 <= w.max_position;
  const auto nb = static_cast<std::size_t>(w.ref->bands());
  auto t0 = clock_type::now();
  reference_block(w, k, first, n);
  k.t_ref += seconds_since(t0);
  for (std::size_t i = 0; i < w.impls->size(); ++i) {
    t0 = clock_type::now();
    const std::size_t rows = static_cast<std::size_t>(n + (halo ? 1 : 0));
    k.sources[i]->fill(first, static_cast<std::int64_t>(rows), std::span(k.c).first(rows * nb), std::span(k.s).first(rows * nb));
    const auto t1 = clock_type::now();
    k.t_impl += std::chrono::duration<double>(t1 - t0).count();
    if ((*w.impls)[i].precise) measure_block<true>(w, k, i, first, n, halo);
    else measure_block<false>(w, k, i, first, n, halo);
    k.t_measure += seconds_since(t1);
  }
}

}  // namespace

position_range shard_range(std::int64_t max_position, int index, int count) {
  const auto m = static_cast<unsigned __int128>(max_position + 1);
  const auto first = static_cast<std::int64_t>(m * static_cast<unsigned>(index - 1) / static_cast<unsigned>(count));
  const auto end = static_cast<std::int64_t>(m * static_cast<unsigned>(index) / static_cast<unsigned>(count));
  return {first, end - 1};
}

certificate_inputs resolve_inputs(const certify_request& request) { return resolve(request).inputs; }

certify_run run_certify(const certify_request& request, progress_callback progress) {
  resolved r = resolve(request);
  certify_run run;
  partial_certificate& part = run.partial;
  part.inputs = r.inputs;
  part.shard_index = request.shard_index;
  part.shard_count = request.shard_count;
  part.range = shard_range(part.inputs.max_position, request.shard_index, request.shard_count);
  const rope_config& cfg = part.inputs.config;
  const rope_reference ref(cfg, part.inputs.seq_len, reference_bits);
  // A block starting between anchors would redo the steps from the anchor below it (same bits, slower).
  static_assert(block_positions > 0);
  if (block_positions % rope_reference::dense_anchor_interval() != 0)
    throw std::logic_error("certify: block_positions is not a multiple of the dense reference's anchor interval");
  const int bands = ref.bands();
  const auto nb = static_cast<std::size_t>(bands);

  sweep_run w;
  w.ref = &ref;
  w.impls = &r.impls;
  for (int b = 0; b < bands; ++b) {
    w.theta.push_back(static_cast<double>(ref.inv_freq(b).value()));
  }
  for (const auto& i : r.impls)
    w.lines.emplace_back(judge::allowance(cfg, i.id.dtype, judge::reference_kind::exact, false), w.theta);
  w.af = static_cast<double>(ref.attention_factor().value());
  w.max_position = part.inputs.max_position;
  w.angle_threshold = part.inputs.angle_threshold_rad;
  w.token_threshold = part.inputs.position_threshold_tokens;
  for (const double t : w.theta) w.key_token_threshold.push_back(diamond_key(w.token_threshold * t));
  w.limits = {w.angle_threshold, w.token_threshold, diamond_key(w.angle_threshold), w.key_token_threshold.data()};
  w.range = part.range;

  const int threads = request.threads > 0 ? request.threads : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  const std::int64_t positions = std::max<std::int64_t>(0, part.range.last - part.range.first + 1);
  // Blocks at absolute multiples of block_positions (the dense reference's anchors fall on block
  // starts); a slice's first and last block may be partial.
  const std::int64_t block0 = part.range.first / block_positions;
  const std::int64_t blocks = positions == 0 ? 0 : part.range.last / block_positions - block0 + 1;
  const std::int64_t per_position = static_cast<std::int64_t>(bands) * static_cast<std::int64_t>(r.impls.size());
  const std::int64_t total = positions * per_position;

  std::vector<worker> workers(static_cast<std::size_t>(threads));
  for (auto& k : workers) {
    for (const auto& i : r.impls) k.sources.push_back(i.make_source());
    const std::size_t cells = static_cast<std::size_t>(block_positions + 1) * nb;
    for (auto* v : {&k.ref_c_hi, &k.ref_c_lo, &k.ref_s_hi, &k.ref_s_lo, &k.c, &k.s}) v->assign(cells, 0.0);
    k.stats.assign(r.impls.size(), band_arrays(nb));
    for (auto* v : {&k.err, &k.key, &k.allow, &k.pair, &k.need}) v->assign(nb, 0.0);
  }

  const auto t_start = clock_type::now();
  sweep::parallel_for(static_cast<std::size_t>(blocks), threads, total, progress, [&](std::size_t i, int t) {
    const std::int64_t start = (block0 + static_cast<std::int64_t>(i)) * block_positions;
    const std::int64_t first = std::max(part.range.first, start);
    const std::int64_t last = std::min(part.range.last, start + block_positions - 1);
    run_block(w, workers[static_cast<std::size_t>(t)], first, last);
    return (last - first + 1) * per_position;
  });

  part.stats.assign(r.impls.size(), std::vector<band_stats>(nb));
  certify_timing& tm = run.timing;
  for (const auto& k : workers) {
    for (std::size_t i = 0; i < r.impls.size(); ++i)
      for (std::size_t b = 0; b < nb; ++b) part.stats[i][b].merge(k.stats[i].summary(b));
    tm.reference_seconds += k.t_ref;
    tm.implementation_seconds += k.t_impl;
    tm.measure_seconds += k.t_measure;
  }
  tm.threads = threads;
  tm.positions = positions;
  tm.values = total;
  tm.seconds = seconds_since(t_start);
  tm.values_per_second = tm.seconds > 0 ? static_cast<double>(total) / tm.seconds : 0;
  return run;
}

}  // namespace ropecheck::certify
