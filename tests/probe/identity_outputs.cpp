// tests/probe/identity_outputs.cpp — `probe_identity_outputs PROBE OUT`: the outputs file the Python door
// (python/ropecheck/_drive.py drive) would write for a kernel returning its input, made from the probe file
// `ropecheck probe` wrote, for the command-line tests of tests/cli/probe_cli.cmake. It reads the probe as
// that door does: a version-1 probe file (__metadata__ ropecheck_probe "1") with x among its tensors; then
// every tensor is kept, prefill.y, prefill.y_again and decode.y are x's bytes, and the metadata gains
// ropecheck_probe_outputs "1" and the kernel's description. Exit 0 written, 1 otherwise (with the reason).
#include <cstdio>
#include <exception>
#include <map>
#include <string>
#include <vector>

#include "tensor_file.hpp"
#include "tensor_write.hpp"

int main(int argc, char** argv) {
  using namespace ropecheck::audit;
  if (argc != 3) {
    std::fprintf(stderr, "usage: probe_identity_outputs PROBE.safetensors OUTPUTS.safetensors\n");
    return 1;
  }
  try {
    std::map<std::string, std::string> meta;
    const mapped_tensors probe = map_safetensors(argv[1], &meta);
    if (meta["ropecheck_probe"] != "1") {
      std::fprintf(stderr, "%s: __metadata__ ropecheck_probe is \"%s\", not \"1\"\n", argv[1], meta["ropecheck_probe"].c_str());
      return 1;
    }
    const auto x = probe.tensors.find("x");
    if (x == probe.tensors.end()) {
      std::fprintf(stderr, "%s: no tensor 'x'\n", argv[1]);
      return 1;
    }
    std::vector<tensor_out> out;
    for (const auto& [name, t] : probe.tensors) out.push_back({name, t.type, t.shape, {t.bytes.begin(), t.bytes.end()}});
    for (const char* y : {"prefill.y", "prefill.y_again", "decode.y"})
      out.push_back({y, x->second.type, x->second.shape, {x->second.bytes.begin(), x->second.bytes.end()}});
    meta["ropecheck_probe_outputs"] = "1";
    meta["kernel"] = "identity";
    meta["adapter"] = "plain";
    meta["device"] = "cpu";
    write_safetensors(argv[2], out, meta);
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "probe_identity_outputs: %s\n", e.what());
    return 1;
  }
}
