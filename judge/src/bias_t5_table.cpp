// judge/src/bias_t5_table.cpp — detail::judge_t5_table (bias_internal.hpp): T5's scores against its learned table
// when the user gives it (transformers models/t5/modeling_t5.py T5Attention.compute_bias: `values =
// self.relative_attention_bias(relative_position_bucket)`, [query, key, heads], permuted to [1, heads, query, key]
// and added to the unscaled scores: T5 has no 1/sqrt(d)). The partition check (bias_t5.cpp) has already said which
// offsets share a bucket; this says whether each bucket's score is the table's entry.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include "bias_internal.hpp"
#include "ropecheck/judge/allowance.hpp"
#include "ropecheck/judge/bias_allowance.hpp"
#include "ropecheck/judge/classes.hpp"

namespace ropecheck::judge::detail {
namespace {

// A hypothesis's bias at (head, bucket).
using table_fn = std::function<double(int head, int bucket)>;

struct table_fit {
  double worst = 0;
  int head = 0;
  std::int64_t m = 0, n = 0;
  double got = 0, want = 0;  // the worst key's score and bias, each minus the reference key's
  std::int64_t cells = 0;
};

// The largest |(s_j - s_ref) - (b_j - b_ref)| / allowance: the two keys' read-out allowances (each is its
// difference's from the row's first reference, bias_internal.hpp chain_rows) and the table's entries and the
// score rounded in T at both keys (8b with the stored bias the entry itself, 8c). `uS` the entries' rounding.
table_fit fit_table(const std::vector<bias_row>& rows, const t5_claim& c, const table_fn& b, double score_constant,
                    double uT, double uS) {
  table_fit f;
  for (const bias_row& r : rows) {
    const std::size_t ref = ref_of(r);
    const double bref = b(r.head, t5_bucket(c, r.m, r.n[ref]));
    const double aref = r.allowance[ref] + bias_rounding_share(bref, score_constant, uT, uS);
    for (std::size_t j = 0; j < r.n.size(); ++j) {
      if (j == ref) continue;
      const double bj = b(r.head, t5_bucket(c, r.m, r.n[j]));
      const double err = (r.s[j] - r.s[ref]) - (bj - bref);
      const double ratio = std::fabs(err) / (r.allowance[j] + aref + bias_rounding_share(bj, score_constant, uT, uS));
      ++f.cells;
      if (!(ratio <= f.worst))
        f.worst = ratio, f.head = r.head, f.m = r.m, f.n = r.n[j], f.got = r.s[j] - r.s[ref], f.want = bj - bref;
    }
  }
  return f;
}

std::string num(double v) {
  char b[32];
  std::snprintf(b, sizeof b, "%.6g", v);
  return b;
}

}  // namespace

void judge_t5_table(const std::vector<bias_row>& rows, const bias_evidence& e, const t5_claim& c, bias_verdict& v) {
  const auto H = static_cast<std::size_t>(c.heads);
  const auto entry = [&](int h, int bucket) { return c.table[static_cast<std::size_t>(bucket) * H + static_cast<std::size_t>(h)]; };
  const double uT = dtype_of(e.dtype).u();
  const table_fit f = fit_table(rows, c, entry, e.score_constant, uT, uT);
  v.worst_ratio = f.worst, v.worst_head = f.head, v.worst_m = f.m, v.worst_n = f.n, v.cells = f.cells;
  v.tolerance_reason += "; the table's values: each key's score minus the reference key's against the entries' "
                        "difference, within the read-out's allowance and the entries and score rounded in " + e.dtype +
                        " (error model 8b, 8c)";
  v.pass = f.cells > 0 && f.worst <= 1;
  if (v.pass) return;
  const std::string evidence =
      "the claim's table: head " + std::to_string(f.head) + ", query " + std::to_string(f.m) + ", key " +
      std::to_string(f.n) + " (offset " + std::to_string(f.n - f.m) + ", bucket " + std::to_string(t5_bucket(c, f.m, f.n)) +
      ") scores " + num(f.got) + " against the reference key, the table says " + num(f.want) + " (" + num(f.worst) +
      " x the allowance)";
  const auto name = [&](const char* cls, const std::string& what, const table_fit& r) {
    v.findings.push_back({cls, what + ": every one of " + std::to_string(r.cells) + " scores within its allowance (worst " +
                                   num(r.worst) + " of it); " + evidence, 0.9});
  };
  // The table negated; the table times one factor (least squares over every key's difference).
  if (const table_fit r = fit_table(rows, c, [&](int h, int b) { return -entry(h, b); }, e.score_constant, uT, uT); r.worst <= 1) {
    name(classes::bias_sign_wrong, "the table negated (subtracted from the scores)", r);
    return;
  }
  double num_ = 0, den = 0;
  for (const bias_row& r : rows) {
    const std::size_t ref = ref_of(r);
    const double bref = entry(r.head, t5_bucket(c, r.m, r.n[ref]));
    for (std::size_t j = 0; j < r.n.size(); ++j) {
      const double d = entry(r.head, t5_bucket(c, r.m, r.n[j])) - bref;
      num_ += d * (r.s[j] - r.s[ref]), den += d * d;
    }
  }
  const double k = den > 0 ? num_ / den : 1;
  if (std::fabs(k - 1) > 1e-6) {
    const int d = head_dim_scale_of(k);
    const std::string why = d > 0 ? " = 1/sqrt(" + std::to_string(d) + "): the bias scaled with q.k (T5 adds it to "
                                    "unscaled scores and scales nothing: modeling_t5.py T5Attention.forward)"
                                  : "";
    if (const table_fit r = fit_table(rows, c, [&](int h, int b) { return k * entry(h, b); }, e.score_constant, uT, uT); r.worst <= 1) {
      name(classes::bias_scaled, "the table times " + num(k) + why, r);
      return;
    }
  }
  // Another head's column: each head of the evidence read against every column of the table.
  {
    std::vector<int> col(H, -1);
    bool all = true, moved = false;
    for (std::size_t h = 0; h < H && all; ++h) {
      std::vector<bias_row> mine;
      for (const bias_row& r : rows)
        if (r.head == static_cast<int>(h)) mine.push_back(r);
      for (std::size_t g = 0; g < H && col[h] < 0; ++g)
        if (fit_table(mine, c, [&](int, int b) { return entry(static_cast<int>(g), b); }, e.score_constant, uT, uT).worst <= 1)
          col[h] = static_cast<int>(g);
      all = col[h] >= 0;
      moved = moved || (all && col[h] != static_cast<int>(h));
    }
    if (all && moved) {
      std::string map;
      for (std::size_t h = 0; h < H && h < 8; ++h) map += (h ? ", " : "") + std::to_string(h) + " -> " + std::to_string(col[h]);
      const table_fit r = fit_table(rows, c, [&](int h, int b) { return entry(col[static_cast<std::size_t>(h)], b); },
                                    e.score_constant, uT, uT);
      name(classes::heads_wrong, "each head reads another head's column of the table (head -> column: " + map +
                                     (H > 8 ? ", ..." : "") + ")", r);
      return;
    }
  }
  // The table held in a 16-bit type before it meets the scores.
  for (const auto& [type, digits] : {std::pair{"bf16", 8}, std::pair{"fp16", 11}}) {
    const int dg = digits;
    if (dtype_of(e.dtype).digits <= dg) continue;
    if (const table_fit r = fit_table(rows, c, [&](int h, int b) { return round_to_digits(entry(h, b), dg); }, e.score_constant, uT, uT);
        r.worst <= 1) {
      name(classes::bias_low_precision, std::string("the table rounded to ") + type + " before it meets the " + e.dtype + " scores", r);
      return;
    }
  }
  v.findings.push_back({classes::unexplained,
                        "the buckets are the claim's but their values are not the table's, nor it negated, scaled, read "
                        "by other heads or rounded to 16 bits (another layer's table? UMT5 has one per layer): " + evidence,
                        0.5});
}

}  // namespace ropecheck::judge::detail
