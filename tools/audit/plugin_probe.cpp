// tools/audit/plugin_probe.cpp — see plugin_probe.hpp.
#include "plugin_probe.hpp"

#include <algorithm>
#include <cstdio>
#include <optional>
#include <span>
#include <string>

#include "ropecheck/judge/classes.hpp"
#include "ropecheck/judge/probe.hpp"
#include "ropecheck/judge/repeat_calls.hpp"

namespace ropecheck::audit {

const char* judge_dtype(plugin::dtype t) noexcept {
  switch (t) {
    case plugin::dtype::f32: return "float32";
    case plugin::dtype::f64: return "float64";
    case plugin::dtype::bf16: return "bfloat16";
    case plugin::dtype::f16: return "float16";
  }
  return "?";
}

judge::finding door_finding(const plugin::apply_outcome& o, const std::string& what) {
  using plugin::apply_status;
  switch (o.status) {
    case apply_status::crashed: return {judge::classes::plugin_crashed, o.message + " (" + what + ")", 1.0};
    case apply_status::timeout: return {judge::classes::plugin_timeout, o.message + " (" + what + ")", 1.0};
    case apply_status::out_of_bounds: return {judge::classes::plugin_out_of_bounds, o.message + " (" + what + ")", 1.0};
    case apply_status::error_code: return {judge::classes::plugin_error, o.message + " (" + what + ")", 1.0};
    case apply_status::unavailable: return {judge::classes::plugin_unavailable, o.message + " (" + what + ")", 1.0};
    case apply_status::ok: break;
  }
  return {};
}

namespace {

std::string positions_text(const std::vector<std::int64_t>& p) {
  if (p.size() == 1) return "position " + std::to_string(p.front());
  return std::to_string(p.size()) + " tokens at positions " + std::to_string(p.front()) + ".." + std::to_string(p.back());
}

// Every call of `plan` on x (the probe's inputs on the wire); y in the order of the probe's tokens.
std::optional<judge::finding> apply_plan(plugin::kernel_door& door, const std::vector<judge::probe_call>& plan,
                                         const judge::probe_set& p, plugin::dtype t, const std::vector<unsigned char>& x,
                                         std::vector<double>& y, const std::string& which) {
  const std::size_t per_token = static_cast<std::size_t>(p.heads) * static_cast<std::size_t>(p.head_dim);
  const std::size_t token_bytes = per_token * plugin::element_bytes(t);
  std::vector<unsigned char> xc, yc;
  y.assign(p.x.size(), 0.0);
  for (const judge::probe_call& c : plan) {
    const std::size_t tokens = c.positions.size();
    xc.resize(tokens * token_bytes);
    yc.assign(tokens * token_bytes, 0);
    for (std::size_t j = 0; j < tokens; ++j) {  // token j is probe token first + (j - probe_at), the neighbour clamped
      const auto rel = std::clamp<std::ptrdiff_t>(static_cast<std::ptrdiff_t>(j) - c.probe_at, 0, c.count - 1);
      const std::size_t src = (static_cast<std::size_t>(c.first) + static_cast<std::size_t>(rel)) * token_bytes;
      std::copy_n(x.begin() + static_cast<std::ptrdiff_t>(src), token_bytes, xc.begin() + static_cast<std::ptrdiff_t>(j * token_bytes));
    }
    // M-RoPE: the call's rows (a prefilled neighbour's column a text token: its output is dropped below).
    if (const auto o = door.apply({xc, yc, c.positions, p.heads, false, c.position_rows}); !o.ok())
      return door_finding(o, which + ", the call of " + positions_text(c.positions));
    plugin::from_wire(t, yc.data() + static_cast<std::size_t>(c.probe_at) * token_bytes,
                      std::span<double>(y).subspan(static_cast<std::size_t>(c.first) * per_token,
                                                   static_cast<std::size_t>(c.count) * per_token));
  }
  return std::nullopt;
}

}  // namespace

probe_run run_form(plugin::kernel_door& door, const judge::probe_set& p, judge::call_form form, plugin::dtype t,
                   bool repeat) {
  probe_run r;
  r.d.positions = p.positions;
  r.d.position_rows = p.position_rows;  // M-RoPE: the judge's passes see the multimodal tokens' rows
  r.d.tokens = p.tokens();
  r.d.heads = p.heads;
  r.d.head_dim = p.head_dim;
  r.d.dtype = judge_dtype(t);
  r.d.x = p.x;
  std::vector<unsigned char> x(p.x.size() * plugin::element_bytes(t));
  plugin::to_wire(t, p.x, x.data());
  const std::vector<judge::probe_call> plan = judge::plan_calls(p, form);
  if (auto f = apply_plan(door, plan, p, t, x, r.d.y, "the probe")) {
    r.d.y.clear();
    r.findings.push_back(std::move(*f));
    return r;
  }
  r.ran = true;
  if (!repeat) return r;
  std::vector<double> second;
  if (auto f = apply_plan(door, plan, p, t, x, second, "the probe's second pass, which must repeat the first")) {
    r.findings.push_back(std::move(*f));
    return r;
  }
  if (auto f = judge::repeat_call_finding(r.d.y, second, r.d.positions, p.heads, p.head_dim, "calls"))
    r.findings.push_back(std::move(*f));
  return r;
}

}  // namespace ropecheck::audit
