// tools/report/engine.cpp — see engine.hpp for the contract of every figure computed here. The
// per-implementation measurement is tools/sweep/measure.hpp; the implementations are registry.cpp.
#include "engine.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <exception>
#include <limits>
#include <memory>
#include <mutex>
#include <numbers>
#include <span>
#include <stdexcept>
#include <string>
#include <thread>
#include <tuple>
#include <utility>
#include <vector>

#include "sweep/measure.hpp"
#include "sweep/parallel.hpp"
#include "registry.hpp"
#include "score_offsets.hpp"
#include "strategy_outputs.hpp"
#include "ropecheck/reference/reference.hpp"

#ifndef ROPECHECK_VERSION
#define ROPECHECK_VERSION "unknown"
#endif

namespace ropecheck::report {
namespace {

using namespace detail;
using namespace sweep::detail;  // the measurement (tools/sweep/measure.hpp)
using clock_type = std::chrono::steady_clock;
constexpr int reference_bits = 256;
// Significant bits of the storage floors (engine.hpp's storage_floor_rad), from the scalar traits.
constexpr int bf16_bits = scalar_traits<bfloat16>::digits, fp16_bits = scalar_traits<float16>::digits,
              fp32_bits = scalar_traits<float>::digits;
static_assert(bf16_bits == 8 && fp16_bits == 11 && fp32_bits == 24);

[[nodiscard]] double seconds_since(clock_type::time_point t0) {
  return std::chrono::duration<double>(clock_type::now() - t0).count();
}

// A head vector seeded from (seed, position) only, so that no result depends on who computes it.
// Entries are int8 / 128: exact in bf16, fp16 and everything wider.
void seeded_head_vectors(std::uint64_t seed, std::int64_t pos, std::span<double> q, std::span<double> k) {
  std::uint64_t state = seed ^ (static_cast<std::uint64_t>(pos) * 0xd1b54a32d192ed03ULL);
  auto next = [&state] {  // splitmix64
    std::uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  };
  auto fill = [&](std::span<double> v) {
    std::uint64_t bits = 0;
    for (std::size_t j = 0; j < v.size(); ++j) {
      if (j % 8 == 0) bits = next();
      v[j] = static_cast<double>(static_cast<std::int8_t>(bits & 0xffu)) / 128.0;
      bits >>= 8;
    }
  };
  fill(q);
  fill(k);
}

// ---------------------------------------------------------------------------------------------
// The work: segments of consecutive positions.
struct segment {
  std::int64_t first = 0, last = 0;  // inclusive
  std::size_t heat_bucket = 0;
  // Output slots: without pooling, slot_first + (pos - first); with pooling, the pool bucket of pos.
  bool pooled = false;
  std::size_t slot_first = 0;
};

struct impl_partial {
  std::vector<position_errors> points;  // in slot order
  std::vector<std::size_t> slots;
  std::vector<double> band_max;
  std::int64_t first_angle = -1, first_tokens = -1, first_equal = -1;
};


struct sweep_plan {
  std::vector<segment> segments;
  std::vector<std::int64_t> heat_edges;
  std::vector<std::int64_t> slot_positions;  // position carried by each output point
  std::vector<std::int64_t> pool_edges;      // pooled slots: slot s covers [pool_edges[s - pool_base], ...)
  std::size_t pool_base = 0;                 // first pooled slot
  std::int64_t positions = 0;                // non-halo positions evaluated
};

constexpr std::int64_t max_segment = 256;
constexpr std::int64_t exact_points_below = 1024;
constexpr std::size_t max_points = 4096;

std::size_t bucket_of(const std::vector<std::int64_t>& edges, std::int64_t pos) {
  return static_cast<std::size_t>(std::upper_bound(edges.begin(), edges.end(), pos) - edges.begin() - 1);
}

// Splits the sorted positions into segments of consecutive positions that stay inside one heat
// bucket and hold at most max_segment positions.
void add_segments(sweep_plan& plan, std::int64_t first, std::int64_t last, bool pooled, std::size_t slot_first) {
  std::int64_t a = first;
  while (a <= last) {
    const std::size_t hb = bucket_of(plan.heat_edges, a);
    const std::int64_t b = std::min({last, a + max_segment - 1, plan.heat_edges[hb + 1] - 1});
    plan.segments.push_back({a, b, hb, pooled, pooled ? 0 : slot_first + static_cast<std::size_t>(a - first)});
    a = b + 1;
  }
}

sweep_plan plan_sweep(std::int64_t max_position, bool exhaustive) {
  sweep_plan plan;
  plan.heat_edges = heat_bucket_edges(max_position);
  if (!exhaustive) {
    std::vector<std::int64_t> pos = sweep_positions(max_position);
    const std::size_t n = pos.size();
    for (std::size_t i = 0; i < n; ++i)
      if (pos[i] + 1 <= max_position) pos.push_back(pos[i] + 1);
    std::sort(pos.begin(), pos.end());
    pos.erase(std::unique(pos.begin(), pos.end()), pos.end());
    plan.slot_positions = pos;
    plan.positions = static_cast<std::int64_t>(pos.size());
    std::size_t i = 0;
    while (i < pos.size()) {
      std::size_t j = i;
      while (j + 1 < pos.size() && pos[j + 1] == pos[j] + 1) ++j;
      add_segments(plan, pos[i], pos[j], false, i);
      i = j + 1;
    }
    return plan;
  }
  plan.positions = max_position + 1;
  if (static_cast<std::size_t>(max_position + 1) <= max_points) {
    for (std::int64_t p = 0; p <= max_position; ++p) plan.slot_positions.push_back(p);
    add_segments(plan, 0, max_position, false, 0);
    return plan;
  }
  for (std::int64_t p = 0; p < exact_points_below; ++p) plan.slot_positions.push_back(p);
  add_segments(plan, 0, exact_points_below - 1, false, 0);
  // Log-spaced pool buckets over [1024, max_position + 1).
  const double lo = static_cast<double>(exact_points_below), hi = static_cast<double>(max_position + 1);
  const std::size_t n = max_points - static_cast<std::size_t>(exact_points_below);
  plan.pool_edges.push_back(exact_points_below);
  for (std::size_t i = 1; i < n; ++i) {
    const auto e = static_cast<std::int64_t>(std::ceil(lo * std::pow(hi / lo, static_cast<double>(i) / static_cast<double>(n))));
    if (e > plan.pool_edges.back() && e < max_position + 1) plan.pool_edges.push_back(e);
  }
  plan.pool_base = plan.slot_positions.size();
  for (const auto e : plan.pool_edges) plan.slot_positions.push_back(e);
  plan.pool_edges.push_back(max_position + 1);
  add_segments(plan, exact_points_below, max_position, true, 0);
  return plan;
}

// Everything the workers share.
struct sweep_run {
  const rope_reference* ref = nullptr;
  std::vector<const runner*> runners;
  const sweep_plan* plan = nullptr;
  std::uint64_t seed = 0;
  double angle_threshold = 0, position_threshold = 0;
};

std::vector<impl_partial> run_segment(const sweep_run& w, const segment& seg) {
  const rope_reference& ref = *w.ref;
  const int bands = ref.bands();
  const auto nb = static_cast<std::size_t>(bands);
  const rope_config& cfg = ref.config();
  const auto hd = static_cast<std::size_t>(cfg.head_dim);
  const long double af = ref.attention_factor().value();
  const rope_geometry g = rope_geometry::of(cfg);

  std::vector<std::unique_ptr<segment_state>> states;
  std::vector<impl_partial> out(w.runners.size());
  for (std::size_t i = 0; i < w.runners.size(); ++i) {
    states.push_back(w.runners[i]->new_state());
    out[i].band_max.assign(nb, 0.0);
  }
  std::vector<reference_band> row(nb);
  std::vector<reference::dd> angles(nb);
  std::vector<reference::cos_sin_dd> cos_sins(nb);
  std::vector<double> q(hd), k(hd);
  std::vector<long double> y_exact(hd);
  std::vector<double> y_exact_d(hd);
  const bool af_is_one = ref.attention_factor().hi == 1.0 && ref.attention_factor().lo == 0.0;
  const bool need_long_double = std::any_of(w.runners.begin(), w.runners.end(),
                                            [](const runner* r) { return r->measures_in_long_double(); });
  std::size_t pool_slot = seg.pooled ? w.plan->pool_base + bucket_of(w.plan->pool_edges, seg.first) : 0;

  for (std::int64_t pos = seg.first - 1; pos <= seg.last; ++pos) {
    position_context ctx;
    ctx.pos = pos;
    ctx.halo = pos < seg.first;
    if (!ctx.halo) {
      ref.all_bands(pos, angles, cos_sins);
      for (int b = 0; b < bands; ++b) {
        auto& r = row[static_cast<std::size_t>(b)];
        r.angle = angles[static_cast<std::size_t>(b)];
        const auto& cs = cos_sins[static_cast<std::size_t>(b)];
        if (af_is_one) {
          r.cos = cs.cos;
          r.sin = cs.sin;
        } else {  // af cos rounded to long double (2^-64), then held as double-double
          r.cos = split(af * cs.cos.value());
          r.sin = split(af * cs.sin.value());
        }
      }
      seeded_head_vectors(w.seed, pos, q, k);
      double qn = 0, qk = 0;  // exact: 128 products of multiples of 2^-7, summed below 2^8
      for (std::size_t j = 0; j < hd; ++j) {
        y_exact[j] = q[j];  // pass-through beyond rotary_dim
        qn += q[j] * q[j];
        qk += std::fabs(q[j] * k[j]);
      }
      // The exact rotation (af included in the reference's cos/sin): in long double for the
      // implementations measured in it, in double (relative 2^-52) for the others.
      for (std::size_t j = 0; j < hd; ++j) y_exact_d[j] = q[j];
      for (int b = 0; b < bands; ++b) {
        const auto [ia, ib] = g.pair_of(b);
        const auto& r = row[static_cast<std::size_t>(b)];
        const double xa = q[static_cast<std::size_t>(ia)], xb = q[static_cast<std::size_t>(ib)];
        y_exact_d[static_cast<std::size_t>(ia)] = xa * r.cos.hi - xb * r.sin.hi;
        y_exact_d[static_cast<std::size_t>(ib)] = xa * r.sin.hi + xb * r.cos.hi;
        if (need_long_double) {
          const long double c = r.cos.value(), s = r.sin.value();
          y_exact[static_cast<std::size_t>(ia)] = xa * c - xb * s;
          y_exact[static_cast<std::size_t>(ib)] = xa * s + xb * c;
        }
      }
      ctx.ref = row.data();
      ctx.q = q.data();
      ctx.k = k.data();
      ctx.y_exact = y_exact.data();
      ctx.y_exact_d = y_exact_d.data();
      ctx.q_norm = std::sqrt(qn);
      ctx.qk_abs = qk;
      if (seg.pooled) {
        while (pos >= w.plan->pool_edges[pool_slot - w.plan->pool_base + 1]) ++pool_slot;
      }
    }
    for (std::size_t i = 0; i < w.runners.size(); ++i) {
      step_output so;
      w.runners[i]->step(ctx, *states[i], so, out[i].band_max);
      if (ctx.halo) continue;
      impl_partial& part = out[i];
      const std::size_t slot = seg.pooled ? pool_slot : seg.slot_first + static_cast<std::size_t>(pos - seg.first);
      if (seg.pooled && !part.slots.empty() && part.slots.back() == slot) {
        raise_to(part.points.back(), so.errors);
      } else {
        so.errors.position = w.plan->slot_positions[slot];
        part.points.push_back(so.errors);
        part.slots.push_back(slot);
      }
      if (part.first_angle < 0 && so.errors.angle_rad > w.angle_threshold) part.first_angle = pos;
      if (part.first_tokens < 0 && so.errors.position_tokens >= w.position_threshold) part.first_tokens = pos;
      if (part.first_equal < 0 && so.equal_to_previous && pos - 1 >= 0)
        part.first_equal = pos - 1;
    }
  }
  return out;
}

// The reference's own cos_sin throughput, and MPFR's time per value, on the same threads.
struct reference_speed {
  double fast_values_per_second = 0;
  double mpfr_seconds_per_value = 0;
};

reference_speed measure_reference(const rope_reference& ref, std::int64_t max_position, int threads) {
  const int bands = ref.bands();
  // Fast path: 16 runs of 1024 consecutive positions spread over the sweep (as the sweep reads them).
  constexpr std::int64_t runs = 16, run_length = 1024;
  std::vector<std::int64_t> starts;
  for (std::int64_t r = 0; r < runs; ++r)
    starts.push_back(std::max<std::int64_t>(0, (max_position - run_length) / (runs - 1) * r));
  std::atomic<double> sink{0};
  auto t0 = clock_type::now();
  {
    std::vector<std::jthread> pool;
    for (int t = 0; t < threads; ++t)
      pool.emplace_back([&, t] {
        double acc = 0;
        for (std::int64_t r = t; r < runs; r += threads)
          for (std::int64_t p = starts[static_cast<std::size_t>(r)]; p < starts[static_cast<std::size_t>(r)] + run_length; ++p)
            for (int b = 0; b < bands; ++b) acc += ref.cos_sin(p, b).cos.hi;
        sink.fetch_add(acc);
      });
  }
  const double fast_seconds = seconds_since(t0);
  reference_speed out;
  out.fast_values_per_second = static_cast<double>(runs * run_length * bands) / fast_seconds;
  // MPFR: 2048 values, positions spread over the sweep, bands in turn.
  constexpr std::int64_t samples = 2048;
  t0 = clock_type::now();
  {
    std::vector<std::jthread> pool;
    for (int t = 0; t < threads; ++t)
      pool.emplace_back([&, t] {
        double acc = 0;
        for (std::int64_t i = t; i < samples; i += threads)
          acc += ref.cos_sin_mpfr(max_position / samples * i + i % 7, static_cast<int>(i % bands)).cos.hi;
        sink.fetch_add(acc);
      });
  }
  out.mpfr_seconds_per_value = seconds_since(t0) / static_cast<double>(samples);
  return out;
}

}  // namespace

// ---------------------------------------------------------------------------------------------

std::vector<std::int64_t> sweep_positions(std::int64_t max_position) {
  std::vector<std::int64_t> p;
  for (std::int64_t i = 0; i <= std::min<std::int64_t>(1023, max_position); ++i) p.push_back(i);
  for (int k = 1;; ++k) {  // 32 per octave beyond 1024
    const auto x = static_cast<std::int64_t>(std::floor(1024.0 * std::exp2(k / 32.0)));
    if (x > max_position) break;
    p.push_back(x);
  }
  for (const std::int64_t edge : {std::int64_t{256}, std::int64_t{2048}, std::int64_t{65504}, std::int64_t{1} << 24,
                                  std::int64_t{1} << 31}) {
    if (edge > max_position) continue;
    for (std::int64_t x = std::max<std::int64_t>(0, edge - 32); x <= std::min(max_position, edge + 32); ++x)
      p.push_back(x);
  }
  p.push_back(max_position);
  std::sort(p.begin(), p.end());
  p.erase(std::unique(p.begin(), p.end()), p.end());
  return p;
}

std::vector<std::int64_t> heat_bucket_edges(std::int64_t max_position) {
  constexpr int buckets = 48;
  const double end = static_cast<double>(max_position + 1);
  std::vector<std::int64_t> e{0};
  for (int i = 1; i < buckets; ++i) {
    const auto x = static_cast<std::int64_t>(std::ceil(std::pow(end, static_cast<double>(i) / buckets)));
    if (x > e.back() && x < max_position + 1) e.push_back(x);
  }
  e.push_back(max_position + 1);
  return e;
}

std::vector<band_row> band_table(const rope_config& cfg, std::int64_t seq_len, std::int64_t train_length,
                                 std::int64_t eval_length) {
  const rope_reference scaled(cfg, seq_len, reference_bits);
  const rope_config plain = with_scaling(cfg, scaling_kind::none);
  const rope_reference unscaled(plain, 0, reference_bits);
  const long double two_pi = two_pi_ld;
  const auto L_train = static_cast<long double>(train_length), L_eval = static_cast<long double>(eval_length);
  // Share of the arc [0, min(L_eval theta_eval, 2 pi)) past what training saw, [0, min(L_train theta_train, 2 pi)).
  auto unseen = [&](long double theta_eval, long double theta_train) -> double {
    const long double arc = std::min(L_eval * theta_eval, two_pi);
    const long double seen = std::min(L_train * theta_train, two_pi);
    return arc <= 0 || seen >= arc ? 0.0 : static_cast<double>(1.0L - seen / arc);
  };
  std::vector<band_row> rows;
  // Proportional RoPE's frozen bands never turn: no wavelength, no storage floor; they are left out.
  for (int b = 0; b < scaled.config().turning_bands(); ++b) {
    const long double th = scaled.inv_freq(b).value(), thu = unscaled.inv_freq(b).value();
    band_row r;
    r.band = b;
    r.inv_freq = static_cast<double>(th);
    r.inv_freq_unscaled = static_cast<double>(thu);
    r.wavelength = static_cast<double>(two_pi / th);
    r.wavelength_unscaled = static_cast<double>(two_pi / thu);
    r.turns_in_training = static_cast<double>(L_train * thu / two_pi);
    r.unseen_fraction_unscaled = unseen(thu, thu);
    r.unseen_fraction_scaled = unseen(th, thu);
    r.floor_tokens_bfloat16 = static_cast<double>(static_cast<long double>(storage_floor_rad(bf16_bits)) / th);
    r.floor_tokens_float16 = static_cast<double>(static_cast<long double>(storage_floor_rad(fp16_bits)) / th);
    r.floor_tokens_float32 = static_cast<double>(static_cast<long double>(storage_floor_rad(fp32_bits)) / th);
    rows.push_back(r);
  }
  return rows;
}

std::vector<storage_floor> storage_floors(const std::vector<band_row>& bands) {
  std::vector<storage_floor> out;
  for (const auto& [name, bits, field] : {std::tuple{"bfloat16", bf16_bits, &band_row::floor_tokens_bfloat16},
                                          std::tuple{"float16", fp16_bits, &band_row::floor_tokens_float16},
                                          std::tuple{"float32", fp32_bits, &band_row::floor_tokens_float32}}) {
    storage_floor f{name, bits, storage_floor_rad(bits), 0, -1};
    for (const auto& b : bands)
      if (f.band < 0 || b.*field > f.max_tokens) {
        f.max_tokens = b.*field;
        f.band = b.band;
      }
    out.push_back(f);
  }
  return out;
}

report_result run_report(const report_request& request, progress_callback progress) {
  const auto t_start = clock_type::now();
  report_result result;
  result.request = request;
  report_request& req = result.request;
  if (req.max_position == 0) req.max_position = req.config.max_position_embeddings;
  if (req.max_position < 1) throw std::invalid_argument("report: max_position must be >= 1");
  if (req.train_length == 0) req.train_length = req.config.trained_length();
  if (req.eval_length == 0) req.eval_length = req.max_position;
  if (req.threads <= 0) req.threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  const auto selected = select_implementations(req.implementations);
  req.implementations.clear();  // echo the names actually run, defaults included
  for (const auto* e : selected) req.implementations.push_back(e->info.name);

  const std::int64_t seq_len = req.max_position + 1;
  const rope_reference ref(req.config, seq_len, reference_bits);
  result.attention_factor = static_cast<double>(ref.attention_factor().value());
  result.bands = band_table(req.config, seq_len, req.train_length, req.eval_length);
  result.storage_floors = storage_floors(result.bands);
  result.ropecheck_version = ROPECHECK_VERSION;
  result.reference_precision = "MPFR " + std::to_string(ref.precision_bits()) +
                               " bits (fast path: 64.192 fixed point + double-double)";

  std::vector<std::unique_ptr<runner>> runners;
  for (const auto* e : selected) runners.push_back(e->make(req.config, seq_len, ref));

  const sweep_plan plan = plan_sweep(req.max_position, req.exhaustive);
  sweep_run w;
  w.ref = &ref;
  for (const auto& r : runners) w.runners.push_back(r.get());
  w.plan = &plan;
  w.seed = req.seed;
  w.angle_threshold = req.angle_threshold_rad;
  w.position_threshold = req.position_threshold_tokens;

  const int bands = ref.bands();
  const auto per_position = static_cast<std::int64_t>(bands) * static_cast<std::int64_t>(runners.size());
  std::vector<std::int64_t> weight;
  for (const auto& s : plan.segments) weight.push_back((s.last - s.first + 1) * per_position);
  const std::int64_t total = plan.positions * per_position;

  std::vector<std::vector<impl_partial>> partials(plan.segments.size());
  const auto t_sweep = clock_type::now();
  sweep::parallel_for(plan.segments.size(), req.threads, total, progress, [&](std::size_t i, int) {
    partials[i] = run_segment(w, plan.segments[i]);
    return weight[i];
  });
  const double sweep_seconds = seconds_since(t_sweep);

  // Merge in segment order.
  for (std::size_t i = 0; i < selected.size(); ++i) {
    implementation_series s;
    s.name = selected[i]->info.name;
    s.description = selected[i]->info.description;
    s.cos_sin_dtype = selected[i]->info.cos_sin_dtype;
    s.points.resize(plan.slot_positions.size());
    for (std::size_t j = 0; j < s.points.size(); ++j) s.points[j].position = plan.slot_positions[j];
    s.heat_bucket_edges = plan.heat_edges;
    const std::size_t nbuckets = plan.heat_edges.size() - 1;
    s.band_position_heat.assign(static_cast<std::size_t>(bands), std::vector<double>(nbuckets, 0.0));
    auto first_of = [](std::int64_t& acc, std::int64_t v) {
      if (v >= 0 && (acc < 0 || v < acc)) acc = v;
    };
    for (std::size_t g = 0; g < plan.segments.size(); ++g) {
      const impl_partial& part = partials[g][i];
      for (std::size_t j = 0; j < part.points.size(); ++j) {
        position_errors& dst = s.points[part.slots[j]];
        if (plan.segments[g].pooled) {
          raise_to(dst, part.points[j]);
        } else {
          dst = part.points[j];
        }
      }
      for (int b = 0; b < bands; ++b) {
        double& h = s.band_position_heat[static_cast<std::size_t>(b)][plan.segments[g].heat_bucket];
        h = std::max(h, part.band_max[static_cast<std::size_t>(b)]);
      }
      first_of(s.first_angle_over_threshold, part.first_angle);
      first_of(s.first_position_error_over_threshold, part.first_tokens);
      first_of(s.first_adjacent_positions_equal, part.first_equal);
    }
    double worst = 0;
    for (int b = 0; b < bands; ++b)
      for (const double h : s.band_position_heat[static_cast<std::size_t>(b)])
        if (h > worst) {
          worst = h;
          s.worst_band = b;
        }
    s.passes = s.first_angle_over_threshold < 0 && s.first_position_error_over_threshold < 0 &&
               s.first_adjacent_positions_equal < 0;
    result.series.push_back(std::move(s));
  }
  partials.clear();

  // The score-level figure: each implementation's score error against m - n (score_offsets.hpp), one q and k
  // seeded apart from the sweep's (position -1 is never swept).
  const auto t_score = clock_type::now();
  {
    std::vector<double> q(static_cast<std::size_t>(req.config.head_dim)), k(q.size());
    seeded_head_vectors(req.seed, -1, q, k);
    const score_pairs sp = exact_score_pairs(ref, req.max_position, q, k);
    for (std::size_t i = 0; i < runners.size(); ++i)
      result.series[i].score_by_offset = score_by_offset(*runners[i], sp, req.config, q, k);
  }
  const double score_seconds = seconds_since(t_score);

  // The verdict: the judge's, on each implementation driven on the probe set (the crossings above
  // stay as figures).
  if (req.judge) {
    for (auto& s : result.series) {
      s.judge = judge_implementation(s.name, req.config, req.seed, req.threads);
      s.passes = s.judge.pass;
    }
  }

  const reference_speed speed = measure_reference(ref, req.max_position, req.threads);
  timing& t = result.time;
  t.threads = req.threads;
  t.positions = plan.positions;
  t.values = total;
  t.values_per_second = static_cast<double>(total) / sweep_seconds;
  t.reference_values_per_second = speed.fast_values_per_second;
  t.mpfr_seconds_estimate = speed.mpfr_seconds_per_value * static_cast<double>(plan.positions) * bands;
  t.score_seconds = score_seconds;
  t.seconds_total = seconds_since(t_start);
  return result;
}

}  // namespace ropecheck::report
