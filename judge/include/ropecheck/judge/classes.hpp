// ropecheck/judge/classes.hpp — the bug-class catalogue: every class any door reports (finding::bug_class,
// JSON "bug_class", JUnit failure type, the conformance suite's outcome::bug_classes), with what it means
// and what kind of statement it is. The one place a class is spelled: code names a class by its constant
// here (judge::classes::base_wrong), never by a string literal; a door asks the catalogue, not a prefix of
// the name, whether a finding is about the call or the convention. Covered by tests/judge/classes_test.cpp.
#pragma once

#include <span>
#include <string>
#include <string_view>

namespace ropecheck::judge {

namespace classes {
// The convention is wrong: the judge's diagnosis of a failing verdict (judge/src/pass_*.cpp).
inline constexpr const char* layout_swapped = "layout_swapped";
inline constexpr const char* base_wrong = "base_wrong";
inline constexpr const char* scaling_wrong = "scaling_wrong";
inline constexpr const char* dynamic_ntk_not_reset = "dynamic_ntk_not_reset";
inline constexpr const char* positions_offset = "positions_offset";
inline constexpr const char* positions_constant = "positions_constant";
inline constexpr const char* positions_wrong = "positions_wrong";
inline constexpr const char* positions_low_precision = "positions_low_precision";
inline constexpr const char* rotary_dim_wrong = "rotary_dim_wrong";
inline constexpr const char* attention_factor_wrong = "attention_factor_wrong";
inline constexpr const char* inv_freq_low_precision = "inv_freq_low_precision";
inline constexpr const char* angle_low_precision = "angle_low_precision";
inline constexpr const char* cos_sin_low_precision = "cos_sin_low_precision";
inline constexpr const char* fast_sincos = "fast_sincos";
inline constexpr const char* rotation_reversed = "rotation_reversed";
inline constexpr const char* heads_wrong = "heads_wrong";
inline constexpr const char* cos_sin_accumulated = "cos_sin_accumulated";
inline constexpr const char* non_finite = "non_finite";
inline constexpr const char* not_hf_convention = "not_hf_convention";
inline constexpr const char* not_ggml_convention = "not_ggml_convention";
inline constexpr const char* layer_convention_wrong = "layer_convention_wrong";
inline constexpr const char* mrope_rows_swapped = "mrope_rows_swapped";
inline constexpr const char* mrope_section_wrong = "mrope_section_wrong";
inline constexpr const char* mrope_text_positions = "mrope_text_positions";
// Position as attention sees it (judge/src/scores.cpp): q and k judged together.
inline constexpr const char* qk_crossed = "qk_crossed";
inline constexpr const char* key_positions_wrong = "key_positions_wrong";
inline constexpr const char* key_convention_wrong = "key_convention_wrong";
inline constexpr const char* score_scale_wrong = "score_scale_wrong";
// The score-matrix schemes (judge/src/bias_alibi.cpp, bias_t5.cpp): a bias judged at the score.
inline constexpr const char* alibi_slopes_wrong = "alibi_slopes_wrong";
inline constexpr const char* bias_sign_wrong = "bias_sign_wrong";
inline constexpr const char* bias_missing = "bias_missing";
inline constexpr const char* bias_scaled = "bias_scaled";
inline constexpr const char* bias_low_precision = "bias_low_precision";
inline constexpr const char* t5_buckets_wrong = "t5_buckets_wrong";
// The residual-stream tables (judge/src/table_*.cpp): a position vector added at the input.
inline constexpr const char* sinusoid_layout_wrong = "sinusoid_layout_wrong";
inline constexpr const char* sinusoid_frequencies_wrong = "sinusoid_frequencies_wrong";
inline constexpr const char* positions_past_table = "positions_past_table";
inline constexpr const char* table_low_precision = "table_low_precision";
inline constexpr const char* unexplained = "unexplained";
// Warnings on a pass (each fails under --strict, as angle_drift_fp32, or is named as another class there).
inline constexpr const char* angle_drift_fp32 = "angle_drift_fp32";
inline constexpr const char* outputs_in_place = "outputs_in_place";
// The call, not the convention: the implementation did not answer, or answered the same call differently.
inline constexpr const char* plugin_crashed = "plugin_crashed";
inline constexpr const char* plugin_timeout = "plugin_timeout";
inline constexpr const char* plugin_out_of_bounds = "plugin_out_of_bounds";
inline constexpr const char* plugin_error = "plugin_error";
inline constexpr const char* plugin_unavailable = "plugin_unavailable";
inline constexpr const char* nondeterministic = "nondeterministic";
// A property of the suite failed (the plugin door's property run; the property's own message says which).
inline constexpr const char* property_failed = "property_failed";
}  // namespace classes

enum class class_kind {
  bug,       // a wrong convention, named by the diagnosis of a failing verdict
  warning,   // a pass with a caveat (strict mode fails it)
  call,      // the implementation's call failed or is not a pure function: nothing about the convention
  property,  // a property of the suite failed
};

// The doors that can report a class (a bit each): `ropecheck audit` on a dump, `audit --plugin`, the C++
// conformance suite, the report's verdict column, `ropecheck certify`.
enum door : unsigned {
  dump_door = 1u << 0,
  plugin_door = 1u << 1,
  conformance_door = 1u << 2,
  report_door = 1u << 3,
  certify_door = 1u << 4,
  every_door = dump_door | plugin_door | conformance_door | report_door | certify_door,
};
// "dump, plugin, conformance, report, certify" (those in `doors`, in this order).
[[nodiscard]] std::string door_names(unsigned doors);

struct class_info {
  std::string_view id;
  class_kind kind;
  std::string_view meaning;     // one line
  std::string_view decided_by;  // the source file whose pass (or door) names it, from the repository's root
  unsigned doors;               // bits of `door`
  // The test that shows it red: "Suite.Name" of a GoogleTest whose body names the class, or, for a class
  // shown by an example plugin (tools/audit/plugin_audit.cmake's expected first class), the test that runs
  // every example plugin. A new class is one row here, one pass (or a branch in one), one test.
  std::string_view red_test;
};

// Every class, in the order above.
[[nodiscard]] std::span<const class_info> catalogue();
// The entry of `id`, or nullptr for a name that is not a class.
[[nodiscard]] const class_info* find_class(std::string_view id);
// id is a class of kind `call` (a door's finding about the call itself, shown before the verdict).
[[nodiscard]] bool is_call_failure(std::string_view id);

// What a CI reads from one verdict: "pass", "drift" (a pass whose warnings include angle_drift_fp32), the
// first finding's class on a failure, or "fail" (a failure no class explains). The report's verdict
// column and the three doors' agreement test read it from here.
[[nodiscard]] std::string outcome_class(bool pass, std::span<const std::string> classes_in_order);

}  // namespace ropecheck::judge
