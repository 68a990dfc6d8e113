// judge/src/bias_judge.cpp — judge_bias (ropecheck/judge/bias.hpp): validate the claim, dispatch on its scheme.
#include <stdexcept>

#include "bias_internal.hpp"

namespace ropecheck::judge {

bias_verdict judge_bias(const bias_evidence& e, const bias_claim& claimed, const audit_options& opt) {
  validate(claimed);  // names the field
  if (claimed.scheme == bias_scheme::alibi) return detail::judge_alibi(e, claimed.alibi, opt);
  return detail::judge_t5(e, claimed.t5, opt);
}

}  // namespace ropecheck::judge
