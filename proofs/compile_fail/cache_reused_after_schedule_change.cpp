// Must not compile: a KV cache filled under linear x2 scaling handed to a decode step that now runs
// linear x4 (the context was extended mid-session): every cached key sits at the wrong angle.
#include "ropecheck/angle.hpp"
#include "ropecheck/convention.hpp"

using namespace ropecheck;
using linear2 = rope_convention<layout::half_split, 128, 128, 10000.0, scaling_kind::linear, 2.0, 16384>;
using linear4 = rope_convention<layout::half_split, 128, 128, 10000.0, scaling_kind::linear, 4.0, 16384>;
using cache_x2 = typed_kv_cache<linear2, float, float, hf_angle<float>>;
using cache_x4 = typed_kv_cache<linear4, float, float, hf_angle<float>>;

void decode_step(const cache_x4& cache);

void serve(const cache_x2& filled_before_the_change) {
  decode_step(filled_before_the_change);
}
