// proofs/conventions.cpp — conventions as types: what compiles and what must not.
//
// Compiling this file is the proof. Positive cases are static_asserts over the convention types;
// negative cases are `requires !requires { ... }` lines inside concepts (a requires-expression is
// only SFINAE-friendly where it depends on a template parameter, as in mp-units' test/static),
// each with the reason it must be rejected. proofs/compile_fail/ checks that the same mistakes,
// written as ordinary code, are rejected with a diagnostic that reads as a sentence.
#include <cstdint>
#include <string_view>
#include <type_traits>

#include "ropecheck/angle.hpp"
#include "ropecheck/convention.hpp"

namespace {

using namespace ropecheck;

// Llama-2 (half-split, theta 1e4), GPT-J-style interleaved, Llama-3 (theta 5e5), a x4 linear
// Llama-2, the same with a x8 factor, a YaRN Qwen and the same Llama-2 with int32 positions.
using llama2 = rope_convention<layout::half_split, 128, 128, 10000.0>;
using llama2_interleaved = rope_convention<layout::interleaved, 128, 128, 10000.0>;
using llama2_theta5e5 = rope_convention<layout::half_split, 128, 128, 500000.0>;
using llama2_linear4 = rope_convention<layout::half_split, 128, 128, 10000.0, scaling_kind::linear, 4.0, 16384>;
using llama2_linear8 = rope_convention<layout::half_split, 128, 128, 10000.0, scaling_kind::linear, 8.0, 16384>;
using llama2_linear4_32k = rope_convention<layout::half_split, 128, 128, 10000.0, scaling_kind::linear, 4.0, 32768>;
using llama2_ntk4 = rope_convention<layout::half_split, 128, 128, 10000.0, scaling_kind::ntk, 4.0, 16384>;
using llama2_int32 = rope_convention<layout::half_split, 128, 128, 10000.0, scaling_kind::none, 1.0, 4096, std::int32_t>;
using llama2_partial = rope_convention<layout::half_split, 128, 64, 10000.0>;
using llama3_8b = rope_convention<layout::half_split, 128, 128, 500000.0, scaling_kind::llama3, 8.0, 131072,
                                  std::int64_t, 8192>;
using qwen_yarn = rope_convention<layout::half_split, 128, 128, 1000000.0, scaling_kind::yarn, 4.0, 131072,
                                  std::int32_t, 32768>;
using qwen_yarn_64k = rope_convention<layout::half_split, 128, 128, 1000000.0, scaling_kind::yarn, 4.0, 65536,
                                      std::int32_t, 32768>;

// --- a convention type is the convention, and config() says the same as plain data -------------
static_assert(convention<llama2> && convention<llama3_8b> && convention<qwen_yarn>);
static_assert(!convention<rope_config> && !convention<int>);
static_assert(llama2::config() == rope_config{});  // rope_config's defaults are Llama-2's
static_assert(llama3_8b::config().base == 500000.0 && llama3_8b::config().scaling == scaling_kind::llama3 &&
              llama3_8b::config().original_max_position_embeddings == 8192 &&
              llama3_8b::config().max_position_embeddings == 131072);
static_assert(llama2_interleaved::geometry().pair_of(3) == std::pair{6, 7});
static_assert(llama2::geometry().pair_of(3) == std::pair{3, 67});
static_assert(std::is_same_v<llama2_int32::position_type, std::int32_t>);

// --- compatibility is "the same rotation", not "the same type" -----------------------------------
static_assert(compatible_conventions<llama2, llama2>);
static_assert(compatible_conventions<llama2, llama2_int32>);            // positions' type turns no angle
static_assert(compatible_conventions<llama2_linear4, llama2_linear4_32k>);  // linear ignores the context
static_assert(!compatible_conventions<llama2, llama2_interleaved>);
static_assert(!compatible_conventions<llama2, llama2_theta5e5>);
static_assert(!compatible_conventions<llama2_linear4, llama2_linear8>);
static_assert(!compatible_conventions<llama2_linear4, llama2_ntk4>);
static_assert(!compatible_conventions<llama2, llama2_partial>);
static_assert(!compatible_conventions<qwen_yarn, qwen_yarn_64k>);  // YaRN reads the context

// --- the sentences the refusals carry (these are the texts g++ prints) ---------------------------
static_assert(scoring_problem<llama2, llama2_int32>().empty());
static_assert(scoring_problem<llama2_interleaved, llama2>().view() ==
              "a query rotated with the interleaved layout cannot be scored against a key rotated half-split: "
              "the pairs differ");
static_assert(scoring_problem<llama2, llama2_theta5e5>().view() ==
              "a query rotated with base 10000 cannot be scored against a key rotated with base 500000: "
              "every band but the first turns at another rate");
static_assert(scoring_problem<llama2_linear4, llama2_linear8>().view() ==
              "a query rotated with linear scaling by 4 cannot be scored against a key rotated with linear scaling "
              "by 8: different scaling gives different angles");
static_assert(scoring_problem<llama2, llama2_partial>().view() ==
              "a query rotated over 128 coordinates cannot be scored against a key rotated over 64: "
              "the rotated dimensions differ");
static_assert(position_type_problem<std::int16_t, 131072>().view() ==
              "the position type int16_t cannot hold position 131071 of a 131072-token context "
              "(it holds every position only up to 32767)");
static_assert(position_type_problem<std::uint8_t, 4096>().view() ==
              "the position type uint8_t cannot hold position 4095 of a 4096-token context "
              "(it holds every position only up to 255)");
static_assert(position_type_problem<float, 131072>().empty());  // 2^24 > 131071
static_assert(position_type_problem<float, 33554432>().view() ==
              "the position type float cannot hold position 33554431 of a 33554432-token context "
              "(it holds every position only up to 16777216)");
static_assert(position_type_problem<std::int16_t, 32768>().empty());  // positions 0..32767 fit exactly
static_assert(!append_problem<llama2, llama2>().empty());  // an already-rotated key is refused too

// --- conventions that cannot be types ------------------------------------------------------------
// (Each line depends on a template parameter: outside a template a requires-expression does not
// turn an ill-formed type into `false`.)
template <class Position, std::int64_t Context>
concept position_type_refused = requires {
  requires !requires {
    typename rope_convention<layout::half_split, 128, 128, 10000.0, scaling_kind::none, 1.0, Context, Position>;
  };  // Position cannot hold position Context - 1
};
static_assert(position_type_refused<std::int16_t, 131072>);  // int16_t stops at 32767
static_assert(position_type_refused<std::uint8_t, 4096>);    // uint8_t stops at 255
static_assert(position_type_refused<bfloat16, 4096>);        // bf16 holds every integer only up to 256
static_assert(position_type_refused<float16, 4096>);         // fp16: up to 2048
static_assert(position_type_refused<float, 33554432>);       // float: up to 2^24
static_assert(!position_type_refused<std::int16_t, 32768>);  // positions 0..32767 fit exactly
static_assert(!position_type_refused<std::int32_t, 131072>);
static_assert(!position_type_refused<bfloat16, 257>);         // 0..256 is every position bf16 can carry

template <layout L>
concept conventions_refused = requires {
  requires !requires { typename rope_convention<L, 128, 129, 10000.0>; };  // rotary_dim > head_dim
  requires !requires { typename rope_convention<L, 128, 63, 10000.0>; };   // rotary_dim odd
  requires !requires { typename rope_convention<L, 128, 128, 1.0>; };      // base must exceed 1
  requires !requires { typename rope_convention<L, 128, 128, 10000.0, scaling_kind::none, 1.0, 0>; };
  // ^ an empty context
  requires !requires { typename rope_convention<L, 128, 128, 10000.0, scaling_kind::none, 2.0>; };
  // ^ no scaling reads no factor: a factor there is a mistake
  requires !requires { typename rope_convention<L, 128, 128, 10000.0, scaling_kind::linear, 0.0>; };
  // ^ a scaling factor must be positive
  requires !requires { typename rope_convention<L, 128, 2, 10000.0, scaling_kind::ntk, 2.0>; };
  // ^ NTK's exponent d/(d-2) is undefined for d = 2
  requires !requires { typename rope_convention<L, 128, 128, 10000.0, scaling_kind::dynamic_ntk, 2.0>; };
  // ^ dynamic NTK's angles depend on the run-time sequence length
  requires !requires { typename rope_convention<L, 128, 128, 10000.0, scaling_kind::longrope, 2.0>; };
  // ^ LongRoPE's per-band factors cannot be template arguments
  requires !requires { typename rope_convention<L, 128, 128, 500000.0, scaling_kind::llama3, 8.0>; };
  // ^ Llama-3 scaling needs its training length
};
static_assert(conventions_refused<layout::half_split> && conventions_refused<layout::interleaved>);

// --- scoring: a query and a key must have been rotated alike -------------------------------------
template <class T>
concept scoring_checked = requires(const rotated_query<llama2, T>& q, const rotated_query<llama2_interleaved, T>& qi,
                                   const rotated_key<llama2, T>& k, const rotated_key<llama2_int32, T>& k32,
                                   const rotated_key<llama2_interleaved, T>& ki,
                                   const rotated_key<llama2_theta5e5, T>& k5e5,
                                   const rotated_key<llama2_linear4, T>& klin4,
                                   const rotated_key<llama2_linear8, T>& klin8,
                                   const rotated_key<llama2_ntk4, T>& kntk4,
                                   const rotated_key<llama2_partial, T>& kpartial,
                                   const rotated_query<llama2_linear4, T>& qlin4,
                                   const rotated_query<qwen_yarn, T>& qyarn,
                                   const rotated_key<qwen_yarn_64k, T>& kyarn64k,
                                   const rotated_key<llama2, double>& kdouble) {
  score(q, k);                        // the same convention
  score(q, k32);                      // int32 positions rotate alike
  requires !requires { score(q, ki); };      // half-split query, interleaved key: the pairs differ
  requires !requires { score(qi, k); };      // and the other way round
  requires !requires { score(q, k5e5); };    // rope_theta 1e4 against 5e5
  requires !requires { score(qlin4, klin8); };  // linear x4 against linear x8: same rule, other factor
  requires !requires { score(qlin4, kntk4); };  // linear x4 against NTK x4: same factor, other rule
  requires !requires { score(q, klin4); };      // unscaled against scaled
  requires !requires { score(q, kpartial); };   // rotary_dim 128 against 64 (partial rotary)
  requires !requires { score(qyarn, kyarn64k); };  // YaRN at 131072 against 65536: the rule reads the context
  requires !requires { score(k, q); };          // a key is not a query
  requires !requires { score(q, q); };          // nor a query a key
  requires !requires { score(q, kdouble); };    // float query, double key: one scalar per score
};
static_assert(scoring_checked<float>);

// --- rotated values are made only by rotating ----------------------------------------------------
template <class T>
concept rotated_values_are_not_forged = requires(std::vector<T> v, int heads) {
  requires !requires { rotated_query<llama2, T>(heads, v, std::vector<std::int64_t>{}); };  // constructor is not public
  requires !requires { rotated_key<llama2, T>(heads, v, std::vector<std::int64_t>{}); };    // nor here
  requires !requires { rotated_key<llama2, T>{}; };                                         // no empty key either
};
static_assert(rotated_values_are_not_forged<float>);

// --- a KV cache belongs to one convention --------------------------------------------------------
template <class T>
concept caches_checked = requires(typed_kv_cache<llama2, T, T, hf_angle<T>>& cache,
                                  typed_kv_cache<llama2_theta5e5, T, T, hf_angle<T>>& cache5e5,
                                  typed_kv_cache<llama2_int32, T, T, hf_angle<T>>& cache32,
                                  const rotated_query<llama2, T>& q, const rotated_query<llama2_theta5e5, T>& q5e5,
                                  const rotated_key<llama2, T>& k, const rotated_key<llama2_theta5e5, T>& k5e5,
                                  std::span<const T> raw, std::int64_t pos) {
  cache.append(raw, raw, pos);  // raw keys go in; the cache rotates them
  cache.keys();                 // and they come out typed
  score(q, cache);              // a query of the same convention
  typed_kv_cache<llama2, T, T, hf_angle<T>>(cache);  // copying within a convention
  requires !requires { typed_kv_cache<llama2_theta5e5, T, T, hf_angle<T>>(cache); };  // reused after theta changed
  requires !requires { cache5e5 = cache; };          // assigned across a schedule change
  requires !requires { cache32 = cache; };           // even across a position-type change
  requires !requires { score(q5e5, cache); };        // query under 5e5 against keys under 1e4
  requires !requires { cache.append(k5e5, raw); };   // a key rotated under another theta
  requires !requires { cache.append(k, raw); };      // an already-rotated key would be rotated twice
};
static_assert(caches_checked<float>);

}  // namespace
