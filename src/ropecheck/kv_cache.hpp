// ropecheck/kv_cache.hpp — a position-aware KV cache for one attention layer, as engines keep it.
//
// Keys are stored ALREADY ROTATED, each with the position it was rotated at; values are stored
// raw. That is what vLLM, llama.cpp and HF's DynamicCache do, and it is why a wrong position
// (off by one, decode restarted at 0) leaves values bit-exact while every key is wrong, and why a
// cache must never outlive the schedule its keys were rotated with.
//
// Contract of kv_cache<Storage, Compute, Strategy>:
//   layout     token-major: token t holds heads * head_dim Storage values for its key and for its
//              value; positions()[t] is the position key t was (last) rotated at.
//   rotation   every key is rotated by rotate_heads<Compute> with the cache's angle strategy, so
//              append, append_at and prefill perform the same roundings: the stored key is
//              bit-identical to rotate_heads of the raw key at the stored position.
//   positions  append() continues exactly at next_position() (a gap or a repeat throws
//              std::logic_error naming both positions); append_at() takes any position;
//              prefill() starts anywhere on an empty cache and at next_position() otherwise.
//   eviction   evict() drops tokens and renumbers the survivors to contiguous positions from the
//              cache's first position, by rotating each stored key by R(p' - p). The raw key is
//              gone: the error of the two rotations adds up (tests/properties/kv_cache_test.cpp
//              derives the bound from ropecheck/judge/error_model.hpp).
//   schedule   the cache records the schedule_fingerprint of its keys; check_schedule() throws
//              std::logic_error naming every field in which another schedule differs.
#pragma once

#include <algorithm>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "ropecheck/angle.hpp"
#include "ropecheck/config.hpp"
#include "ropecheck/rope.hpp"
#include "ropecheck/schedule.hpp"

namespace ropecheck {

// ---------------------------------------------------------------------------------------------
// The identity of the schedule a key was rotated with: everything that changes the angle of some
// (position, band), plus the layout that decides which coordinates pair up. Fields a rule does
// not read are left at their defaults, so two configs that produce the same rotation compare
// equal and a cache is refused only for a real difference.
struct schedule_fingerprint {
  int head_dim = 128;
  int rotary_dim = 128;
  double base = 10000.0;
  layout pair_layout = layout::half_split;
  scaling_kind scaling = scaling_kind::none;
  double factor = 1.0;                // the factor the rule uses (YaRN/LongRoPE: the effective one)
  std::int64_t scaling_length = 0;    // L the rule scales from: dynamic NTK's threshold, YaRN's,
                                      // Llama-3's and LongRoPE's training length; 0 when unused
  std::int64_t frequency_length = 0;  // dynamic NTK: max(seq_len, L), the length inv_freq was
                                      // computed at; 0 for every other rule
  double beta_fast = 0.0, beta_slow = 0.0;  // YaRN
  bool truncate = false;                    // YaRN
  std::optional<double> attention_factor, mscale, mscale_all_dim;  // YaRN, LongRoPE
  double low_freq_factor = 0.0, high_freq_factor = 0.0;            // Llama-3
  std::vector<double> rescale_factors;  // LongRoPE: the short or long factors in use at seq_len

  // The fingerprint of `cfg` with frequencies computed for a sequence of length `seq_len` (the
  // argument every strategy's constructor takes; only dynamic NTK and LongRoPE read it).
  [[nodiscard]] static schedule_fingerprint of(const rope_config& cfg, std::int64_t seq_len = 0) {
    schedule_fingerprint f;
    f.head_dim = cfg.head_dim;
    f.rotary_dim = cfg.rotary_dim;
    f.base = cfg.base;
    f.pair_layout = cfg.pair_layout;
    f.scaling = cfg.scaling;
    switch (cfg.scaling) {
      case scaling_kind::none:
        f.factor = 1.0;  // not read by the rule
        break;
      case scaling_kind::linear:
      case scaling_kind::ntk:
        f.factor = cfg.factor;
        break;
      case scaling_kind::dynamic_ntk:
        f.factor = cfg.factor;
        f.scaling_length = cfg.max_position_embeddings;
        // Every length up to the threshold gives the base schedule (schedule.hpp's ntk_base_in).
        f.frequency_length = std::max(seq_len, cfg.max_position_embeddings);
        break;
      case scaling_kind::yarn:
        f.factor = detail::effective_factor_in<double>(cfg);
        f.scaling_length = cfg.trained_length();
        f.beta_fast = cfg.beta_fast;
        f.beta_slow = cfg.beta_slow;
        f.truncate = cfg.truncate;
        f.attention_factor = cfg.attention_factor;
        f.mscale = cfg.mscale;
        f.mscale_all_dim = cfg.mscale_all_dim;
        break;
      case scaling_kind::llama3:
        f.factor = cfg.factor;
        f.scaling_length = cfg.original_max_position_embeddings;
        f.low_freq_factor = cfg.low_freq_factor;
        f.high_freq_factor = cfg.high_freq_factor;
        break;
      case scaling_kind::longrope:
        f.factor = detail::effective_factor_in<double>(cfg);
        f.scaling_length = cfg.trained_length();
        f.attention_factor = cfg.attention_factor;
        // The rule picks its factors by length (schedule.hpp, reference): record the set in use.
        f.rescale_factors = seq_len > cfg.trained_length() ? cfg.long_factor : cfg.short_factor;
        break;
    }
    return f;
  }

  friend bool operator==(const schedule_fingerprint&, const schedule_fingerprint&) = default;
};

namespace detail {

inline std::string describe(double v) { return num(v); }
inline std::string describe(std::int64_t v) { return std::to_string(v); }
inline std::string describe(int v) { return std::to_string(v); }
inline std::string describe(bool v) { return v ? "true" : "false"; }
inline std::string describe(layout v) { return std::string(to_string(v)); }
inline std::string describe(scaling_kind v) { return std::string(to_string(v)); }
inline std::string describe(const std::optional<double>& v) { return v ? num(*v) : std::string("absent"); }
inline std::string describe(const std::vector<double>& v) {
  std::string s = "[";
  for (std::size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + num(v[i]);
  return s + "]";
}

}  // namespace detail

// One clause per field in which `in_use` differs from `cached`, e.g.
// "rope_theta is 500000 in the schedule in use but the keys were rotated with 10000"; empty when
// the two are the same schedule.
[[nodiscard]] inline std::vector<std::string> schedule_differences(const schedule_fingerprint& cached,
                                                                   const schedule_fingerprint& in_use) {
  std::vector<std::string> out;
  const auto compare = [&](const char* field, const auto& c, const auto& u) {
    if (!(c == u))
      out.push_back(std::string(field) + " is " + detail::describe(u) +
                    " in the schedule in use but the keys were rotated with " + detail::describe(c));
  };
  compare("head_dim", cached.head_dim, in_use.head_dim);
  compare("rotary_dim", cached.rotary_dim, in_use.rotary_dim);
  compare("rope_theta (base)", cached.base, in_use.base);
  compare("layout", cached.pair_layout, in_use.pair_layout);
  compare("scaling", cached.scaling, in_use.scaling);
  compare("scaling factor", cached.factor, in_use.factor);
  compare("the scaling's training length", cached.scaling_length, in_use.scaling_length);
  compare("the dynamic NTK sequence length", cached.frequency_length, in_use.frequency_length);
  compare("beta_fast", cached.beta_fast, in_use.beta_fast);
  compare("beta_slow", cached.beta_slow, in_use.beta_slow);
  compare("truncate", cached.truncate, in_use.truncate);
  compare("attention_factor", cached.attention_factor, in_use.attention_factor);
  compare("mscale", cached.mscale, in_use.mscale);
  compare("mscale_all_dim", cached.mscale_all_dim, in_use.mscale_all_dim);
  compare("low_freq_factor", cached.low_freq_factor, in_use.low_freq_factor);
  compare("high_freq_factor", cached.high_freq_factor, in_use.high_freq_factor);
  compare("LongRoPE rescale factors", cached.rescale_factors, in_use.rescale_factors);
  return out;
}

// ---------------------------------------------------------------------------------------------
template <rope_scalar Storage, rope_scalar Compute, angle_strategy Strategy>
class kv_cache {
 public:
  using storage_type = Storage;
  using compute_type = Compute;
  using strategy_type = Strategy;

  // A cache for `heads` heads of cfg.head_dim coordinates whose keys are rotated by `strategy`.
  // Precondition (not checkable here): `strategy` was built from `cfg` at `seq_len`; the
  // fingerprint recorded is that of (cfg, seq_len). Throws std::invalid_argument for a bad
  // geometry, heads <= 0, or a strategy with another number of bands.
  kv_cache(const rope_config& cfg, int heads, Strategy strategy, std::int64_t seq_len = 0)
      : geometry_(rope_geometry::of(cfg)),
        heads_(heads),
        fingerprint_(schedule_fingerprint::of(cfg, seq_len)),
        strategy_(std::move(strategy)) {
    geometry_.check();
    if (heads <= 0) throw std::invalid_argument("kv_cache: heads must be positive, got " + std::to_string(heads));
    if (strategy_.bands() != geometry_.bands())
      throw std::invalid_argument("kv_cache: the strategy has " + std::to_string(strategy_.bands()) +
                                  " bands but rotary_dim " + std::to_string(geometry_.rotary_dim) + " needs " +
                                  std::to_string(geometry_.bands()));
    // cos_sin(0, 0) = (af cos 0, af sin 0) = (af, 0): the attention factor as the strategy rounds it.
    attention_factor_ = convert<Compute>(strategy_.cos_sin(0, 0).cos);
  }

  // The same, building the strategy from (cfg, seq_len) — every strategy of angle.hpp but the
  // exact one, which is built from a reference.
  kv_cache(const rope_config& cfg, int heads, std::int64_t seq_len = 0)
    requires std::constructible_from<Strategy, const rope_config&, std::int64_t>
      : kv_cache(cfg, heads, Strategy(cfg, seq_len), seq_len) {}

  // Rotate `raw_key` at `position` and store it with `value`. Throws std::logic_error unless
  // position == next_position() (no gap, no repeat), std::invalid_argument on a wrong size.
  void append(std::span<const Storage> raw_key, std::span<const Storage> value, std::int64_t position) {
    if (position != next_position_) {
      throw std::logic_error(
          "kv_cache::append: position " + std::to_string(position) + " does not follow " +
          (positions_.empty() ? std::string("an empty cache, which expects position ")
                              : "the last cached position " + std::to_string(positions_.back()) +
                                    ", so the next position is ") +
          std::to_string(next_position_) + (position < next_position_ ? " (a repeat)" : " (a gap)") +
          "; use append_at for an explicit position");
    }
    store(raw_key, value, position);
  }

  // Rotate `raw_key` at the explicit `position` (any, e.g. a tree or a restored sequence) and store
  // it; next_position() becomes position + 1.
  void append_at(std::span<const Storage> raw_key, std::span<const Storage> value, std::int64_t position) {
    store(raw_key, value, position);
  }

  // Store keys.size() / (heads * head_dim) tokens at first_position, first_position + 1, ...
  // exactly as that many append() calls would. On a non-empty cache first_position must be
  // next_position() (chunked prefill), else std::logic_error.
  void prefill(std::span<const Storage> keys, std::span<const Storage> values, std::int64_t first_position) {
    const std::size_t n = token_size();
    if (keys.size() != values.size() || keys.size() % n != 0)
      throw std::invalid_argument("kv_cache::prefill: keys and values must both hold tokens * heads * head_dim values");
    if (!positions_.empty() && first_position != next_position_)
      throw std::logic_error("kv_cache::prefill: first position " + std::to_string(first_position) +
                             " does not follow the last cached position " + std::to_string(positions_.back()) +
                             " (expected " + std::to_string(next_position_) + ")");
    for (std::size_t t = 0; t < keys.size() / n; ++t)
      store(keys.subspan(t * n, n), values.subspan(t * n, n), first_position + static_cast<std::int64_t>(t));
  }

  // Drop the tokens at `indices` (indices into the cache, any order; repeats count once) and
  // renumber the survivors, in order, to positions first, first + 1, ... where `first` is the
  // position of the cache's first token before eviction (attention sinks keep theirs). A key moved
  // from p to p' is rotated by R(p' - p): rotate_heads at p' - p, or its inverse at p - p' for a
  // move down. With an attention factor af != 1 the strategy's cos/sin are divided by it in
  // Compute first (one more rounding each), since the key already carries af once.
  // Throws std::out_of_range for an index >= size().
  void evict(std::span<const std::size_t> indices) {
    std::vector<bool> dropped(size(), false);
    for (const std::size_t i : indices) {
      if (i >= size())
        throw std::out_of_range("kv_cache::evict: index " + std::to_string(i) + " but the cache holds " +
                                std::to_string(size()) + " tokens");
      dropped[i] = true;
    }
    if (positions_.empty()) return;
    const std::size_t n = token_size();
    const std::int64_t first = positions_.front();
    std::size_t kept = 0;
    for (std::size_t t = 0; t < size(); ++t) {
      if (dropped[t]) continue;
      const std::int64_t from = positions_[t];
      const std::int64_t to = first + static_cast<std::int64_t>(kept);
      std::copy_n(keys_.begin() + static_cast<std::ptrdiff_t>(t * n), n, keys_.begin() + static_cast<std::ptrdiff_t>(kept * n));
      std::copy_n(values_.begin() + static_cast<std::ptrdiff_t>(t * n), n,
                  values_.begin() + static_cast<std::ptrdiff_t>(kept * n));
      if (to != from) rerotate(std::span<Storage>(keys_).subspan(kept * n, n), to - from);
      positions_[kept] = to;
      ++kept;
    }
    keys_.resize(kept * n);
    values_.resize(kept * n);
    positions_.resize(kept);
    next_position_ = first + static_cast<std::int64_t>(kept);
  }

  // Throws std::logic_error with one sentence per differing field unless `in_use` is the schedule
  // the cached keys were rotated with. An engine calls it whenever its schedule may change (every
  // forward under dynamic NTK): a cache is never silently reused under another schedule.
  void check_schedule(const schedule_fingerprint& in_use) const {
    const auto diff = schedule_differences(fingerprint_, in_use);
    if (diff.empty()) return;
    std::string msg = "kv_cache: the cached keys cannot be used under this schedule: ";
    for (std::size_t i = 0; i < diff.size(); ++i) msg += (i ? "; " : "") + diff[i];
    throw std::logic_error(msg + ".");
  }

  // The position the next append() must use: last position + 1 (0 for a fresh cache).
  [[nodiscard]] std::int64_t next_position() const noexcept { return next_position_; }
  [[nodiscard]] std::size_t size() const noexcept { return positions_.size(); }
  [[nodiscard]] std::span<const Storage> keys() const noexcept { return keys_; }
  [[nodiscard]] std::span<const Storage> values() const noexcept { return values_; }
  [[nodiscard]] std::span<const std::int64_t> positions() const noexcept { return positions_; }
  // Token t's key / value: heads * head_dim values.
  [[nodiscard]] std::span<const Storage> key(std::size_t t) const { return keys().subspan(t * token_size(), token_size()); }
  [[nodiscard]] std::span<const Storage> value(std::size_t t) const {
    return values().subspan(t * token_size(), token_size());
  }
  [[nodiscard]] const schedule_fingerprint& fingerprint() const noexcept { return fingerprint_; }
  [[nodiscard]] const rope_geometry& geometry() const noexcept { return geometry_; }
  [[nodiscard]] int heads() const noexcept { return heads_; }
  [[nodiscard]] const Strategy& strategy() const noexcept { return strategy_; }

 private:
  // The strategy's cos/sin divided by its attention factor in Compute: a pure rotation R(delta).
  struct unit_rotation {
    const Strategy* strategy;
    Compute af;
    [[nodiscard]] cos_sin_pair<Compute> cos_sin(std::int64_t pos, int band) const {
      const auto t = strategy->cos_sin(pos, band);
      return {Compute(convert<Compute>(t.cos) / af), Compute(convert<Compute>(t.sin) / af)};
    }
  };

  [[nodiscard]] std::size_t token_size() const noexcept {
    return static_cast<std::size_t>(heads_) * static_cast<std::size_t>(geometry_.head_dim);
  }

  void store(std::span<const Storage> raw_key, std::span<const Storage> value, std::int64_t position) {
    const std::size_t n = token_size();
    if (raw_key.size() != n || value.size() != n)
      throw std::invalid_argument("kv_cache: a key and a value must each hold heads * head_dim = " + std::to_string(n) +
                                  " values");
    const std::size_t at = keys_.size();
    keys_.resize(at + n);
    rotate_heads<Compute>(raw_key, std::span<Storage>(keys_).subspan(at, n), heads_, geometry_, position, strategy_);
    values_.insert(values_.end(), value.begin(), value.end());
    positions_.push_back(position);
    next_position_ = position + 1;
  }

  // key <- R(delta) key, in place.
  void rerotate(std::span<Storage> key, std::int64_t delta) const {
    const rotation_sense sense = delta > 0 ? rotation_sense::forward : rotation_sense::inverse;
    const std::int64_t magnitude = delta > 0 ? delta : -delta;
    // af == 1 (every rule but YaRN and LongRoPE): the strategy itself, no extra rounding.
    if (attention_factor_ == Compute(1))
      rotate_heads<Compute>(std::span<const Storage>(key), key, heads_, geometry_, magnitude, strategy_, sense);
    else
      rotate_heads<Compute>(std::span<const Storage>(key), key, heads_, geometry_, magnitude,
                            unit_rotation{&strategy_, attention_factor_}, sense);
  }

  rope_geometry geometry_;
  int heads_;
  schedule_fingerprint fingerprint_;
  Strategy strategy_;
  Compute attention_factor_ = Compute(1);
  std::vector<Storage> keys_;
  std::vector<Storage> values_;
  std::vector<std::int64_t> positions_;
  std::int64_t next_position_ = 0;
};

}  // namespace ropecheck
