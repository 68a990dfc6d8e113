// The conformance suite's checks as results (ropecheck/conformance/run.hpp), in the direction a
// GoogleTest instantiation cannot show: buggy kernels fail, with the property and the bug class named;
// and the adapter's options (no negative positions, an inverse of its own, a position limit), the
// environment's overrides and bad input, each at the point where the code branches.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <stdexcept>
#include <string>

#include "own_kernels.hpp"
#include "package/consumer/rope_kernel.hpp"
#include "ropecheck/conformance/run.hpp"

namespace ropecheck::conformance::testing {
namespace {

using consumer::bug;

rope_config claimed_500k() {
  rope_config c;
  c.base = 500000.0;
  c.max_position_embeddings = 8192;
  return c;
}

template <bug B, class T = float>
struct consumer_kernel {
  using storage = T;
  using compute = float;
  static rope_config convention() { return claimed_500k(); }
  static void apply(std::span<const T> x, std::span<T> y, const call& c) {
    consumer::rope<T, float, B>(x.data(), y.data(), c.start(), c.tokens, c.heads, c.head_dim, 500000.0);
  }
};

bool has(const outcome& o, const std::string& cls) {
  return std::find(o.bug_classes.begin(), o.bug_classes.end(), cls) != o.bug_classes.end();
}
bool first_is(const outcome& o, const std::string& cls) { return !o.bug_classes.empty() && o.bug_classes.front() == cls; }

TEST(ConformanceVerdict, the_consumer_kernel_without_bug_passes_the_judge_in_both_call_forms) {
  const kernel k = bind<consumer_kernel<bug::none>>();
  for (const auto form : {call_form::prefill, call_form::decode}) {
    const outcome o = judge_probe(k, form);
    EXPECT_NE(o.status, status::failed) << o.message;
  }
  EXPECT_NE(check_property(k, "rotation_matches_reference").status, status::failed);
}

TEST(ConformanceVerdict, positions_in_bf16_fail_the_judge_and_the_reference_property) {
  const kernel k = bind<consumer_kernel<bug::bf16_positions>>();
  const outcome j = judge_probe(k, call_form::prefill, "suite.test");
  EXPECT_EQ(j.status, status::failed);
  EXPECT_TRUE(first_is(j, "positions_low_precision")) << j.message;
  EXPECT_NE(j.message.find("rerun: ROPECHECK_SEED="), std::string::npos) << j.message;
  EXPECT_NE(j.message.find("--gtest_filter='suite.test'"), std::string::npos) << j.message;
  const outcome p = check_property(k, "rotation_matches_reference", "suite.rotation_matches_reference");
  EXPECT_EQ(p.status, status::failed);
  EXPECT_NE(p.message.find("shrunk counterexample"), std::string::npos) << p.message;
  EXPECT_NE(p.message.find("replay: RC_PARAMS=\""), std::string::npos) << p.message;
  EXPECT_TRUE(has(p, "positions_low_precision")) << p.message;
}

TEST(ConformanceVerdict, a_fast_sin_cos_is_named) {
  const outcome j = judge_probe(bind<consumer_kernel<bug::fast_sincos>>(), call_form::decode);
  EXPECT_EQ(j.status, status::failed);
  EXPECT_TRUE(first_is(j, "fast_sincos")) << j.message;
}

TEST(ConformanceVerdict, a_hard_coded_base_is_named_with_both_bases) {
  const outcome j = judge_probe(bind<consumer_kernel<bug::hard_coded_base>>(), call_form::prefill);
  EXPECT_EQ(j.status, status::failed);
  EXPECT_TRUE(first_is(j, "base_wrong")) << j.message;
  EXPECT_NE(j.message.find("10000"), std::string::npos) << j.message;
}

// The decode step one position ahead is invisible to prefill calls and to a suite that only prefills.
TEST(ConformanceVerdict, a_decode_step_one_position_ahead_passes_prefill_and_fails_decode) {
  const kernel k = bind<consumer_kernel<bug::decode_ahead>>();
  EXPECT_NE(judge_probe(k, call_form::prefill).status, status::failed);
  const outcome d = judge_probe(k, call_form::decode);
  EXPECT_EQ(d.status, status::failed);
  EXPECT_TRUE(first_is(d, "positions_offset")) << d.message;
  const outcome p = check_property(k, "rotation_matches_reference");
  EXPECT_EQ(p.status, status::failed);
  EXPECT_TRUE(has(p, "positions_offset")) << p.message;
}

// A kernel with a cos/sin cache: rows 0..limit only, no negative positions, no inverse flag.
template <bool Inverse, std::int64_t Limit, bool Declare>
struct cached_kernel {
  using storage = float;
  static rope_config convention() { return llama3_8b(); }
  static conformance::options options() {
    conformance::options o;
    if (Declare) {
      o.negative_positions = false;
      o.max_position = Limit;
      o.inverse = Inverse;
    }
    return o;
  }
  static void apply(std::span<const float> x, std::span<float> y, const call& c) {
    for (int t = 0; t < c.tokens; ++t)
      if (c.positions[static_cast<std::size_t>(t)] < 0 || c.positions[static_cast<std::size_t>(t)] > Limit)
        throw std::out_of_range("position " + std::to_string(c.positions[static_cast<std::size_t>(t)]) +
                                " outside the cos/sin cache");
    if (c.inverse && !Inverse) throw std::logic_error("asked for an inverse it does not have");
    own_kernel<float, float, hf_angle<float>, llama3_8b>::apply(x, y, c);
  }
};

TEST(ConformanceOptions, a_cache_limited_kernel_passes_within_its_declared_range) {
  using k_t = cached_kernel<true, 100000, true>;
  const kernel k = bind<k_t>();
  EXPECT_NE(judge_probe(k, call_form::prefill).status, status::failed);
  for (const auto& p : property_names()) {
    const outcome o = check_property(k, p);
    EXPECT_NE(o.status, status::failed) << p << ": " << o.message;
    EXPECT_NE(o.status, status::skipped) << p;
  }
}

TEST(ConformanceOptions, the_same_kernel_undeclared_fails_where_it_throws) {
  const kernel k = bind<cached_kernel<true, 100000, false>>();
  const outcome j = judge_probe(k, call_form::prefill);
  EXPECT_EQ(j.status, status::failed);
  EXPECT_NE(j.message.find("outside the cos/sin cache"), std::string::npos) << j.message;
  EXPECT_EQ(check_property(k, "rotations_compose_additively").status, status::failed);
}

// max_position is inclusive: a limit exactly at the probe's last position keeps it, one below drops it.
TEST(ConformanceOptions, the_position_limit_is_inclusive) {
  using at_t = cached_kernel<true, 16384, true>;
  const outcome at = judge_probe(bind<at_t>(), call_form::decode);
  EXPECT_NE(at.status, status::failed) << at.message;
  EXPECT_NE(at.message.find("..16384"), std::string::npos) << at.message;  // 2 x max_position_embeddings 8192
  using below_t = cached_kernel<true, 16383, true>;
  const outcome below = judge_probe(bind<below_t>(), call_form::decode);
  EXPECT_NE(below.status, status::failed) << below.message;
  EXPECT_EQ(below.message.find("..16384"), std::string::npos) << below.message;
}

TEST(ConformanceOptions, without_inverse_or_negative_positions_the_inverse_property_is_skipped) {
  const kernel k = bind<cached_kernel<false, 100000, true>>();
  const outcome o = check_property(k, "inverse_rotation_undoes_rotation");
  EXPECT_EQ(o.status, status::skipped);
  EXPECT_NE(o.message.find("options().inverse"), std::string::npos) << o.message;
  EXPECT_NE(check_property(k, "relative_offset_identity_holds").status, status::failed);
}

// A kernel without an inverse flag (the consumer's) gets R(p)^T as apply at -p.
TEST(ConformanceOptions, without_an_inverse_flag_the_inverse_is_asked_as_the_negative_position) {
  const outcome o = check_property(bind<consumer_kernel<bug::none>>(), "inverse_rotation_undoes_rotation");
  EXPECT_NE(o.status, status::failed) << o.message;
  EXPECT_NE(o.status, status::skipped) << o.message;
}

struct flaky_kernel {
  using storage = float;
  static rope_config convention() { return llama3_8b(); }
  static void apply(std::span<const float> x, std::span<float> y, const call& c) {
    static int calls = 0;
    own_kernel<float, float, hf_angle<float>, llama3_8b>::apply(x, y, c);
    if (++calls == 7) y.back() = std::nextafter(y.back(), 1.0f);  // hidden state: one call of the first pass differs
  }
};

TEST(ConformanceVerdict, outputs_that_change_between_identical_calls_are_named) {
  const outcome o = judge_probe(bind<flaky_kernel>(), call_form::prefill);
  EXPECT_EQ(o.status, status::failed);
  EXPECT_TRUE(first_is(o, "nondeterministic")) << o.message;
  EXPECT_NE(o.message.find("1 of"), std::string::npos) << o.message;
}

struct scoped_env {
  scoped_env(const char* n, const char* v) : name(n) { ::setenv(n, v, 1); }
  ~scoped_env() { ::unsetenv(name); }
  const char* name;
};

TEST(ConformanceEnvironment, an_unknown_reference_is_an_error_naming_it) {
  scoped_env e("ROPECHECK_REFERENCE", "torch");
  const outcome o = judge_probe(bind<consumer_kernel<bug::none>>(), call_form::prefill);
  EXPECT_EQ(o.status, status::failed);
  EXPECT_NE(o.message.find("ROPECHECK_REFERENCE=torch"), std::string::npos) << o.message;
  EXPECT_NE(o.message.find("exact, hf or ggml"), std::string::npos) << o.message;
}

TEST(ConformanceEnvironment, the_reference_can_be_chosen_without_rebuilding) {
  scoped_env e("ROPECHECK_REFERENCE", "ggml");
  const outcome o = judge_probe(bind<own_kernel<float, float, ggml_angle, llama3_8b>>(), call_form::prefill);
  EXPECT_EQ(o.status, status::passed) << o.message;
  EXPECT_NE(o.message.find("against the ggml reference"), std::string::npos) << o.message;
}

TEST(ConformanceEnvironment, strict_must_be_0_or_1) {
  scoped_env e("ROPECHECK_STRICT", "yes");
  const outcome o = check_property(bind<consumer_kernel<bug::none>>(), "rotation_preserves_norms");
  EXPECT_EQ(o.status, status::failed);
  EXPECT_NE(o.message.find("ROPECHECK_STRICT=yes"), std::string::npos) << o.message;
}

struct throwing_convention {
  using storage = float;
  static rope_config convention() { return hf_config("/nonexistent/config.json"); }
  static void apply(std::span<const float>, std::span<float>, const call&) {}
};

TEST(ConformanceInput, a_convention_that_cannot_be_read_fails_with_the_file_named) {
  const outcome o = judge_probe(bind<throwing_convention>(), call_form::prefill);
  EXPECT_EQ(o.status, status::failed);
  EXPECT_NE(o.message.find("/nonexistent/config.json"), std::string::npos) << o.message;
}

TEST(ConformanceInput, presets_and_configs_read_as_the_command_line_reads_them) {
  EXPECT_EQ(preset("llama3-8b"), llama3_8b());
  try {
    (void)preset("llama-9");
    ADD_FAILURE() << "no exception";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("llama3-8b"), std::string::npos) << e.what();  // the known names
  }
  const rope_config c = hf_config(ROPECHECK_TEST_DATA "/configs/llama3_1_8b.json");
  EXPECT_EQ(c.base, 500000.0);
  EXPECT_EQ(c.scaling, scaling_kind::llama3);
}

TEST(ConformanceInput, an_unknown_property_lists_the_known_ones) {
  const outcome o = check_property(bind<consumer_kernel<bug::none>>(), "rotation_is_fast");
  EXPECT_EQ(o.status, status::failed);
  EXPECT_NE(o.message.find("rotation_matches_reference"), std::string::npos) << o.message;
}

}  // namespace
}  // namespace ropecheck::conformance::testing
