// The KV-cache bug class of shared/DESIGN.md ("KV cache position off by one, decode at position
// 0") as mutants for the mutation check: engines that rotate the decoded key one position ahead
// or restart decode at 0, run through property 6's offset property.
#include "kv_cache_properties.hpp"
#include "mutants.hpp"

namespace ropecheck::test {

namespace {

template <class S, class C>
std::function<void()> offset_property_on_buggy_engine(kv_properties::position_bug bug) {
  using namespace kv_properties;
  using buggy = miscounting_cache<S, C, judge::exact_angle<C>>;
  return decode_scores_follow_the_intended_offsets<S, C, buggy>(
      [bug](const schedule_under_test& s) { return buggy(make_cache<S, C>(s), bug); });
}

}  // namespace

std::vector<cache_mutant> cache_mutants() {
  using kv_properties::position_bug;
  return {
      {"kv_decode_position_off_by_one", "decode_scores_follow_intended_offsets",
       offset_property_on_buggy_engine<float, float>(position_bug::one_ahead)},
      {"kv_decode_restarted_at_zero", "decode_scores_follow_intended_offsets",
       offset_property_on_buggy_engine<bfloat16, float>(position_bug::restart_at_zero)},
  };
}

}  // namespace ropecheck::test
