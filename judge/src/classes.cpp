// judge/src/classes.cpp — see ropecheck/judge/classes.hpp.
#include "ropecheck/judge/classes.hpp"

#include <algorithm>
#include <array>

namespace ropecheck::judge {

namespace {

using k = class_kind;
constexpr unsigned every_door = door::every_door, dump_door = door::dump_door, plugin_door = door::plugin_door,
                   conformance_door = door::conformance_door, certify_door = door::certify_door;
namespace c = classes;

constexpr std::array kCatalogue{
    class_info{c::layout_swapped, k::bug, "the pairs are rotated in the other layout (half-split vs interleaved)",
               "judge/src/pass_pairing.cpp", every_door, "Diagnose.LayoutSwapped"},
    class_info{c::base_wrong, k::bug, "every band fits one base other than the claimed rope_theta",
               "judge/src/pass_frequencies.cpp", every_door, "Diagnose.BaseWrong"},
    class_info{c::scaling_wrong, k::bug, "the frequencies follow another scaling rule, factor or none",
               "judge/src/pass_frequencies.cpp", every_door, "Diagnose.ScalingMissing"},
    class_info{c::dynamic_ntk_not_reset, k::bug, "dynamic NTK's base kept from a longer sequence",
               "judge/src/pass_frequencies.cpp", every_door, "Diagnose.DynamicNtkNotReset"},
    class_info{c::positions_offset, k::bug, "every token rotated at its position plus a constant k",
               "judge/src/pass_positions.cpp", every_door, "Diagnose.PositionsOffset"},
    class_info{c::positions_constant, k::bug, "every token rotated at one position",
               "judge/src/pass_positions.cpp", every_door, "Diagnose.PositionsConstant"},
    class_info{c::positions_wrong, k::bug, "some tokens rotated at other positions (e.g. decode restarted at 0)",
               "judge/src/pass_positions.cpp", every_door, "Diagnose.SomeTokensAtPositionZero"},
    class_info{c::positions_low_precision, k::bug, "positions rounded to bf16/fp16 before the angle",
               "judge/src/pass_positions.cpp", every_door, "Diagnose.PositionsInBf16"},
    class_info{c::rotary_dim_wrong, k::bug, "the frequencies or the rotated coordinates span another rotary dim",
               "judge/src/pass_frequencies.cpp", every_door, "Diagnose.RotaryDimThetaOverHeadDim"},
    class_info{c::attention_factor_wrong, k::bug, "the outputs' magnitude is off: an attention factor missing, doubled or other",
               "judge/src/pass_magnitude.cpp", every_door, "Diagnose.AttentionFactorMissing"},
    class_info{c::inv_freq_low_precision, k::bug, "inv_freq held in bf16/fp16",
               "judge/src/pass_frequencies.cpp", every_door, "Diagnose.InvFreqInBf16"},
    class_info{c::angle_low_precision, k::bug, "position, inv_freq and their product each rounded to bf16/fp16",
               "judge/src/pass_angle_precision.cpp", every_door, "AnglePrecision.EagerBf16OnTheProbeSet"},
    class_info{c::cos_sin_low_precision, k::bug, "cos/sin rounded to bf16/fp16 (a low-precision cache)",
               "judge/src/pass_cos_sin.cpp", every_door, "Diagnose.CosSinCacheInBf16"},
    class_info{c::fast_sincos, k::bug, "an approximate sin/cos whose error does not grow with position",
               "judge/src/pass_cos_sin.cpp", every_door, "Diagnose.FastSinCos"},
    class_info{c::rotation_reversed, k::bug, "every token rotated at -p: sin's sign flipped, the conjugate rotation",
               "judge/src/direction.cpp", every_door, "Diagnose.ReversedRotationIsNamedWhenTheSubsetMissesTheLargestPosition"},
    class_info{c::heads_wrong, k::bug, "some heads are not rotated as the others: copied, unwritten, another head's or rotated wrong",
               "judge/src/pass_heads.cpp", every_door, "Heads.CopiedHeadsAreNamedAloneWithTheRotatedHeadsRight"},
    class_info{c::cos_sin_accumulated, k::bug, "a cos/sin table grown by recurrence: the error grows with the distance from its anchors",
               "judge/src/pass_accumulated.cpp", every_door, "Accumulated.Fp32TableAnchoredEveryPIsNamedWithItsPeriod"},
    class_info{c::non_finite, k::bug, "NaN or infinity in the outputs",
               "judge/src/judging.cpp", every_door, "Diagnose.NonFiniteThreadsAndSubsets"},
    class_info{c::not_hf_convention, k::bug, "exact angles where HF's fp32 angles were asked for",
               "judge/src/judging.cpp", dump_door | plugin_door | conformance_door, "Diagnose.ExactAnglesAreNotHfsConvention"},
    class_info{c::not_ggml_convention, k::bug, "exact angles where ggml's fp32 angles were asked for",
               "judge/src/judging.cpp", dump_door | plugin_door | conformance_door, "Diagnose.GgmlReferenceJudgesAgainstGgmlsChain"},
    class_info{c::layer_convention_wrong, k::bug, "the outputs pass as another layer type's RoPE of the same config",
               "judge/src/layer_hypothesis.cpp", dump_door, "LayerHypothesis.AnotherLayerTypesRopeIsNamedFirst"},
    class_info{c::mrope_rows_swapped, k::bug, "M-RoPE: another permutation of the position rows",
               "judge/src/pass_mrope.cpp", dump_door | plugin_door, "PassMrope.RowsSwappedAreNamed"},
    class_info{c::mrope_section_wrong, k::bug, "M-RoPE: another band-to-row split (sections, contiguous vs interleaved)",
               "judge/src/pass_mrope.cpp", dump_door | plugin_door, "PassMrope.AnotherSectionSplitIsNamed"},
    class_info{c::mrope_text_positions, k::bug, "M-RoPE: multimodal tokens rotated with one row for every band",
               "judge/src/pass_mrope.cpp", dump_door | plugin_door, "PassMrope.TextPositionsForImageTokensAreNamed"},
    class_info{c::qk_crossed, k::bug, "q's outputs come from k's inputs or the reverse (q and k crossed in a fused kernel)",
               "judge/src/scores.cpp", dump_door | plugin_door, "Scores.CrossedHalvesAreNamedFromTheOutputsAndFromTheProbe"},
    class_info{c::key_positions_wrong, k::bug, "the queries pass, the keys act at other positions (the scores see m - n wrong)",
               "judge/src/scores.cpp", dump_door | plugin_door, "Scores.KeysAtOtherPositionsAreKeyPositionsWrong"},
    class_info{c::key_convention_wrong, k::bug, "the queries pass, the keys are rotated by another rule (layout, base, scaling, heads)",
               "judge/src/scores.cpp", dump_door | plugin_door, "Scores.KeysRotatedByAnotherRuleAreKeyConventionWrong"},
    class_info{c::score_scale_wrong, k::bug, "the scores are scaled by another factor than the claim's (softmax scale, a temperature on the logits)",
               "judge/src/readout.cpp", dump_door, "Readout.AnotherSoftmaxScaleIsScoreScaleWrong"},
    class_info{c::alibi_slopes_wrong, k::bug, "ALiBi: the slopes follow another rule (one geometric sequence, exponent off by one, another order, bias_max, rank or head count)",
               "judge/src/bias_alibi.cpp", dump_door, "AlibiBugs.UniformSlopesForTwelveHeads"},
    class_info{c::bias_sign_wrong, k::bug, "the score bias has the other sign: it grows with distance",
               "judge/src/bias_alibi.cpp", dump_door, "AlibiBugs.SignFlipped"},
    class_info{c::bias_missing, k::bug, "no bias on the scores where the claim has one",
               "judge/src/bias_alibi.cpp", dump_door, "AlibiBugs.BiasMissing"},
    class_info{c::bias_scaled, k::bug, "the bias is the claim's times one factor (a 1/sqrt(head_dim) added or missing)",
               "judge/src/bias_alibi.cpp", dump_door, "AlibiBugs.BloomBiasScaledByInverseSqrtHeadDim"},
    class_info{c::bias_low_precision, k::bug, "the bias is held in bf16/fp16 where the outputs' dtype keeps it finer",
               "judge/src/bias_alibi.cpp", dump_door, "AlibiBugs.Bf16BiasUnderFp32OutputsAtLongDistance"},
    class_info{c::t5_buckets_wrong, k::bug, "T5: the offsets share scores by another bucket rule (direction, sign, num_buckets, max_distance, rounding)",
               "judge/src/bias_t5.cpp", dump_door | plugin_door, "BiasT5.CausalBucketsUnderABidirectionalClaimAreNamed"},
    class_info{c::sinusoid_layout_wrong, k::bug, "a sinusoid table in another layout (interleaved vs concatenated halves, sin and cos swapped)",
               "judge/src/table_sinusoid.cpp", dump_door, "Table.ConcatenatedUnderAnInterleavedClaimIsLayoutWrong"},
    class_info{c::sinusoid_frequencies_wrong, k::bug, "a sinusoid table with other frequencies (fairseq's d/2 - 1 denominator for the paper's d/2, another base)",
               "judge/src/table_sinusoid.cpp", dump_door, "Table.FairseqDenominatorUnderAPaperClaimIsNamed"},
    class_info{c::positions_past_table, k::bug, "rows answered for positions past the table's end (clamped, wrapped, read outside it) without an error",
               "judge/src/table_judge.cpp", dump_door, "Table.ALearnedTableClampedPastItsEndIsNamed"},
    class_info{c::table_low_precision, k::bug, "a learned position table held in bf16/fp16 where the rows' dtype keeps it finer",
               "judge/src/table_learned.cpp", dump_door, "Table.ALearnedTableHeldInBf16IsNamed"},
    class_info{c::unexplained, k::bug, "fails, and no hypothesis explains it (the sentence says where the residual sits)",
               "judge/src/pass_drift.cpp", every_door, "Diagnose.ErrorGrowingWithPositionIsNotFastSinCos"},
    class_info{c::angle_drift_fp32, k::warning, "fp32 angle drift beyond the exact-angle allowance (fails under --strict)",
               "judge/src/pass_drift.cpp", every_door, "Diagnose.StrictModeFailsFp32Drift"},
    class_info{c::outputs_in_place, k::warning, "half-split outputs claimed, the input's order found (fails under --strict)",
               "judge/src/output_order.cpp", dump_door | plugin_door | conformance_door, "OutputOrder.OutputsLeftInTheInputsOrderPassWithAWarningAndFailUnderStrict"},
    class_info{c::plugin_crashed, k::call, "the call crashed (a signal in the isolated child)",
               "tools/audit/plugin_probe.cpp", plugin_door | certify_door, "PluginDoorCases.every_example_plugin_gets_its_verdict"},
    class_info{c::plugin_timeout, k::call, "the call did not return within the time limit",
               "tools/audit/plugin_probe.cpp", plugin_door | certify_door, "PluginDoorCases.every_example_plugin_gets_its_verdict"},
    class_info{c::plugin_out_of_bounds, k::call, "the call wrote past the end of its output buffer",
               "tools/audit/plugin_probe.cpp", plugin_door | certify_door, "PluginDoorCases.every_example_plugin_gets_its_verdict"},
    class_info{c::plugin_error, k::call, "the call returned an error code",
               "tools/audit/plugin_probe.cpp", plugin_door | certify_door, "DoorFindings.EachFailedCallIsNamedByItsClassAndSaysWhichCall"},
    class_info{c::plugin_unavailable, k::call, "the door is closed after an earlier timeout or too many crashes: the call was not made",
               "tools/audit/plugin_probe.cpp", plugin_door | certify_door, "DoorFindings.EachFailedCallIsNamedByItsClassAndSaysWhichCall"},
    class_info{c::nondeterministic, k::call, "the same call twice gave different outputs (hidden state or a race)",
               "judge/src/repeat_calls.cpp", plugin_door | conformance_door | certify_door, "RepeatCalls.EqualBitsPassAndOneDifferenceIsNamed"},
    class_info{c::property_failed, k::property, "a property of the suite does not hold",
               "tools/audit/plugin_audit.cpp", plugin_door, "DoorFindings.AFailingPropertyIsPropertyFailedNamingTheProperty"},
};

}  // namespace

std::string door_names(unsigned doors) {
  static constexpr std::pair<unsigned, const char*> kNames[] = {
      {door::dump_door, "dump"}, {door::plugin_door, "plugin"}, {door::conformance_door, "conformance"},
      {door::report_door, "report"}, {door::certify_door, "certify"}};
  std::string s;
  for (const auto& [bit, name] : kNames)
    if (doors & bit) s += (s.empty() ? "" : ", ") + std::string(name);
  return s;
}

std::span<const class_info> catalogue() { return kCatalogue; }

const class_info* find_class(std::string_view id) {
  const auto it = std::find_if(kCatalogue.begin(), kCatalogue.end(), [&](const class_info& i) { return i.id == id; });
  return it == kCatalogue.end() ? nullptr : &*it;
}

bool is_call_failure(std::string_view id) {
  const class_info* i = find_class(id);
  return i != nullptr && i->kind == class_kind::call;
}

std::string outcome_class(bool pass, std::span<const std::string> classes_in_order) {
  if (!pass) return classes_in_order.empty() ? std::string("fail") : classes_in_order.front();
  const bool drift = std::find(classes_in_order.begin(), classes_in_order.end(), classes::angle_drift_fp32) !=
                     classes_in_order.end();
  return drift ? "drift" : "pass";
}

}  // namespace ropecheck::judge
