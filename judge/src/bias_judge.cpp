// judge/src/bias_judge.cpp — judge_bias (ropecheck/judge/bias.hpp): validate the claim, dispatch on its scheme.
#include <stdexcept>

#include "bias_internal.hpp"

namespace ropecheck::judge {

bias_verdict judge_bias(const bias_evidence& e, const bias_claim& claimed, const audit_options& opt) {
  validate(claimed);  // names the field
  if (claimed.scheme == bias_scheme::alibi) return detail::judge_alibi(e, claimed.alibi, opt);
#ifdef ROPECHECK_HAVE_BIAS_T5
  return detail::judge_t5(e, claimed.t5, opt);
#else
  // Until judge/src/bias_t5.cpp lands (helper judge-t5), a T5 claim is refused by name, never guessed.
  throw std::invalid_argument("scheme t5: the T5 bucket judge (judge/src/bias_t5.cpp) is not built");
#endif
}

}  // namespace ropecheck::judge
