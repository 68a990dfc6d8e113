// tools/probe/probe_file.cpp — see probe_file.hpp.
#include "probe_file.hpp"

#include <algorithm>
#include <stdexcept>

namespace ropecheck::probe {
namespace {

audit::dtype file_dtype(plugin::dtype t) {
  switch (t) {
    case plugin::dtype::f32: return audit::dtype::f32;
    case plugin::dtype::f64: return audit::dtype::f64;
    case plugin::dtype::bf16: return audit::dtype::bf16;
    case plugin::dtype::f16: return audit::dtype::f16;
  }
  throw std::invalid_argument("probe_tensors: unknown dtype");
}

// positions [T] or, with rows (row-major [R][T]), [R, T].
audit::tensor_out positions_tensor(const std::string& name, const std::vector<std::int64_t>& row0,
                                   const std::vector<std::int64_t>& rows) {
  const auto n = static_cast<std::int64_t>(row0.size());
  if (rows.empty()) return {name, audit::dtype::i64, {n}, audit::i64_bytes(row0)};
  return {name, audit::dtype::i64, {static_cast<std::int64_t>(rows.size()) / n, n}, audit::i64_bytes(rows)};
}

void add_plan(const judge::probe_set& p, judge::call_form form, std::vector<audit::tensor_out>& out) {
  const std::string f = judge::to_string(form);
  const std::vector<judge::probe_call> plan = judge::plan_calls(p, form);
  const std::size_t rows = p.position_rows.empty() ? 0 : p.position_rows.size() / p.positions.size();
  std::vector<std::int64_t> calls{0}, positions, token, keep;
  std::vector<std::vector<std::int64_t>> row(rows);
  for (const judge::probe_call& c : plan) {
    const std::size_t n = c.positions.size();
    for (std::size_t j = 0; j < n; ++j) {
      const auto rel = static_cast<std::ptrdiff_t>(j) - c.probe_at;  // the probe token j carries, the neighbour clamped
      const bool kept = rel >= 0 && rel < c.count;
      positions.push_back(c.positions[j]);
      token.push_back(c.first + std::clamp<std::ptrdiff_t>(rel, 0, c.count - 1));
      keep.push_back(kept ? 1 : 0);
      for (std::size_t r = 0; r < rows; ++r) row[r].push_back(c.position_rows[r * n + j]);
    }
    calls.push_back(static_cast<std::int64_t>(positions.size()));
  }
  std::vector<std::int64_t> all_rows;
  for (const auto& r : row) all_rows.insert(all_rows.end(), r.begin(), r.end());
  out.push_back({f + ".calls", audit::dtype::i64, {static_cast<std::int64_t>(calls.size())}, audit::i64_bytes(calls)});
  out.push_back(positions_tensor(f + ".positions", positions, all_rows));
  out.push_back({f + ".token", audit::dtype::i64, {static_cast<std::int64_t>(token.size())}, audit::i64_bytes(token)});
  out.push_back({f + ".keep", audit::dtype::i64, {static_cast<std::int64_t>(keep.size())}, audit::i64_bytes(keep)});
}

}  // namespace

plugin::dtype parse_dtype(const std::string& name) {
  if (name == "float32") return plugin::dtype::f32;
  if (name == "bfloat16") return plugin::dtype::bf16;
  if (name == "float16") return plugin::dtype::f16;
  if (name == "float64") return plugin::dtype::f64;
  throw std::invalid_argument("--dtype must be float32, bfloat16, float16 or float64, got '" + name + "'");
}

namespace {

audit::tensor_out inputs_tensor(const std::string& name, const std::vector<double>& values, int tokens, int heads,
                                int head_dim, plugin::dtype t) {
  audit::tensor_out x{name, file_dtype(t), {tokens, heads, head_dim}, {}};
  x.bytes.resize(values.size() * plugin::element_bytes(t));
  plugin::to_wire(t, values, x.bytes.data());
  return x;
}

}  // namespace

std::vector<audit::tensor_out> probe_tensors(const judge::probe_set& p, plugin::dtype t) {
  std::vector<audit::tensor_out> out;
  out.push_back(positions_tensor("positions", p.positions, p.position_rows));
  out.push_back(inputs_tensor("x", p.x, p.tokens(), p.heads, p.head_dim, t));
  for (const auto form : {judge::call_form::prefill, judge::call_form::decode}) add_plan(p, form, out);
  return out;
}

std::vector<audit::tensor_out> probe_tensors_attention(const judge::attention_probe& p, plugin::dtype t) {
  const auto ints = [](const std::string& name, const std::vector<std::int64_t>& v) {
    return audit::tensor_out{name, audit::dtype::i64, {static_cast<std::int64_t>(v.size())}, audit::i64_bytes(v)};
  };
  const auto nq = static_cast<int>(p.q_positions.size()), nk = static_cast<int>(p.k_positions.size());
  return {ints("attention.calls", p.calls),
          ints("attention.key_calls", p.key_calls),
          inputs_tensor("attention.q", p.q, nq, p.q_heads, p.head_dim, t),
          ints("attention.q_positions", p.q_positions),
          inputs_tensor("attention.k", p.k, nk, p.k_heads, p.head_dim, t),
          ints("attention.k_positions", p.k_positions),
          inputs_tensor("attention.v", p.v, nk, p.k_heads, p.value_dim, t)};
}

std::vector<audit::tensor_out> probe_tensors_qk(const judge::probe_set& p, int kv_heads, plugin::dtype t) {
  if (kv_heads < 1 || p.heads % kv_heads != 0)
    throw std::invalid_argument("--kv-heads " + std::to_string(kv_heads) + " must divide --heads " + std::to_string(p.heads) +
                                " (query head h reads key head h / (heads / kv_heads), as transformers' repeat_kv)");
  const int T = p.tokens(), D = p.head_dim;
  const judge::qk_inputs in = judge::make_qk_inputs(p, kv_heads);  // the plugin door's apply_qk draws the same
  std::vector<audit::tensor_out> out;
  out.push_back(positions_tensor("positions", p.positions, p.position_rows));
  out.push_back(inputs_tensor("q", p.x, T, p.heads, D, t));
  out.push_back(inputs_tensor("k", in.k, T, kv_heads, D, t));
  out.push_back(inputs_tensor("q_alt", in.q_alt, T, p.heads, D, t));
  out.push_back(inputs_tensor("k_alt", in.k_alt, T, kv_heads, D, t));
  for (const auto form : {judge::call_form::prefill, judge::call_form::decode}) add_plan(p, form, out);
  return out;
}

}  // namespace ropecheck::probe
