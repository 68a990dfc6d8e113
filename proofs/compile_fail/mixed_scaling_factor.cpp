// Must not compile: same base, same rule (linear), but factor 2 for the query and 4 for the key.
#include "ropecheck/convention.hpp"

using namespace ropecheck;
using linear2 = rope_convention<layout::half_split, 128, 128, 10000.0, scaling_kind::linear, 2.0, 16384>;
using linear4 = rope_convention<layout::half_split, 128, 128, 10000.0, scaling_kind::linear, 4.0, 16384>;

void attend(const rotated_query<linear2, float>& q, const rotated_key<linear4, float>& k) {
  (void)score(q, k);
}
