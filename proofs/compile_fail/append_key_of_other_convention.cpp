// Must not compile: a key rotated half-split appended to a cache whose keys are interleaved.
#include "ropecheck/angle.hpp"
#include "ropecheck/convention.hpp"

using namespace ropecheck;
using gptj = rope_convention<layout::interleaved, 128, 128, 10000.0>;
using neox = rope_convention<layout::half_split, 128, 128, 10000.0>;

void store(typed_kv_cache<gptj, float, float, hf_angle<float>>& cache, const rotated_key<neox, float>& k,
           std::span<const float> value) {
  cache.append(k, value);
}
