// judge/src/repeat_calls.cpp — see ropecheck/judge/repeat_calls.hpp.
#include "ropecheck/judge/repeat_calls.hpp"

#include <bit>
#include <cmath>
#include <cstdio>
#include <stdexcept>
#include <string>

#include "ropecheck/judge/classes.hpp"

namespace ropecheck::judge {

std::optional<finding> repeat_call_finding(std::span<const double> first, std::span<const double> second,
                                           std::span<const std::int64_t> positions, int heads, int head_dim,
                                           std::string_view calls) {
  const auto per_token = static_cast<std::size_t>(heads) * static_cast<std::size_t>(head_dim);
  if (first.size() != second.size() || per_token == 0 || first.size() != positions.size() * per_token)
    throw std::invalid_argument("repeat_call_finding: the two runs' outputs and the geometry disagree in size");
  std::size_t differ = 0, at = first.size();
  for (std::size_t e = 0; e < first.size(); ++e)
    if (std::bit_cast<std::uint64_t>(first[e]) != std::bit_cast<std::uint64_t>(second[e]) &&
        !(std::isnan(first[e]) && std::isnan(second[e]))) {  // a NaN's payload is not a value (non_finite names it)
      ++differ;
      if (at == first.size()) at = e;
    }
  if (differ == 0) return std::nullopt;
  char buf[480];
  std::snprintf(buf, sizeof buf,
                "the same %.*s twice gave different outputs: %zu of %zu values differ, first at token %zu (position %lld) "
                "head %zu coordinate %zu: %a then %a (hidden state carried between calls, or a race: every call must "
                "be a pure function of its arguments)",
                static_cast<int>(calls.size()), calls.data(), differ, first.size(), at / per_token,
                static_cast<long long>(positions[at / per_token]), (at % per_token) / static_cast<std::size_t>(head_dim),
                at % static_cast<std::size_t>(head_dim), first[at], second[at]);
  return finding{classes::nondeterministic, buf, 1.0};
}

finding carried_state_finding(finding repeat, const rope_config& claimed, const std::vector<finding>& others) {
  if (repeat.bug_class != classes::nondeterministic || claimed.scaling != scaling_kind::dynamic_ntk) return repeat;
  std::string fit;
  for (const finding& f : others)
    if (f.bug_class == classes::dynamic_ntk_not_reset) {
      fit = "; the decode calls: " + f.sentence;
      break;
    }
  repeat.bug_class = classes::dynamic_ntk_not_reset;
  repeat.sentence = "state carried between calls under a dynamic NTK claim: the base a longer call grew is kept "
                    "(transformers' _dynamic_frequency_update without its reset branch): " + repeat.sentence + fit;
  return repeat;
}

}  // namespace ropecheck::judge
