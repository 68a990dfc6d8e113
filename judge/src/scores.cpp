// judge/src/scores.cpp — see ropecheck/judge/scores.hpp for the contract.
#include "ropecheck/judge/scores.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>

#include "evidence.hpp"
#include "ropecheck/judge/allowance.hpp"
#include "ropecheck/judge/classes.hpp"
#include "ropecheck/judge/sentence.hpp"
#include "ropecheck/mrope.hpp"
#include "ropecheck/reference/reference.hpp"

namespace ropecheck::judge {
namespace {

using reference::dd;

std::size_t at(const dump& d, int t, int h) {
  return (static_cast<std::size_t>(t) * static_cast<std::size_t>(d.heads) + static_cast<std::size_t>(h)) *
         static_cast<std::size_t>(d.head_dim);
}

// Token t's position rows (M-RoPE) or its position repeated, as rotate_rows takes them.
std::vector<std::int64_t> rows_of(const dump& d, const rope_config& c, int t) {
  const auto rows = static_cast<std::size_t>(c.position_rows());
  std::vector<std::int64_t> r(rows, d.positions[static_cast<std::size_t>(t)]);
  if (!d.position_rows.empty())
    for (std::size_t k = 0; k < rows; ++k)
      r[k] = d.position_rows[k * static_cast<std::size_t>(d.tokens) + static_cast<std::size_t>(t)];
  return r;
}

// R(p) x exactly (p the rows of M-RoPE), as doubles.
void rotate_exact(const reference::rope_reference& ref, const rope_config& c, std::span<const std::int64_t> rows,
                  std::span<const double> x, std::vector<dd>& scratch, std::vector<double>& out) {
  if (c.mrope != mrope_kind::none) ref.rotate_rows(rows, x, scratch);
  else ref.rotate(rows.front(), x, scratch);
  for (std::size_t j = 0; j < x.size(); ++j) out[j] = static_cast<double>(scratch[j].value());
}

// The coordinate paired with j under the claim (j itself past the rotary dim).
int partner(const rope_config& c, int j) {
  if (j >= c.rotary_dim) return j;
  if (c.pair_layout == layout::interleaved) return j ^ 1;
  const int h = c.rotary_dim / 2;
  return j < h ? j + h : j - h;
}

int band_of(const rope_config& c, int j) {
  return c.pair_layout == layout::interleaved ? j / 2 : j % (c.rotary_dim / 2);
}

// "0..31, 40" from an ascending list.
std::string ranges(const std::vector<int>& v) {
  std::string s;
  for (std::size_t i = 0; i < v.size();) {
    std::size_t k = i;
    while (k + 1 < v.size() && v[k + 1] == v[k] + 1) ++k;
    s += (s.empty() ? "" : ", ") + std::to_string(v[i]) + (k > i ? ".." + std::to_string(v[k]) : std::string());
    i = k + 1;
  }
  return s;
}

void check_pair_geometry(const dump& q, const dump& k) {
  if (q.head_dim != k.head_dim || q.dtype != k.dtype)
    throw std::invalid_argument(fmt("qk: queries and keys differ in head_dim (%d, %d) or dtype (%s, %s)", q.head_dim,
                                    k.head_dim, q.dtype.c_str(), k.dtype.c_str()));
  if (q.heads <= 0 || k.heads <= 0 || q.heads % k.heads != 0)
    throw std::invalid_argument(fmt("qk: %d key heads do not divide %d query heads (each query head reads key head "
                                    "h / (Hq / Hk))", k.heads, q.heads));
}

// One side's coordinates that are the other side's inputs rotated. own: this side's dump (its x and y);
// other: the dump whose x may have been used; heads_of(h): the other side's head candidates for head h.
struct crossing {
  std::vector<int> coords;  // crossed coordinates
  double other_frac = 0;    // the smallest fraction of cells matching the other's rotation among them
  std::string mapping;      // how heads were mapped
};

crossing crossed_coordinates(const dump& own, const dump& other, const rope_config& c,
                             const reference::rope_reference& ref, const judge::allowance& AL, double af,
                             const std::vector<std::pair<std::string, std::vector<int>>>& mappings) {
  const int D = own.head_dim;
  crossing best;
  std::vector<dd> scratch(static_cast<std::size_t>(D));
  std::vector<double> r_own(static_cast<std::size_t>(D)), r_other(static_cast<std::size_t>(D));
  for (const auto& [name, head_map] : mappings) {
    std::vector<std::int64_t> own_hits(static_cast<std::size_t>(D)), other_hits(static_cast<std::size_t>(D)),
        cells(static_cast<std::size_t>(D));
    const int step = std::max(1, own.tokens / 512);  // a large dump: a spread subset of its tokens
    std::vector<double> allow(static_cast<std::size_t>(D));
    for (int t = 0; t < own.tokens; t += step) {
      const std::vector<std::int64_t> rows = rows_of(own, c, t);
      for (int j = 0; j < D; ++j)
        allow[static_cast<std::size_t>(j)] =
            j < c.rotary_dim ? AL.pair(rows.front(), band_of(c, j),
                                       std::fabs(static_cast<double>(ref.angle(rows.front(), band_of(c, j)).value())))
                             : AL.pass_through();
      for (int h = 0; h < own.heads; ++h) {
        const int g = head_map[static_cast<std::size_t>(h)];
        const double* xo = own.x.data() + at(own, t, h);
        const double* xe = other.x.data() + at(other, t, g);
        const double* y = own.y.data() + at(own, t, h);
        rotate_exact(ref, c, rows, std::span<const double>(xo, static_cast<std::size_t>(D)), scratch, r_own);
        rotate_exact(ref, c, rows, std::span<const double>(xe, static_cast<std::size_t>(D)), scratch, r_other);
        for (int j = 0; j < D; ++j) {
          const auto J = static_cast<std::size_t>(j);
          const int pj = partner(c, j);
          const auto P = static_cast<std::size_t>(pj);
          double scale_own = std::fabs(xo[J]), scale_other = std::fabs(xe[J]);
          if (j < c.rotary_dim) {
            scale_own = af * (std::fabs(xo[J]) + std::fabs(xo[P]));
            scale_other = af * (std::fabs(xe[J]) + std::fabs(xe[P]));
          }
          // Only a cell whose two predictions the allowance tells apart says which input was rotated (band 0's
          // fp32 angles at 2^24 are allowed more than a radian: both predictions fit there).
          if (std::fabs(r_own[J] - r_other[J]) <= allow[J] * (scale_own + scale_other)) continue;
          ++cells[J];
          if (std::fabs(y[J] - r_own[J]) <= allow[J] * scale_own) ++own_hits[J];
          if (std::fabs(y[J] - r_other[J]) <= allow[J] * scale_other) ++other_hits[J];
        }
      }
    }
    crossing cand;
    cand.mapping = name;
    cand.other_frac = 1;
    for (int j = 0; j < D; ++j) {
      const auto J = static_cast<std::size_t>(j);
      if (cells[J] < detail::kCrossedCells) continue;  // too few cells tell the two inputs apart
      const double fo = static_cast<double>(other_hits[J]) / static_cast<double>(cells[J]);
      const double fs = static_cast<double>(own_hits[J]) / static_cast<double>(cells[J]);
      if (detail::coordinate_crossed(fo, fs)) {
        cand.coords.push_back(j);
        cand.other_frac = std::min(cand.other_frac, fo);
      }
    }
    if (cand.coords.size() > best.coords.size()) best = std::move(cand);
  }
  return best;
}

bool is_positions_class(const std::string& id) {
  return id == classes::positions_offset || id == classes::positions_constant || id == classes::positions_wrong;
}

// A rule of the convention, not its precision: what "k rotated by another rule" means.
bool is_rule_class(const std::string& id) {
  static const char* const rules[] = {classes::layout_swapped,       classes::base_wrong,
                                      classes::scaling_wrong,        classes::dynamic_ntk_not_reset,
                                      classes::rotary_dim_wrong,     classes::attention_factor_wrong,
                                      classes::heads_wrong,          classes::rotation_reversed,
                                      classes::mrope_rows_swapped,   classes::mrope_section_wrong,
                                      classes::mrope_text_positions, classes::layer_convention_wrong};
  return std::any_of(std::begin(rules), std::end(rules), [&](const char* r) { return id == r; });
}

finding prefixed(const finding& f, const char* who) { return finding{f.bug_class, who + f.sentence, f.confidence}; }

}  // namespace

int key_head_of(int q_head, int q_heads, int k_heads) {
  if (q_heads <= 0 || k_heads <= 0 || q_heads % k_heads != 0)
    throw std::invalid_argument(fmt("key_head_of: %d key heads do not divide %d query heads", k_heads, q_heads));
  return q_head / (q_heads / k_heads);
}

score_identity measure_score_identity(const dump& queries, const dump& keys, const rope_config& claimed) {
  check_pair_geometry(queries, keys);
  score_identity s;
  if (queries.tokens == 0 || keys.tokens == 0) return s;
  const reference::rope_reference ref(claimed);
  const judge::allowance AL(claimed, queries.dtype, reference_kind::exact, false);
  const long double af = ref.attention_factor().value();
  const auto D = static_cast<std::size_t>(queries.head_dim);
  const auto rd = static_cast<std::size_t>(claimed.rotary_dim);
  const int bands = claimed.bands();
  const std::vector<int> korder = detail::by_position(keys);
  const int step = std::max(1, queries.tokens / 512);
  std::vector<dd> rk(D);
  std::vector<double> aq(static_cast<std::size_t>(bands)), ak(static_cast<std::size_t>(bands));
  const bool rows = claimed.mrope != mrope_kind::none;
  // Each band's allowance at a token (the largest of its rows).
  const auto allowances = [&](const std::vector<std::int64_t>& r, std::vector<double>& out) {
    const std::int64_t p = *std::max_element(r.begin(), r.end(), [](auto x, auto y) { return std::llabs(x) < std::llabs(y); });
    for (int i = 0; i < bands; ++i)
      out[static_cast<std::size_t>(i)] = AL.pair(p, i, std::fabs(static_cast<double>(ref.angle(p, i).value())));
  };
  auto measure = [&](int a, int b) {
    const std::int64_t m = queries.positions[static_cast<std::size_t>(a)], n = keys.positions[static_cast<std::size_t>(b)];
    std::vector<std::int64_t> diff = rows_of(keys, claimed, b);
    const std::vector<std::int64_t> qr = rows_of(queries, claimed, a);
    allowances(qr, aq);
    allowances(diff, ak);
    for (std::size_t r = 0; r < diff.size(); ++r) diff[r] -= qr[r];
    for (int h = 0; h < queries.heads; ++h) {
      const int g = key_head_of(h, queries.heads, keys.heads);
      const double* q = queries.x.data() + at(queries, a, h);
      const double* qo = queries.y.data() + at(queries, a, h);
      const double* k = keys.x.data() + at(keys, b, g);
      const double* ko = keys.y.data() + at(keys, b, g);
      if (rows) ref.rotate_rows(diff, std::span<const double>(k, D), rk);
      else ref.rotate(diff.front(), std::span<const double>(k, D), rk);
      long double got = 0, want = 0, nq = 0, nk = 0, bound = 0;
      for (std::size_t j = 0; j < rd; ++j) {
        got += static_cast<long double>(qo[j]) * ko[j];
        want += static_cast<long double>(q[j]) * rk[j].value();
        nq += static_cast<long double>(q[j]) * q[j];
        nk += static_cast<long double>(k[j]) * k[j];
      }
      for (int j = 0; j < claimed.rotary_dim; ++j) {  // coordinate j's share of the bound (its pair's sums)
        const auto J = static_cast<std::size_t>(j), P = static_cast<std::size_t>(partner(claimed, j));
        const auto i = static_cast<std::size_t>(band_of(claimed, j));
        bound += static_cast<long double>(std::fabs(q[J]) + std::fabs(q[P])) * (std::fabs(k[J]) + std::fabs(k[P])) *
                 (aq[i] + ak[i] + aq[i] * ak[i]);
      }
      want *= af;  // rotate() holds the keys' af; the queries' af makes the score's af^2
      bound *= af * af;
      const long double scale = af * af * std::sqrt(nq * nk);
      const double v = scale > 0 ? static_cast<double>(std::fabs(got - want) / scale) : 0.0;
      const double ratio = bound > 0 ? static_cast<double>(std::fabs(got - want) / bound) : 0.0;
      ++s.pairs;
      if (!(v <= s.violation)) s.violation = std::isnan(v) ? std::numeric_limits<double>::infinity() : v;  // NaN: the worst
      if (!(ratio <= s.worst_ratio)) {
        s.worst_ratio = std::isnan(ratio) ? std::numeric_limits<double>::infinity() : ratio;
        s.m = m, s.n = n, s.q_head = h;
      }
    }
  };
  for (int a = 0; a < queries.tokens; a += step) {
    const std::int64_t m = queries.positions[static_cast<std::size_t>(a)];
    measure(a, korder.front());
    // The key at the query's own position and the one just before it, in position order.
    const auto it = std::lower_bound(korder.begin(), korder.end(), m, [&](int b, std::int64_t p) {
      return keys.positions[static_cast<std::size_t>(b)] < p;
    });
    if (it != korder.end() && keys.positions[static_cast<std::size_t>(*it)] == m && *it != korder.front()) measure(a, *it);
    if (it != korder.begin() && *(it - 1) != korder.front()) measure(a, *(it - 1));
  }
  return s;
}

std::optional<finding> crossed_outputs(const dump& queries, const dump& keys, const rope_config& claimed,
                                       std::int64_t seq_len) {
  check_pair_geometry(queries, keys);
  if (queries.tokens != keys.tokens || queries.positions != keys.positions || queries.position_rows != keys.position_rows)
    throw std::invalid_argument("crossed_outputs: queries and keys must be the same tokens at the same positions");
  if (queries.tokens == 0) return std::nullopt;
  std::int64_t pmax = 0;
  for (const auto p : queries.positions) pmax = std::max(pmax, p);
  const reference::rope_reference ref(claimed, seq_len > 0 ? seq_len : pmax + 1);
  const judge::allowance AL(claimed, queries.dtype, reference_kind::exact, false);
  const double af = static_cast<double>(ref.attention_factor().value());
  const int Hq = queries.heads, Hk = keys.heads, rep = Hq / Hk;
  std::vector<int> grouped(static_cast<std::size_t>(Hq)), modulo(static_cast<std::size_t>(Hq));
  for (int h = 0; h < Hq; ++h) grouped[static_cast<std::size_t>(h)] = h / rep, modulo[static_cast<std::size_t>(h)] = h % Hk;
  std::vector<int> first_reader(static_cast<std::size_t>(Hk)), same(static_cast<std::size_t>(Hk));
  for (int g = 0; g < Hk; ++g) first_reader[static_cast<std::size_t>(g)] = g * rep, same[static_cast<std::size_t>(g)] = g;
  std::vector<std::pair<std::string, std::vector<int>>> q_maps{{"key head h / " + std::to_string(rep), grouped}};
  if (rep > 1) q_maps.push_back({"key head h mod " + std::to_string(Hk), modulo});
  std::vector<std::pair<std::string, std::vector<int>>> k_maps{{"query head " + std::to_string(rep) + " g", first_reader}};
  if (rep > 1) k_maps.push_back({"query head g", same});
  if (rep == 1) q_maps.front().first = "the same head", k_maps.front().first = "the same head";
  const crossing qx = crossed_coordinates(queries, keys, claimed, ref, AL, af, q_maps);
  const crossing kx = crossed_coordinates(keys, queries, claimed, ref, AL, af, k_maps);
  if (qx.coords.empty() && kx.coords.empty()) return std::nullopt;
  std::string s;
  if (!qx.coords.empty())
    s += fmt("q's outputs at coordinates %s are k's inputs rotated (%s): %.0f%% or more of the (token, head) cells "
             "where the two differ beyond the allowance, fewer than 10%% q's own",
             ranges(qx.coords).c_str(), qx.mapping.c_str(), 100 * qx.other_frac);
  if (!kx.coords.empty())
    s += fmt("%sk's outputs at coordinates %s are q's inputs rotated (%s): %.0f%% or more of the (token, head) cells "
             "where the two differ beyond the allowance, fewer than 10%% k's own",
             s.empty() ? "" : "; ", ranges(kx.coords).c_str(), kx.mapping.c_str(), 100 * kx.other_frac);
  return finding{classes::qk_crossed, s + " (q and k crossed in the kernel)", 1.0};
}

std::optional<finding> crossing_finding(std::span<const double> q_out, std::span<const double> q_out_other_k,
                                        std::span<const double> k_out, std::span<const double> k_out_other_q,
                                        std::span<const std::int64_t> positions, int q_heads, int k_heads, int head_dim) {
  const auto T = positions.size();
  const auto D = static_cast<std::size_t>(head_dim);
  if (q_out.size() != q_out_other_k.size() || k_out.size() != k_out_other_q.size() || D == 0 || q_heads <= 0 ||
      k_heads <= 0 || q_out.size() != T * static_cast<std::size_t>(q_heads) * D ||
      k_out.size() != T * static_cast<std::size_t>(k_heads) * D)
    throw std::invalid_argument("crossing_finding: the runs' outputs and the geometry disagree in size");
  auto moved = [&](std::span<const double> a, std::span<const double> b, int heads, const char* who,
                   const char* other) -> std::string {
    std::size_t differ = 0, first = a.size();
    for (std::size_t e = 0; e < a.size(); ++e)
      if (std::bit_cast<std::uint64_t>(a[e]) != std::bit_cast<std::uint64_t>(b[e]) && !(std::isnan(a[e]) && std::isnan(b[e]))) {
        ++differ;
        if (first == a.size()) first = e;
      }
    if (differ == 0) return {};
    const std::size_t per_token = static_cast<std::size_t>(heads) * D;
    return fmt("%s's outputs depend on %s's inputs: with other %s inputs and the same %s, %zu of %zu values of %s' "
               "changed, first at token %zu (position %lld) head %zu coordinate %zu",
               who, other, other, who, differ, a.size(), who, first / per_token,
               static_cast<long long>(positions[first / per_token]), (first % per_token) / D, first % D);
  };
  const std::string q = moved(q_out, q_out_other_k, q_heads, "q", "k");
  const std::string k = moved(k_out, k_out_other_q, k_heads, "k", "q");
  if (q.empty() && k.empty()) return std::nullopt;
  return finding{classes::qk_crossed, q + (q.empty() || k.empty() ? "" : "; ") + k +
                                          " (each must be rotated from its own inputs alone)", 1.0};
}

std::vector<finding> qk_findings(const verdict& queries, const verdict& keys, const std::optional<finding>& crossed) {
  std::vector<finding> out;
  if (crossed) out.push_back(*crossed);
  if (queries.pass && !keys.pass && !keys.findings.empty()) {
    const finding& f = keys.findings.front();
    if (is_positions_class(f.bug_class))
      out.push_back({classes::key_positions_wrong,
                     "keys act at other positions than their queries (the queries pass, so the scores see m - n "
                     "wrong): " + f.sentence, f.confidence});
    else if (is_rule_class(f.bug_class))
      out.push_back({classes::key_convention_wrong,
                     "keys are rotated by another rule than their queries (the queries pass): " + f.sentence,
                     f.confidence});
  }
  // Each side's own findings; one finding both sides give is said once.
  for (const finding& f : queries.findings) {
    const bool both = std::any_of(keys.findings.begin(), keys.findings.end(), [&](const finding& g) {
      return g.bug_class == f.bug_class && g.sentence == f.sentence;
    });
    out.push_back(prefixed(f, both ? "queries and keys: " : "queries: "));
  }
  for (const finding& f : keys.findings) {
    const bool both = std::any_of(queries.findings.begin(), queries.findings.end(), [&](const finding& g) {
      return g.bug_class == f.bug_class && g.sentence == f.sentence;
    });
    if (!both) out.push_back(prefixed(f, "keys: "));
  }
  // A failing side's findings come before a passing side's warnings.
  std::stable_sort(out.begin() + (crossed ? 1 : 0), out.end(), [&](const finding& a, const finding& b) {
    const auto fails = [&](const finding& f) {
      if (f.bug_class == classes::key_positions_wrong || f.bug_class == classes::key_convention_wrong) return true;
      if (f.sentence.rfind("queries and keys: ", 0) == 0) return !queries.pass || !keys.pass;
      return f.sentence.rfind("queries: ", 0) == 0 ? !queries.pass : !keys.pass;
    };
    return fails(a) && !fails(b);
  });
  return out;
}

std::vector<finding> shift_findings(const verdict& shifted, std::int64_t delta) {
  std::vector<finding> out;
  const std::string after = fmt("after a context shift of %+lld (cached keys renumbered from n to n %+lld), ",
                                static_cast<long long>(delta), static_cast<long long>(delta));
  for (std::size_t i = 0; i < shifted.findings.size(); ++i) {
    const finding& f = shifted.findings[i];
    if (i == 0 && !shifted.pass && is_positions_class(f.bug_class))
      out.push_back({classes::key_positions_wrong,
                     after + "the cached keys act at other positions than their renumbered ones (an offset of " +
                         std::to_string(-delta) + " is a shift that did not re-rotate them): " + f.sentence,
                     f.confidence});
    else if (i == 0 && !shifted.pass && is_rule_class(f.bug_class))
      out.push_back({classes::key_convention_wrong, after + "the shift re-rotated the cached keys by another rule: " + f.sentence,
                     f.confidence});
    out.push_back(prefixed(f, ("shifted keys, " + after).c_str()));
  }
  return out;
}

qk_verdict audit_qk(const dump& queries, const dump& keys, const rope_config& claimed, const audit_options& opt) {
  check_pair_geometry(queries, keys);
  qk_verdict v;
  v.queries = audit(queries, claimed, opt);
  v.keys = audit(keys, claimed, opt);
  v.score = measure_score_identity(queries, keys, claimed);
  std::optional<finding> crossed;
  const bool same_tokens = queries.positions == keys.positions && queries.position_rows == keys.position_rows;
  if (same_tokens && !(v.queries.pass && v.keys.pass)) crossed = crossed_outputs(queries, keys, claimed, opt.seq_len);
  v.findings = qk_findings(v.queries, v.keys, crossed);
  v.pass = v.queries.pass && v.keys.pass && !crossed;
  return v;
}

}  // namespace ropecheck::judge
