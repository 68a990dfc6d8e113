// tools/audit/plugin_probe.cpp — see plugin_probe.hpp.
#include "plugin_probe.hpp"

#include <algorithm>
#include <cstdio>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>

#include "ropecheck/judge/classes.hpp"
#include "ropecheck/judge/probe.hpp"
#include "ropecheck/judge/repeat_calls.hpp"
#include "ropecheck/judge/scores.hpp"

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

// The call's tokens of `wire` (the probe's inputs on the wire, token_bytes a token): token j is probe token
// first + (j - probe_at), the prefilled neighbour clamped to the probe token it carries.
void gather(const std::vector<unsigned char>& wire, const judge::probe_call& c, std::size_t token_bytes,
            std::vector<unsigned char>& out) {
  const std::size_t tokens = c.positions.size();
  out.resize(tokens * token_bytes);
  for (std::size_t j = 0; j < tokens; ++j) {
    const auto rel = std::clamp<std::ptrdiff_t>(static_cast<std::ptrdiff_t>(j) - c.probe_at, 0, c.count - 1);
    const std::size_t src = (static_cast<std::size_t>(c.first) + static_cast<std::size_t>(rel)) * token_bytes;
    std::copy_n(wire.begin() + static_cast<std::ptrdiff_t>(src), token_bytes, out.begin() + static_cast<std::ptrdiff_t>(j * token_bytes));
  }
}

// The call's outputs of its probe tokens, widened exactly into y (in probe token order; per_token values a token).
// A prefilled neighbour's output is dropped.
void scatter(plugin::dtype t, const std::vector<unsigned char>& yc, const judge::probe_call& c, std::size_t per_token,
             std::vector<double>& y) {
  plugin::from_wire(t, yc.data() + static_cast<std::size_t>(c.probe_at) * per_token * plugin::element_bytes(t),
                    std::span<double>(y).subspan(static_cast<std::size_t>(c.first) * per_token,
                                                 static_cast<std::size_t>(c.count) * per_token));
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
    gather(x, c, token_bytes, xc);
    yc.assign(xc.size(), 0);
    // M-RoPE: the call's rows (a prefilled neighbour's column a text token: its output is dropped below).
    if (const auto o = door.apply({xc, yc, c.positions, p.heads, false, c.position_rows}); !o.ok())
      return door_finding(o, which + ", the call of " + positions_text(c.positions));
    scatter(t, yc, c, per_token, y);
  }
  return std::nullopt;
}

// The qk form's inputs on the wire.
struct qk_wire {
  std::vector<unsigned char> q, k;
};

// Every call of `plan` through apply_qk on q and k (q_heads and k_heads heads); q_out and k_out in the order of the
// probe's tokens.
std::optional<judge::finding> apply_qk_plan(plugin::kernel_door& door, const std::vector<judge::probe_call>& plan,
                                            const judge::probe_set& p, int k_heads, plugin::dtype t, const qk_wire& in,
                                            std::vector<double>& q_out, std::vector<double>& k_out, const std::string& which) {
  const auto D = static_cast<std::size_t>(p.head_dim);
  const std::size_t q_token = static_cast<std::size_t>(p.heads) * D, k_token = static_cast<std::size_t>(k_heads) * D;
  const std::size_t bytes = plugin::element_bytes(t);
  std::vector<unsigned char> qc, kc, qo, ko;
  q_out.assign(static_cast<std::size_t>(p.tokens()) * q_token, 0.0);
  k_out.assign(static_cast<std::size_t>(p.tokens()) * k_token, 0.0);
  for (const judge::probe_call& c : plan) {
    gather(in.q, c, q_token * bytes, qc);
    gather(in.k, c, k_token * bytes, kc);
    qo.assign(qc.size(), 0);
    ko.assign(kc.size(), 0);
    if (const auto o = door.apply_qk({qc, kc, qo, ko, c.positions, p.heads, k_heads}); !o.ok())
      return door_finding(o, which + ", the call of " + positions_text(c.positions));
    scatter(t, qo, c, q_token, q_out);
    scatter(t, ko, c, k_token, k_out);
  }
  return std::nullopt;
}

judge::dump side_dump(const judge::probe_set& p, int heads, std::vector<double> x, plugin::dtype t) {
  judge::dump d;
  d.positions = p.positions;
  d.tokens = p.tokens();
  d.heads = heads;
  d.head_dim = p.head_dim;
  d.dtype = judge_dtype(t);
  d.x = std::move(x);
  return d;
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

qk_probe_run run_qk_form(plugin::kernel_door& door, const judge::probe_set& q, const judge::qk_inputs& in,
                         judge::call_form form, plugin::dtype t) {
  if (!q.position_rows.empty()) throw std::invalid_argument("the qk form: apply_qk takes one position row");
  qk_probe_run r;
  r.queries = side_dump(q, q.heads, q.x, t);
  r.keys = side_dump(q, in.kv_heads, in.k, t);
  const auto wire = [&](const std::vector<double>& v) {
    std::vector<unsigned char> w(v.size() * plugin::element_bytes(t));
    plugin::to_wire(t, v, w.data());
    return w;
  };
  const qk_wire given{wire(q.x), wire(in.k)};
  const std::vector<judge::probe_call> plan = judge::plan_calls(q, form);
  const std::string probe = "the qk form's probe (ropecheck_plugin_apply_qk)";
  if (auto f = apply_qk_plan(door, plan, q, in.kv_heads, t, given, r.queries.y, r.keys.y, probe)) {
    r.queries.y.clear();
    r.keys.y.clear();
    r.findings.push_back(std::move(*f));
    return r;
  }
  r.ran = true;
  if (form != judge::call_form::prefill) return r;
  // The prefill plan's runs after the first (python/ropecheck/_drive_qk.py PREFILL_RERUNS): again, with other
  // keys, with other queries; only the outputs each run is for are kept.
  std::vector<double> q_again, k_again, q_kalt, k_qalt, unused;
  if (auto f = apply_qk_plan(door, plan, q, in.kv_heads, t, given, q_again, k_again,
                             probe + ", its second run, which must repeat the first")) {
    r.findings.push_back(std::move(*f));
    return r;
  }
  if (auto f = apply_qk_plan(door, plan, q, in.kv_heads, t, {given.q, wire(in.k_alt)}, q_kalt, unused,
                             probe + ", its run with other keys, k_alt, in place of k")) {
    r.findings.push_back(std::move(*f));
    return r;
  }
  if (auto f = apply_qk_plan(door, plan, q, in.kv_heads, t, {wire(in.q_alt), given.k}, unused, k_qalt,
                             probe + ", its run with other queries, q_alt, in place of q")) {
    r.findings.push_back(std::move(*f));
    return r;
  }
  // As `ropecheck audit` of a qk outputs file reads the same runs (tools/audit/probe_outputs.cpp read_qk_repeats).
  const int D = q.head_dim;
  auto repeat = judge::repeat_call_finding(r.queries.y, q_again, q.positions, q.heads, D, "prefill calls (q's outputs)");
  if (!repeat) repeat = judge::repeat_call_finding(r.keys.y, k_again, q.positions, in.kv_heads, D, "prefill calls (k's outputs)");
  if (repeat) r.findings.push_back(std::move(*repeat));
  if (auto crossed = judge::crossing_finding(r.queries.y, q_kalt, r.keys.y, k_qalt, q.positions, q.heads, in.kv_heads, D))
    r.findings.push_back(std::move(*crossed));
  return r;
}

}  // namespace ropecheck::audit
