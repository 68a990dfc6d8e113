// tools/audit/probe_outputs.hpp — `ropecheck audit OUTPUTS.safetensors` on the file a door in another
// language writes back after applying `ropecheck probe`'s plan (tools/probe/probe_file.hpp; the Python
// package, python/ropecheck/): the probe file's tensors and, per call form, the outputs in probe token
// order, `prefill.y` (with `prefill.y_again`, the plan applied a second time) and `decode.y`.
//
// Each form present is judged as the dump {positions, x, <form>.y} — by the same code as any dump
// (load_dump with that y, the one judge) — and the forms' findings are merged as the plugin door merges
// them (ropecheck/judge/forms.hpp). prefill.y_again not bitwise prefill.y is the door's `nondeterministic`
// finding, by the repeat-call check of every door (ropecheck/judge/repeat_calls.hpp).
#pragma once

#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "audit_output.hpp"
#include "ropecheck/config.hpp"
#include "ropecheck/judge/forms.hpp"
#include "ropecheck/judge/scores.hpp"

namespace ropecheck::audit {

// The file's __metadata__ says ropecheck_probe_outputs (a safetensors file only; false for anything
// else, unreadable files included: the dump reader then says what is wrong).
[[nodiscard]] bool is_probe_outputs(const std::filesystem::path& file);

// The qk form (metadata "form" "qk", docs/scores.md): inputs q [T, Hq, D] and k [T, Hk, D] instead of x; per form
// F.q_out and F.k_out instead of F.y; prefill.q_out_again and prefill.k_out_again (the plan applied again), and the
// crossing probe: prefill.q_out_kalt (q's outputs with the keys k_alt) and prefill.k_out_qalt (k's outputs with the
// queries q_alt), which must equal prefill.q_out and prefill.k_out bitwise (judge::crossing_finding).
struct probe_outputs_contents {
  bool qk = false;
  std::vector<judge::call_form> forms;           // the forms whose outputs are present, prefill first
  std::map<std::string, std::string> metadata;   // the file's __metadata__
  std::optional<judge::finding> nondeterministic;  // prefill.y_again differs from prefill.y (qk: either output)
  std::optional<judge::finding> crossed;           // qk: the crossing probe moved an output
  // qk, when the door made one: the keys after the kernel's context shift (judge::shift_findings): shift.token [S]
  // (probe tokens), shift.positions [S] (their renumbered positions, n + delta), shift.k_out [S, Hk, D] (the
  // decode form's keys of those tokens re-rotated by the kernel's shift), __metadata__ shift_delta.
  struct shifted_keys {
    std::vector<std::int64_t> token, positions;
    std::vector<double> k, k_out;  // the tokens' raw keys and the shifted ones, [S][Hk][D]
    int heads = 0, head_dim = 0;
    std::string dtype;
    std::int64_t delta = 0;
  };
  std::optional<shifted_keys> shift;
  // Per form present, per probe token: the sequence length of the call that kept it (the call's largest
  // position, every row, + 1: what transformers' dynamic_rope_update derives a call's length from).
  std::map<judge::call_form, std::vector<std::int64_t>> call_seq_len;
};

// Checks the layout (positions, x [T, H, D], every form's plan tensors, each y in x's shape and dtype,
// prefill.y and prefill.y_again together) and compares the two prefill passes. input_error naming the tensor otherwise.
[[nodiscard]] probe_outputs_contents read_probe_outputs(const std::filesystem::path& file);

// The probe tokens of one form whose calls give the claimed convention the same frequencies.
struct seq_len_group {
  std::int64_t seq_len = 0;            // judged at (the largest of its calls')
  std::int64_t min_seq_len = 0;        // its calls' smallest
  std::vector<std::size_t> tokens;     // probe token indices, ascending
};

// Groups of a form's tokens by the part of their call's sequence length the claim depends on: LongRoPE's
// short or long factors (transformers switches above trained_length(), modeling_rope_utils.py
// _compute_longrope_parameters, per call through dynamic_rope_update), dynamic NTK's base (a length
// above max_position_embeddings raises it, _compute_dynamic_ntk_parameters). Empty when the claim's
// frequencies do not depend on it (every other rule; LongRoPE with equal short and long factors, as
// --engine vllm claims it). Ordered by seq_len.
[[nodiscard]] std::vector<seq_len_group> seq_len_groups(const rope_config& claimed, const std::vector<std::int64_t>& seq_len);

struct probe_form_report {
  judge::call_form form = judge::call_form::prefill;
  audit_report r;                       // the dump audit of {positions, x, <form>.y} (qk: of the queries alone)
  std::vector<judge::finding> call_findings;  // the door's (nondeterministic; qk: the crossing probe's qk_crossed)
  bool passed = false;
  std::optional<audit_report> keys;     // qk: the dump audit of the keys {positions, k, <form>.k_out}
  std::optional<judge::score_identity> score;  // qk: the relative-offset identity at the score
  std::vector<judge::finding> pair_findings;    // qk: the pair's findings (judge::qk_findings), which merge() reads
};

// qk: the shifted keys judged (judge::audit at their renumbered positions, then judge::shift_findings).
struct shift_report {
  judge::verdict v;
  std::vector<judge::finding> findings;
  std::int64_t delta = 0, tokens = 0;
};

struct probe_outputs_report {
  std::string version, command, source, rerun;
  std::map<std::string, std::string> metadata;
  std::vector<probe_form_report> forms;
  std::optional<shift_report> shift;
  judge::merged_forms merged;  // the forms' findings, then the shift's ("shift"); passed only if the shift passed too
};

// One form's report from its groups' audits (parallel to `groups`, each judged at its seq_len): passes
// iff every group does; the findings are the groups' (failing groups first), each sentence prefixed
// with its calls' sequence lengths; the figures those of the first failing group (else the largest);
// a note lists every group and its verdict, up to max_listed_groups of them (more: the span, the counts and the
// first failing groups), and seq_len_groups keeps every one (JSON "seq_len_groups").
inline constexpr std::size_t max_listed_groups = 6;

[[nodiscard]] audit_report combine_groups(const std::vector<seq_len_group>& groups, std::vector<audit_report> reports);

// Merges the forms' findings (judge::merge_forms) into r.merged.
void merge(probe_outputs_report& r);

// "  score identity: |<q'_m, k'_n> - af^2 <q_m, R(n - m) k_n>| / (af^2 |q| |k|) at most ...; ... (m, n, query head; pairs)\n":
// the qk form's score identity in every door's summary (this file's, the plugin door's).
[[nodiscard]] std::string score_identity_line(const judge::score_identity& s);

[[nodiscard]] std::string probe_outputs_summary(const probe_outputs_report& r);
[[nodiscard]] std::string probe_outputs_json(const probe_outputs_report& r);
[[nodiscard]] std::string probe_outputs_junit(const probe_outputs_report& r);

}  // namespace ropecheck::audit
