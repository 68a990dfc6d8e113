// Must not compile: a query rotated with interleaved pairs (GPT-J, Meta) scored against a key rotated
// half-split (NeoX, HF rotate_half) — the weight-permute mix-up.
#include "ropecheck/convention.hpp"

using namespace ropecheck;
using gptj = rope_convention<layout::interleaved, 128, 128, 10000.0>;
using neox = rope_convention<layout::half_split, 128, 128, 10000.0>;

void attend(const rotated_query<gptj, float>& q, const rotated_key<neox, float>& k) {
  (void)score(q, k);
}
