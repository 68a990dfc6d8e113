// tools/audit/plugin_probe.cpp — see plugin_probe.hpp.
#include "plugin_probe.hpp"

#include <cstdio>
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

probe_run run_probe(plugin::kernel_door& door, const rope_config& declared, plugin::dtype t, std::uint64_t seed) {
  const judge::probe_set p = judge::make_probe(declared, seed);
  probe_run r;
  r.d.positions = p.positions;
  r.d.tokens = p.tokens();
  r.d.heads = p.heads;
  r.d.head_dim = p.head_dim;
  r.d.dtype = judge_dtype(t);
  r.d.x = p.x;
  const std::size_t n = p.x.size(), bytes = n * plugin::element_bytes(t);
  std::vector<unsigned char> x(bytes), y1(bytes), y2(bytes);
  plugin::to_wire(t, p.x, x.data());
  const std::string what = "the probe: " + std::to_string(r.d.tokens) + " tokens of " + std::to_string(p.heads) +
                           " heads in one call, positions " + std::to_string(p.positions.front()) + ".." +
                           std::to_string(p.positions.back());
  plugin::apply_call call{x, y1, p.positions, p.heads, false};
  if (const auto o = door.apply(call); !o.ok()) {
    r.findings.push_back(door_finding(o, what));
    return r;
  }
  r.ran = true;
  r.d.y.resize(n);
  plugin::from_wire(t, y1.data(), r.d.y);
  call.y = y2;
  if (const auto o = door.apply(call); !o.ok()) {
    r.findings.push_back(door_finding(o, "the probe's second call, which must repeat the first"));
    return r;
  }
  std::vector<double> second(n);
  plugin::from_wire(t, y2.data(), second);
  if (auto f = judge::repeat_call_finding(r.d.y, second, r.d.positions, p.heads, p.head_dim, "call"))
    r.findings.push_back(std::move(*f));
  return r;
}

}  // namespace ropecheck::audit
