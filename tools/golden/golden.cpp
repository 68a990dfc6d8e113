// tools/golden/golden.cpp — rendering of the golden data (see golden.hpp).
#include "golden.hpp"

#include <cmath>
#include <cstdio>
#include <numbers>
#include <sstream>

#include "ropecheck/presets.hpp"
#include "ropecheck/reference/reference.hpp"

namespace ropecheck::golden {

namespace {

std::string hex(double v) {
  char buf[48];
  std::snprintf(buf, sizeof buf, "%a", v);
  return buf;
}

std::string dec(long double v, int digits = 21) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*Lg", digits, v);
  return buf;
}

}  // namespace

std::vector<golden_case> golden_cases() {
  // Positions by regime: small, the bf16 (256) / fp16 (2048, 65504) / fp32 (2^24) integer edges,
  // 2^31 - 1, 2^40, and convergents of pi (band 0 of base 1e4 lands near multiples of pi there).
  const std::vector<std::int64_t> positions = {0,      1,       2,        255,      256,       257,
                                               2048,   4095,    4096,     65504,    131071,    103993,
                                               833719, 16777215, 16777216, 16777217, 2147483647, std::int64_t{1} << 40};
  std::vector<golden_case> out;
  for (const auto& nc : rule_sweep()) out.push_back({nc.name, nc.cfg, nc.seq_len, positions});
  return out;
}

std::string describe(const rope_config& c, std::int64_t seq_len) {
  std::ostringstream s;
  s << "head_dim=" << c.head_dim << " rotary_dim=" << c.rotary_dim << " base=" << dec(c.base, 17)
    << " scaling=" << to_string(c.scaling) << " factor=" << dec(c.factor, 17)
    << " max_position_embeddings=" << c.max_position_embeddings
    << " original_max_position_embeddings=" << c.original_max_position_embeddings << " seq_len=" << seq_len;
  if (c.scaling == scaling_kind::llama3)
    s << " low_freq_factor=" << dec(c.low_freq_factor, 17) << " high_freq_factor=" << dec(c.high_freq_factor, 17);
  if (c.scaling == scaling_kind::yarn)
    s << " beta_fast=" << dec(c.beta_fast, 17) << " beta_slow=" << dec(c.beta_slow, 17)
      << " truncate=" << (c.truncate ? "true" : "false");
  if (c.scaling == scaling_kind::longrope) s << " short_factor[i]=1+0.01i long_factor[i]=1+0.5i";
  return s.str();
}

std::string provenance(const std::string& command, const std::string& date, int precision_bits,
                       const std::string& what) {
  std::ostringstream s;
  s << "# ropecheck golden data: " << what << '\n'
    << "# command: " << command << '\n'
    << "# precision: MPFR " << precision_bits
    << " bits; values are the reference's double-double (hi + lo, ~106 bits) written exactly as hex floats\n"
    << "# date: " << date << '\n';
  return s.str();
}

std::string render_case(const golden_case& c, int precision_bits) {
  const reference::rope_reference ref(c.cfg, c.seq_len, precision_bits);
  std::ostringstream s;
  s << "band,position,inv_freq,cos_hi,cos_lo,sin_hi,sin_lo,cos,sin\n";
  for (int b = 0; b < ref.bands(); ++b) {
    const std::string f = ref.inv_freq_decimal(b, 40);
    for (const std::int64_t p : c.positions) {
      const auto cs = ref.cos_sin_mpfr(p, b);
      s << b << ',' << p << ',' << f << ',' << hex(cs.cos.hi) << ',' << hex(cs.cos.lo) << ',' << hex(cs.sin.hi) << ','
        << hex(cs.sin.lo) << ',' << dec(cs.cos.value()) << ',' << dec(cs.sin.value()) << '\n';
    }
  }
  const auto af = ref.attention_factor();
  s << "# attention_factor," << hex(af.hi) << ',' << hex(af.lo) << ',' << dec(af.value()) << '\n';
  return s.str();
}

std::string render_figures(int precision_bits) {
  std::ostringstream s;
  s << "figure,value,what\n";
  auto row = [&](const std::string& name, long double v, const std::string& what) {
    s << name << ',' << dec(v, 12) << ',' << what << '\n';
  };
  const long double two_pi = 2 * std::numbers::pi_v<long double>;
  const reference::rope_reference base(rope_config{}, 0, precision_bits);  // d 128, base 1e4
  const long double t0 = base.inv_freq(0).value(), t63 = base.inv_freq(63).value();
  row("theta_0", t0, "d_head 128 base 10000: band 0 frequency (rad/token)");
  row("wavelength_0", two_pi / t0, "band 0 wavelength (tokens)");
  row("theta_63", t63, "band 63 frequency");
  row("wavelength_63", two_pi / t63, "band 63 wavelength (tokens)");
  row("turns_band0_at_4096", 4096 * t0 / two_pi, "full turns of band 0 over a 4096 training length");
  row("sweep_band63_at_4096_rad", 4096 * t63, "angle band 63 sweeps in 4096 tokens");
  row("sweep_band63_at_32768_rad", 32768 * t63, "angle band 63 sweeps in 32768 tokens");
  row("unseen_fraction_band63_32768_vs_4096", 1 - 4096.0L / 32768.0L, "share of band 63's arc at 32768 never seen at 4096");

  rope_config ntk;
  ntk.scaling = scaling_kind::ntk;
  ntk.factor = 8.0;
  const reference::rope_reference n(ntk, 0, precision_bits);
  const long double t63n = n.inv_freq(63).value();
  row("ntk_base_d128_s8", std::pow(t63n, -128.0L / 126.0L), "NTK-aware base' = base s^(d/(d-2)), recovered from band 63");
  row("ntk_theta_0", n.inv_freq(0).value(), "NTK keeps band 0");
  row("ntk_theta_63_ratio", t63n / t63, "NTK's last band over the plain one: exactly 1/s");

  rope_config yarn;
  yarn.scaling = scaling_kind::yarn;
  yarn.factor = 8.0;
  yarn.max_position_embeddings = 4096;
  const reference::rope_reference y(yarn, 0, precision_bits);
  row("yarn_sqrt_inv_t_s8", y.attention_factor().value(), "YaRN attention factor sqrt(1/t) = 0.1 ln s + 1 at s = 8");
  row("kv_bytes_per_token_3b_fp16", 2.0L * 28 * 8 * 128 * 2, "2 layers kv_heads d_head bytes: 28 layers, 8 KV heads, d 128, fp16");
  return s.str();
}

}  // namespace ropecheck::golden
