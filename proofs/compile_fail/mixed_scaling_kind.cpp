// Must not compile: same base, same factor 4, but the query was scaled by position interpolation
// (linear) and the key by NTK-aware scaling.
#include "ropecheck/convention.hpp"

using namespace ropecheck;
using linear4 = rope_convention<layout::half_split, 128, 128, 10000.0, scaling_kind::linear, 4.0, 16384>;
using ntk4 = rope_convention<layout::half_split, 128, 128, 10000.0, scaling_kind::ntk, 4.0, 16384>;

void attend(const rotated_query<linear4, float>& q, const rotated_key<ntk4, float>& k) {
  (void)score(q, k);
}
