// ropecheck/convention.hpp — RoPE conventions as types: what a query, a key or a KV cache was
// rotated with is part of its type, so that mixing conventions does not compile.
//
//   rope_convention<Layout, HeadDim, RotaryDim, Base, Scaling, Factor, Context, Position, TrainedLength>
//                         a convention as a type; config() is the same convention as rope_config.
//                         Refused (the type cannot be named) with a sentence when the geometry is
//                         invalid, when the rule needs data a template cannot carry (dynamic NTK,
//                         LongRoPE), or when Position cannot hold every position of the context.
//   rotated_query<Conv, T>, rotated_key<Conv, T>
//                         rotated heads of one or more tokens with their positions; made only by
//                         rotate_query<Conv, Compute> / rotate_key<Conv, Compute>, which call
//                         rotate_heads with an angle strategy built from Conv::config().
//   score(q, k)           per head, the dot products q_t . k_s exactly as matmul(Q_h, K_h^T) of
//                         attention.hpp computes them; only for compatible conventions.
//   typed_kv_cache<Conv, Storage, Compute, Strategy>
//                         kv_cache under Conv: appends raw keys (the cache rotates them), hands its
//                         keys out as rotated_key<Conv, Storage>; never converts to a cache of
//                         another convention and never takes an already-rotated key.
//
// Compatible conventions: the same head_dim, rotary_dim, layout, base, scaling rule and factor, and,
// for the rules that read them (YaRN, Llama-3), the same context and training length. The position
// type is not part of it (it changes no angle). Two compatible conventions produce the same rotation
// (schedule_fingerprint::of their configs compare equal), so a query and a key of compatible
// conventions may be scored together; anything else is refused at compile time.
//
// How refusals read. Every refusal is SFINAE-visible (a `requires !requires` test can observe it)
// and names its reason verbatim in g++'s diagnostic: the refused overload is deleted and carries a
// defaulted template argument `sentence Why` computed from the two conventions, which g++ prints
// in full, e.g.
//   error: use of deleted function '... score(...) [with CQ = ...; CK = ...; ropecheck::sentence
//   Why = ropecheck::sentence{"a query rotated with the interleaved layout cannot be scored
//   against a key rotated half-split: the pairs differ"}; T = float]'
// (a static_assert message would read as well but is a hard error, invisible to `requires`; and
// C++20 static_assert messages cannot contain computed numbers).
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "ropecheck/angle.hpp"
#include "ropecheck/attention.hpp"
#include "ropecheck/config.hpp"
#include "ropecheck/kv_cache.hpp"
#include "ropecheck/rope.hpp"
#include "ropecheck/scalar.hpp"

namespace ropecheck {

// ---------------------------------------------------------------------------------------------
// A sentence built in constant evaluation, usable as a template argument. Empty means "no
// objection". Longer text is cut at capacity - 4 and ends in "...".
struct sentence {
  static constexpr std::size_t capacity = 640;
  char text[capacity]{};

  constexpr sentence() = default;
  constexpr sentence(std::string_view s) { *this += s; }  // NOLINT: implicit from text by design

  [[nodiscard]] constexpr std::size_t size() const noexcept {
    std::size_t n = 0;
    while (n < capacity && text[n] != '\0') ++n;
    return n;
  }
  [[nodiscard]] constexpr bool empty() const noexcept { return text[0] == '\0'; }
  [[nodiscard]] constexpr std::string_view view() const noexcept { return {text, size()}; }

  constexpr sentence& operator+=(std::string_view s) noexcept {
    std::size_t n = size();
    for (const char c : s) {
      if (n + 4 >= capacity) {
        text[capacity - 4] = text[capacity - 3] = text[capacity - 2] = '.';
        return *this;
      }
      text[n++] = c;
    }
    return *this;
  }
  constexpr sentence& operator+=(std::int64_t v) noexcept {  // decimal
    char digits[24]{};
    int n = 0;
    const bool negative = v < 0;
    auto u = negative ? 0 - static_cast<std::uint64_t>(v) : static_cast<std::uint64_t>(v);
    do {
      digits[n++] = static_cast<char>('0' + u % 10);
      u /= 10;
    } while (u != 0);
    if (negative) *this += "-";
    char out[24]{};
    for (int i = 0; i < n; ++i) out[i] = digits[n - 1 - i];
    return *this += std::string_view(out, static_cast<std::size_t>(n));
  }
  // A parameter as a reader wrote it: integers without a point, others with up to 6 decimals.
  constexpr sentence& operator+=(double v) noexcept {
    if (v != v) return *this += "nan";
    if (v < 0) {
      *this += "-";
      v = -v;
    }
    if (v >= 9.2e18) return *this += "a huge number";
    auto whole = static_cast<std::int64_t>(v);
    auto micro = static_cast<std::int64_t>((v - static_cast<double>(whole)) * 1e6 + 0.5);
    if (micro == 1000000) {
      ++whole;
      micro = 0;
    }
    *this += whole;
    if (micro == 0) return *this;
    char frac[7]{};
    for (int i = 5; i >= 0; --i) {
      frac[i] = static_cast<char>('0' + micro % 10);
      micro /= 10;
    }
    int len = 6;
    while (frac[len - 1] == '0') --len;
    *this += ".";
    return *this += std::string_view(frac, static_cast<std::size_t>(len));
  }
  constexpr sentence& operator+=(int v) noexcept { return *this += static_cast<std::int64_t>(v); }

  friend constexpr bool operator==(const sentence&, const sentence&) = default;
};

namespace detail {

// "int16_t", "uint8_t", the scalar name of a floating type ("float", "bfloat16"), else "given".
template <class P>
constexpr sentence position_type_name() {
  using lim = std::numeric_limits<P>;
  if constexpr (std::is_same_v<P, bool>) {
    return sentence("bool");
  } else if constexpr (lim::is_specialized && lim::is_integer) {
    sentence s(lim::is_signed ? "int" : "uint");
    s += static_cast<int>(lim::digits + (lim::is_signed ? 1 : 0));
    return s += "_t";
  } else if constexpr (requires { scalar_traits<P>::name; }) {
    return sentence(scalar_traits<P>::name);
  } else {
    return sentence("given");
  }
}

// The largest n such that P holds every position 0..n exactly; -1 when P is no number type.
template <class P>
constexpr std::int64_t largest_exact_position() {
  using lim = std::numeric_limits<P>;
  if constexpr (!lim::is_specialized) {
    return -1;
  } else if constexpr (lim::is_integer) {
    return lim::digits >= 63 ? std::numeric_limits<std::int64_t>::max() : static_cast<std::int64_t>(lim::max());
  } else {
    return lim::digits >= 63 ? std::numeric_limits<std::int64_t>::max() : std::int64_t{1} << lim::digits;
  }
}

}  // namespace detail

// Why `Position` cannot carry the positions of a `context`-token context, or empty.
template <class Position, std::int64_t Context>
[[nodiscard]] constexpr sentence position_type_problem() {
  constexpr std::int64_t most = detail::largest_exact_position<Position>();
  sentence s;
  if (most < 0) return (s += "the position type is not a number type");
  if (Context - 1 <= most) return s;
  s += "the position type ";
  s += detail::position_type_name<Position>().view();
  s += " cannot hold position ";
  s += Context - 1;
  s += " of a ";
  s += Context;
  s += "-token context (it holds every position only up to ";
  s += most;
  return s += ")";
}

// Why the template arguments are not a convention a type can carry, or empty.
template <layout L, int HeadDim, int RotaryDim, double Base, scaling_kind S, double Factor, std::int64_t Context,
          class Position, std::int64_t TrainedLength>
[[nodiscard]] constexpr sentence convention_problem() {
  sentence s;
  if (HeadDim <= 0 || RotaryDim <= 0 || RotaryDim > HeadDim || RotaryDim % 2 != 0) {
    s += "a convention needs 0 < rotary_dim <= head_dim with rotary_dim even, but rotary_dim is ";
    s += RotaryDim;
    s += " and head_dim ";
    return s += HeadDim;
  }
  if (!(Base > 1.0) || Base > 1e300) {
    s += "rope_theta (the base) must be finite and above 1, but it is ";
    return s += Base;
  }
  if (Context <= 0) {
    s += "the context must hold at least one token, but it is ";
    return s += Context;
  }
  if (TrainedLength < 0) {
    s += "the training length must be positive (or 0 for none), but it is ";
    return s += TrainedLength;
  }
  if (S == scaling_kind::none && Factor != 1.0) {
    s += "a convention without scaling reads no factor, but factor ";
    s += Factor;
    return s += " was given";
  }
  if (S != scaling_kind::none && !(Factor > 0.0 && Factor < 1e300)) {
    s += "the scaling factor must be finite and above 0, but it is ";
    return s += Factor;
  }
  if ((S == scaling_kind::ntk) && RotaryDim <= 2)
    return s += "NTK scaling needs rotary_dim > 2 (its exponent is d/(d-2))";
  if (S == scaling_kind::dynamic_ntk)
    return s += "dynamic NTK recomputes its base from the sequence length at run time, so no type can fix its angles: "
                "use kv_cache::check_schedule";
  if (S == scaling_kind::longrope)
    return s += "LongRoPE's per-band factors cannot be template arguments: use rope_config and the untyped kernels";
  if (S == scaling_kind::llama3 && TrainedLength <= 0)
    return s += "Llama-3 scaling needs the pre-training length (TrainedLength), but none was given";
  return position_type_problem<Position, Context>();
}

// ---------------------------------------------------------------------------------------------
// A RoPE convention as a type. Leave `Why` defaulted: it is the reason the arguments are refused,
// and the type exists only when there is none.
template <layout L, int HeadDim, int RotaryDim, double Base, scaling_kind S = scaling_kind::none, double Factor = 1.0,
          std::int64_t Context = 4096, class Position = std::int64_t, std::int64_t TrainedLength = 0,
          sentence Why = convention_problem<L, HeadDim, RotaryDim, Base, S, Factor, Context, Position, TrainedLength>()>
  requires(Why.empty())
struct rope_convention {
  static constexpr layout pair_layout = L;
  static constexpr int head_dim = HeadDim;
  static constexpr int rotary_dim = RotaryDim;
  static constexpr double base = Base;
  static constexpr scaling_kind scaling = S;
  static constexpr double factor = Factor;
  static constexpr std::int64_t context = Context;
  static constexpr std::int64_t trained_length = TrainedLength;
  using position_type = Position;

  // The same convention as plain data (HF defaults for every field the template does not carry).
  [[nodiscard]] static constexpr rope_config config() {
    rope_config c;
    c.head_dim = HeadDim;
    c.rotary_dim = RotaryDim;
    c.base = Base;
    c.pair_layout = L;
    c.scaling = S;
    c.factor = Factor;
    c.max_position_embeddings = Context;
    c.original_max_position_embeddings = TrainedLength;
    return c;
  }
  [[nodiscard]] static constexpr rope_geometry geometry() { return {HeadDim, RotaryDim, L}; }
};

namespace detail {
template <class C>
struct is_rope_convention : std::false_type {};
template <layout L, int H, int R, double B, scaling_kind S, double F, std::int64_t C, class P, std::int64_t T, sentence W>
struct is_rope_convention<rope_convention<L, H, R, B, S, F, C, P, T, W>> : std::true_type {};
}  // namespace detail

template <class C>
concept convention = detail::is_rope_convention<C>::value;

// ---------------------------------------------------------------------------------------------
// Differences between two conventions, as sentences.
namespace detail {

template <class C>
constexpr std::string_view layout_phrase() {
  return C::pair_layout == layout::interleaved ? "with the interleaved layout" : "half-split";
}

template <class C>
constexpr sentence scaling_phrase() {
  sentence s("with ");
  if constexpr (C::scaling == scaling_kind::none) {
    s += "no scaling";
  } else {
    s += to_string(C::scaling);
    s += " scaling by ";
    s += C::factor;
  }
  return s;
}

// Do the two conventions differ in a length their scaling rule reads?
template <class A, class B>
constexpr bool rule_lengths_differ() {
  if constexpr (A::scaling != B::scaling) return false;  // reported as a scaling difference
  else if constexpr (A::scaling == scaling_kind::yarn)
    return A::context != B::context || A::trained_length != B::trained_length;
  else if constexpr (A::scaling == scaling_kind::llama3)
    return A::trained_length != B::trained_length;
  else
    return false;
}

// One clause per field in which A and B give different rotations:
//   "<subject> rotated <A's value> cannot be <verb> <object> rotated <B's value>: <consequence>".
template <class A, class B>
constexpr sentence rotation_differences(std::string_view subject, std::string_view verb, std::string_view object) {
  sentence s;
  const auto clause = [&](const auto& a_phrase, const auto& b_phrase, std::string_view consequence) {
    if (!s.empty()) s += "; ";
    s += subject;
    s += " rotated ";
    s += a_phrase;
    s += " cannot be ";
    s += verb;
    s += " ";
    s += object;
    s += " rotated ";
    s += b_phrase;
    s += ": ";
    s += consequence;
  };
  if constexpr (A::head_dim != B::head_dim) {
    sentence a("with "), b("with ");
    a += A::head_dim;
    a += " coordinates per head";
    b += B::head_dim;
    clause(a.view(), b.view(), "the heads differ in size");
  }
  if constexpr (A::rotary_dim != B::rotary_dim) {
    sentence a("over "), b("over ");
    a += A::rotary_dim;
    a += " coordinates";
    b += B::rotary_dim;
    clause(a.view(), b.view(), "the rotated dimensions differ");
  }
  if constexpr (A::pair_layout != B::pair_layout)
    clause(layout_phrase<A>(), layout_phrase<B>(), "the pairs differ");
  if constexpr (A::base != B::base) {
    sentence a("with base "), b("with base ");
    a += A::base;
    b += B::base;
    clause(a.view(), b.view(), "every band but the first turns at another rate");
  }
  if constexpr (A::scaling != B::scaling || A::factor != B::factor)
    clause(scaling_phrase<A>().view(), scaling_phrase<B>().view(), "different scaling gives different angles");
  if constexpr (rule_lengths_differ<A, B>()) {
    sentence a("for a "), b("for a ");
    a += A::context;
    a += "-token context trained at ";
    a += A::trained_length;
    b += B::context;
    b += "-token context trained at ";
    b += B::trained_length;
    clause(a.view(), b.view(), "the scaling rule reads these lengths");
  }
  return s;
}

}  // namespace detail

// Do a query of A and a key of B rotate alike (the same schedule_fingerprint)?
template <class A, class B>
concept compatible_conventions =
    convention<A> && convention<B> && detail::rotation_differences<A, B>("", "", "").empty();

// The reasons a query of CQ cannot be scored against a key of CK (empty when it can).
template <convention CQ, convention CK>
[[nodiscard]] constexpr sentence scoring_problem() {
  return detail::rotation_differences<CQ, CK>("a query", "scored against", "a key");
}

// ---------------------------------------------------------------------------------------------
// Rotated heads of one or more tokens, token-major: token t holds heads * head_dim values and was
// rotated at positions()[t]. Only rotate_query / rotate_key (and typed_kv_cache) make them.
namespace detail {
template <convention Conv, class T>
class rotated_heads {
 public:
  using convention_type = Conv;
  using value_type = T;
  using position_type = typename Conv::position_type;

  [[nodiscard]] int heads() const noexcept { return heads_; }
  [[nodiscard]] std::size_t tokens() const noexcept { return positions_.size(); }
  [[nodiscard]] std::span<const T> values() const noexcept { return values_; }
  [[nodiscard]] std::span<const position_type> positions() const noexcept { return positions_; }
  // Head h of token t: head_dim values.
  [[nodiscard]] std::span<const T> head(std::size_t t, int h) const {
    const auto hd = static_cast<std::size_t>(Conv::head_dim);
    return values().subspan((t * static_cast<std::size_t>(heads_) + static_cast<std::size_t>(h)) * hd, hd);
  }

 protected:
  rotated_heads(int heads, std::vector<T> values, std::vector<position_type> positions)
      : heads_(heads), values_(std::move(values)), positions_(std::move(positions)) {}

 private:
  int heads_;
  std::vector<T> values_;
  std::vector<position_type> positions_;
};

// Throws unless `positions` lie in [0, Conv::context) and `values` holds one token per position.
template <convention Conv, class T>
void check_rotation_input(std::span<const T> values, int heads, std::span<const typename Conv::position_type> positions) {
  if (heads <= 0) throw std::invalid_argument("rotate: heads must be positive, got " + std::to_string(heads));
  const std::size_t per_token = static_cast<std::size_t>(heads) * static_cast<std::size_t>(Conv::head_dim);
  if (values.size() != positions.size() * per_token)
    throw std::invalid_argument("rotate: " + std::to_string(values.size()) + " values for " +
                                std::to_string(positions.size()) + " positions of " + std::to_string(per_token));
  for (const auto p : positions) {
    const auto pos = static_cast<std::int64_t>(p);
    if (pos < 0 || pos >= Conv::context)
      throw std::out_of_range("rotate: position " + std::to_string(pos) + " is outside the convention's " +
                              std::to_string(Conv::context) + "-token context");
  }
}

// rotate_heads<Compute> of every token at its position: exactly what rotate_tokens does.
template <convention Conv, class Compute, class T, cos_sin_source CosSin>
std::vector<T> rotate_all(const CosSin& cs, std::span<const T> raw, int heads,
                          std::span<const typename Conv::position_type> positions) {
  check_rotation_input<Conv>(raw, heads, positions);
  std::vector<T> out(raw.size());
  const std::size_t per_token = static_cast<std::size_t>(heads) * static_cast<std::size_t>(Conv::head_dim);
  for (std::size_t t = 0; t < positions.size(); ++t)
    rotate_heads<Compute>(raw.subspan(t * per_token, per_token), std::span<T>(out).subspan(t * per_token, per_token),
                          heads, Conv::geometry(), static_cast<std::int64_t>(positions[t]), cs);
  return out;
}

template <class Strategy, class Conv>
void check_strategy_bands(const Strategy& s) {
  if (s.bands() != Conv::rotary_dim / 2)
    throw std::invalid_argument("rotate: the strategy has " + std::to_string(s.bands()) + " bands but the convention " +
                                std::to_string(Conv::rotary_dim / 2));
}
}  // namespace detail

template <convention Conv, class T>
class rotated_query : public detail::rotated_heads<Conv, T> {
  using base_type = detail::rotated_heads<Conv, T>;
  using base_type::base_type;
  template <convention C, class Compute, class U, angle_strategy S>
  friend rotated_query<C, U> rotate_query(const S&, std::span<const U>, int, std::span<const typename C::position_type>);
};

template <convention Conv, class T>
class rotated_key : public detail::rotated_heads<Conv, T> {
  using base_type = detail::rotated_heads<Conv, T>;
  using base_type::base_type;
  template <convention C, class Compute, class U, angle_strategy S>
  friend rotated_key<C, U> rotate_key(const S&, std::span<const U>, int, std::span<const typename C::position_type>);
  template <convention C, rope_scalar St, rope_scalar Cp, angle_strategy S>
  friend class typed_kv_cache;
};

// Rotate raw query heads (token-major, heads * head_dim per token) at `positions` under Conv.
// Precondition: `strategy` was built from Conv::config() (its band count is checked); the overloads
// without a strategy build Strategy(Conv::config()) themselves, so nothing is left to trust.
// Throws std::invalid_argument on a size mismatch, std::out_of_range for a position outside
// [0, Conv::context). The values are bit-identical to rotate_heads<Compute> at each position.
template <convention Conv, class Compute, class T, angle_strategy Strategy>
[[nodiscard]] rotated_query<Conv, T> rotate_query(const Strategy& strategy, std::span<const T> raw, int heads,
                                                  std::span<const typename Conv::position_type> positions) {
  detail::check_strategy_bands<Strategy, Conv>(strategy);
  return rotated_query<Conv, T>(heads, detail::rotate_all<Conv, Compute>(strategy, raw, heads, positions),
                                {positions.begin(), positions.end()});
}

template <convention Conv, class Compute, class T, angle_strategy Strategy>
[[nodiscard]] rotated_key<Conv, T> rotate_key(const Strategy& strategy, std::span<const T> raw, int heads,
                                              std::span<const typename Conv::position_type> positions) {
  detail::check_strategy_bands<Strategy, Conv>(strategy);
  return rotated_key<Conv, T>(heads, detail::rotate_all<Conv, Compute>(strategy, raw, heads, positions),
                              {positions.begin(), positions.end()});
}

template <convention Conv, class Compute, angle_strategy Strategy, class T>
  requires std::constructible_from<Strategy, const rope_config&>
[[nodiscard]] rotated_query<Conv, T> rotate_query(std::span<const T> raw, int heads,
                                                  std::span<const typename Conv::position_type> positions) {
  return rotate_query<Conv, Compute>(Strategy(Conv::config()), raw, heads, positions);
}

template <convention Conv, class Compute, angle_strategy Strategy, class T>
  requires std::constructible_from<Strategy, const rope_config&>
[[nodiscard]] rotated_key<Conv, T> rotate_key(std::span<const T> raw, int heads,
                                              std::span<const typename Conv::position_type> positions) {
  return rotate_key<Conv, Compute>(Strategy(Conv::config()), raw, heads, positions);
}

// ---------------------------------------------------------------------------------------------
// Per head h, the [q.tokens(), k.tokens()] matrix of dot products q_{t,h} . k_{s,h}, computed as
// matmul(Q_h, K_h^T) (attention.hpp's contract: left-to-right sums, every operation rounded in T),
// unscaled. Throws std::invalid_argument when q and k have different numbers of heads.
template <class CQ, class CK, class T>
  requires compatible_conventions<CQ, CK>
[[nodiscard]] std::vector<matrix<T>> score(const rotated_query<CQ, T>& q, const rotated_key<CK, T>& k) {
  if (q.heads() != k.heads())
    throw std::invalid_argument("score: the query has " + std::to_string(q.heads()) + " heads, the key " +
                                std::to_string(k.heads()));
  const auto hd = static_cast<std::size_t>(CQ::head_dim);
  std::vector<matrix<T>> out;
  out.reserve(static_cast<std::size_t>(q.heads()));
  for (int h = 0; h < q.heads(); ++h) {
    matrix<T> qh(q.tokens(), hd), kt(hd, k.tokens());
    for (std::size_t t = 0; t < q.tokens(); ++t) {
      const auto row = q.head(t, h);
      for (std::size_t j = 0; j < hd; ++j) qh(t, j) = row[j];
    }
    for (std::size_t s = 0; s < k.tokens(); ++s) {
      const auto row = k.head(s, h);
      for (std::size_t j = 0; j < hd; ++j) kt(j, s) = row[j];
    }
    out.push_back(matmul(qh, kt));
  }
  return out;
}

// Refused: a query and a key rotated with different conventions (Why says how they differ).
template <class CQ, class CK, sentence Why = scoring_problem<CQ, CK>(), class T>
  requires(!compatible_conventions<CQ, CK>)
void score(const rotated_query<CQ, T>&, const rotated_key<CK, T>&) = delete;  // see Why

// ---------------------------------------------------------------------------------------------
// The reasons a cache of keys under From cannot be used as a cache under To.
template <convention From, convention To>
[[nodiscard]] constexpr sentence cache_reuse_problem() {
  sentence s = detail::rotation_differences<From, To>("a cache of keys", "reused as", "a cache of keys");
  if (s.empty() && !std::is_same_v<From, To>) {
    s += "a cache of keys under one convention cannot be reused under another, even one that rotates alike: "
         "the conventions differ in their context or position type";
  }
  return s;
}

template <convention CK, convention Cache>
[[nodiscard]] constexpr sentence append_problem() {
  sentence s = detail::rotation_differences<CK, Cache>("a key", "appended to", "a cache of keys");
  if (!s.empty()) return s;
  return sentence(
      "a key that is already rotated cannot be appended: the cache rotates every key itself, so it would be "
      "rotated twice; append the raw key");
}

template <convention CQ, convention Cache>
[[nodiscard]] constexpr sentence cache_scoring_problem() {
  return detail::rotation_differences<CQ, Cache>("a query", "scored against", "a cache of keys");
}

// kv_cache under the convention Conv (kv_cache.hpp's contract throughout), whose positions are
// Conv::position_type and whose keys come out as rotated_key<Conv, Storage>.
template <convention Conv, rope_scalar Storage, rope_scalar Compute, angle_strategy Strategy>
class typed_kv_cache {
 public:
  using convention_type = Conv;
  using position_type = typename Conv::position_type;
  using untyped_cache = kv_cache<Storage, Compute, Strategy>;

  explicit typed_kv_cache(int heads)
    requires std::constructible_from<Strategy, const rope_config&, std::int64_t>
      : cache_(Conv::config(), heads) {}
  // Precondition (as kv_cache's): `strategy` was built from Conv::config().
  typed_kv_cache(int heads, Strategy strategy) : cache_(Conv::config(), heads, std::move(strategy)) {}

  typed_kv_cache(const typed_kv_cache&) = default;
  typed_kv_cache(typed_kv_cache&&) noexcept = default;
  typed_kv_cache& operator=(const typed_kv_cache&) = default;
  typed_kv_cache& operator=(typed_kv_cache&&) noexcept = default;

  // Refused: a cache filled under another convention (a schedule change) reused as this one.
  template <class Other, class S2, class C2, class St2, sentence Why = cache_reuse_problem<Other, Conv>()>
    requires(!std::is_same_v<Other, Conv>)
  typed_kv_cache(const typed_kv_cache<Other, S2, C2, St2>&) = delete;  // see Why
  template <class Other, class S2, class C2, class St2, sentence Why = cache_reuse_problem<Other, Conv>()>
    requires(!std::is_same_v<Other, Conv>)
  typed_kv_cache& operator=(const typed_kv_cache<Other, S2, C2, St2>&) = delete;  // see Why

  // Rotate `raw_key` under Conv and store it (kv_cache::append / append_at / prefill).
  void append(std::span<const Storage> raw_key, std::span<const Storage> value, position_type position) {
    cache_.append(raw_key, value, checked(position));
  }
  void append_at(std::span<const Storage> raw_key, std::span<const Storage> value, position_type position) {
    cache_.append_at(raw_key, value, checked(position));
  }
  void prefill(std::span<const Storage> keys, std::span<const Storage> values, position_type first_position) {
    const auto per_token = static_cast<std::size_t>(cache_.heads()) * static_cast<std::size_t>(Conv::head_dim);
    if (per_token != 0 && keys.size() / per_token > 0)
      checked(static_cast<position_type>(static_cast<std::int64_t>(first_position) +
                                         static_cast<std::int64_t>(keys.size() / per_token) - 1));
    cache_.prefill(keys, values, checked(first_position));
  }

  // Refused: a key that is already rotated (twice rotated if taken), or rotated under another convention.
  template <class CK, sentence Why = append_problem<CK, Conv>()>
  void append(const rotated_key<CK, Storage>&, std::span<const Storage>) = delete;  // see Why

  // Every cached key, rotated under Conv, with its position.
  [[nodiscard]] rotated_key<Conv, Storage> keys() const {
    std::vector<position_type> positions;
    positions.reserve(cache_.size());
    for (const std::int64_t p : cache_.positions()) positions.push_back(static_cast<position_type>(p));
    return rotated_key<Conv, Storage>(cache_.heads(), {cache_.keys().begin(), cache_.keys().end()},
                                      std::move(positions));
  }
  [[nodiscard]] std::size_t size() const noexcept { return cache_.size(); }
  [[nodiscard]] int heads() const noexcept { return cache_.heads(); }
  [[nodiscard]] std::span<const Storage> values() const noexcept { return cache_.values(); }
  [[nodiscard]] const untyped_cache& untyped() const noexcept { return cache_; }

 private:
  static std::int64_t checked(position_type p) {
    const auto pos = static_cast<std::int64_t>(p);
    if (pos < 0 || pos >= Conv::context)
      throw std::out_of_range("typed_kv_cache: position " + std::to_string(pos) + " is outside the convention's " +
                              std::to_string(Conv::context) + "-token context");
    return pos;
  }

  untyped_cache cache_;
};

// Per head, the query's tokens against every cached key (score of the cache's keys()).
template <class CQ, class CK, class T, class Compute, class Strategy>
  requires compatible_conventions<CQ, CK>
[[nodiscard]] std::vector<matrix<T>> score(const rotated_query<CQ, T>& q,
                                           const typed_kv_cache<CK, T, Compute, Strategy>& cache) {
  return score(q, cache.keys());
}

// Refused: a query scored against a cache of keys rotated with another convention.
template <class CQ, class CK, sentence Why = cache_scoring_problem<CQ, CK>(), class T, class Compute, class Strategy>
  requires(!compatible_conventions<CQ, CK>)
void score(const rotated_query<CQ, T>&, const typed_kv_cache<CK, T, Compute, Strategy>&) = delete;  // see Why

}  // namespace ropecheck
