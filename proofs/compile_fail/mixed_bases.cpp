// Must not compile: a query rotated with rope_theta 1e4 scored against a key rotated with 5e5 (the
// runtime's base is not the checkpoint's).
#include "ropecheck/convention.hpp"

using namespace ropecheck;
using llama2 = rope_convention<layout::half_split, 128, 128, 10000.0>;
using llama3_base = rope_convention<layout::half_split, 128, 128, 500000.0>;

void attend(const rotated_query<llama2, float>& q, const rotated_key<llama3_base, float>& k) {
  (void)score(q, k);
}
