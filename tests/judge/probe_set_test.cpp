// tests/judge/probe_set_test.cpp — the judge on the probe set (ropecheck/judge/probe.hpp), the inputs
// the plugin door will drive kernels with: dumps made with ropecheck's own kernels and angle
// strategies (the report's registry, tools/report/engine.cpp) at positions 0..63, +-8 around 256,
// 2048, 4096, 65504 and 2^24 (fp32 positions round past it), 8 per octave to 2 max_position_embeddings.
// Correct conventions real engines use pass with at most the fp32 drift warning; each known-bad
// strategy fails with its class named first.
#include "judge/judge_dumps.hpp"

#include <cstdio>

#include "ropecheck/judge/probe.hpp"
#include "ropecheck/presets.hpp"

namespace {

using namespace ropecheck;
using namespace ropecheck::judge_test;

constexpr std::uint64_t kSeed = 20240601;

// The kernel rotate_tokens<Compute, Storage> with `cs` over geometry g, on the probe set of c.
template <class Storage, class Compute = float, class CS>
dump probe_dump(const rope_config& c, const rope_geometry& g, const CS& cs, const std::string& dtype) {
  const judge::probe_set ps = judge::make_probe(c, kSeed);
  std::printf("[ropecheck] seed %llu (probe set: %d tokens, positions %lld..%lld)\n",
              static_cast<unsigned long long>(kSeed), ps.tokens(), static_cast<long long>(ps.positions.front()),
              static_cast<long long>(ps.positions.back()));
  dump d;
  d.positions = ps.positions;
  d.tokens = ps.tokens();
  d.heads = ps.heads;
  d.head_dim = ps.head_dim;
  d.dtype = dtype;
  d.x = ps.x;
  std::vector<Storage> xs(d.x.size()), ys(d.x.size());
  for (std::size_t j = 0; j < xs.size(); ++j) xs[j] = scalar_traits<Storage>::narrow(d.x[j]);
  rotate_tokens<Compute, Storage>(std::span<const Storage>(xs), std::span<Storage>(ys), d.positions, d.heads, g, cs);
  d.y.resize(ys.size());
  for (std::size_t j = 0; j < ys.size(); ++j) d.y[j] = static_cast<double>(scalar_traits<Storage>::widen(ys[j]));
  return d;
}

// Two claims: a plain schedule (base 500000, max_position_embeddings 131072) and Llama-3.1-8B's
// Llama-3 scaling.
std::vector<std::pair<std::string, rope_config>> claims() {
  return {{"plain", claimed_config(128)}, {"llama3-8b", *find_preset("llama3-8b")}};
}

rope_config with_layout(rope_config c, layout l) {
  c.pair_layout = l;
  return c;
}

// The probe set holds positions past 2^24 (where fp32 positions round): the allowance's k_pos.
TEST(ProbeSet, ReachesPastTwoToTheTwentyFour) {
  const auto p = judge::probe_positions(claimed_config(128));
  EXPECT_EQ(p.back(), (std::int64_t{1} << 24) + 8);
  EXPECT_NE(std::find(p.begin(), p.end(), 262144), p.end());  // 2 max_position_embeddings
}

TEST(ProbeSet, CorrectConventionsPass) {
  for (const auto& [name, c] : claims()) {
    const auto g = rope_geometry::of(c);
    const auto hf32 = judge::audit(probe_dump<float>(c, g, hf_angle<float>(c), "float32"), c);
    print(name + ": HF fp32", hf32);
    expect_pass(hf32);
    // HF with a bf16 model: fp32 angle, cos/sin cast to bf16, bf16 storage and arithmetic.
    const auto hf16 = judge::audit(probe_dump<bfloat16, bfloat16>(c, g, hf_angle<bfloat16>(c), "bfloat16"), c);
    print(name + ": HF bf16", hf16);
    expect_pass(hf16);
    // ggml's fp32 chain of products in both of its layouts (NEOX half-split, NORM interleaved).
    for (layout l : {layout::half_split, layout::interleaved}) {
      const rope_config cl = with_layout(c, l);
      const auto gg = judge::audit(probe_dump<float>(cl, rope_geometry::of(cl), ggml_angle(cl), "float32"), cl);
      print(name + ": ggml fp32 " + std::string(to_string(l)), gg);
      expect_pass(gg);
    }
    const auto dd = judge::audit(probe_dump<double, double>(c, g, direct_angle<double>(c), "float64"), c);
    print(name + ": direct double", dd);
    expect_pass(dd);
  }
}

// Where the fp32 drift fails (strict mode; fp32 angles in a float64 dump) it is named as such, past
// 2^24 too: fp32's rounded positions there are its own error model's k_pos, not positions_low_precision.
TEST(ProbeSet, Fp32DriftIsNamedAsDriftPastTwoToTheTwentyFour) {
  for (const auto& [name, c] : claims()) {
    const auto g = rope_geometry::of(c);
    judge::audit_options strict;
    strict.strict = true;
    const auto s = judge::audit(probe_dump<float>(c, g, hf_angle<float>(c), "float32"), c, strict);
    print(name + ": HF fp32, strict", s);
    expect_top(s, "angle_drift_fp32");
    const auto w = judge::audit(probe_dump<double, double>(c, g, hf_angle<double>(c), "float64"), c);
    print(name + ": fp32 angles in a float64 dump", w);
    expect_top(w, "angle_drift_fp32");
    for (const auto* v : {&s, &w})
      for (const auto& f : v->findings) EXPECT_NE(f.bug_class, "positions_low_precision") << f.sentence;
  }
}

TEST(ProbeSet, KnownBadStrategiesFailWithTheirClassFirst) {
  for (const auto& [name, c] : claims()) {
    const auto g = rope_geometry::of(c);
    const auto bp = judge::audit(probe_dump<float>(c, g, storage_positions<bfloat16, float>(c), "float32"), c);
    print(name + ": positions in bf16", bp);
    expect_top(bp, "positions_low_precision");
    const auto fs = judge::audit(probe_dump<float>(c, g, fast_sincos_angle(c), "float32"), c);
    print(name + ": fast sin/cos", fs);
    expect_top(fs, "fast_sincos");
    const auto cc = judge::audit(probe_dump<float>(c, g, cached<bfloat16, hf_angle<float>>(hf_angle<float>(c)), "float32"), c);
    print(name + ": bf16 cos/sin cache", cc);
    expect_top(cc, "cos_sin_low_precision");
  }
}

}  // namespace
