// tools/bench_diagnosis.cpp — what the diagnosis of a failing dump costs, measured side by side in one run.
//
//   bench_diagnosis [--tokens N] [--heads H] [--reps R]
//
// Dumps of N tokens (default 4096: positions 0..63 dense, then spread to 131071, as a capture's dump is)
// x H heads (default 8) x 128 dims, fp32, made by ropecheck's HF fp32 kernel (hf_angle<float>) under a
// convention and judged under another (the claim): a pass (no diagnosis but the drift warning), a bug the
// frequency pass names before the parameter fits are tried (base_wrong), and the bugs only the parameter
// fits name (judge/src/pass_scaling_fit.cpp: YaRN's original length, the factor inverted, Llama 3's
// smoothing inverted is a blend change no config expresses, so it is left to the judge's tests). Each is
// audited R times (default 3); the median audit seconds and the class named are printed. The fits' cost
// is the fitted bugs' seconds minus base_wrong's (the same judging, a shorter diagnosis). Target: the
// fits add < 1 s to a failing 4096-token audit on a 2-core machine.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "ropecheck/angle.hpp"
#include "ropecheck/judge/judge.hpp"
#include "ropecheck/rope.hpp"

namespace {

using namespace ropecheck;

rope_config yarn_claim() {  // Qwen2.5-7B-Instruct with YaRN factor 4 over 32768 (its model card's rope_scaling)
  rope_config c;
  c.head_dim = c.rotary_dim = 128;
  c.base = 1000000.0;
  c.pair_layout = layout::half_split;
  c.scaling = scaling_kind::yarn;
  c.factor = 4.0;
  c.original_max_position_embeddings = 32768;
  c.max_position_embeddings = 131072;
  return c;
}

std::vector<std::int64_t> positions(int tokens) {
  std::vector<std::int64_t> p;
  for (int t = 0; t < tokens; ++t)
    p.push_back(t < 64 ? t : 64 + static_cast<std::int64_t>(t - 64) * (131071 - 64) / std::max(1, tokens - 65));
  return p;
}

judge::dump make(const rope_config& used, int tokens, int heads) {
  judge::dump d;
  d.positions = positions(tokens);
  d.tokens = tokens, d.heads = heads, d.head_dim = used.head_dim;
  d.dtype = "float32";
  std::mt19937 gen(20261202);
  std::uniform_int_distribution<int> k(1, 127);
  const std::size_t n = static_cast<std::size_t>(tokens) * static_cast<std::size_t>(heads) * 128;
  std::vector<float> x(n), y(n);
  for (auto& v : x) v = static_cast<float>((gen() & 1 ? 1 : -1) * k(gen)) / 128.0f;
  const hf_angle<float> cs(used);
  rotate_tokens<float, float>(std::span<const float>(x), std::span<float>(y), d.positions, heads, rope_geometry::of(used), cs);
  d.x.assign(x.begin(), x.end());
  d.y.assign(y.begin(), y.end());
  return d;
}

struct result {
  double seconds = 0;
  std::string outcome;
};

result measure(const judge::dump& d, const rope_config& claim, int reps) {
  std::vector<double> s;
  std::string outcome;
  for (int r = 0; r < reps; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    const judge::verdict v = judge::audit(d, claim);
    s.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    outcome = v.pass ? "pass" : v.findings.empty() ? "fail" : v.findings.front().bug_class;
    if (!v.findings.empty()) outcome += ": " + v.findings.front().sentence.substr(0, 90);
  }
  std::sort(s.begin(), s.end());
  return {s[s.size() / 2], outcome};
}

}  // namespace

int main(int argc, char** argv) {
  int tokens = 4096, heads = 8, reps = 3;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--tokens")) tokens = std::atoi(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--heads")) heads = std::atoi(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--reps")) reps = std::atoi(argv[i + 1]);
    else {
      std::fprintf(stderr, "usage: bench_diagnosis [--tokens N] [--heads H] [--reps R]\n");
      return 2;
    }
  }
  if (tokens < 128 || heads < 1 || reps < 1) {
    std::fprintf(stderr, "bench_diagnosis: --tokens >= 128, --heads >= 1, --reps >= 1\n");
    return 2;
  }
  const rope_config claim = yarn_claim();
  rope_config base_wrong = claim, original = claim, inverted = claim;
  base_wrong.base = 10000.0;
  original.original_max_position_embeddings = 4096;
  inverted.factor = 0.25;  // frequencies multiplied by 4: ggml's freq_scale 4 for 1/4
  const struct {
    const char* name;
    rope_config used;
    bool fitted;
  } cases[] = {{"correct (pass)", claim, false},
               {"base 1e4 for 1e6 (base_wrong, before the fits)", base_wrong, false},
               {"YaRN original length 4096 for 32768 (fitted)", original, true},
               {"YaRN factor 0.25 for 4 (fitted)", inverted, true}};
  std::printf("bench_diagnosis: %d tokens x %d heads x 128 dims, fp32, claim YaRN factor 4 over 32768 (base 1e6); "
              "median of %d audits\n", tokens, heads, reps);
  double before = 0, worst_fitted = 0;
  for (const auto& c : cases) {
    const result r = measure(make(c.used, tokens, heads), claim, reps);
    std::printf("  %-52s %7.3f s  %s\n", c.name, r.seconds, r.outcome.c_str());
    if (std::strstr(c.name, "base_wrong")) before = r.seconds;
    if (c.fitted) worst_fitted = std::max(worst_fitted, r.seconds);
  }
  std::printf("largest fitted audit minus base_wrong's (judged alike, no fit): %+.3f s (%.3f - %.3f); target: the fits "
              "add < 1 s\n", worst_fitted - before, worst_fitted, before);
  return 0;
}
