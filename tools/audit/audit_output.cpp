// tools/audit/audit_output.cpp — see audit_output.hpp.
#include "audit_output.hpp"
#include "markup.hpp"
#include "ropecheck/judge/classes.hpp"
#include "ropecheck/judge/render.hpp"
#include "explain/claim_json.hpp"
#include "explain/claim_lines.hpp"
#include "ropecheck/judge/sentence.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace ropecheck::audit {
namespace {

using judge::fmt;  // ropecheck/judge/sentence.hpp

// JSON numbers: non-finite values become null.
nlohmann::json num(double v) { return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(nullptr); }

nlohmann::json distance_json(const judge::distance& d) {
  return {{"max_error_ulps", num(d.max_ulps)},
          {"max_error_abs", num(d.max_abs)},
          {"at_position", d.at_position},
          {"at_band", d.at_band},
          {"worst_error_over_allowance", num(d.worst_ratio)},
          {"worst_at_position", d.worst_position},
          {"worst_at_band", d.worst_band}};
}

std::string band_str(int b) { return b >= 0 ? fmt("band %d", b) : std::string("a pass-through coordinate"); }

}  // namespace

std::string describe(const rope_config& c) {
  std::string s = fmt("head_dim %d, rotary_dim %d, base %.10g, %s", c.head_dim, c.rotary_dim, c.base,
                      std::string(to_string(c.pair_layout)).c_str());
  if (c.scaling != scaling_kind::none) {
    s += fmt(", %s scaling factor %g (max_position_embeddings %lld", std::string(to_string(c.scaling)).c_str(), c.factor,
             static_cast<long long>(c.max_position_embeddings));
    if (c.original_max_position_embeddings > 0) s += fmt(", original %lld", static_cast<long long>(c.original_max_position_embeddings));
    s += ")";
    if (c.scaling == scaling_kind::longrope && c.short_factor == c.long_factor) s += ", one factor list";
    if (c.attention_factor) s += fmt(", attention factor %.10g", *c.attention_factor);
  }
  if (c.outputs != output_order::in_place) s += ", outputs " + std::string(to_string(c.outputs));
  if (c.direction != rotation_direction::forward) s += ", direction " + std::string(to_string(c.direction));
  if (c.frozen_bands != 0) s += fmt(", proportional: %d frozen bands", c.frozen_bands);
  if (c.short_mscale) s += fmt(", short/long mscale %.10g/%.10g", *c.short_mscale, *c.long_mscale);
  return s;
}


namespace {
// "M-RoPE contiguous [16, 24, 24], 3 position rows, N text tokens, M multimodal tokens"
std::string mrope_line(const audit_report& r) {
  std::string sec;
  for (std::size_t k = 0; k < r.claimed.mrope_section.size(); ++k) sec += (k ? ", " : "") + std::to_string(r.claimed.mrope_section[k]);
  return fmt("M-RoPE %s [%s], %d position rows, %d text tokens, %d multimodal tokens",
             std::string(to_string(r.claimed.mrope)).c_str(), sec.c_str(), r.position_rows, r.text_tokens,
             r.multimodal_tokens);
}
}  // namespace

std::string human_summary(const audit_report& r) {
  const judge::verdict& v = r.v;
  std::string s;
  s += fmt("ropecheck audit: %s (%s, %s%s)\n", r.source.c_str(), r.format.c_str(), r.dtype.c_str(),
           r.x_dtype != r.dtype ? (", inputs " + r.x_dtype).c_str() : "");
  for (const auto& line : explain::claim_lines(r.claim_info)) s += "  " + line + "\n";
  s += fmt("  %d tokens x %d heads x %d dims, positions %lld..%lld\n", r.tokens, r.heads, r.head_dim,
           static_cast<long long>(r.min_position), static_cast<long long>(r.max_position));
  s += "  claimed: " + describe(r.claimed) + " (from " + r.claimed_from + ")\n";
  if (r.claimed.mrope != mrope_kind::none) s += "  " + mrope_line(r) + "\n";
  for (const auto& n : r.notes) s += "  note: " + n + "\n";
  s += fmt("\n%s against the %s reference%s: max error %.4g ulps of %s (|error| %.3g), allowance there %.4g ulps\n",
           v.pass ? "PASS" : "FAIL",
           v.reference == judge::reference_kind::hf     ? "HF fp32-angle convention (computed exactly)"
           : v.reference == judge::reference_kind::ggml ? "ggml fp32-angle convention (computed exactly)"
                                                 : "exact",
           r.strict ? " (strict)" : "", v.max_error_ulps, r.dtype.c_str(), v.max_error_abs, v.tolerance);
  s += "  tolerance: " + v.tolerance_reason + "\n";
  s += fmt("  distance from exact mathematics: max %.4g ulps at position %lld %s (error/allowance %.3g)\n",
           v.from_exact.max_ulps, static_cast<long long>(v.from_exact.at_position), band_str(v.from_exact.at_band).c_str(),
           v.from_exact.worst_ratio);
  s += fmt("  distance from %s fp32 convention: max %.4g ulps at position %lld %s (error/allowance %.3g; inv_freq %s)\n",
           v.framework == "ggml" ? "ggml's" : "HF's",
           v.from_framework.max_ulps, static_cast<long long>(v.from_framework.at_position), band_str(v.from_framework.at_band).c_str(),
           v.from_framework.worst_ratio, v.hf_inv_freq_source.c_str());
  s += fmt("  relative-offset identity of the implied scores: largest violation %.3g (of af^2 |x_m| |x_n|), at "
           "positions m = %lld, n = %lld\n",
           v.score_violation, static_cast<long long>(v.score_violation_m), static_cast<long long>(v.score_violation_n));
  {
    // Error against position: the worst token per octave of position (the full series is in --json).
    std::string series;
    std::int64_t octave_end = 1;
    double best = -1;
    const judge::token_error* worst = nullptr;
    auto flush = [&] {
      if (worst) series += fmt("%s%lld:%.3g", series.empty() ? "" : "  ", static_cast<long long>(worst->position), worst->max_ulps);
      worst = nullptr, best = -1;
    };
    std::vector<const judge::token_error*> sorted;
    for (const auto& t : v.per_position) sorted.push_back(&t);
    std::stable_sort(sorted.begin(), sorted.end(), [](auto a, auto b) { return a->position < b->position; });
    for (const judge::token_error* t : sorted) {
      while (t->position >= octave_end) {
        flush();
        octave_end *= 2;
      }
      if (t->max_ulps > best) best = t->max_ulps, worst = t;
    }
    flush();
    if (!series.empty()) s += "  error by position (worst token per octave, position:ulps): " + series + "\n";
  }
  for (const auto& e : r.evidence) s += "  " + e.what + ": " + e.sentence + "\n";
  s += judge::findings_block(v, {"\n", "  ", " (see the distances above)"});
  if (v.tokens_diagnosed < r.tokens)
    s += fmt("  (diagnosed on %d of %d tokens: the 64 smallest positions and an even spread)\n", v.tokens_diagnosed,
             r.tokens);
  s += fmt("\n%lld values judged; read %.2f s, audit %.2f s\n", static_cast<long long>(v.elements), r.seconds_read,
           r.seconds_audit);
  return s;
}

std::string to_json(const audit_report& r) {
  const judge::verdict& v = r.v;
  nlohmann::json j;
  j["schema_version"] = 1;  // bump when a key changes meaning or disappears
  j["ropecheck_version"] = r.version;
  j["kind"] = "dump";
  j["command"] = r.command;
  j["pass"] = v.pass;
  j["exit_code"] = v.pass ? 0 : 1;
  j["input"] = {{"path", r.source},
                {"format", r.format},
                {"dtype", r.dtype},
                {"x_dtype", r.x_dtype},
                {"tokens", r.tokens},
                {"heads", r.heads},
                {"head_dim", r.head_dim},
                {"min_position", r.min_position},
                {"max_position", r.max_position},
                {"seq_len", r.seq_len}};
  const auto& c = r.claimed;
  j["claimed"] = {{"from", r.claimed_from},
                  {"head_dim", c.head_dim},
                  {"rotary_dim", c.rotary_dim},
                  {"base", c.base},
                  {"layout", std::string(to_string(c.pair_layout))},
                  {"scaling", std::string(to_string(c.scaling))},
                  {"factor", c.factor},
                  {"max_position_embeddings", c.max_position_embeddings},
                  {"original_max_position_embeddings", c.original_max_position_embeddings},
                  {"outputs", std::string(to_string(c.outputs))},
                  {"direction", std::string(to_string(c.direction))},
                  {"frozen_bands", c.frozen_bands},
                  {"description", describe(c)}};
  if (c.attention_factor) j["claimed"]["attention_factor"] = *c.attention_factor;
  if (c.short_mscale && c.long_mscale) j["claimed"]["mscale"] = {{"short", *c.short_mscale}, {"long", *c.long_mscale}};
  if (c.mrope != mrope_kind::none)
    j["mrope"] = {{"kind", std::string(to_string(c.mrope))},
                  {"mrope_section", c.mrope_section},
                  {"position_rows", r.position_rows},
                  {"text_tokens", r.text_tokens},
                  {"multimodal_tokens", r.multimodal_tokens},
                  {"description", mrope_line(r)}};
  j["reference"] = std::string(to_string(v.reference));
  j["strict"] = r.strict;
  j["tolerance"] = {{"ulps_at_max_error", num(v.tolerance)},
                    {"worst_error_over_allowance", num(v.worst_ratio)},
                    {"reason", v.tolerance_reason}};
  j["max_error_ulps"] = num(v.max_error_ulps);
  j["max_error_abs"] = num(v.max_error_abs);
  j["distance"] = {{"exact", distance_json(v.from_exact)}, {v.framework, distance_json(v.from_framework)}};
  j["distance"][v.framework]["inv_freq_source"] = v.hf_inv_freq_source;
  j["findings"] = nlohmann::json::array();
  for (const auto& f : v.findings)
    j["findings"].push_back({{"bug_class", f.bug_class}, {"sentence", f.sentence}, {"confidence", f.confidence}});
  j["evidence"] = nlohmann::json::array();
  for (const auto& e : r.evidence)
    j["evidence"].push_back({{"tensor", e.what}, {"sentence", e.sentence}, {"max_error", num(e.max_error)},
                             {"max_error_ulps", num(e.max_error_ulps)}});
  j["notes"] = r.notes;
  if (!r.seq_len_groups.empty()) j["seq_len_groups"] = r.seq_len_groups;
  j["claim"] = explain::claim_json(r.claim_info);
  j["score_violation"] = {{"max", num(v.score_violation)}, {"m", v.score_violation_m}, {"n", v.score_violation_n}};
  auto& pp = j["per_position"] = nlohmann::json::array();
  for (const auto& t : v.per_position)
    pp.push_back({{"position", t.position}, {"max_error_ulps", num(t.max_ulps)}, {"error_over_allowance", num(t.worst_ratio)}});
  j["values_judged"] = v.elements;
  j["tokens_diagnosed"] = v.tokens_diagnosed;
  j["seconds"] = {{"read", r.seconds_read}, {"audit", r.seconds_audit}};
  return j.dump(2) + "\n";
}

std::string to_junit(const audit_report& r) {
  const judge::verdict& v = r.v;
  const double secs = r.seconds_read + r.seconds_audit;
  std::string s = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  s += fmt("<testsuites name=\"ropecheck audit\" tests=\"1\" failures=\"%d\" errors=\"0\" time=\"%.3f\">\n", v.pass ? 0 : 1, secs);
  s += fmt("  <testsuite name=\"ropecheck.audit\" tests=\"1\" failures=\"%d\" errors=\"0\" skipped=\"0\" time=\"%.3f\">\n",
           v.pass ? 0 : 1, secs);
  s += "    <properties>\n";
  auto prop = [&](const std::string& k, const std::string& val) {
    s += "      <property name=\"" + cli::markup_escape(k) + "\" value=\"" + cli::markup_escape(val) + "\"/>\n";
  };
  prop("dtype", r.dtype);
  prop("claimed", describe(r.claimed));
  prop("reference", std::string(to_string(v.reference)));
  prop("max_error_ulps", fmt("%.6g", v.max_error_ulps));
  prop("tolerance", v.tolerance_reason);
  s += "    </properties>\n";
  s += "    <testcase classname=\"ropecheck.audit\" name=\"" +
       cli::markup_escape(r.source + " matches the " + std::string(to_string(v.reference)) + " reference") +
       "\" time=\"" + fmt("%.3f", secs) + "\">\n";
  if (!v.pass) {
    const std::string cls = v.findings.empty() ? judge::classes::unexplained : v.findings.front().bug_class;
    const std::string msg = v.findings.empty() ? fmt("max error %.4g ulps exceeds the allowance", v.max_error_ulps)
                                               : v.findings.front().sentence;
    s += "      <failure type=\"" + cli::markup_escape(cls) + "\" message=\"" + cli::markup_escape(msg) + "\">";
    s += cli::markup_escape(human_summary(r));
    s += "</failure>\n";
  } else {
    s += "      <system-out>" + cli::markup_escape(human_summary(r)) + "</system-out>\n";
  }
  s += "    </testcase>\n  </testsuite>\n</testsuites>\n";
  return s;
}

std::string one_case_junit(const std::string& suite, const std::string& name, bool passed, const judge::finding& first,
                           const std::string& text) {
  std::string s = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  s += fmt("<testsuites name=\"ropecheck audit\" tests=\"1\" failures=\"%d\" errors=\"0\">\n", passed ? 0 : 1);
  s += fmt("  <testsuite name=\"%s\" tests=\"1\" failures=\"%d\" errors=\"0\" skipped=\"0\">\n", cli::markup_escape(suite).c_str(),
           passed ? 0 : 1);
  s += "    <testcase classname=\"" + cli::markup_escape(suite) + "\" name=\"" + cli::markup_escape(name) + "\">\n";
  if (!passed)
    s += "      <failure type=\"" + cli::markup_escape(first.bug_class) + "\" message=\"" + cli::markup_escape(first.sentence) +
         "\">" + cli::markup_escape(text) + "</failure>\n";
  else
    s += "      <system-out>" + cli::markup_escape(text) + "</system-out>\n";
  return s + "    </testcase>\n  </testsuite>\n</testsuites>\n";
}

}  // namespace ropecheck::audit
