// tests/audit/probe_outputs_test.cpp — tools/audit/probe_outputs.hpp: the reader of the outputs file a
// door in another language writes back after applying `ropecheck probe`'s plan (python/ropecheck/_drive.py
// drive). Files are made as that door makes them — the probe file's tensors (probe::probe_tensors) plus
// prefill.y, prefill.y_again and decode.y, written with tensor_write — with y = x: the layout is what is
// checked here, not the rotation. A valid file reads with both forms; the two prefill passes differing
// in any one element (the first, the last, one inside) is the `nondeterministic` finding naming where;
// each layout fault is an input_error starting with the file's name and naming the tensor or field.
#include "probe_outputs.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "audit_input.hpp"
#include "probe_file.hpp"
#include "ropecheck/judge/classes.hpp"
#include "ropecheck/judge/probe.hpp"
#include "ropecheck/presets.hpp"
#include "tensor_write.hpp"
#include "support/scratch_dir.hpp"

namespace {

namespace fs = std::filesystem;
using namespace ropecheck;
using audit::tensor_out;
using judge::call_form;

constexpr int kHeads = 3;  // not 2: a head index is then not a coordinate's parity

const judge::probe_set& probe() {
  static const judge::probe_set p = judge::make_probe(*find_preset("llama3-8b"), 20240601, kHeads);
  return p;
}

tensor_out& named(std::vector<tensor_out>& t, const std::string& name) {
  const auto it = std::find_if(t.begin(), t.end(), [&](const tensor_out& x) { return x.name == name; });
  if (it == t.end()) throw std::logic_error("no tensor " + name);
  return *it;
}

void drop(std::vector<tensor_out>& t, const std::string& name) {
  (void)named(t, name);
  std::erase_if(t, [&](const tensor_out& x) { return x.name == name; });
}

// The outputs file of a kernel returning its input, as the Python door writes it.
std::vector<tensor_out> identity_outputs(plugin::dtype dt = plugin::dtype::f32) {
  std::vector<tensor_out> t = probe::probe_tensors(probe(), dt);
  const tensor_out x = named(t, "x");
  for (const char* y : {"prefill.y", "prefill.y_again", "decode.y"}) t.push_back({y, x.type, x.shape, x.bytes});
  return t;
}

// The qk form's outputs file of a kernel returning its inputs (q' = q, k' = k in every run).
const judge::probe_set& qk_probe() {
  static const judge::probe_set p = judge::make_probe(*find_preset("llama3-8b"), 20240601, 4);
  return p;
}
std::vector<tensor_out> identity_qk_outputs() {
  std::vector<tensor_out> t = probe::probe_tensors_qk(qk_probe(), 2, plugin::dtype::f32);
  const tensor_out q = named(t, "q"), k = named(t, "k");
  for (const char* y : {"prefill.q_out", "prefill.q_out_again", "prefill.q_out_kalt", "decode.q_out"})
    t.push_back({y, q.type, q.shape, q.bytes});
  for (const char* y : {"prefill.k_out", "prefill.k_out_again", "prefill.k_out_qalt", "decode.k_out"})
    t.push_back({y, k.type, k.shape, k.bytes});
  return t;
}

std::map<std::string, std::string> outputs_metadata(const std::string& version = "1") {
  return {{"ropecheck_probe", "1"}, {"ropecheck_probe_outputs", version}, {"kernel", "identity"}, {"dtype", "float32"}};
}

class ProbeOutputs : public ::testing::Test {
 protected:

  fs::path write(const std::vector<tensor_out>& t, const std::map<std::string, std::string>& meta = outputs_metadata()) {
    const fs::path f = dir_ / "outputs.safetensors";
    audit::write_safetensors(f, t, meta);
    return f;
  }

  // read_probe_outputs rejects the file with an input_error "<file>: ..." containing every one of `words`.
  void expect_rejected(const fs::path& f, std::initializer_list<std::string> words) {
    try {
      (void)audit::read_probe_outputs(f);
      ADD_FAILURE() << "read; expected a rejection naming " << *words.begin();
    } catch (const audit::input_error& e) {
      const std::string what = e.what();
      EXPECT_EQ(what.rfind(f.string() + ": ", 0), 0u) << what;
      for (const auto& w : words) EXPECT_NE(what.find(w), std::string::npos) << "'" << w << "' not in: " << what;
    }
  }

  // The finding for prefill.y_again differing from prefill.y in element e only (its last byte changed:
  // for a little-endian f32 the sign bit, so the two differ in sign alone, or its first: the lowest
  // mantissa bit).
  std::optional<judge::finding> differing_at(std::size_t e, bool last_byte) {
    auto t = identity_outputs();
    auto& again = named(t, "prefill.y_again");
    const std::size_t b = e * 4 + (last_byte ? 3 : 0);
    again.bytes[b] ^= last_byte ? 0x80 : 0x01;
    return audit::read_probe_outputs(write(t)).nondeterministic;
  }

  test::scratch_dir dir_{"ropecheck_probe_outputs_test"};
};

TEST_F(ProbeOutputs, a_valid_file_reads_with_both_forms_and_its_metadata) {
  const fs::path f = write(identity_outputs());
  EXPECT_TRUE(audit::is_probe_outputs(f));
  const auto c = audit::read_probe_outputs(f);
  EXPECT_EQ(c.forms, (std::vector<call_form>{call_form::prefill, call_form::decode}));
  EXPECT_FALSE(c.nondeterministic) << c.nondeterministic->sentence;
  EXPECT_EQ(c.metadata, outputs_metadata());
}

// The forms are those whose y is present, prefill first whatever the order of the file's tensors.
TEST_F(ProbeOutputs, the_forms_are_those_whose_y_is_present) {
  auto decode_only = identity_outputs();
  drop(decode_only, "prefill.y");
  drop(decode_only, "prefill.y_again");
  EXPECT_EQ(audit::read_probe_outputs(write(decode_only)).forms, std::vector<call_form>{call_form::decode});
  auto prefill_only = identity_outputs();
  drop(prefill_only, "decode.y");
  EXPECT_EQ(audit::read_probe_outputs(write(prefill_only)).forms, std::vector<call_form>{call_form::prefill});
  auto reversed = identity_outputs();
  std::reverse(reversed.begin(), reversed.end());
  EXPECT_EQ(audit::read_probe_outputs(write(reversed)).forms, (std::vector<call_form>{call_form::prefill, call_form::decode}));
}

TEST_F(ProbeOutputs, prefill_y_again_differing_in_the_first_element_is_nondeterministic) {
  const auto f = differing_at(0, false);
  ASSERT_TRUE(f);
  EXPECT_EQ(f->bug_class, judge::classes::nondeterministic);
  EXPECT_NE(f->sentence.find("1 of " + std::to_string(probe().x.size()) + " values differ, first at token 0 (position " +
                            std::to_string(probe().positions[0]) + ") head 0 coordinate 0"), std::string::npos) << f->sentence;
}

TEST_F(ProbeOutputs, prefill_y_again_differing_in_the_last_element_only_by_its_sign_is_nondeterministic) {
  const auto& p = probe();
  const auto f = differing_at(p.x.size() - 1, true);
  ASSERT_TRUE(f);
  EXPECT_EQ(f->bug_class, judge::classes::nondeterministic);
  const std::string where = "first at token " + std::to_string(p.tokens() - 1) + " (position " +
                            std::to_string(p.positions.back()) + ") head " + std::to_string(kHeads - 1) + " coordinate " +
                            std::to_string(p.head_dim - 1);
  EXPECT_NE(f->sentence.find(where), std::string::npos) << f->sentence;
}

// An element inside: token 3, head 1, coordinate 6 of [T][H][D] is flat index (3 H + 1) D + 6.
TEST_F(ProbeOutputs, the_nondeterministic_finding_names_the_token_head_and_coordinate_that_differ) {
  const auto& p = probe();
  const auto f = differing_at(static_cast<std::size_t>((3 * kHeads + 1) * p.head_dim + 6), false);
  ASSERT_TRUE(f);
  EXPECT_NE(f->sentence.find("first at token 3 (position " + std::to_string(p.positions[3]) + ") head 1 coordinate 6"),
            std::string::npos) << f->sentence;
}

TEST_F(ProbeOutputs, decode_y_differing_from_prefill_y_is_not_nondeterministic) {
  auto t = identity_outputs();
  named(t, "decode.y").bytes[0] ^= 0x01;  // the forms may differ (that is the judge's business)
  EXPECT_FALSE(audit::read_probe_outputs(write(t)).nondeterministic);
}

// prefill.y_again is "the plan applied a second time" beside prefill.y (the header's layout, and the
// Python door always writes it): without it the repeat check would silently not be made.
TEST_F(ProbeOutputs, prefill_y_without_prefill_y_again_is_an_input_error_naming_it) {
  auto t = identity_outputs();
  drop(t, "prefill.y_again");
  expect_rejected(write(t), {"prefill.y_again"});
}

TEST_F(ProbeOutputs, prefill_y_again_without_prefill_y_is_an_input_error_naming_both) {
  auto t = identity_outputs();
  drop(t, "prefill.y");
  expect_rejected(write(t), {"prefill.y_again", "prefill.y"});
}

TEST_F(ProbeOutputs, prefill_y_again_not_shaped_or_typed_as_prefill_y_is_an_input_error_naming_it) {
  const auto& p = probe();
  auto shaped = identity_outputs();
  named(shaped, "prefill.y_again").shape = {p.tokens(), p.head_dim, kHeads};  // the same bytes, transposed
  expect_rejected(write(shaped), {"prefill.y_again"});
  auto typed = identity_outputs();
  auto& again = named(typed, "prefill.y_again");
  again.type = audit::dtype::f64;
  again.bytes.resize(again.bytes.size() * 2);
  expect_rejected(write(typed), {"prefill.y_again"});
}

// The same bytes under another shape, and one token short, in either form.
TEST_F(ProbeOutputs, a_y_not_shaped_as_x_is_an_input_error_naming_it_and_both_shapes) {
  const auto& p = probe();
  const std::string h = std::to_string(kHeads), x_shape = "[" + std::to_string(p.tokens()) + ", " + h + ", 128]";
  for (const char* y : {"prefill.y", "decode.y"}) {
    SCOPED_TRACE(y);
    auto transposed = identity_outputs();
    named(transposed, y).shape = {p.tokens(), p.head_dim, kHeads};
    if (std::string(y) == "prefill.y") named(transposed, "prefill.y_again").shape = {p.tokens(), p.head_dim, kHeads};
    expect_rejected(write(transposed), {std::string(y) + " is F32 [" + std::to_string(p.tokens()) + ", 128, " + h + "]", x_shape});
    auto short_one = identity_outputs();
    for (auto& t : short_one)
      if (t.name == y || (std::string(y) == "prefill.y" && t.name == "prefill.y_again")) {
        t.shape[0] -= 1;
        t.bytes.resize(t.bytes.size() - static_cast<std::size_t>(kHeads * p.head_dim) * 4);
      }
    expect_rejected(write(short_one), {std::string(y) + " is F32 [" + std::to_string(p.tokens() - 1) + ", " + h + ", 128]"});
  }
}

// x float16 and y bfloat16: the same element size and shape, another dtype.
TEST_F(ProbeOutputs, a_y_of_another_dtype_than_x_is_an_input_error_naming_it) {
  auto t = identity_outputs(plugin::dtype::f16);
  for (const char* y : {"prefill.y", "prefill.y_again"}) named(t, y).type = audit::dtype::bf16;
  expect_rejected(write(t), {"prefill.y is BF16", "x is F16"});
  auto d = identity_outputs(plugin::dtype::f16);
  auto& dy = named(d, "decode.y");
  dy.type = audit::dtype::f32;
  dy.bytes.resize(dy.bytes.size() * 2);
  expect_rejected(write(d), {"decode.y is F32", "x is F16"});
}

TEST_F(ProbeOutputs, each_missing_probe_tensor_is_an_input_error_naming_it) {
  for (const char* name : {"positions", "x", "prefill.calls", "prefill.positions", "prefill.token", "prefill.keep",
                           "decode.calls", "decode.positions", "decode.token", "decode.keep"}) {
    SCOPED_TRACE(name);
    auto t = identity_outputs();
    drop(t, name);
    expect_rejected(write(t), {"no tensor '" + std::string(name) + "'"});
  }
}

TEST_F(ProbeOutputs, no_y_at_all_is_an_input_error) {
  auto t = identity_outputs();
  for (const char* y : {"prefill.y", "prefill.y_again", "decode.y"}) drop(t, y);
  expect_rejected(write(t), {"neither prefill.y nor decode.y"});
}

// Without the metadata key the file is not an outputs file (the dump reader then says what it lacks);
// read anyway, the reader names the field.
TEST_F(ProbeOutputs, without_ropecheck_probe_outputs_metadata_a_file_is_not_an_outputs_file) {
  auto meta = outputs_metadata();
  meta.erase("ropecheck_probe_outputs");
  const fs::path f = write(identity_outputs(), meta);
  EXPECT_FALSE(audit::is_probe_outputs(f));
  expect_rejected(f, {"ropecheck_probe_outputs"});
}

// Another version says it is an outputs file, so the reader is the one asked, and it names the field
// and the version it found.
TEST_F(ProbeOutputs, a_metadata_version_other_than_1_is_an_input_error_naming_field_and_version) {
  for (const std::string v : {"2", "0", "", "1.0"}) {
    SCOPED_TRACE(v);
    const fs::path f = write(identity_outputs(), outputs_metadata(v));
    EXPECT_TRUE(audit::is_probe_outputs(f));
    expect_rejected(f, {"ropecheck_probe_outputs is \"" + v + "\""});
  }
}

TEST_F(ProbeOutputs, is_probe_outputs_is_false_for_anything_but_an_outputs_file) {
  EXPECT_FALSE(audit::is_probe_outputs(dir_ / "missing.safetensors"));
  EXPECT_FALSE(audit::is_probe_outputs(dir_));
  const fs::path junk = dir_ / "junk.safetensors";
  std::ofstream(junk, std::ios::binary) << "not a safetensors file";
  EXPECT_FALSE(audit::is_probe_outputs(junk));
  // The probe file itself (before the door's outputs are added).
  const fs::path probe_file = dir_ / "probe.safetensors";
  audit::write_safetensors(probe_file, probe::probe_tensors(probe(), plugin::dtype::f32), {{"ropecheck_probe", "1"}});
  EXPECT_FALSE(audit::is_probe_outputs(probe_file));
}

// merge: the door's call findings of a form before the judge's, a failing form first (judge::merge_forms).
// --- The qk form (metadata form "qk"): q and k, each form's q_out and k_out, the repeated prefill runs ---

std::map<std::string, std::string> qk_metadata() {
  auto m = outputs_metadata();
  m["form"] = "qk";
  return m;
}

TEST_F(ProbeOutputs, a_qk_file_reads_with_both_forms_and_no_finding) {
  const auto c = audit::read_probe_outputs(write(identity_qk_outputs(), qk_metadata()));
  EXPECT_TRUE(c.qk);
  EXPECT_EQ(c.forms, (std::vector<call_form>{call_form::prefill, call_form::decode}));
  EXPECT_FALSE(c.nondeterministic);
  EXPECT_FALSE(c.crossed);
}

TEST_F(ProbeOutputs, q_out_moving_with_the_other_keys_is_qk_crossed_and_k_out_again_differing_is_nondeterministic) {
  auto t = identity_qk_outputs();
  named(t, "prefill.q_out_kalt").bytes[0] ^= 0x01;
  const auto c = audit::read_probe_outputs(write(t, qk_metadata()));
  ASSERT_TRUE(c.crossed);
  EXPECT_EQ(c.crossed->bug_class, judge::classes::qk_crossed);
  EXPECT_NE(c.crossed->sentence.find("q's outputs depend on k's inputs"), std::string::npos) << c.crossed->sentence;
  EXPECT_FALSE(c.nondeterministic);
  auto u = identity_qk_outputs();
  auto& again = named(u, "prefill.k_out_again");
  again.bytes[again.bytes.size() - 1] ^= 0x80;
  const auto d = audit::read_probe_outputs(write(u, qk_metadata()));
  ASSERT_TRUE(d.nondeterministic);
  EXPECT_NE(d.nondeterministic->sentence.find("(k's outputs)"), std::string::npos) << d.nondeterministic->sentence;
  EXPECT_FALSE(d.crossed);
}

TEST_F(ProbeOutputs, each_missing_qk_run_is_an_input_error_naming_it) {
  for (const char* run : {"prefill.q_out_again", "prefill.k_out_again", "prefill.q_out_kalt", "prefill.k_out_qalt"}) {
    auto t = identity_qk_outputs();
    drop(t, run);
    expect_rejected(write(t, qk_metadata()), {run});
  }
  auto t = identity_qk_outputs();
  drop(t, "decode.k_out");
  expect_rejected(write(t, qk_metadata()), {"decode.q_out and decode.k_out go together"});
  auto u = identity_qk_outputs();
  drop(u, "k");
  expect_rejected(write(u, qk_metadata()), {"no tensor 'k'"});
  auto m = qk_metadata();
  m["form"] = "attention";
  expect_rejected(write(identity_qk_outputs(), m), {"form", "attention"});
}

// The keys after the kernel's context shift: three tensors and __metadata__ shift_delta, or none.
TEST_F(ProbeOutputs, shifted_keys_read_with_their_delta_and_each_missing_part_is_named) {
  const auto with_shift = [&](std::vector<tensor_out> t, std::int64_t rows) {
    const tensor_out k = named(t, "k");
    std::vector<std::int64_t> token, positions;
    for (std::int64_t i = 0; i < rows; ++i) token.push_back(i + 40), positions.push_back(i + 8);
    t.push_back({"shift.token", audit::dtype::i64, {rows}, audit::i64_bytes(token)});
    t.push_back({"shift.positions", audit::dtype::i64, {rows}, audit::i64_bytes(positions)});
    const auto per = static_cast<std::size_t>(k.shape[1] * k.shape[2]) * 4;
    t.push_back({"shift.k_out", k.type, {rows, k.shape[1], k.shape[2]},
                 std::vector<unsigned char>(k.bytes.begin() + static_cast<std::ptrdiff_t>(40 * per),
                                            k.bytes.begin() + static_cast<std::ptrdiff_t>((40 + rows) * per))});
    return t;
  };
  auto meta = qk_metadata();
  meta["shift_delta"] = "-32";
  const auto c = audit::read_probe_outputs(write(with_shift(identity_qk_outputs(), 10), meta));
  ASSERT_TRUE(c.shift);
  EXPECT_EQ(c.shift->delta, -32);
  EXPECT_EQ(c.shift->positions.size(), 10u);
  EXPECT_EQ(c.shift->k, c.shift->k_out);  // the identity kernel's shift leaves the raw keys
  // The keys judged as a dump do not call the shift's tensors foreign to the dump contract: they are the file's.
  const audit::loaded_dump keys = audit::load_dump(write(with_shift(identity_qk_outputs(), 10), meta), {}, "prefill.k_out", "k");
  for (const std::string& note : keys.notes) EXPECT_EQ(note.find("shift."), std::string::npos) << note;
  expect_rejected(write(with_shift(identity_qk_outputs(), 10), qk_metadata()), {"shift_delta"});
  for (const char* name : {"shift.token", "shift.positions", "shift.k_out"}) {
    auto t = with_shift(identity_qk_outputs(), 10);
    drop(t, name);
    expect_rejected(write(t, meta), {name});
  }
}

TEST_F(ProbeOutputs, a_k_out_not_shaped_as_k_is_an_input_error_naming_both) {
  auto t = identity_qk_outputs();
  const tensor_out q = named(t, "q");
  named(t, "decode.k_out") = {"decode.k_out", q.type, q.shape, q.bytes};
  expect_rejected(write(t, qk_metadata()), {"decode.k_out", "k is"});
}

TEST(ProbeOutputsMerge, call_findings_come_before_the_judges_and_a_failing_form_first) {
  audit::probe_outputs_report r;
  audit::probe_form_report decode{call_form::decode, {}, {}, true, {}, {}, {}};
  decode.r.v.pass = true;
  decode.r.v.findings.push_back({judge::classes::angle_drift_fp32, "drift", 0.5});
  audit::probe_form_report prefill{call_form::prefill, {}, {{judge::classes::nondeterministic, "twice differ", 1.0}}, false, {}, {}, {}};
  prefill.r.v.pass = true;
  prefill.r.v.findings.push_back({judge::classes::angle_drift_fp32, "drift", 0.5});
  r.forms = {decode, prefill};
  audit::merge(r);
  EXPECT_FALSE(r.merged.passed);
  ASSERT_EQ(r.merged.findings.size(), 2u);
  EXPECT_EQ(r.merged.findings[0].bug_class, judge::classes::nondeterministic);
  EXPECT_EQ(r.merged.findings[0].sentence, std::string(judge::call_form_phrase(call_form::prefill)) + ": twice differ");
  EXPECT_EQ(r.merged.findings[1].sentence, "drift (both forms)");
  EXPECT_EQ(r.merged.forms, (std::vector<std::string>{"prefill", "both"}));
}

// --- Rules that depend on each call's sequence length (seq_len_groups, combine_groups, call_seq_len) ---

rope_config longrope() {
  rope_config c;
  c.head_dim = c.rotary_dim = 8;
  c.scaling = scaling_kind::longrope;
  c.short_factor = {1, 1, 1, 1};
  c.long_factor = {1, 2, 4, 8};
  c.original_max_position_embeddings = 4096;
  c.max_position_embeddings = 131072;
  return c;
}

std::vector<std::vector<std::size_t>> tokens_of(const std::vector<audit::seq_len_group>& g) {
  std::vector<std::vector<std::size_t>> out;
  for (const auto& x : g) out.push_back(x.tokens);
  return out;
}

// transformers: long factors iff seq_len > original_max_position_embeddings: 4096 is short, 4097 long.
TEST(SeqLenGroups, longrope_switches_to_the_long_factors_above_the_trained_length) {
  const auto g = audit::seq_len_groups(longrope(), {4096, 4097, 1, 100000});
  ASSERT_EQ(g.size(), 2u);
  EXPECT_EQ(tokens_of(g), (std::vector<std::vector<std::size_t>>{{0, 2}, {1, 3}}));
  EXPECT_EQ(g[0].min_seq_len, 1);
  EXPECT_EQ(g[0].seq_len, 4096);
  EXPECT_EQ(g[1].min_seq_len, 4097);
  EXPECT_EQ(g[1].seq_len, 100000);
}

TEST(SeqLenGroups, rules_that_do_not_depend_on_the_length_give_no_groups) {
  rope_config same = longrope();
  same.long_factor = same.short_factor;  // --engine vllm's LongRoPE: one list
  EXPECT_TRUE(audit::seq_len_groups(same, {1, 5000}).empty());
  EXPECT_TRUE(audit::seq_len_groups(*find_preset("llama3-8b"), {1, 200000}).empty());
}

// Dynamic NTK: the base is rope_theta's up to max_position_embeddings (4096 included) and grows with every
// length above it, so each such length is its own group.
TEST(SeqLenGroups, dynamic_ntk_groups_every_length_above_max_position_embeddings) {
  rope_config c;
  c.head_dim = c.rotary_dim = 8;
  c.scaling = scaling_kind::dynamic_ntk;
  c.factor = 2;
  c.max_position_embeddings = 4096;
  const auto g = audit::seq_len_groups(c, {4096, 4097, 5000, 4097, 1});
  EXPECT_EQ(tokens_of(g), (std::vector<std::vector<std::size_t>>{{0, 4}, {1, 3}, {2}}));
  EXPECT_EQ(g[1].seq_len, 4097);
  EXPECT_EQ(g[2].seq_len, 5000);
}

TEST(CombineGroups, passes_iff_every_group_does_with_the_failing_groups_findings_first) {
  audit::seq_len_group a{4096, 1, {0, 1}}, b{16777225, 4097, {2}};
  audit::audit_report ra, rb;
  ra.v.pass = true;
  ra.v.findings = {{judge::classes::angle_drift_fp32, "drift", 0.5}};
  rb.v.pass = false;
  rb.v.findings = {{judge::classes::scaling_wrong, "wrong factors", 0.9}};
  rb.tokens = 1;
  const audit::audit_report r = audit::combine_groups({a, b}, {ra, rb});
  EXPECT_FALSE(r.v.pass);
  ASSERT_EQ(r.v.findings.size(), 2u);
  EXPECT_EQ(r.v.findings[0].bug_class, judge::classes::scaling_wrong);
  EXPECT_EQ(r.v.findings[0].sentence, "calls of sequence length 4097..16777225 (1 tokens): wrong factors");
  EXPECT_EQ(r.v.findings[1].sentence, "calls of sequence length 1..4096 (2 tokens): drift");
  EXPECT_EQ(r.tokens, 1);  // the figures are the failing group's
  ASSERT_FALSE(r.notes.empty());
  EXPECT_NE(r.notes.back().find("judged in 2 groups"), std::string::npos) << r.notes.back();
  ra.v.findings.clear();
  rb.v.pass = true;
  rb.v.findings.clear();
  EXPECT_TRUE(audit::combine_groups({a, b}, {ra, rb}).v.pass);
  EXPECT_THROW((void)audit::combine_groups({a, b}, {ra}), std::logic_error);
}

// The note lists up to max_listed_groups groups; more are summarised (span, counts, the first failing groups) and
// seq_len_groups (JSON) keeps every one (issue 34: a dynamic-NTK check listed 44 groups on one line).
TEST(CombineGroups, a_long_list_of_groups_is_summarised_and_kept_whole_in_the_json) {
  const auto run = [](std::size_t n, std::size_t failing) {
    std::vector<audit::seq_len_group> g;
    std::vector<audit::audit_report> r;
    for (std::size_t i = 0; i < n; ++i) {
      g.push_back({static_cast<std::int64_t>(100 * (i + 1)), static_cast<std::int64_t>(100 * i + 1), {i}});
      audit::audit_report x;
      x.v.pass = i != failing;
      r.push_back(x);
    }
    return audit::combine_groups(g, r);
  };
  const audit::audit_report six = run(audit::max_listed_groups, 99);
  EXPECT_NE(six.notes.back().find("calls of sequence length 501..600, 1 tokens, pass"), std::string::npos) << six.notes.back();
  EXPECT_EQ(six.seq_len_groups.size(), audit::max_listed_groups);
  const audit::audit_report many = run(44, 20);
  const std::string& note = many.notes.back();
  EXPECT_NE(note.find("judged in 44 groups"), std::string::npos) << note;
  EXPECT_NE(note.find("sequence lengths 1..4400, 43 pass, 1 FAIL (calls of sequence length 2001..2100, 1 tokens, FAIL)"),
            std::string::npos) << note;
  EXPECT_EQ(note.find("calls of sequence length 101..200"), std::string::npos) << "a passing group listed: " << note;
  EXPECT_NE(note.find("every group in the JSON's seq_len_groups"), std::string::npos);
  ASSERT_EQ(many.seq_len_groups.size(), 44u);
  EXPECT_EQ(many.seq_len_groups[43], "calls of sequence length 4301..4400, 1 tokens, pass");
  EXPECT_NE(audit::to_json(many).find("\"seq_len_groups\""), std::string::npos);
  EXPECT_LT(note.size(), 400u);
}

// call_seq_len: each probe token gets its call's largest position + 1 (the plan's, judge::plan_calls).
TEST_F(ProbeOutputs, each_token_has_the_sequence_length_of_the_call_that_kept_it) {
  const auto c = audit::read_probe_outputs(write(identity_outputs()));
  for (const auto form : {call_form::prefill, call_form::decode}) {
    const std::vector<std::int64_t>& seq = c.call_seq_len.at(form);
    ASSERT_EQ(seq.size(), probe().positions.size());
    for (const judge::probe_call& call : judge::plan_calls(probe(), form)) {
      const std::int64_t top = *std::max_element(call.positions.begin(), call.positions.end());
      for (int t = call.first; t < call.first + call.count; ++t)
        EXPECT_EQ(seq[static_cast<std::size_t>(t)], top + 1) << judge::to_string(form) << " token " << t;
    }
  }
}

TEST_F(ProbeOutputs, a_plan_keeping_a_token_twice_is_an_input_error) {
  auto t = identity_outputs();
  auto& token = named(t, "decode.token");
  token.bytes[8] = token.bytes[0];  // entry 1 keeps entry 0's token (little-endian I64, tokens below 256)
  expect_rejected(write(t), {"decode.token", "kept twice"});
}

// subset_tokens: the chosen tokens' positions and values, in the order given.
TEST_F(ProbeOutputs, a_subset_of_tokens_keeps_their_positions_and_values) {
  const fs::path f = write(identity_outputs());
  const audit::loaded_dump whole = audit::load_dump(f, {}, "decode.y");
  const audit::loaded_dump part = audit::subset_tokens(whole, {5, 0, 7});
  ASSERT_EQ(part.d.tokens, 3);
  const std::vector<std::size_t> from{5, 0, 7};
  for (std::size_t k = 0; k < from.size(); ++k) {
    EXPECT_EQ(part.d.positions[k], whole.d.positions[from[k]]);
    for (int h = 0; h < whole.d.heads; ++h)
      for (int j = 0; j < whole.d.head_dim; ++j) {
        const auto t = static_cast<std::int64_t>(from[k]);
        EXPECT_EQ(part.d.x_at(static_cast<std::int64_t>(k), h, j), whole.d.x_at(t, h, j));
        EXPECT_EQ(part.d.y_at(static_cast<std::int64_t>(k), h, j), whole.d.y_at(t, h, j));
      }
  }
  EXPECT_THROW((void)audit::subset_tokens(whole, {static_cast<std::size_t>(whole.d.tokens)}), std::out_of_range);
}

}  // namespace
