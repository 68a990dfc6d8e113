// tests/probe/probe_file_test.cpp — tools/probe/probe_file.hpp: the probe set and its call plan as the
// tensors of `ropecheck probe`'s file, read back with the project's safetensors reader as the Python door
// reads them (python/ropecheck/_drive.py _Plan: call c is entries calls[c]..calls[c+1]-1, x rows by
// token, outputs kept where keep is 1). Checked against the definitions: judge::plan_calls for what each
// call holds, probe.hpp for what a form is (decode: one token a call; prefill: 2..64 entries a call, the
// probe tokens in order), the probe's inputs exact in every dtype, M-RoPE rows, and a max_position
// limit (tools/audit/plugin_limits.hpp limit_probe) leaving no position past it.
#include "probe_file.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cstdint>
#include <map>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "plugin_limits.hpp"
#include "ropecheck/judge/probe.hpp"
#include "ropecheck/presets.hpp"
#include "tensor_file.hpp"

namespace {

using namespace ropecheck;
using judge::call_form;

constexpr std::uint64_t kSeed = 20240601;

// The probe file's tensors as the reader gives them (written and parsed in memory).
std::map<std::string, audit::tensor> as_file(const judge::probe_set& p, plugin::dtype t) {
  const std::string bytes = audit::safetensors_bytes(probe::probe_tensors(p, t), {{"ropecheck_probe", "1"}});
  return audit::parse_safetensors({reinterpret_cast<const unsigned char*>(bytes.data()), bytes.size()}, "probe.safetensors");
}

std::vector<std::int64_t> ints(const audit::tensor& t) {
  EXPECT_EQ(t.type, audit::dtype::i64) << t.name;
  std::vector<std::int64_t> v;
  for (const double d : t.values) v.push_back(static_cast<std::int64_t>(d));
  return v;
}

std::vector<std::int64_t> shape(std::initializer_list<std::int64_t> s) { return s; }

rope_config llama() { return *find_preset("llama3-8b"); }

// Qwen2.5-VL's M-RoPE (tests/data/configs/qwen2_5_vl_7b.json): head_dim 128, rope_theta 1e6,
// mrope_section [16, 24, 24] over the 64 bands, three position rows.
rope_config qwen_vl() {
  rope_config c;
  c.head_dim = c.rotary_dim = 128;
  c.base = 1000000.0;
  c.mrope = mrope_kind::contiguous;
  c.mrope_section = {16, 24, 24};
  c.max_position_embeddings = 128000;
  return c;
}

judge::probe_set mrope_probe(std::int64_t max_position = 0) {
  plugin::kernel_limits l;
  l.max_position = max_position;
  return audit::limit_probe(judge::make_probe(qwen_vl(), kSeed, 2), qwen_vl(), l).set;
}

std::size_t rows_of(const judge::probe_set& p) {
  return p.position_rows.empty() ? 1 : p.position_rows.size() / p.positions.size();
}

// Position row r of token t (row 0 = positions when the set has no rows).
std::int64_t row_of(const judge::probe_set& p, std::size_t r, std::size_t t) {
  return p.position_rows.empty() ? p.positions[t] : p.position_rows[r * p.positions.size() + t];
}

// Everything one form's four tensors must say about p, against plan_calls and the form's definition.
void check_form(const judge::probe_set& p, const std::map<std::string, audit::tensor>& file, call_form form) {
  const std::string f = judge::to_string(form);
  SCOPED_TRACE(f);
  const auto plan = judge::plan_calls(p, form);
  const auto calls = ints(file.at(f + ".calls"));
  const auto token = ints(file.at(f + ".token"));
  const auto keep = ints(file.at(f + ".keep"));
  const auto& pos_t = file.at(f + ".positions");
  const auto pos = ints(pos_t);
  const auto n = static_cast<std::int64_t>(token.size());
  const std::size_t rows = rows_of(p), tokens = p.positions.size();

  // calls: from 0, increasing, ending at N; one more than the plan's calls.
  ASSERT_EQ(file.at(f + ".calls").shape, shape({static_cast<std::int64_t>(plan.size()) + 1}));
  ASSERT_FALSE(calls.empty());
  EXPECT_EQ(calls.front(), 0);
  EXPECT_EQ(calls.back(), n);
  for (std::size_t c = 0; c + 1 < calls.size(); ++c) EXPECT_LT(calls[c], calls[c + 1]) << "call " << c << " is empty";
  EXPECT_EQ(file.at(f + ".token").shape, shape({n}));
  EXPECT_EQ(file.at(f + ".keep").shape, shape({n}));
  if (rows == 1) EXPECT_EQ(pos_t.shape, shape({n}));
  else EXPECT_EQ(pos_t.shape, shape({static_cast<std::int64_t>(rows), n}));
  ASSERT_EQ(pos.size(), rows * static_cast<std::size_t>(n));

  // Every probe token kept exactly once, and in the probe's order (plan_calls walks p's tokens in order).
  std::vector<int> kept(tokens, 0);
  std::vector<std::int64_t> kept_order;
  for (std::int64_t i = 0; i < n; ++i) {
    const auto u = static_cast<std::size_t>(i);
    ASSERT_TRUE(keep[u] == 0 || keep[u] == 1) << "keep[" << i << "] = " << keep[u];
    ASSERT_GE(token[u], 0);
    ASSERT_LT(token[u], static_cast<std::int64_t>(tokens));
    if (keep[u] == 1) ++kept[static_cast<std::size_t>(token[u])], kept_order.push_back(token[u]);
  }
  for (std::size_t t = 0; t < tokens; ++t) EXPECT_EQ(kept[t], 1) << "probe token " << t << " kept " << kept[t] << " times";
  for (std::size_t k = 0; k < kept_order.size(); ++k) EXPECT_EQ(kept_order[k], static_cast<std::int64_t>(k));

  // Each call's entries are plan_calls' positions; a kept entry's rows are its token's rows; an entry
  // not kept is the call's neighbour (every row its position: a text token) carrying its probe token's x.
  std::size_t neighbours = 0;
  for (std::size_t c = 0; c < plan.size() && c + 1 < calls.size(); ++c) {
    const judge::probe_call& pc = plan[c];
    const auto s = static_cast<std::size_t>(calls[c]), e = static_cast<std::size_t>(calls[c + 1]);
    ASSERT_EQ(e - s, pc.positions.size()) << "call " << c;
    std::size_t dropped = 0;
    for (std::size_t j = 0; j < pc.positions.size(); ++j) {
      const std::size_t i = s + j;
      EXPECT_EQ(pos[i], pc.positions[j]) << "call " << c << " entry " << j;
      for (std::size_t r = 0; r < rows && !pc.position_rows.empty(); ++r)
        EXPECT_EQ(pos[r * static_cast<std::size_t>(n) + i], pc.position_rows[r * pc.positions.size() + j])
            << "call " << c << " entry " << j << " row " << r;
      if (keep[i] == 1) {
        for (std::size_t r = 0; r < rows; ++r)
          EXPECT_EQ(pos[r * static_cast<std::size_t>(n) + i], row_of(p, r, static_cast<std::size_t>(token[i])))
              << "kept entry " << i << " row " << r;
      } else {
        ++dropped;
        ASSERT_TRUE(pc.has_neighbour) << "call " << c << " drops an entry but has no neighbour";
        for (std::size_t r = 0; r < rows; ++r) EXPECT_EQ(pos[r * static_cast<std::size_t>(n) + i], pc.neighbour) << "row " << r;
        EXPECT_EQ(token[i], pc.first) << "the neighbour carries the call's probe token";
      }
    }
    EXPECT_EQ(dropped, pc.has_neighbour ? 1u : 0u) << "call " << c;
    EXPECT_EQ(pc.positions.size() - dropped, static_cast<std::size_t>(pc.count)) << "call " << c;
    neighbours += dropped;
  }

  if (form == call_form::decode) {
    // One token a call, the probe's tokens in order at their own positions.
    EXPECT_EQ(n, static_cast<std::int64_t>(tokens));
    for (std::size_t i = 0; i < calls.size(); ++i) EXPECT_EQ(calls[i], static_cast<std::int64_t>(i));
    for (std::size_t i = 0; i < token.size(); ++i) {
      EXPECT_EQ(token[i], static_cast<std::int64_t>(i));
      EXPECT_EQ(keep[i], 1);
      EXPECT_EQ(pos[i], p.positions[i]);
    }
  } else {
    // Two entries or more a call, at most max_prefill_tokens probe tokens; the probe's isolated
    // positions (8 per octave) give neighbours, so the keep = 0 entries are exercised.
    for (std::size_t c = 0; c + 1 < calls.size(); ++c) {
      EXPECT_GE(calls[c + 1] - calls[c], 2) << "prefill call " << c;
      EXPECT_LE(calls[c + 1] - calls[c], judge::max_prefill_tokens) << "prefill call " << c;
    }
    EXPECT_GT(neighbours, 0u);
  }
}

void check_positions(const judge::probe_set& p, const std::map<std::string, audit::tensor>& file) {
  const std::size_t rows = rows_of(p);
  const auto& t = file.at("positions");
  const auto v = ints(t);
  if (rows == 1) {
    EXPECT_EQ(t.shape, shape({p.tokens()}));
    EXPECT_EQ(v, p.positions);
  } else {
    EXPECT_EQ(t.shape, shape({static_cast<std::int64_t>(rows), p.tokens()}));
    EXPECT_EQ(v, p.position_rows);
    EXPECT_TRUE(std::equal(p.positions.begin(), p.positions.end(), v.begin())) << "row 0 is the probe's positions";
  }
}

TEST(ProbeFile, holds_positions_x_and_the_four_plan_tensors_of_each_form_and_nothing_else) {
  const auto p = judge::make_probe(llama(), kSeed, 4);
  const auto file = as_file(p, plugin::dtype::f32);
  std::vector<std::string> names;
  for (const auto& [name, t] : file) names.push_back(name);
  EXPECT_EQ(names, (std::vector<std::string>{"decode.calls", "decode.keep", "decode.positions", "decode.token",
                                             "positions", "prefill.calls", "prefill.keep", "prefill.positions",
                                             "prefill.token", "x"}));
  EXPECT_EQ(file.at("x").shape, shape({p.tokens(), 4, 128}));
  check_positions(p, file);
}

TEST(ProbeFile, each_forms_plan_is_plan_calls_with_every_probe_token_kept_once) {
  const auto p = judge::make_probe(llama(), kSeed, 4);
  ASSERT_TRUE(p.position_rows.empty());
  const auto file = as_file(p, plugin::dtype::bf16);
  for (const auto form : {call_form::prefill, call_form::decode}) check_form(p, file, form);
}

// The probe's inputs k/128 are exact in every dtype: the file's x, widened by the reader, is p.x bit for bit.
TEST(ProbeFile, x_in_each_dtype_reads_back_as_the_probes_inputs_exactly) {
  const auto p = judge::make_probe(llama(), kSeed, 4);
  const std::pair<plugin::dtype, audit::dtype> dtypes[] = {{plugin::dtype::f32, audit::dtype::f32},
                                                          {plugin::dtype::bf16, audit::dtype::bf16},
                                                          {plugin::dtype::f16, audit::dtype::f16},
                                                          {plugin::dtype::f64, audit::dtype::f64}};
  const auto f64 = as_file(p, plugin::dtype::f64);
  for (const auto& [wire, stored] : dtypes) {
    SCOPED_TRACE(std::string(audit::dtype_name(stored)));
    const auto file = as_file(p, wire);
    const auto& x = file.at("x");
    EXPECT_EQ(x.type, stored);
    EXPECT_EQ(x.shape, shape({p.tokens(), p.heads, p.head_dim}));
    ASSERT_EQ(x.values.size(), p.x.size());
    std::size_t differ = 0;
    for (std::size_t i = 0; i < p.x.size(); ++i)
      if (std::bit_cast<std::uint64_t>(x.values[i]) != std::bit_cast<std::uint64_t>(p.x[i]) && differ++ == 0)
        ADD_FAILURE() << "x[" << i << "] reads " << x.values[i] << ", the probe has " << p.x[i];
    EXPECT_EQ(differ, 0u);
    // The plan does not depend on the dtype.
    for (const char* name : {"prefill.calls", "prefill.positions", "decode.token", "positions"})
      EXPECT_EQ(file.at(name).values, f64.at(name).values) << name;
  }
}

// The neighbour's two places (probe.hpp): before an isolated position p > 0, after an isolated 0; a set
// of hand-picked positions (make_probe's start with the dense run 0..63, so 0 is never isolated there).
TEST(ProbeFile, an_isolated_position_0_gets_its_neighbour_after_it_and_any_other_before_it) {
  judge::probe_set p;
  p.positions = {0, 2, 3, 100};
  p.heads = 1;
  p.head_dim = 2;
  p.x = {1.0 / 128, -2.0 / 128, 3.0 / 128, -4.0 / 128, 5.0 / 128, -6.0 / 128, 7.0 / 128, -8.0 / 128};
  const auto file = as_file(p, plugin::dtype::f32);
  for (const auto form : {call_form::prefill, call_form::decode}) check_form(p, file, form);
  // prefill: (0, 1), (2, 3), (99, 100); the neighbours 1 and 99 carry tokens 0 and 3.
  EXPECT_EQ(ints(file.at("prefill.calls")), (std::vector<std::int64_t>{0, 2, 4, 6}));
  EXPECT_EQ(ints(file.at("prefill.positions")), (std::vector<std::int64_t>{0, 1, 2, 3, 99, 100}));
  EXPECT_EQ(ints(file.at("prefill.token")), (std::vector<std::int64_t>{0, 0, 1, 2, 3, 3}));
  EXPECT_EQ(ints(file.at("prefill.keep")), (std::vector<std::int64_t>{1, 0, 1, 1, 0, 1}));
}

// M-RoPE: the probe the door asks (limit_probe adds an image and a video) has three rows; positions is
// [3, T] and each form's positions [3, N], every column the rows of its token (or the neighbour's text rows).
TEST(ProbeFile, mrope_positions_are_rows_by_tokens_and_each_forms_rows_follow_their_tokens) {
  const auto p = mrope_probe();
  ASSERT_EQ(rows_of(p), 3u);
  bool multimodal = false;  // some token's rows differ: a check of the rows that a copy of row 0 would fail
  for (std::size_t t = 0; t < p.positions.size(); ++t)
    multimodal = multimodal || row_of(p, 1, t) != row_of(p, 0, t) || row_of(p, 2, t) != row_of(p, 0, t);
  ASSERT_TRUE(multimodal);
  const auto file = as_file(p, plugin::dtype::f32);
  check_positions(p, file);
  for (const auto form : {call_form::prefill, call_form::decode}) check_form(p, file, form);
}

// A kernel's max_position: every position of the file (every row, every entry, neighbours included) is
// at most it, and a probe position equal to it is still asked.
TEST(ProbeFile, a_probe_limited_to_max_position_keeps_every_position_at_or_below_it) {
  const auto full = judge::make_probe(llama(), kSeed, 4);
  constexpr std::int64_t kMax = 4096;  // a probe position ("+-8 around 4096"): the limit at equality
  ASSERT_NE(std::find(full.positions.begin(), full.positions.end(), kMax), full.positions.end());
  ASSERT_NE(std::find(full.positions.begin(), full.positions.end(), kMax + 1), full.positions.end());
  plugin::kernel_limits l;
  l.max_position = kMax;
  const auto p = audit::limit_probe(full, llama(), l).set;
  const auto expected = std::count_if(full.positions.begin(), full.positions.end(), [](std::int64_t q) { return q <= kMax; });
  EXPECT_EQ(p.tokens(), expected);
  EXPECT_EQ(p.positions.back(), kMax);
  const auto file = as_file(p, plugin::dtype::f32);
  for (const char* name : {"positions", "prefill.positions", "decode.positions"})
    for (const auto q : ints(file.at(name))) EXPECT_LE(q, kMax) << name;
  check_positions(p, file);
  for (const auto form : {call_form::prefill, call_form::decode}) check_form(p, file, form);
}

// The note of positions not asked lists up to max_listed_runs runs of consecutive positions; more are summarised
// (the first runs, how many more, the last position) and the caller's JSON keeps them (issue 34: dozens listed).
TEST(ProbeFile, the_note_of_positions_not_asked_is_summarised_past_max_listed_runs) {
  std::vector<std::int64_t> six, seven;
  for (std::int64_t k = 0; k < 7; ++k) {
    if (k < 6) six.insert(six.end(), {100 * k + 10, 100 * k + 11});
    seven.insert(seven.end(), {100 * k + 10, 100 * k + 11});
  }
  const std::string all = audit::skipped_note(six, 9, "test");
  EXPECT_NE(all.find("probe positions 10..11, 110..111, 210..211, 310..311, 410..411, 510..511 (12 tokens) were not asked"),
            std::string::npos) << all;
  const std::string cut = audit::skipped_note(seven, 9, "test");
  EXPECT_NE(cut.find("probe positions 10..11, 110..111, 210..211, 310..311, 410..411 and 2 more runs up to 611 (every one in "
                     "the JSON's positions_not_asked) (14 tokens) were not asked"), std::string::npos) << cut;
  EXPECT_EQ(audit::skipped_note({}, 9, "test"), "");
}

// M-RoPE under a limit: a token goes when any row passes it (an image patch at row 0 = 64 whose height
// row is 71), and stays when its largest row equals it.
TEST(ProbeFile, an_mrope_probe_limited_to_max_position_keeps_every_row_at_or_below_it) {
  constexpr std::int64_t kMax = 70;
  const auto full = mrope_probe();
  std::int64_t expected = 0, at_limit = 0;
  for (std::size_t t = 0; t < full.positions.size(); ++t) {
    const auto top = std::max({row_of(full, 0, t), row_of(full, 1, t), row_of(full, 2, t)});
    expected += top <= kMax;
    at_limit += top == kMax && row_of(full, 0, t) < kMax;
  }
  ASSERT_GT(at_limit, 0) << "no token whose largest row (not row 0) is the limit";
  const auto p = mrope_probe(kMax);
  EXPECT_EQ(p.tokens(), expected);
  const auto file = as_file(p, plugin::dtype::bf16);
  for (const char* name : {"positions", "prefill.positions", "decode.positions"})
    for (const auto q : ints(file.at(name))) EXPECT_LE(q, kMax) << name;
  check_positions(p, file);
  for (const auto form : {call_form::prefill, call_form::decode}) check_form(p, file, form);
}

// The qk form: q is the probe's x; k, q_alt and k_alt are further draws of the seed, each different; the plans
// as the x form's; kv_heads must divide heads (a case at 8/3 and at 8/8).
TEST(ProbeFile, the_qk_form_holds_q_k_and_their_alternates_with_the_same_plans) {
  const auto p = judge::make_probe(llama(), kSeed, 8);
  const std::string bytes = audit::safetensors_bytes(probe::probe_tensors_qk(p, 2, plugin::dtype::f32), {{"ropecheck_probe", "1"}});
  const auto file = audit::parse_safetensors({reinterpret_cast<const unsigned char*>(bytes.data()), bytes.size()}, "qk.safetensors");
  std::vector<std::string> names;
  for (const auto& [name, t] : file) names.push_back(name);
  EXPECT_EQ(names, (std::vector<std::string>{"decode.calls", "decode.keep", "decode.positions", "decode.token", "k", "k_alt",
                                             "positions", "prefill.calls", "prefill.keep", "prefill.positions",
                                             "prefill.token", "q", "q_alt"}));
  EXPECT_EQ(file.at("q").shape, shape({p.tokens(), 8, 128}));
  EXPECT_EQ(file.at("k").shape, shape({p.tokens(), 2, 128}));
  EXPECT_EQ(file.at("q_alt").shape, shape({p.tokens(), 8, 128}));
  EXPECT_EQ(file.at("k_alt").shape, shape({p.tokens(), 2, 128}));
  EXPECT_EQ(file.at("q").values, p.x);
  EXPECT_NE(file.at("q_alt").values, p.x);
  EXPECT_NE(file.at("k").values, file.at("k_alt").values);
  const std::vector<double> k_first(file.at("q").values.begin(),
                                    file.at("q").values.begin() + static_cast<std::ptrdiff_t>(file.at("k").values.size()));
  EXPECT_NE(file.at("k").values, k_first) << "k is not a prefix of q's stream";
  for (const auto form : {call_form::prefill, call_form::decode}) check_form(p, file, form);
  EXPECT_THROW((void)probe::probe_tensors_qk(p, 3, plugin::dtype::f32), std::invalid_argument);
  EXPECT_NO_THROW((void)probe::probe_tensors_qk(p, 8, plugin::dtype::f32));
}

TEST(ParseDtype, the_four_names_are_the_kernel_dtypes) {
  EXPECT_EQ(probe::parse_dtype("float32"), plugin::dtype::f32);
  EXPECT_EQ(probe::parse_dtype("bfloat16"), plugin::dtype::bf16);
  EXPECT_EQ(probe::parse_dtype("float16"), plugin::dtype::f16);
  EXPECT_EQ(probe::parse_dtype("float64"), plugin::dtype::f64);
}

TEST(ParseDtype, any_other_name_is_rejected_naming_it) {
  for (const std::string bad : {"float8", "fp32", "Float32", "float32 ", "", "bf16"}) {
    try {
      (void)probe::parse_dtype(bad);
      ADD_FAILURE() << "accepted '" << bad << "'";
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find("'" + bad + "'"), std::string::npos) << e.what();
    }
  }
}

}  // namespace
