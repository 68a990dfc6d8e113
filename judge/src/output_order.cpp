// judge/src/output_order.cpp — a claim whose outputs are written in DeepSeek's half-split
// order (rope_config::outputs == output_order::half_split: transformers
// models/deepseek_v3/modeling_deepseek_v3.py apply_rotary_pos_emb_interleave reads pair i from
// (2i, 2i+1) and writes it to (i, i + r/2)).
//
// The dump's y is mapped back to the input's coordinate order (y'[2i] = y[i], y'[2i+1] = y[i + r/2]
// within the rotary part, pass-through coordinates untouched) and judged as an interleaved,
// in-place rotation: the mapping is a permutation, so every element keeps its allowance. When
// that fails and the unmapped y passes as interleaved in place, the implementation left its outputs
// in the input's order: a pass with the warning outputs_in_place (scores are unchanged when q and k
// agree; vLLM rotates in place), layout_swapped under strict. When nothing explains the mapped outputs and the
// unmapped ones are another pairing in place (rope_interleave false), that layout_swapped is given.
#include <string>
#include <utility>

#include "output_order.hpp"
#include "ropecheck/judge/classes.hpp"
#include "ropecheck/judge/sentence.hpp"

namespace ropecheck::judge::detail {

dump to_input_order(const dump& d, int rotary_dim) {
  dump m = d;
  const int half = rotary_dim / 2;
  const auto per_token = static_cast<std::size_t>(d.heads) * static_cast<std::size_t>(d.head_dim);
  for (std::size_t t = 0; t < static_cast<std::size_t>(d.tokens); ++t)
    for (std::size_t h = 0; h < static_cast<std::size_t>(d.heads); ++h) {
      const std::size_t off = t * per_token + h * static_cast<std::size_t>(d.head_dim);
      for (int i = 0; i < half; ++i) {
        m.y[off + 2 * static_cast<std::size_t>(i)] = d.y[off + static_cast<std::size_t>(i)];
        m.y[off + 2 * static_cast<std::size_t>(i) + 1] = d.y[off + static_cast<std::size_t>(i + half)];
      }
    }
  return m;
}

dump_view to_input_order(const dump_view& d, int rotary_dim) {
  dump_view m = d;
  const auto hd = static_cast<std::size_t>(d.head_dim);
  const auto half = static_cast<std::size_t>(rotary_dim / 2);
  // y'[j] = y[p(j)]: p(2i) = i, p(2i + 1) = i + r/2 in the rotary part, p(j) = j beyond; composed with d's map.
  m.y_src.resize(hd);
  if (!d.y_sign.empty()) m.y_sign.resize(hd);
  for (std::size_t j = 0; j < hd; ++j) {
    const std::size_t p = j < 2 * half ? (j % 2 == 0 ? j / 2 : j / 2 + half) : j;
    m.y_src[j] = d.y_src.empty() ? static_cast<int>(p) : d.y_src[p];
    if (!d.y_sign.empty()) m.y_sign[j] = d.y_sign[p];
  }
  return m;
}

verdict audit_half_split_outputs(const dump_view& d, const rope_config& claimed, const audit_options& opt) {
  rope_config in_place = claimed;
  in_place.outputs = output_order::in_place;
  const dump_view mapped = to_input_order(d, claimed.rotary_dim);
  verdict v = audit(mapped, in_place, opt);
  if (v.pass) return v;
  // Hypothesis: the outputs were left where the pairs were read (interleaved, in place).
  // Judged with the default allowance even under strict: the question is where the outputs are, and
  // strict's exact-angle allowance would refuse the fp32 angles of every real engine's in-place rotation.
  audit_options lenient = opt;
  lenient.strict = false;
  verdict unmapped = audit(d, in_place, lenient);
  if (!unmapped.pass) {
    // Nothing explains the mapped outputs, but the unmapped ones are a rotation of other pairs
    // (e.g. Llama's half-split in place, rope_interleave false): that diagnosis is the useful one.
    const bool mapped_unexplained = v.findings.empty() || v.findings.front().bug_class == classes::unexplained;
    if (mapped_unexplained && !unmapped.findings.empty() && unmapped.findings.front().bug_class == classes::layout_swapped) {
      unmapped.findings.front().sentence =
          "outputs are not in rope_interleave's half-split order; read in place, " + unmapped.findings.front().sentence;
      return unmapped;
    }
    return v;
  }
  // Attention scores do not depend on where the pairs are written as long as q and k agree, and
  // real engines rotate these pairs in place (vLLM's DeepSeek: is_neox_style=False,
  // vllm/model_executor/models/deepseek_v2.py): a correct rotation in the other order is a warning,
  // failed only under strict.
  const std::string sentence =
      "outputs are in the input's (interleaved) coordinate order, where rope_interleave writes them half-split "
      "(pair i to coordinates (i, " + std::to_string(claimed.rotary_dim / 2) +
      " + i)): y judged unmapped passes as an interleaved in-place rotation, worst error/allowance " +
      judge::fmt("%.3g", unmapped.worst_ratio) +
      ". Attention scores are the same either way if q and k are written alike (vLLM's DeepSeek rotates these "
      "pairs in place); claim `--outputs in_place` to say so";
  unmapped.findings.clear();
  if (opt.strict) {
    unmapped.pass = false;
    unmapped.findings.push_back({classes::layout_swapped, sentence + " (failed: strict)", 0.95});
  } else {
    unmapped.findings.push_back({classes::outputs_in_place, "warning: " + sentence + " (--strict fails it)", 0.4});
  }
  return unmapped;
}

}  // namespace ropecheck::judge::detail
