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

// conformance's call_form (a public name of the installed headers, which do not carry the judge's) as
// the judge's: the one call plan of every door (ropecheck/judge/probe.hpp plan_calls).
judge::call_form judge_form(call_form form) {
  return form == call_form::prefill ? judge::call_form::prefill : judge::call_form::decode;
}

}  // namespace

// A prefilled neighbour carries its probe token's inputs and its output is dropped.
std::vector<long double> apply_probe(const apply_fn& apply, const judge::probe_set& p, call_form form) {
  const std::size_t per_token = static_cast<std::size_t>(p.heads) * static_cast<std::size_t>(p.head_dim);
  std::vector<long double> y(p.x.size());
  std::vector<long double> xc, yc;
  for (const judge::probe_call& pc : judge::plan_calls(p, judge_form(form))) {
    const std::size_t tokens = pc.positions.size();
    xc.assign(tokens * per_token, 0.0L);
    yc.assign(tokens * per_token, 0.0L);
    for (std::size_t j = 0; j < tokens; ++j) {
      // the call's token j is probe token first + (j - probe_at), clamped onto the carried ones (the neighbour)
      const auto rel = std::clamp<std::ptrdiff_t>(static_cast<std::ptrdiff_t>(j) - pc.probe_at, 0, pc.count - 1);
      const std::size_t src = (static_cast<std::size_t>(pc.first) + static_cast<std::size_t>(rel)) * per_token;
      std::copy(p.x.begin() + static_cast<std::ptrdiff_t>(src), p.x.begin() + static_cast<std::ptrdiff_t>(src + per_token),
                xc.begin() + static_cast<std::ptrdiff_t>(j * per_token));
    }
    call c;
    c.heads = p.heads;
    c.head_dim = p.head_dim;
    c.positions = pc.positions;
    c.tokens = static_cast<int>(tokens);
    apply(xc, yc, c);
    const std::size_t from = static_cast<std::size_t>(pc.probe_at) * per_token;
    std::copy(yc.begin() + static_cast<std::ptrdiff_t>(from),
              yc.begin() + static_cast<std::ptrdiff_t>(from + static_cast<std::size_t>(pc.count) * per_token),
              y.begin() + static_cast<std::ptrdiff_t>(static_cast<std::size_t>(pc.first) * per_token));
  }
  return y;
}

judge::probe_set probe_for(const resolved& r) { return probe_for(r, r.seed, r.opts.probe_heads); }

judge::probe_set probe_for(const resolved& r, std::uint64_t seed, int heads) {
  judge::probe_set p = judge::make_probe(r.declared, seed, heads);
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

judge::dump applied_dump(const apply_fn& apply, const judge::probe_set& p, call_form form, const std::string& dtype) {
  judge::dump d;
  d.positions = p.positions;
  d.tokens = p.tokens();
  d.heads = p.heads;
  d.head_dim = p.head_dim;
  d.dtype = dtype;
  d.x = p.x;
  const std::vector<long double> y = apply_probe(apply, p, form);
  d.y.assign(y.begin(), y.end());  // exact for every dtype the judge has
  return d;
}

probe_verdict judge_probe_verdict(const kernel& k, const resolved& r, call_form form) {
  const judge::probe_set p = probe_for(r);
  probe_verdict out;
  out.d = applied_dump(k.apply, p, form, k.dtype);
  if (form == call_form::prefill) {
    const std::vector<long double> again_ld = apply_probe(k.apply, p, form);
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
                      judge::call_form_phrase(judge_form(form)),
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
