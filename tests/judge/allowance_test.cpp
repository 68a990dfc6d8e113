// tests/judge/allowance_test.cpp — the judge's per-element allowance reads the error model: its k_freq
// is error_model.hpp's judge_k_freq (section 6), and that envelope covers the two fp32 chains it is
// meant to cover, HF's fp32 inv_freq (bound_hf) and ggml's repeated products (k_freq_ggml), band by
// band over one convention per scaling rule (presets.hpp's rule_sweep). Equality counts as covered.
// With a scaling rule the envelope is below ggml's bound by up to ~6u (printed; error_model.hpp
// section 6 says why it is kept): only the plain schedule is asserted for ggml.
#include "ropecheck/judge/allowance.hpp"

#include <gtest/gtest.h>

#include <cstdio>

#include "ropecheck/judge/error_model.hpp"
#include "ropecheck/presets.hpp"

namespace {

using namespace ropecheck;

TEST(Allowance, KFreqIsTheErrorModelsEnvelope) {
  for (const auto& nc : rule_sweep())
    for (bool fp32 : {true, false})
      for (int i = 0; i < nc.cfg.bands(); ++i)
        EXPECT_EQ(judge::k_freq(nc.cfg, i, fp32), judge::judge_k_freq(nc.cfg, i, fp32)) << nc.name << " band " << i;
}

TEST(Allowance, EnvelopeCoversHfsFp32InvFreqAndGgmlsChain) {
  for (const auto& nc : rule_sweep()) {
    double least_hf = 1e300, least_ggml = 1e300;  // smallest margin envelope - bound over the bands
    for (int i = 0; i < nc.cfg.bands(); ++i) {
      const double env = judge::judge_k_freq(nc.cfg, i, true);
      const double hf = judge::bound_hf(nc.cfg, i, nc.seq_len);
      const double gg = static_cast<double>(judge::k_freq_ggml(nc.cfg, i, nc.seq_len));
      least_hf = std::min(least_hf, env - hf), least_ggml = std::min(least_ggml, env - gg);
      EXPECT_GE(env, hf) << nc.name << " band " << i << ": the envelope is below HF's fp32 inv_freq bound";
      // Plain schedule: the envelope IS ggml's bound (the same formula, evaluated in double here and
      // in long double there: equal to ~1e-16 relative, so compared to 1e-12 relative).
      if (nc.cfg.scaling == scaling_kind::none) {
        EXPECT_GE(env, gg * (1 - 1e-12)) << nc.name << " band " << i << ": the envelope is below ggml's chain";
      }
    }
    std::printf("%-26s least margin over bound_hf %8.3g u, over k_freq_ggml %8.3g u\n", nc.name.c_str(), least_hf,
                least_ggml);
  }
}

// The allowance's terms (allowance.hpp): fixed = 5u + 4u^2 (+ u for 16-bit), the angle term
// (k + k_pos + 1) u_A |p theta| with k_pos = 1 only past 2^digits(A), and 0 against a framework.
TEST(Allowance, TermsFollowTheErrorModel) {
  const rope_config c = *find_preset("llama3-8b");
  const judge::allowance f32(c, "float32", judge::reference_kind::exact, false);
  const double u = 0x1p-24;
  EXPECT_EQ(f32.fixed(), 5 * u + 4 * u * u);
  const double k = judge::k_freq(c, 7, true);
  EXPECT_EQ(f32.angle_term(1 << 24, 7, 1.0), (k + 0 + 1) * u);        // 2^24 itself is exact in fp32
  EXPECT_EQ(f32.angle_term((1 << 24) + 1, 7, 1.0), (k + 1 + 1) * u);  // past it the position rounds
  const judge::allowance bf16(c, "bfloat16", judge::reference_kind::exact, false);
  EXPECT_EQ(bf16.fixed(), 6 * 0x1p-8 + 4 * 0x1p-16);
  const judge::allowance hf(c, "float32", judge::reference_kind::hf, false);
  EXPECT_EQ(hf.angle_term(100000, 7, 1.0), 0.0);
}

}  // namespace
