// Must not compile: after rope_theta was corrected from 1e4 to 5e5, new queries are scored against
// the keys cached under the old base.
#include "ropecheck/angle.hpp"
#include "ropecheck/convention.hpp"

using namespace ropecheck;
using old_theta = rope_convention<layout::half_split, 128, 128, 10000.0>;
using new_theta = rope_convention<layout::half_split, 128, 128, 500000.0>;

void decode(const rotated_query<new_theta, float>& q, const typed_kv_cache<old_theta, float, float, hf_angle<float>>& cache) {
  (void)score(q, cache);
}
