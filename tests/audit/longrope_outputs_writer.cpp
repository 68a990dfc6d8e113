// tests/audit/longrope_outputs_writer.cpp — writes the outputs file (tools/audit/probe_outputs.hpp) of a correct
// per-call LongRoPE kernel, as the Python door writes one: `ropecheck probe`'s tensors for the claim of CONFIG, then
// prefill.y, prefill.y_again and decode.y, each token rotated as transformers' LongRoPE does for the call that kept
// it (models/phi3/modeling_phi3.py Phi3RotaryEmbedding through modeling_rope_utils.py dynamic_rope_update and
// _compute_longrope_parameters: the short factors while the call's length stays within
// original_max_position_embeddings, the long factors above it). The kernel is ropecheck's hf_angle<float> (angle.hpp:
// HF's fp32 steps) at each call's length. tests/audit/CMakeLists.txt has `ropecheck audit` judge the file: it must pass
// in two groups of call lengths (issue 34's mutation "an outputs file never grouped by call length").
// With --long-everywhere the kernel takes the long factors for every call (serving its long context; the short calls
// then fail under the per-call claim).
// Usage: longrope_outputs_writer CONFIG OUT [--long-everywhere]
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <map>
#include <span>
#include <string>
#include <vector>

#include "probe_file.hpp"
#include "probe_outputs.hpp"
#include "ropecheck/angle.hpp"
#include "ropecheck/config_json.hpp"
#include "ropecheck/judge/describe.hpp"
#include "ropecheck/judge/probe.hpp"
#include "ropecheck/rope.hpp"
#include "tensor_write.hpp"

namespace {

using namespace ropecheck;

std::vector<unsigned char> f32_bytes(const std::vector<float>& v) {
  std::vector<unsigned char> b(v.size() * 4);
  std::memcpy(b.data(), v.data(), b.size());
  return b;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s CONFIG OUT [--long-everywhere]\n", argv[0]);
    return 2;
  }
  const std::filesystem::path config = std::filesystem::absolute(argv[1]), out = argv[2];
  const bool long_everywhere = argc > 3 && std::string(argv[3]) == "--long-everywhere";
  const rope_config cfg = load_hf_config(config);
  const judge::probe_set p = judge::make_probe(cfg, judge::default_seed, 2);
  std::vector<audit::tensor_out> t = probe::probe_tensors(p, plugin::dtype::f32);
  const std::map<std::string, std::string> meta{
      {"ropecheck_probe", "1"}, {"ropecheck_probe_outputs", "1"}, {"form", "x"}, {"dtype", "float32"},
      {"kernel", long_everywhere ? "longrope_long_everywhere" : "longrope_per_call"},
      {"convention", judge::convention_line(cfg)}, {"claim_args", "[\"--config\", \"" + config.string() + "\"]"}};
  // The call each token was kept by: read back from a file whose outputs are its inputs.
  const auto x_it = std::find_if(t.begin(), t.end(), [](const audit::tensor_out& e) { return e.name == "x"; });
  std::vector<audit::tensor_out> identity = t;
  for (const char* y : {"prefill.y", "prefill.y_again", "decode.y"}) identity.push_back({y, x_it->type, x_it->shape, x_it->bytes});
  audit::write_safetensors(out, identity, meta);
  const audit::probe_outputs_contents c = audit::read_probe_outputs(out);
  const rope_geometry g = rope_geometry::of(cfg);
  const std::size_t per_token = static_cast<std::size_t>(p.heads) * static_cast<std::size_t>(p.head_dim);
  std::vector<float> x(p.x.begin(), p.x.end());
  for (const judge::call_form form : {judge::call_form::prefill, judge::call_form::decode}) {
    const std::vector<std::int64_t>& seq = c.call_seq_len.at(form);
    std::vector<float> y(x.size());
    for (std::size_t i = 0; i < p.positions.size(); ++i) {
      const hf_angle<float> angle(cfg, long_everywhere ? cfg.max_position_embeddings : seq[i]);
      rotate_heads<float>(std::span<const float>(x).subspan(i * per_token, per_token), std::span<float>(y).subspan(i * per_token, per_token),
                          p.heads, g, p.positions[i], angle);
    }
    const std::string name = judge::to_string(form);
    t.push_back({name + ".y", x_it->type, x_it->shape, f32_bytes(y)});
    if (form == judge::call_form::prefill) t.push_back({"prefill.y_again", x_it->type, x_it->shape, f32_bytes(y)});
  }
  audit::write_safetensors(out, t, meta);
  std::printf("%s: %zu tokens, per-call LongRoPE%s\n", out.string().c_str(), p.positions.size(), long_everywhere ? " (long factors everywhere)" : "");
  return 0;
}
