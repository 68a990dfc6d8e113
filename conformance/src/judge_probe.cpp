// conformance/src/judge_probe.cpp — the judge's verdict on the probe set as a user's kernel applies it,
// in prefill calls (runs of consecutive positions) or decode calls (one token each).
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <exception>
#include <string>
#include <vector>

#include "driven.hpp"
#include "judge_probe.hpp"
#include "ropecheck/conformance/run.hpp"
#include "ropecheck/judge/describe.hpp"
#include "ropecheck/judge/probe.hpp"
#include "ropecheck/judge/render.hpp"
#include "ropecheck/judge/repeat_calls.hpp"
#include "ropecheck/judge/sentence.hpp"

namespace ropecheck::conformance {
namespace detail {
namespace {

using judge::fmt;

constexpr int max_prefill_tokens = 64;

// Applies `p` in calls of the given form; y in the order of p's tokens.
std::vector<long double> apply_probe(const kernel& k, const judge::probe_set& p, call_form form) {
  const std::size_t per_token = static_cast<std::size_t>(p.heads) * static_cast<std::size_t>(p.head_dim);
  std::vector<long double> x(p.x.begin(), p.x.end()), y(x.size());
  int t = 0;
  while (t < p.tokens()) {
    int n = 1;
    if (form == call_form::prefill)
      while (t + n < p.tokens() && n < max_prefill_tokens &&
             p.positions[static_cast<std::size_t>(t + n)] == p.positions[static_cast<std::size_t>(t + n - 1)] + 1)
        ++n;
    call c;
    c.heads = p.heads;
    c.head_dim = p.head_dim;
    const std::size_t at = static_cast<std::size_t>(t) * per_token, len = static_cast<std::size_t>(n) * per_token;
    if (form == call_form::prefill && n == 1) {
      // An isolated probe position p is prefilled with a neighbour (p - 1, p): every prefill call has
      // two tokens or more, so a kernel that treats one-token calls as decode steps is seen prefilling.
      const std::int64_t pos = p.positions[static_cast<std::size_t>(t)];
      const std::int64_t pair[2] = {pos > 0 ? pos - 1 : pos, pos > 0 ? pos : pos + 1};
      const std::size_t mine = pos > 0 ? 1 : 0;
      std::vector<long double> x2(2 * per_token), y2(2 * per_token);
      for (std::size_t h = 0; h < 2; ++h)
        std::copy(x.begin() + static_cast<std::ptrdiff_t>(at), x.begin() + static_cast<std::ptrdiff_t>(at + per_token),
                  x2.begin() + static_cast<std::ptrdiff_t>(h * per_token));
      c.positions = pair;
      c.tokens = 2;
      k.apply(x2, y2, c);
      std::copy(y2.begin() + static_cast<std::ptrdiff_t>(mine * per_token),
                y2.begin() + static_cast<std::ptrdiff_t>((mine + 1) * per_token), y.begin() + static_cast<std::ptrdiff_t>(at));
    } else {
      c.positions = std::span<const std::int64_t>(p.positions).subspan(static_cast<std::size_t>(t), static_cast<std::size_t>(n));
      c.tokens = n;
      k.apply(std::span<const long double>(x).subspan(at, len), std::span<long double>(y).subspan(at, len), c);
    }
    t += n;
  }
  return y;
}

}  // namespace

judge::probe_set probe_for(const resolved& r) {
  judge::probe_set p = judge::make_probe(r.declared, r.seed, r.opts.probe_heads);
  if (r.opts.max_position <= 0) return p;
  // The adapter's own limit (a cos/sin cache of so many rows): the tokens past it are dropped.
  const std::size_t per_token = static_cast<std::size_t>(p.heads) * static_cast<std::size_t>(p.head_dim);
  judge::probe_set kept = p;
  kept.positions.clear();
  kept.x.clear();
  for (std::size_t t = 0; t < p.positions.size(); ++t) {
    if (p.positions[t] > r.opts.max_position) continue;
    kept.positions.push_back(p.positions[t]);
    kept.x.insert(kept.x.end(), p.x.begin() + static_cast<std::ptrdiff_t>(t * per_token),
                  p.x.begin() + static_cast<std::ptrdiff_t>((t + 1) * per_token));
  }
  return kept;
}

probe_verdict judge_probe_verdict(const kernel& k, const resolved& r, call_form form) {
  const judge::probe_set p = probe_for(r);
  probe_verdict out;
  out.d.positions = p.positions;
  out.d.tokens = p.tokens();
  out.d.heads = p.heads;
  out.d.head_dim = p.head_dim;
  out.d.dtype = k.dtype;
  out.d.x = p.x;
  const std::vector<long double> y = apply_probe(k, p, form);
  out.d.y.assign(y.begin(), y.end());  // exact for every dtype the judge has
  if (form == call_form::prefill) {
    const std::vector<long double> again_ld = apply_probe(k, p, form);
    const std::vector<double> again(again_ld.begin(), again_ld.end());
    out.nondeterministic = judge::repeat_call_finding(out.d.y, again, out.d.positions, p.heads, p.head_dim, "calls");
  }
  judge::audit_options o;
  o.strict = r.opts.strict;
  o.reference = r.reference;
  out.v = judge::audit(out.d, r.declared, o);
  return out;
}

std::string verdict_lines(const kernel& k, const resolved& r, call_form form, const probe_verdict& pv) {
  const judge::verdict& v = pv.v;
  const auto& at = v.reference == judge::reference_kind::exact ? v.from_exact : v.from_framework;
  std::string s = fmt("judge on %s of the probe set (%d tokens x %d heads, positions %lld..%lld, %s): %s against the %s reference%s\n",
                      form == call_form::prefill ? "prefill calls (runs of consecutive positions, 2 to 64 tokens a call)"
                                                 : "decode calls (one token a call)",
                      pv.d.tokens, pv.d.heads, static_cast<long long>(pv.d.positions.front()),
                      static_cast<long long>(pv.d.positions.back()), k.dtype.c_str(),
                      v.pass && !pv.nondeterministic ? "PASS" : "FAIL",
                      std::string(judge::to_string(v.reference)).c_str(), r.opts.strict ? " (strict)" : "");
  s += "  convention: " + judge::convention_line(r.declared) + "\n";
  s += fmt("  max error %.4g ulps of %s at position %lld %s; error/allowance at worst %.3g (position %lld), pass iff <= 1\n",
           v.max_error_ulps, k.dtype.c_str(), static_cast<long long>(at.at_position),
           at.at_band >= 0 ? fmt("band %d", at.at_band).c_str() : "(a pass-through coordinate)", v.worst_ratio,
           static_cast<long long>(at.worst_position));
  s += "  allowance: " + v.tolerance_reason + "\n";
  if (pv.nondeterministic) s += judge::finding_line(*pv.nondeterministic, "  ");
  s += judge::findings_block(v, {"  ", "    ", ""});
  return s;
}

}  // namespace detail

outcome judge_probe(const kernel& k, call_form form, const std::string& test_id) {
  outcome out;
  try {
    const detail::resolved r = detail::resolve(k);
    const detail::probe_verdict pv = detail::judge_probe_verdict(k, r, form);
    const bool pass = pv.v.pass && !pv.nondeterministic;
    out.status = !pass ? status::failed : pv.v.findings.empty() ? status::passed : status::warning;
    if (pv.nondeterministic) out.bug_classes.push_back(pv.nondeterministic->bug_class);
    for (const auto& f : pv.v.findings) out.bug_classes.push_back(f.bug_class);
    out.message = detail::verdict_lines(k, r, form, pv);
    if (!pass)
      out.message += judge::fmt("  rerun: ROPECHECK_SEED=%llu %s%s\n", static_cast<unsigned long long>(r.seed),
                                detail::executable_path().c_str(),
                                test_id.empty() ? "" : (" --gtest_filter='" + test_id + "'").c_str());
  } catch (const std::exception& e) {
    out.status = status::failed;
    out.message = std::string("could not judge kernel ") + k.name + ": " + e.what() + "\n";
  }
  return out;
}

}  // namespace ropecheck::conformance
