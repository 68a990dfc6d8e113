// conformance/src/driven.cpp — see driven.hpp.
#include "driven.hpp"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <iostream>
#include <stdexcept>
#include <string_view>
#include <vector>

#include "property_runner.hpp"
#include "ropecheck/judge/probe.hpp"

namespace ropecheck::conformance::detail {
namespace {

// ROPECHECK_REFERENCE=exact|hf|ggml and ROPECHECK_STRICT=0|1 override the adapter's options, so a CI
// job can judge the same binary against another reference without rebuilding it.
void apply_environment(const kernel& k, resolved& r) {
  if (const char* ref = std::getenv("ROPECHECK_REFERENCE")) {
    const std::string_view v(ref);
    if (v == "exact") r.opts.reference = reference::exact;
    else if (v == "hf") r.opts.reference = reference::hf;
    else if (v == "ggml") r.opts.reference = reference::ggml;
    else
      throw std::invalid_argument("ROPECHECK_REFERENCE=" + std::string(v) + " (kernel " + k.name +
                                  "): expected exact, hf or ggml");
  }
  if (const char* strict = std::getenv("ROPECHECK_STRICT")) {
    const std::string_view v(strict);
    if (v == "1") r.opts.strict = true;
    else if (v == "0") r.opts.strict = false;
    else throw std::invalid_argument("ROPECHECK_STRICT=" + std::string(v) + " (kernel " + k.name + "): expected 0 or 1");
  }
}

}  // namespace

resolved resolve(const kernel& k) {
  resolved r;
  try {
    r.declared = k.convention();
  } catch (const std::exception& e) {
    throw std::invalid_argument("convention() of kernel " + k.name + " threw: " + e.what());
  }
  r.opts = k.opts;
  apply_environment(k, r);
  if (r.opts.max_position < 0)
    throw std::invalid_argument("options().max_position of kernel " + k.name + " is " +
                                std::to_string(r.opts.max_position) + ": expected 0 (no limit) or a last position > 0");
  if (r.opts.probe_heads < 1)
    throw std::invalid_argument("options().probe_heads of kernel " + k.name + " is " +
                                std::to_string(r.opts.probe_heads) + ": expected >= 1");
  if (r.opts.kv_heads < 0 || (r.opts.kv_heads > 0 && r.opts.probe_heads % r.opts.kv_heads != 0))
    throw std::invalid_argument("options().kv_heads of kernel " + k.name + " is " + std::to_string(r.opts.kv_heads) +
                                ": expected 0 (the default grouping) or a divisor of probe_heads (" +
                                std::to_string(r.opts.probe_heads) + "; query head h reads key head h / (Hq / Hk))");
  // The default grouping: two query heads a key head where that divides them (grouped-query attention), so a
  // key side mapping heads wrongly is seen even when the adapter does not say its own grouping.
  if (r.opts.kv_heads == 0) r.opts.kv_heads = r.opts.probe_heads % 2 == 0 ? r.opts.probe_heads / 2 : r.opts.probe_heads;
  if (r.opts.max_success < 0)
    throw std::invalid_argument("options().max_success of kernel " + k.name + " is " +
                                std::to_string(r.opts.max_success) + ": expected 0 (RC_PARAMS' value) or >= 1");
  r.reference = r.opts.reference == reference::hf     ? judge::reference_kind::hf
                : r.opts.reference == reference::ggml ? judge::reference_kind::ggml
                                                      : judge::reference_kind::exact;
  // The properties' range: the adapter's limit, else 2^31 - 1, and float16 stops at its largest
  // finite value as `ropecheck audit --plugin` does.
  r.max_position = r.opts.max_position > 0 ? r.opts.max_position : (std::int64_t{1} << 31) - 1;
  if (k.dtype == "float16") r.max_position = std::min<std::int64_t>(r.max_position, 65504);
  r.seed = r.opts.seed ? *r.opts.seed : test::detail::suite_seed();
  return r;
}

test::driven_kernel driven(const kernel& k, const resolved& r) {
  test::driven_kernel d;
  d.name = k.name;
  d.declared = r.declared;
  d.dtype = k.dtype;
  d.wide_compute = k.compute_digits >= 53;
  d.max_position = r.max_position;
  // The judge's sequence length on the probe set (judge_probe.cpp probe_for: the positions within the
  // adapter's limit), so the properties ask the length-dependent rules (LongRoPE, dynamic NTK) what it asks.
  for (const std::int64_t p : judge::probe_positions(r.declared))
    if (r.opts.max_position <= 0 || p <= r.opts.max_position) d.seq_len = std::max(d.seq_len, p + 1);
  d.negative_positions = r.opts.negative_positions;
  d.has_inverse = r.opts.inverse || r.opts.negative_positions;
  d.to_storage = k.round;
  const bool honours_inverse = r.opts.inverse;
  const int head_dim = r.declared.head_dim;
  const auto one_token = [honours_inverse, head_dim](auto apply) {
    return [apply, honours_inverse, head_dim](std::span<const long double> x, std::span<long double> y, int heads,
                                              std::int64_t pos, rotation_sense sense) {
      const bool inverse = sense == rotation_sense::inverse;
      const std::int64_t p[1] = {inverse && !honours_inverse ? -pos : pos};
      call c;
      c.positions = p;
      c.tokens = 1;
      c.heads = heads;
      c.head_dim = head_dim;
      c.inverse = inverse && honours_inverse;
      apply(x, y, c);
    };
  };
  d.rotate = one_token(k.apply);
  if (k.apply_k) d.rotate_k = one_token(k.apply_k);
  d.q_heads = r.opts.probe_heads;
  d.kv_heads = r.opts.kv_heads;
  return d;
}

std::string executable_path() {
  std::vector<char> buf(4096);
  const ssize_t n = ::readlink("/proc/self/exe", buf.data(), buf.size() - 1);
  return n > 0 ? std::string(buf.data(), static_cast<std::size_t>(n)) : std::string("<test binary>");
}

}  // namespace ropecheck::conformance::detail
