// judge/src/bias_t5.cpp — T5's bucketed bias at the score (bias_internal.hpp): the probe's key windows and the
// verdict on which offsets share a score.
//
// T5's bias is a learned table [num_buckets, heads] indexed by the bucket of the relative position n - m
// (transformers models/t5/modeling_t5.py: T5Attention._relative_position_bucket and compute_bias; forward computes
// it in the first layer of a stack, has_relative_attention_bias, and the other layers reuse it; bidirectional =
// not is_decoder; cross-attention has none). The values are weights, so the judge cannot compare them with a
// formula: it checks the partition. Keys in one claimed bucket read the same table entry, so their scores are
// equal (bitwise in a sane kernel, within the read-out's allowance here); two claimed buckets are different
// entries, so some head tells them apart. A failure is explained by the first partition that fits every row.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <iterator>
#include <limits>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "bias_internal.hpp"
#include "ropecheck/judge/classes.hpp"

namespace ropecheck::judge::detail {

namespace {

// The offsets a query's windows cover on each side: past max_distance by as much again, so the saturated bucket
// and every log-spaced bucket of a claim with up to twice the max_distance are seen.
std::int64_t t5_reach(const t5_claim& c) { return 2 * static_cast<std::int64_t>(c.max_distance); }

}  // namespace

std::vector<key_window> t5_windows(const t5_claim& c, int max_keys, std::int64_t max_position) {
  if (max_keys < 2)
    throw std::invalid_argument("max_keys: " + std::to_string(max_keys) + ", need at least 2 (windows share one key)");
  if (max_position < 0) throw std::invalid_argument("max_position: " + std::to_string(max_position) + ", need >= 0");
  const std::int64_t R = t5_reach(c), after = c.bidirectional ? R : 0;
  // Buckets depend on n - m only, but a kernel holding positions in bf16 (or fp16) breaks at large m: one small
  // query, 4096 and 65536, and the largest the limit allows.
  std::vector<std::int64_t> ms{R, 4096, 65536};
  if (max_position > 0) ms.push_back(max_position - after);
  std::vector<std::int64_t> keep;
  for (std::int64_t m : ms)
    if (m - R >= 0 && (max_position == 0 || m + after <= max_position) &&
        std::find(keep.begin(), keep.end(), m) == keep.end())
      keep.push_back(m);
  if (keep.empty())
    throw std::invalid_argument("max_position: " + std::to_string(max_position) + " leaves no room for a query with " +
                                std::to_string(R) + " keys before it" + (c.bidirectional ? " and after it" : ""));
  std::sort(keep.begin(), keep.end());
  std::vector<key_window> out;
  for (std::int64_t m : keep) {
    const std::int64_t lo = m - R, hi = m + after;
    std::vector<key_window> w;
    for (std::int64_t first = lo;;) {
      const std::int64_t last = std::min(first + max_keys - 1, hi);
      w.push_back({m, first, last});
      if (last == hi) break;
      first = last;  // the next window starts on this one's last key: the rows chain
    }
    // The query's own window first, then outward (back to lo, then on to hi): each window shares a key with one
    // already given, so the rows chain in this order too; and a query's first call is one whose keys fall in many
    // buckets (past max_distance every key shares one bucket, the weights are uniform, and the door's check that
    // o moves with v could not see it move).
    std::size_t own = 0;
    while (own + 1 < w.size() && !(w[own].first <= m && m <= w[own].last)) ++own;
    for (std::size_t i = own + 1; i-- > 0;) out.push_back(w[i]);
    for (std::size_t i = own + 1; i < w.size(); ++i) out.push_back(w[i]);
  }
  return out;
}

// One row per (head, m, form): the evidence's rows of one query chained on their shared keys. A chained key's
// allowance carries the shared key's two (the shift between the rows is read from it).
std::vector<bias_row> chain_rows(const bias_evidence& e) {
  std::vector<bias_row> out;
  std::map<std::tuple<int, std::int64_t, std::string>, std::size_t> at;
  for (const bias_row& r : e.rows) {
    if (r.n.size() != r.s.size() || r.n.size() != r.allowance.size())
      throw std::invalid_argument("bias row (head " + std::to_string(r.head) + ", m " + std::to_string(r.m) +
                                  "): keys, scores and allowances differ in count");
    const auto key = std::make_tuple(r.head, r.m, r.form);
    const auto it = at.find(key);
    bool chained = false;
    if (it != at.end()) {
      bias_row& acc = out[it->second];
      for (std::size_t j = 0; j < r.n.size() && !chained; ++j) {
        const auto f = std::find(acc.n.begin(), acc.n.end(), r.n[j]);
        if (f == acc.n.end()) continue;
        const std::size_t i = static_cast<std::size_t>(f - acc.n.begin());
        const double shift = acc.s[i] - r.s[j], carried = acc.allowance[i] + r.allowance[j];
        for (std::size_t k = 0; k < r.n.size(); ++k) {
          if (std::find(acc.n.begin(), acc.n.end(), r.n[k]) != acc.n.end()) continue;
          acc.n.push_back(r.n[k]);
          acc.s.push_back(r.s[k] + shift);
          acc.allowance.push_back(r.allowance[k] + carried);
        }
        chained = true;
      }
    }
    if (!chained) {  // the first row of its query, or one that shares no key: judged on its own
      at[key] = out.size();
      out.push_back(r);
    }
  }
  return out;
}

namespace {

// A partition of (m, n): the bucket a hypothesis puts key n of query m in, and of which row (for hypotheses
// that treat some rows differently).
using partition = std::function<std::int64_t(const bias_row&, std::int64_t n)>;

// T5's bucket rule with the arithmetic named: HF's float32 (positional.hpp's t5_relative_position_bucket: torch.log
// of the offset as float32 over math.log of the range in double) or the exact log in double (a port computing in
// float64). lucidrains/x-transformers x_transformers.py RelativePositionBias._relative_position_bucket is HF's rule
// and arithmetic since PR 10 ("bug fix for _relative_position_bucket", following HF's modeling_t5.py): n = -(n - m),
// causal = not bidirectional, positive offsets in the upper half, torch.log(n.float() / max_exact) / math.log(
// max_distance / max_exact); its forward multiplies the table by a scale, which leaves the partition as it is. At
// the defaults (32, 128) and every power-of-two configuration the two arithmetics agree at the probe's offsets
// (tests/judge/bias_t5_test.cpp); they part at a few offsets of some other max_distance (939: offset -728).
struct t5_rule {
  int num_buckets = 32, max_distance = 128;
  bool bidirectional = true;
  bool exact_log = false;
  bool sign_flipped = false;  // the relative position taken as m - n
  [[nodiscard]] int bucket(std::int64_t rel) const {
    if (sign_flipped) rel = -rel;
    if (!exact_log) return t5_relative_position_bucket(rel, bidirectional, num_buckets, max_distance);
    int b = 0, buckets = num_buckets;
    std::int64_t n = 0;
    if (bidirectional) {
      buckets /= 2;
      if (rel > 0) b += buckets;
      n = rel < 0 ? -rel : rel;
    } else {
      n = rel < 0 ? -rel : 0;
    }
    const int max_exact = buckets / 2;
    if (n < max_exact) return b + static_cast<int>(n);
    const double scaled = std::log(static_cast<double>(n) / max_exact) / std::log(static_cast<double>(max_distance) / max_exact) *
                          (buckets - max_exact);
    const auto large = static_cast<std::int64_t>(max_exact) + static_cast<std::int64_t>(scaled);
    return b + static_cast<int>(std::min<std::int64_t>(large, buckets - 1));
  }
  [[nodiscard]] bool valid() const {
    const int exact = (bidirectional ? num_buckets / 2 : num_buckets) / 2;
    return num_buckets >= 4 && max_distance > exact;
  }
  [[nodiscard]] std::string text() const {
    std::string s = std::to_string(num_buckets) + " buckets, max_distance " + std::to_string(max_distance) + ", " +
                    (bidirectional ? "bidirectional" : "causal");
    if (exact_log) s += ", exact (double) logs";
    if (sign_flipped) s += ", relative position m - n";
    return s;
  }
};

// What a partition leaves unexplained: the worst pair of keys it puts in one bucket with different scores, and
// a pair of its buckets that every head scores equal.
struct partition_fit {
  bool fits = true;
  double worst_ratio = 0;
  int worst_head = 0;
  std::int64_t worst_m = 0, worst_n = 0, worst_n_ref = 0;
  double worst_diff = 0;
  std::int64_t cells = 0;
  bool merged = false;  // two buckets equal in every row that holds both
  std::int64_t merged_m = 0, merged_a = 0, merged_b = 0;
  std::int64_t merged_rel_a = 0, merged_rel_b = 0;  // an offset n - m of each
};

// early: stop at the first pair of keys the partition cannot explain (a hypothesis tried, not the verdict's figures).
partition_fit fit_partition(const std::vector<bias_row>& rows, const partition& part, bool early = false) {
  partition_fit f;
  // Per query (m and the row's form) and pair of buckets seen together: whether some head tells them apart (the
  // same table serves every query, so a query whose heads all score two buckets equal has lost them); an offset
  // of each.
  std::map<std::tuple<std::int64_t, std::string, std::int64_t, std::int64_t>, bool> apart;
  std::map<std::int64_t, std::int64_t> rel_of;
  for (const bias_row& r : rows) {
    std::map<std::int64_t, std::size_t> rep;  // bucket -> its first key in the row
    for (std::size_t j = 0; j < r.n.size(); ++j) {
      ++f.cells;
      const std::int64_t b = part(r, r.n[j]);
      rel_of.emplace(b, r.n[j] - r.m);
      const auto [it, fresh] = rep.emplace(b, j);
      if (fresh) continue;
      const std::size_t i = it->second;
      const double diff = std::fabs(r.s[j] - r.s[i]), allow = r.allowance[j] + r.allowance[i];
      const double ratio = diff == 0 ? 0 : (allow > 0 ? diff / allow : std::numeric_limits<double>::infinity());
      if (ratio > f.worst_ratio) {
        f.worst_ratio = ratio;
        f.worst_head = r.head;
        f.worst_m = r.m;
        f.worst_n = r.n[j];
        f.worst_n_ref = r.n[i];
        f.worst_diff = diff;
        if (early && ratio > 1) {
          f.fits = false;
          return f;
        }
      }
    }
    for (auto a = rep.begin(); a != rep.end(); ++a)
      for (auto b = std::next(a); b != rep.end(); ++b) {
        const double diff = std::fabs(r.s[a->second] - r.s[b->second]);
        const bool differ = diff > r.allowance[a->second] + r.allowance[b->second];
        bool& v = apart[{r.m, r.form, a->first, b->first}];
        v = v || differ;
      }
  }
  f.fits = f.worst_ratio <= 1;
  for (const auto& [key, differ] : apart)
    if (!differ) {
      f.merged = true;
      f.fits = false;
      f.merged_m = std::get<0>(key);
      f.merged_a = std::get<2>(key);
      f.merged_b = std::get<3>(key);
      f.merged_rel_a = rel_of[f.merged_a];
      f.merged_rel_b = rel_of[f.merged_b];
      break;
    }
  return f;
}

partition rule_partition(const t5_rule& rule) {
  return [rule](const bias_row& r, std::int64_t n) { return static_cast<std::int64_t>(rule.bucket(n - r.m)); };
}

std::string num(double v) {
  char b[32];
  std::snprintf(b, sizeof b, "%.4g", v);
  return b;
}

// Where `rule` and the claim part ways on the offsets seen: an offset pair one merges and the other separates.
std::string where_they_differ(const std::vector<bias_row>& rows, const t5_rule& claim, const t5_rule& rule) {
  std::vector<std::int64_t> rel;
  for (const bias_row& r : rows)
    for (std::int64_t n : r.n) rel.push_back(n - r.m);
  std::sort(rel.begin(), rel.end());
  rel.erase(std::unique(rel.begin(), rel.end()), rel.end());
  for (std::size_t i = 0; i + 1 < rel.size(); ++i) {
    const std::int64_t a = rel[i], b = rel[i + 1];
    const bool same_claim = claim.bucket(a) == claim.bucket(b), same_rule = rule.bucket(a) == rule.bucket(b);
    if (same_claim == same_rule) continue;
    return "offsets n - m = " + std::to_string(a) + " and " + std::to_string(b) + (same_rule ? " share a score" : " score differently") +
           " where the claim " + (same_claim ? "puts them in one bucket (" : "separates them (buckets ") +
           std::to_string(claim.bucket(a)) + (same_claim ? ")" : " and " + std::to_string(claim.bucket(b)) + ")");
  }
  return "the offsets seen fit it";
}

std::string claim_failure(const partition_fit& f) {
  if (f.worst_ratio > 1)
    return "offsets n - m = " + std::to_string(f.worst_n_ref - f.worst_m) + " and " + std::to_string(f.worst_n - f.worst_m) +
           " share the claim's bucket but their scores differ by " + num(f.worst_diff) + " (" + num(f.worst_ratio) +
           " x the allowance) at head " + std::to_string(f.worst_head) + ", query " + std::to_string(f.worst_m);
  return "the claim's buckets " + std::to_string(f.merged_a) + " (offset " + std::to_string(f.merged_rel_a) + ") and " +
         std::to_string(f.merged_b) + " (offset " + std::to_string(f.merged_rel_b) + ") score equal in every head at query " +
         std::to_string(f.merged_m);
}

// The candidate rules, fewest changes from the claim first: the direction, the sign, the arithmetic, num_buckets,
// max_distance, then num_buckets with max_distance.
std::vector<t5_rule> candidates(const t5_claim& c) {
  const t5_rule base{c.num_buckets, c.max_distance, c.bidirectional, false, false};
  std::vector<int> nbs{8, 16, 32, 64, 128, 256, c.num_buckets - 2, c.num_buckets + 2};
  std::vector<int> mds;
  for (int d = 16; d <= 4096; d *= 2) mds.push_back(d);
  for (int d : {c.max_distance - 1, c.max_distance + 1, c.max_distance / 2 * 3}) mds.push_back(d);
  std::vector<t5_rule> out;
  const auto add = [&](t5_rule r) {
    if (!r.valid()) return;
    const bool same = r.num_buckets == base.num_buckets && r.max_distance == base.max_distance &&
                      r.bidirectional == base.bidirectional && r.exact_log == base.exact_log && r.sign_flipped == base.sign_flipped;
    if (!same) out.push_back(r);
  };
  t5_rule r = base;
  r.bidirectional = !base.bidirectional;
  add(r);
  r = base;
  r.sign_flipped = true;
  add(r);
  r = base;
  r.exact_log = true;
  add(r);
  for (int nb : nbs) {
    r = base;
    r.num_buckets = nb;
    add(r);
  }
  for (int md : mds) {
    r = base;
    r.max_distance = md;
    add(r);
  }
  for (int nb : nbs)
    for (int md : mds) {
      r = base;
      r.num_buckets = nb;
      r.max_distance = md;
      add(r);
    }
  r = base;
  r.bidirectional = !base.bidirectional;
  r.sign_flipped = true;
  add(r);
  return out;
}

}  // namespace

bias_verdict judge_t5(const bias_evidence& e, const t5_claim& claimed, const audit_options& opt) {
  (void)opt;  // T5's table entries are compared with each other: the read-out's allowance is the rows' own
  const std::vector<bias_row> rows = chain_rows(e);
  const t5_rule claim{claimed.num_buckets, claimed.max_distance, claimed.bidirectional, false, false};
  const partition_fit f = fit_partition(rows, rule_partition(claim));
  bias_verdict v;
  v.pass = f.fits;
  v.worst_ratio = f.worst_ratio;
  v.worst_head = f.worst_head;
  v.worst_m = f.worst_m;
  v.worst_n = f.worst_n;
  v.cells = f.cells;
  v.tolerance_reason =
      "T5's bias is a table entry per (bucket, head): keys of one bucket score bitwise equal in the kernel, so two "
      "keys' scores may differ by their read-out allowances only (each row's own, chained windows adding the shared "
      "key's); two buckets must differ in some head";
  if (v.pass) {
    if (!claimed.table.empty()) judge_t5_table(rows, e, claimed, v);
    return v;
  }
  const std::string failed = claim_failure(f);
  const auto name = [&](const char* cls, const std::string& s) { v.findings.push_back({cls, s, 0.9}); };

  const partition_fit none = fit_partition(rows, [](const bias_row&, std::int64_t) { return std::int64_t{0}; });
  if (none.fits) {
    name(classes::bias_missing, "every row's scores are one constant (" + std::to_string(none.cells) +
                                    " keys, worst " + num(none.worst_ratio) + " x the allowance): no bias is added" +
                                    (claimed.bidirectional ? "" : " (or the relative position taken as m - n, which puts every key a causal "
                                                                  "query sees in bucket 0)") + "; " + failed);
    return v;
  }
  for (const t5_rule& rule : candidates(claimed)) {
    if (!fit_partition(rows, rule_partition(rule), true).fits) continue;
    name(classes::t5_buckets_wrong, "the scores fit T5 buckets with " + rule.text() + " (the claim: " + claim.text() + "): " +
                                        where_they_differ(rows, claim, rule) + "; " + failed);
    return v;
  }
  // The query taken at position 0 in the rows the claim does not explain (candle PR 899, "Fix T5 kv cache": the
  // cached decode's position bias did not take the cache into account, the query acting at 0).
  {
    // Whether the claim explains each query (m, form) over all its heads.
    std::map<std::pair<std::int64_t, std::string>, std::vector<bias_row>> by_query;
    for (const bias_row& r : rows) by_query[{r.m, r.form}].push_back(r);
    std::map<std::pair<std::int64_t, std::string>, bool> ok_of;
    int moved = 0;
    for (const auto& [q, rs] : by_query) {
      ok_of[q] = fit_partition(rs, rule_partition(claim)).fits;
      moved += ok_of[q] ? 0 : 1;
    }
    const partition q0 = [&](const bias_row& r, std::int64_t n) {
      return static_cast<std::int64_t>(ok_of[{r.m, r.form}] ? claim.bucket(n - r.m) : claim.bucket(n));
    };
    const partition_fit g = fit_partition(rows, q0);
    if (g.fits && moved > 0) {
      name(classes::key_positions_wrong,
           std::to_string(moved) + " of " + std::to_string(by_query.size()) +
               " queries fit the claim's buckets with the query taken at position 0 (a cached decode's bias computed as "
               "if the query were the first token), the others fit the claim as given; " + failed);
      return v;
    }
  }
  // The positions held in bf16 before n - m is formed (a kernel computing relative positions from a float
  // position tensor): exact to 256, then multiples of 2, 4, ...: at the probe's queries 4096 and 65536 keys merge.
  {
    const auto bf16 = [](std::int64_t x) { return static_cast<std::int64_t>(round_to_bf16(static_cast<double>(x))); };
    const partition rounded = [&](const bias_row& r, std::int64_t n) {
      return static_cast<std::int64_t>(claim.bucket(bf16(n) - bf16(r.m)));
    };
    if (fit_partition(rows, rounded, true).fits) {
      name(classes::positions_low_precision,
           "the scores fit the claim's buckets of n - m formed from positions rounded to bf16 (exact to 256, then "
           "spaced 2, 4, ...: at query " + std::to_string(f.worst_m) + " keys that differ share a bucket); " + failed);
      return v;
    }
  }
  name(classes::unexplained, "no bucket rule tried explains the scores (the claim's " + claim.text() +
                                 ", the other direction, the sign, exact logs, num_buckets 8..256, max_distance 16..4096, the "
                                 "query at 0, bf16 positions): " + failed);
  return v;
}

}  // namespace ropecheck::judge::detail
