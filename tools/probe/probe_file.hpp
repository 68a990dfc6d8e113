// tools/probe/probe_file.hpp — the judge's probe set and its call plan as a file, for the doors that
// drive a kernel outside this process (the Python package, python/ropecheck/): `ropecheck probe` writes
// it, the door applies every call, and `ropecheck audit` judges the outputs file it writes back
// (tools/audit/probe_outputs.hpp). The probe is generated here once, for every door; no other language
// re-implements it. Layout (docs/python.md "The probe file"), safetensors:
//   positions            I64 [T] (1-D) or [R, T] (M-RoPE)   the probe tokens' positions, as a dump holds them
//   x                    the dtype [T, H, D]                the inputs, exact in the dtype
//   <form>.calls         I64 [C + 1]                        call c is the plan entries calls[c] .. calls[c+1]-1
//   <form>.positions     I64 [N] or [R, N]                  every entry's position, in call order
//   <form>.token         I64 [N]                            the probe token whose x the entry carries
//   <form>.keep          I64 [N]                            1: the entry's output is its token's; 0: an added
//                                                           neighbour (judge::probe_call), output dropped
// for <form> in prefill, decode (judge::plan_calls, the conformance suite's and the plugin door's plan).
#pragma once

#include <string>
#include <vector>

#include "plugin_loader.hpp"
#include "ropecheck/judge/probe.hpp"
#include "ropecheck/judge/readout.hpp"
#include "tensor_write.hpp"

namespace ropecheck::probe {

// The tensors above for p in dtype t (x converted exactly: the probe's inputs are k/128).
[[nodiscard]] std::vector<audit::tensor_out> probe_tensors(const judge::probe_set& p, plugin::dtype t);

// The qk form (`ropecheck probe --form qk`, docs/scores.md): no x; the queries "q" (p.x, p.heads heads), the keys
// "k" [T, kv_heads, D], and the crossing check's other inputs "q_alt" [T, heads, D] and "k_alt" [T, kv_heads, D],
// each a stream of p.seed (judge::qk_seed); the plans as above. std::invalid_argument when kv_heads does not
// divide p.heads.
[[nodiscard]] std::vector<audit::tensor_out> probe_tensors_qk(const judge::probe_set& p, int kv_heads, plugin::dtype t);

// The attention form (`ropecheck probe --form attention`, docs/scores.md; ropecheck/judge/readout.hpp's design):
//   attention.calls, attention.key_calls   I64 [C + 1]   call c's query and key entries
//   attention.q [NQ, HQ, D], attention.q_positions I64 [NQ]
//   attention.k [NK, HK, D], attention.k_positions I64 [NK], attention.v [NK, HK, DV]   (q, k, v in the dtype)
[[nodiscard]] std::vector<audit::tensor_out> probe_tensors_attention(const judge::attention_probe& p, plugin::dtype t);

// "float32", "bfloat16", "float16", "float64" -> the dtype; std::invalid_argument naming the value otherwise.
[[nodiscard]] plugin::dtype parse_dtype(const std::string& name);

}  // namespace ropecheck::probe
