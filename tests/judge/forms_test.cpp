// tests/judge/forms_test.cpp — the two call forms' verdicts as one list (ropecheck/judge/forms.hpp): a
// failing form's findings before a passing form's whatever the order they are given in, each sentence
// prefixed with its form's phrase, a finding both forms give (same class and sentence) listed once as
// "both", and the merged verdict passing only when every form passed. Expectations are spelled from the
// header's definitions; the phrases are taken from call_form_phrase (probe.hpp), which is their one spelling.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "ropecheck/judge/classes.hpp"
#include "ropecheck/judge/forms.hpp"

namespace ropecheck::judge_test {
namespace {

using judge::call_form;
using judge::finding;
using judge::form_outcome;
using judge::merge_forms;

std::string in_form(call_form f, const std::string& sentence) {
  return std::string(judge::call_form_phrase(f)) + ": " + sentence;
}

finding make(const char* bug_class, std::string sentence, double confidence = 0.5) {
  return finding{bug_class, std::move(sentence), confidence};
}

TEST(MergeForms, a_failing_forms_findings_come_before_a_passing_forms_whatever_the_order_given) {
  const form_outcome prefill_passes{call_form::prefill, true, {make(judge::classes::angle_drift_fp32, "drift warning")}};
  const form_outcome decode_fails{call_form::decode, false,
                                  {make(judge::classes::positions_offset, "one ahead"), make(judge::classes::base_wrong, "base")}};
  for (const auto& given : {std::vector<form_outcome>{prefill_passes, decode_fails},
                            std::vector<form_outcome>{decode_fails, prefill_passes}}) {
    const auto m = merge_forms(given);
    ASSERT_EQ(m.findings.size(), 3u);
    ASSERT_EQ(m.forms.size(), m.findings.size()) << "forms is parallel to findings";
    // The failing form's findings in their own order, then the passing form's warning.
    EXPECT_EQ(m.findings[0].bug_class, judge::classes::positions_offset);
    EXPECT_EQ(m.findings[0].sentence, in_form(call_form::decode, "one ahead"));
    EXPECT_EQ(m.findings[1].bug_class, judge::classes::base_wrong);
    EXPECT_EQ(m.findings[1].sentence, in_form(call_form::decode, "base"));
    EXPECT_EQ(m.findings[2].bug_class, judge::classes::angle_drift_fp32);
    EXPECT_EQ(m.findings[2].sentence, in_form(call_form::prefill, "drift warning"));
    EXPECT_EQ(m.forms, (std::vector<std::string>{"decode", "decode", "prefill"}));
    EXPECT_FALSE(m.passed);
  }
}

// Among failing forms (and among passing ones) the order is that of `forms`.
TEST(MergeForms, two_failing_forms_are_listed_in_the_order_given) {
  const form_outcome p{call_form::prefill, false, {make(judge::classes::base_wrong, "p")}};
  const form_outcome d{call_form::decode, false, {make(judge::classes::positions_offset, "d")}};
  const auto pd = merge_forms({p, d});
  ASSERT_EQ(pd.forms, (std::vector<std::string>{"prefill", "decode"}));
  const auto dp = merge_forms({d, p});
  ASSERT_EQ(dp.forms, (std::vector<std::string>{"decode", "prefill"}));
  EXPECT_EQ(dp.findings[0].sentence, in_form(call_form::decode, "d"));
  EXPECT_EQ(dp.findings[1].sentence, in_form(call_form::prefill, "p"));
}

TEST(MergeForms, each_sentence_is_prefixed_with_its_forms_phrase_and_keeps_class_and_confidence) {
  const auto m = merge_forms({{call_form::prefill, false, {make(judge::classes::layout_swapped, "pairs swapped", 0.875)}},
                              {call_form::decode, false, {make(judge::classes::fast_sincos, "fast sin", 0.25)}}});
  ASSERT_EQ(m.findings.size(), 2u);
  EXPECT_EQ(m.findings[0].sentence, "prefill calls (runs of consecutive positions, 2 to 64 tokens a call): pairs swapped");
  EXPECT_EQ(m.findings[1].sentence, "decode calls (one token a call): fast sin");
  EXPECT_EQ(m.findings[0].bug_class, judge::classes::layout_swapped);
  EXPECT_EQ(m.findings[0].confidence, 0.875);
  EXPECT_EQ(m.findings[1].confidence, 0.25);
}

TEST(MergeForms, a_finding_both_forms_give_is_listed_once_as_both_without_a_forms_phrase) {
  const finding same = make(judge::classes::base_wrong, "base is 10000 not 500000", 0.9);
  const auto m = merge_forms({{call_form::prefill, false, {same}}, {call_form::decode, false, {same}}});
  ASSERT_EQ(m.findings.size(), 1u);
  EXPECT_EQ(m.findings[0].bug_class, judge::classes::base_wrong);
  EXPECT_EQ(m.findings[0].sentence, "base is 10000 not 500000 (both forms)");
  EXPECT_EQ(m.findings[0].confidence, 0.9);
  EXPECT_EQ(m.forms, (std::vector<std::string>{"both"}));
}

// "Most important first": a finding a failing and a passing form both give stands where the failing
// form lists it, before the passing form's own findings.
TEST(MergeForms, a_finding_both_forms_give_stands_where_the_failing_form_lists_it) {
  const finding shared = make(judge::classes::angle_drift_fp32, "fp32 drift");
  const form_outcome passing{call_form::prefill, true, {make(judge::classes::outputs_in_place, "in place"), shared}};
  const form_outcome failing{call_form::decode, false, {make(judge::classes::positions_offset, "one ahead"), shared}};
  const auto m = merge_forms({passing, failing});
  ASSERT_EQ(m.findings.size(), 3u);
  EXPECT_EQ(m.findings[0].sentence, in_form(call_form::decode, "one ahead"));
  EXPECT_EQ(m.findings[1].sentence, "fp32 drift (both forms)");
  EXPECT_EQ(m.findings[2].sentence, in_form(call_form::prefill, "in place"));
  EXPECT_EQ(m.forms, (std::vector<std::string>{"decode", "both", "prefill"}));
}

// Both halves of the key: the same class with another sentence, and the same sentence under another
// class, are two findings, each in its own form.
TEST(MergeForms, the_same_class_with_another_sentence_is_not_merged) {
  const auto m = merge_forms({{call_form::prefill, false, {make(judge::classes::positions_offset, "offset +1")}},
                              {call_form::decode, false, {make(judge::classes::positions_offset, "offset +2")}}});
  ASSERT_EQ(m.findings.size(), 2u);
  EXPECT_EQ(m.findings[0].sentence, in_form(call_form::prefill, "offset +1"));
  EXPECT_EQ(m.findings[1].sentence, in_form(call_form::decode, "offset +2"));
  EXPECT_EQ(m.forms, (std::vector<std::string>{"prefill", "decode"}));

  const auto c = merge_forms({{call_form::prefill, false, {make(judge::classes::base_wrong, "same words")}},
                              {call_form::decode, false, {make(judge::classes::scaling_wrong, "same words")}}});
  ASSERT_EQ(c.findings.size(), 2u);
  EXPECT_EQ(c.forms, (std::vector<std::string>{"prefill", "decode"}));
  EXPECT_EQ(c.findings[1].sentence, in_form(call_form::decode, "same words"));
}

// "Two forms give": a finding repeated inside one form is not a both-forms finding.
TEST(MergeForms, a_finding_one_form_gives_twice_is_not_called_both_forms) {
  const finding f = make(judge::classes::nondeterministic, "differs");
  const auto m = merge_forms({{call_form::prefill, false, {f, f}}, {call_form::decode, true, {}}});
  ASSERT_EQ(m.findings.size(), 2u);
  EXPECT_EQ(m.forms, (std::vector<std::string>{"prefill", "prefill"}));
  EXPECT_EQ(m.findings[0].sentence, in_form(call_form::prefill, "differs"));
}

TEST(MergeForms, passed_is_every_form_passed) {
  const form_outcome pass_p{call_form::prefill, true, {}}, pass_d{call_form::decode, true, {}};
  const form_outcome fail_p{call_form::prefill, false, {}}, fail_d{call_form::decode, false, {}};
  EXPECT_TRUE(merge_forms({pass_p, pass_d}).passed);
  EXPECT_FALSE(merge_forms({fail_p, pass_d}).passed);
  EXPECT_FALSE(merge_forms({pass_p, fail_d}).passed);
  EXPECT_FALSE(merge_forms({fail_p, fail_d}).passed);
  EXPECT_TRUE(merge_forms({pass_d}).passed);
  EXPECT_FALSE(merge_forms({fail_d}).passed);
  // A passing form's findings are warnings: listed, and the verdict still passes.
  const auto w = merge_forms({{call_form::prefill, true, {make(judge::classes::angle_drift_fp32, "w")}}, pass_d});
  EXPECT_TRUE(w.passed);
  ASSERT_EQ(w.findings.size(), 1u);
  EXPECT_EQ(w.forms, (std::vector<std::string>{"prefill"}));
}

// No forms: nothing listed, and no pass (nothing was judged; a door with no outputs also says so itself:
// tools/audit/probe_outputs.cpp rejects an outputs file without any y).
TEST(MergeForms, no_forms_give_no_findings_and_do_not_pass) {
  const auto m = merge_forms({});
  EXPECT_TRUE(m.findings.empty());
  EXPECT_TRUE(m.forms.empty());
  EXPECT_FALSE(m.passed);  // nothing judged is not a pass
}

}  // namespace
}  // namespace ropecheck::judge_test
