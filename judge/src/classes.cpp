// judge/src/classes.cpp — see ropecheck/judge/classes.hpp.
#include "ropecheck/judge/classes.hpp"

#include <algorithm>
#include <array>

namespace ropecheck::judge {

namespace {

using k = class_kind;
namespace c = classes;

constexpr std::array kCatalogue{
    class_info{c::layout_swapped, k::bug, "the pairs are rotated in the other layout (half-split vs interleaved)"},
    class_info{c::base_wrong, k::bug, "every band fits one base other than the claimed rope_theta"},
    class_info{c::scaling_wrong, k::bug, "the frequencies follow another scaling rule, factor or none"},
    class_info{c::dynamic_ntk_not_reset, k::bug, "dynamic NTK's base kept from a longer sequence"},
    class_info{c::positions_offset, k::bug, "every token rotated at its position plus a constant k"},
    class_info{c::positions_constant, k::bug, "every token rotated at one position"},
    class_info{c::positions_wrong, k::bug, "some tokens rotated at other positions (e.g. decode restarted at 0)"},
    class_info{c::positions_low_precision, k::bug, "positions rounded to bf16/fp16 before the angle"},
    class_info{c::rotary_dim_wrong, k::bug, "the frequencies or the rotated coordinates span another rotary dim"},
    class_info{c::attention_factor_wrong, k::bug, "the outputs' magnitude is off: an attention factor missing, doubled or other"},
    class_info{c::inv_freq_low_precision, k::bug, "inv_freq held in bf16/fp16"},
    class_info{c::angle_low_precision, k::bug, "position, inv_freq and their product each rounded to bf16/fp16"},
    class_info{c::cos_sin_low_precision, k::bug, "cos/sin rounded to bf16/fp16 (a low-precision cache)"},
    class_info{c::fast_sincos, k::bug, "an approximate sin/cos whose error does not grow with position"},
    class_info{c::rotation_reversed, k::bug, "every token rotated at -p: sin's sign flipped, the conjugate rotation"},
    class_info{c::heads_wrong, k::bug, "some heads are not rotated as the others: copied, unwritten, another head's or rotated wrong"},
    class_info{c::cos_sin_accumulated, k::bug, "a cos/sin table grown by recurrence: the error grows with the distance from its anchors"},
    class_info{c::non_finite, k::bug, "NaN or infinity in the outputs"},
    class_info{c::not_hf_convention, k::bug, "exact angles where HF's fp32 angles were asked for"},
    class_info{c::not_ggml_convention, k::bug, "exact angles where ggml's fp32 angles were asked for"},
    class_info{c::layer_convention_wrong, k::bug, "the outputs pass as another layer type's RoPE of the same config"},
    class_info{c::mrope_rows_swapped, k::bug, "M-RoPE: another permutation of the position rows"},
    class_info{c::mrope_section_wrong, k::bug, "M-RoPE: another band-to-row split (sections, contiguous vs interleaved)"},
    class_info{c::mrope_text_positions, k::bug, "M-RoPE: multimodal tokens rotated with one row for every band"},
    class_info{c::unexplained, k::bug, "fails, and no hypothesis explains it (the sentence says where the residual sits)"},
    class_info{c::angle_drift_fp32, k::warning, "fp32 angle drift beyond the exact-angle allowance (fails under --strict)"},
    class_info{c::outputs_in_place, k::warning, "half-split outputs claimed, the input's order found (fails under --strict)"},
    class_info{c::plugin_crashed, k::call, "the call crashed (a signal in the isolated child)"},
    class_info{c::plugin_timeout, k::call, "the call did not return within the time limit"},
    class_info{c::plugin_out_of_bounds, k::call, "the call wrote past the end of its output buffer"},
    class_info{c::plugin_error, k::call, "the call returned an error code"},
    class_info{c::plugin_unavailable, k::call, "the door is closed after an earlier timeout or too many crashes: the call was not made"},
    class_info{c::nondeterministic, k::call, "the same call twice gave different outputs (hidden state or a race)"},
    class_info{c::property_failed, k::property, "a property of the suite does not hold"},
};

}  // namespace

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
