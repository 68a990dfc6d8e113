// tests/properties/kv_cache_properties.hpp — property 6's drivers (the position-aware KV cache),
// shared by the property suite (kv_cache_test.cpp) and the mutation check (cache_mutants.cpp).
#pragma once
#include <rapidcheck.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <iostream>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "ropecheck/judge/error_model.hpp"
#include "generators.hpp"
#include "ropecheck/error.hpp"
#include "ropecheck/judge/exact_strategy.hpp"
#include "ropecheck/kv_cache.hpp"
#include "ropecheck/presets.hpp"
#include "ropecheck/reference/reference.hpp"
#include "support/rope_check.hpp"

namespace ropecheck::test::kv_properties {


using reference::rope_reference;

constexpr std::int64_t kMaxPosition = std::int64_t{1} << 20;
constexpr int kHeads = 2;

// Every rule of the sweep with its reference, built once (each holds an MPFR schedule).
struct schedule_under_test {
  named_config nc;
  std::unique_ptr<rope_reference> ref;
};
inline const std::vector<schedule_under_test>& schedules() {
  static const std::vector<schedule_under_test> all = [] {
    std::vector<schedule_under_test> v;
    for (auto& nc : rule_sweep()) {
      auto ref = std::make_unique<rope_reference>(nc.cfg, nc.seq_len);
      v.push_back({std::move(nc), std::move(ref)});
    }
    return v;
  }();
  return all;
}

inline rc::Gen<std::size_t> schedule_index() { return rc::gen::inRange<std::size_t>(0, schedules().size()); }

template <class S>
std::vector<S> exact_values(std::size_t n, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  return random_vector<S>(n, rng);
}

template <class S, class C>
using exact_cache = kv_cache<S, C, judge::exact_angle<C>>;

template <class S, class C>
exact_cache<S, C> make_cache(const schedule_under_test& s) {
  return exact_cache<S, C>(s.nc.cfg, kHeads, judge::exact_angle<C>(*s.ref), s.nc.seq_len);
}

// Bound on one rotation by rotate_heads<C>(S...) with judge::exact_angle<C>, per unit of |x_a| + |x_b|
// (error_model.hpp sec. 1): cos, sin formed in long double (2^-64 relative for cos, af and their
// product) then rounded once to C, so |c~ - af cos| <= (u_C + 2^-62) af; then the arithmetic.
template <class S, class C>
long double exact_rotation_bound(long double af) {
  return judge::rotation_bound<C, S>((unit_roundoff<C>() + std::ldexp(1.0L, -62)) * af, af);
}

// One band's term of a score q'.k' = sum over heads' pairs, with q' = fl(R(m) q), k' = fl(R(n) k),
// against the exact Q.K, Q = af R(m) q, K = af R(n) k. With per-coordinate errors
// |q' - Q| <= B s_q and |k' - K| <= B s_k (s = |x_a| + |x_b|, B the rotation bound):
//   sum_x |q'_x k'_x - Q_x K_x| <= B s_q (|K_a| + |K_b|) + B s_k (|Q_a| + |Q_b|) + 2 B^2 s_q s_k
// and |K_a| + |K_b| <= sqrt2 |K| = sqrt2 af |k| <= sqrt2 af s_k (same for Q), so the term is off by
//   <= s_q s_k (2 sqrt2 af B + 2 B^2)
// plus the long double evaluation of both sides (products of doubles round at 2^-64, the
// reference's dd values enter as long double): 2^-58 af^2 s_q s_k covers them with room.
template <class S, class C>
long double score_term_bound(long double af, long double s_q, long double s_k) {
  const long double b = exact_rotation_bound<S, C>(af);
  return s_q * s_k * (2 * std::sqrt(2.0L) * af * b + 2 * b * b + std::ldexp(1.0L, -58) * af * af);
}

// ---------------------------------------------------------------------------------------------
// Engines with the position bugs of DESIGN.md's table, for the detection properties: they take the
// caller's position and rotate the decoded key somewhere else, recording where they put it, as
// a miscounting engine does. (append hides kv_cache::append; the properties call it on the
// concrete type.)
enum class position_bug { one_ahead, restart_at_zero };

template <class S, class C, class A>
class miscounting_cache : public kv_cache<S, C, A> {
 public:
  miscounting_cache(kv_cache<S, C, A> base, position_bug bug) : kv_cache<S, C, A>(std::move(base)), bug_(bug) {}
  void append(std::span<const S> raw_key, std::span<const S> value, std::int64_t position) {
    this->append_at(raw_key, value, bug_ == position_bug::one_ahead ? position + 1 : decoded_++);
  }

 private:
  position_bug bug_;
  std::int64_t decoded_ = 0;
};

// ---------------------------------------------------------------------------------------------
// Property 6a: decode token by token gives the same cache as one prefill, and the same scores.
template <class S, class C>
auto incremental_decode_equals_full_prefill() {
  return [] {
    const auto& s = schedules()[*schedule_index()];
    const std::int64_t first = *gen::position(kMaxPosition);
    const int prompt = *rc::gen::inRange(1, 6);
    const int decoded = *rc::gen::inRange(1, 5);
    const auto seed = *rc::gen::arbitrary<std::uint64_t>();
    const auto n = static_cast<std::size_t>(kHeads * s.nc.cfg.head_dim);
    const std::size_t tokens = static_cast<std::size_t>(prompt + decoded);
    const auto keys = exact_values<S>(tokens * n, seed);
    const auto values = exact_values<S>(tokens * n, seed + 1);
    const auto query = exact_values<S>(n, seed + 2);

    auto prefilled = make_cache<S, C>(s);
    prefilled.prefill(keys, values, first);
    auto decoding = make_cache<S, C>(s);  // a prompt, then decode steps
    decoding.prefill(std::span(keys).first(prompt * n), std::span(values).first(prompt * n), first);
    auto one_by_one = make_cache<S, C>(s);  // every token its own step
    one_by_one.append_at(std::span(keys).first(n), std::span(values).first(n), first);
    for (std::size_t t = 1; t < tokens; ++t) {
      const auto at = first + static_cast<std::int64_t>(t);
      if (t >= static_cast<std::size_t>(prompt))
        decoding.append(std::span(keys).subspan(t * n, n), std::span(values).subspan(t * n, n), at);
      one_by_one.append(std::span(keys).subspan(t * n, n), std::span(values).subspan(t * n, n), at);
    }
    for (const auto* c : {&decoding, &one_by_one}) {
      RC_ASSERT(std::ranges::equal(c->positions(), prefilled.positions()));
      for (std::size_t i = 0; i < keys.size(); ++i) {
        if (!bitwise_equal(c->keys()[i], prefilled.keys()[i]) || !bitwise_equal(c->values()[i], prefilled.values()[i]))
          RC_FAIL("token " + std::to_string(i / n) + " coordinate " + std::to_string(i % n) + ": decode stored " +
                  std::to_string(static_cast<double>(scalar_traits<S>::widen(c->keys()[i]))) + ", prefill " +
                  std::to_string(static_cast<double>(scalar_traits<S>::widen(prefilled.keys()[i]))));
      }
    }
    // A new query at the next position, against the cache and against keys rotated directly.
    const std::int64_t m = decoding.next_position();
    const rope_geometry g = decoding.geometry();
    std::vector<S> q(n), direct(n);
    rotate_heads<C>(std::span<const S>(query), std::span<S>(q), kHeads, g, m, decoding.strategy());
    for (std::size_t t = 0; t < tokens; ++t) {
      rotate_heads<C>(std::span(keys).subspan(t * n, n), std::span<S>(direct), kHeads, g,
                      first + static_cast<std::int64_t>(t), decoding.strategy());
      const auto cached = decoding.key(t);
      for (int h = 0; h < kHeads; ++h) {
        long double from_cache = 0, from_direct = 0;
        for (int j = 0; j < g.head_dim; ++j) {
          const auto x = static_cast<std::size_t>(h * g.head_dim + j);
          from_cache += scalar_traits<S>::widen(q[x]) * scalar_traits<S>::widen(cached[x]);
          from_direct += scalar_traits<S>::widen(q[x]) * scalar_traits<S>::widen(direct[x]);
        }
        if (!bitwise_equal(from_cache, from_direct))
          RC_FAIL("score of token " + std::to_string(t) + " head " + std::to_string(h) + " differs: cache " +
                  std::to_string(static_cast<double>(from_cache)) + ", direct " +
                  std::to_string(static_cast<double>(from_direct)));
      }
    }
  };
}

// ---------------------------------------------------------------------------------------------
// Property 6b: the score of a query at position m with the key the caller appended at n is the
// exact score at the relative offset m - n, within the error model, for every cached token.
//
// The query is rotated by the test at the position the CALLER means (not at the cache's
// next_position()), and the exact score is the reference's (af R(m) q) . (af R(n) k) at the
// positions the caller passed. So an engine that puts its keys anywhere else is seen even when
// the relative-offset identity still holds among the cached keys: a uniform shift of every key
// changes m - n, which this property compares against; the identity alone could not.
// Checked per band, the finest unit the bound is derived for: a wrong offset turns band 0 (one
// radian per token) by a radian, far outside any rounding bound.
template <class S, class C, class Cache, class MakeCache>
auto decode_scores_follow_the_intended_offsets(MakeCache make) {
  return [make] {
    const auto& s = schedules()[*schedule_index()];
    const std::int64_t first = *gen::position(kMaxPosition);
    const int prompt = *rc::gen::inRange(1, 6);
    const int decoded = *rc::gen::inRange(1, 4);
    const auto seed = *rc::gen::arbitrary<std::uint64_t>();
    const rope_geometry g = rope_geometry::of(s.nc.cfg);
    const auto hd = static_cast<std::size_t>(g.head_dim);
    const std::size_t n = kHeads * hd;
    const std::size_t tokens = static_cast<std::size_t>(prompt + decoded);
    const auto keys = exact_values<S>(tokens * n, seed);
    const auto query = exact_values<S>(n, seed + 2);

    Cache cache = make(s);
    cache.prefill(std::span(keys).first(prompt * n), std::span(keys).first(prompt * n), first);
    for (std::size_t t = static_cast<std::size_t>(prompt); t < tokens; ++t)
      cache.append(std::span(keys).subspan(t * n, n), std::span(keys).subspan(t * n, n),
                   first + static_cast<std::int64_t>(t));
    RC_ASSERT(cache.size() == tokens);

    const std::int64_t m = first + static_cast<std::int64_t>(tokens);  // the caller's next position
    std::vector<S> q(n);
    rotate_heads<C>(std::span<const S>(query), std::span<S>(q), kHeads, g, m, cache.strategy());
    const long double af = s.ref->attention_factor().value();
    std::vector<double> xq(hd), xk(hd);
    std::vector<reference::dd> want_q(hd), want_k(hd);
    for (std::size_t t = 0; t < tokens; ++t) {
      const std::int64_t intended = first + static_cast<std::int64_t>(t);
      for (int h = 0; h < kHeads; ++h) {
        const std::size_t off = static_cast<std::size_t>(h) * hd;
        for (std::size_t j = 0; j < hd; ++j) {
          xq[j] = static_cast<double>(scalar_traits<S>::widen(query[off + j]));
          xk[j] = static_cast<double>(scalar_traits<S>::widen(keys[t * n + off + j]));
        }
        s.ref->rotate(m, xq, want_q);
        s.ref->rotate(intended, xk, want_k);
        const auto k = cache.key(t).subspan(off, hd);
        for (int band = 0; band < g.bands(); ++band) {
          const auto [a, b] = g.pair_of(band);
          const auto w = [](std::span<const S> v, int j) { return scalar_traits<S>::widen(v[static_cast<std::size_t>(j)]); };
          const std::span<const S> qh = std::span<const S>(q).subspan(off, hd);
          const long double got = w(qh, a) * w(k, a) + w(qh, b) * w(k, b);
          const long double want = want_q[a].value() * want_k[a].value() + want_q[b].value() * want_k[b].value();
          const long double s_q = std::fabs(static_cast<long double>(xq[a])) + std::fabs(static_cast<long double>(xq[b]));
          const long double s_k = std::fabs(static_cast<long double>(xk[a])) + std::fabs(static_cast<long double>(xk[b]));
          const long double bound = score_term_bound<S, C>(af, s_q, s_k);
          if (std::fabs(got - want) > bound) {
            char buf[400];
            std::snprintf(buf, sizeof buf,
                          "%s: query at %lld, key appended at %lld (cache recorded %lld), intended offset m - n = %lld; "
                          "head %d band %d score term got %La want %La (|error| %.3Lg > bound %.3Lg)",
                          s.nc.name.c_str(), static_cast<long long>(m), static_cast<long long>(intended),
                          static_cast<long long>(cache.positions()[t]), static_cast<long long>(m - intended), h, band,
                          got, want, std::fabs(got - want), bound);
            RC_FAIL(std::string(buf));
          }
        }
      }
    }
  };
}

// ---------------------------------------------------------------------------------------------
// Property 6c: evicting tokens and renumbering the survivors by re-rotation equals rotating their
// raw keys at the new positions, within the sum of the two rotations' bounds.
//
// Derivation, per coordinate and per unit of s = |k_a| + |k_b|. The stored key is
// k1 = af R(p) k + e1 with |e1_x| <= B1 s (first rotation, B1 = exact_rotation_bound). The
// re-rotation applies R~(d), d = p' - p, with cos/sin of magnitude 1 (the cache divides af out):
// k2 = R(d) k1 + e2 with |e2_x| <= B2 (|k1_a| + |k1_b|). Then, since R(d) R(p) = R(p') exactly,
//   k2 - af R(p') k = R(d) e1 + e2,
//   |(R(d) e1)_x| <= (|cos| + |sin|) max|e1| <= sqrt2 B1 s,
//   |k1_a| + |k1_b| <= sqrt2 |k1| <= sqrt2 (af |k| + sqrt2 B1 s) <= sqrt2 af s + 2 B1 s,
// so the error is <= s (sqrt2 B1 + sqrt2 af B2 + 2 B1 B2): the two bounds added, each rotated once.
// B2 is the rotation bound with cos/sin off by (u_C + 2^-62) when af = 1 (the strategy's own), and
// when af != 1 by 3 u_C + 2^-61: c/af with c off by (u_C + 2^-62) af, af off by (u_C + 2^-62)
// relative, the quotient rounded once (|cos| <= 1).
template <class S, class C>
long double rerotation_bound(long double af) {
  const long double b1 = exact_rotation_bound<S, C>(af);
  const long double cs_unit =
      af == 1.0L ? unit_roundoff<C>() + std::ldexp(1.0L, -62) : 3 * unit_roundoff<C>() + std::ldexp(1.0L, -61);
  const long double b2 = judge::rotation_bound<C, S>(cs_unit, 1.0L);
  return std::sqrt(2.0L) * (b1 + af * b2) + 2 * b1 * b2;
}

template <class S, class C>
auto eviction_equals_rotation_at_the_new_position(long double* worst_seen) {
  return [worst_seen] {
    const auto& s = schedules()[*schedule_index()];
    const std::int64_t first = *gen::position(kMaxPosition);
    const int tokens = *rc::gen::inRange(2, 13);
    const auto evicted = *rc::gen::container<std::vector<bool>>(static_cast<std::size_t>(tokens), rc::gen::arbitrary<bool>());
    const auto seed = *rc::gen::arbitrary<std::uint64_t>();
    const rope_geometry g = rope_geometry::of(s.nc.cfg);
    const auto hd = static_cast<std::size_t>(g.head_dim);
    const std::size_t n = kHeads * hd;
    const auto keys = exact_values<S>(static_cast<std::size_t>(tokens) * n, seed);
    const auto values = exact_values<S>(static_cast<std::size_t>(tokens) * n, seed + 1);

    auto cache = make_cache<S, C>(s);
    cache.prefill(keys, values, first);
    std::vector<std::size_t> drop, kept;
    for (std::size_t t = 0; t < evicted.size(); ++t) (evicted[t] ? drop : kept).push_back(t);
    cache.evict(drop);
    RC_ASSERT(cache.size() == kept.size());
    RC_ASSERT(cache.next_position() == first + static_cast<std::int64_t>(kept.size()));

    const long double af = s.ref->attention_factor().value();
    const long double bound = rerotation_bound<S, C>(af);
    std::vector<double> x(hd);
    std::vector<reference::dd> want(hd);
    for (std::size_t i = 0; i < kept.size(); ++i) {
      const std::int64_t to = first + static_cast<std::int64_t>(i);
      const std::int64_t from = first + static_cast<std::int64_t>(kept[i]);
      RC_ASSERT(cache.positions()[i] == to);
      for (std::size_t j = 0; j < n; ++j)  // values move untouched
        RC_ASSERT(bitwise_equal(cache.value(i)[j], values[kept[i] * n + j]));
      for (int h = 0; h < kHeads; ++h) {
        const std::size_t off = static_cast<std::size_t>(h) * hd;
        for (std::size_t j = 0; j < hd; ++j) x[j] = static_cast<double>(scalar_traits<S>::widen(keys[kept[i] * n + off + j]));
        s.ref->rotate(to, x, want);
        const auto k = cache.key(i).subspan(off, hd);
        for (int band = 0; band < g.bands(); ++band) {
          const auto [a, b] = g.pair_of(band);
          const long double scale = std::fabs(static_cast<long double>(x[a])) + std::fabs(static_cast<long double>(x[b]));
          for (const int j : {a, b}) {
            const long double got = scalar_traits<S>::widen(k[static_cast<std::size_t>(j)]);
            const long double e = scaled_error(got, want[j].hi, want[j].lo, scale == 0 ? 1.0L : scale);
            if (e > *worst_seen) *worst_seen = e;
            if (e > bound) {
              char buf[400];
              std::snprintf(buf, sizeof buf,
                            "%s: key moved from %lld to %lld (shift %lld), head %d coordinate %d: got %La want %La "
                            "(error %.3Lg > bound %.3Lg per unit of |k_a|+|k_b|)",
                            s.nc.name.c_str(), static_cast<long long>(from), static_cast<long long>(to),
                            static_cast<long long>(to - from), h, j, got, want[j].value(), e, bound);
              RC_FAIL(std::string(buf));
            }
          }
        }
      }
    }
  };
}

// ---------------------------------------------------------------------------------------------
// Property 6d: a cache built under one schedule is refused under another — and accepted only under
// a schedule with the same layout and bit-identical frequencies (so refusals are never noise).
enum class schedule_change { none, base, layout, rotary_dim, scaling, factor, dynamic_length };

template <class C>
auto cache_is_refused_under_another_schedule() {
  return [] {
    const auto& s = schedules()[*schedule_index()];
    // Drawn as its index into schedule_change (counterexamples print it): 0 none, 1 base, 2 layout,
    // 3 rotary_dim, 4 scaling, 5 factor, 6 dynamic NTK length.
    const auto change = static_cast<schedule_change>(*rc::gen::inRange(0, 7));
    const int step = *rc::gen::inRange(1, 64);
    rope_config built = s.nc.cfg, in_use = s.nc.cfg;
    std::int64_t built_length = s.nc.seq_len, in_use_length = s.nc.seq_len;
    std::string field;
    switch (change) {
      case schedule_change::none:
        break;
      case schedule_change::base:  // rope_theta of the checkpoint not the runtime's
        in_use.base = built.base * (1.0 + step / 8.0);
        field = "rope_theta (base)";
        break;
      case schedule_change::layout:
        in_use.pair_layout = built.pair_layout == layout::interleaved ? layout::half_split : layout::interleaved;
        field = "layout";
        break;
      case schedule_change::rotary_dim:  // partial rotary read as full, or the reverse
        in_use.rotary_dim = built.rotary_dim == built.head_dim ? built.head_dim / 2 : built.head_dim;
        in_use.short_factor.resize(static_cast<std::size_t>(in_use.bands()), 1.0);
        in_use.long_factor.resize(static_cast<std::size_t>(in_use.bands()), 1.0);
        field = "rotary_dim";
        break;
      case schedule_change::scaling:  // the scaling block ignored, or applied to a model without one
        in_use.scaling = built.scaling == scaling_kind::linear ? scaling_kind::none : scaling_kind::linear;
        in_use.factor = 2.0;
        field = "scaling is";
        break;
      case schedule_change::factor:
        built.scaling = in_use.scaling = scaling_kind::linear;
        built.factor = 2.0;
        in_use.factor = 2.0 + step / 4.0;
        field = "scaling factor";
        break;
      case schedule_change::dynamic_length:  // dynamic NTK not reset after a long sequence
        built.scaling = in_use.scaling = scaling_kind::dynamic_ntk;
        built.factor = in_use.factor = 2.0;
        built_length = *gen::position(kMaxPosition);
        in_use_length = *gen::position(kMaxPosition);
        field = "the dynamic NTK sequence length";
        break;
    }
    const kv_cache<C, C, direct_angle<C>> cache(built, kHeads, built_length);
    const auto fp = schedule_fingerprint::of(in_use, in_use_length);
    std::string refusal;
    try {
      cache.check_schedule(fp);
    } catch (const std::logic_error& e) {
      refusal = e.what();
    }
    const auto f_built = compute_frequencies<double>(built, built_length);
    const auto f_in_use = compute_frequencies<double>(in_use, in_use_length);
    const bool same_rotation = built.pair_layout == in_use.pair_layout && built.head_dim == in_use.head_dim &&
                               f_built.inv_freq == f_in_use.inv_freq &&
                               f_built.attention_factor == f_in_use.attention_factor;
    if (refusal.empty()) {
      // Accepted: it must be the same rotation, and a changed field must not go unnoticed.
      RC_ASSERT(same_rotation);
      RC_ASSERT(change == schedule_change::none || change == schedule_change::dynamic_length);
    } else {
      RC_ASSERT(change != schedule_change::none);
      if (refusal.find(field) == std::string::npos) RC_FAIL("the refusal does not name " + field + ": " + refusal);
      // Dynamic NTK: refused exactly when the lengths give different frequencies.
      if (change == schedule_change::dynamic_length) RC_ASSERT(!same_rotation);
    }
  };
}

// ---------------------------------------------------------------------------------------------
}  // namespace ropecheck::test::kv_properties
