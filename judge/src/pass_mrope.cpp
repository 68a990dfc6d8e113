// judge/src/pass_mrope.cpp — the M-RoPE diagnosis (contract in pass_mrope.hpp): hypotheses about
// the rows and the sections re-judged on the diagnosis subset, then the 1-D judge on the text tokens.
#include "pass_mrope.hpp"
#include "ropecheck/judge/classes.hpp"
#include "ropecheck/judge/dump_view.hpp"

#include <algorithm>
#include <cstdio>
#include <numeric>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "evidence.hpp"
#include "ropecheck/schedule.hpp"

namespace ropecheck::judge::detail {
namespace {

std::size_t row_count(const dump& d) {
  return d.position_rows.empty() || d.tokens <= 0 ? 1 : d.position_rows.size() / static_cast<std::size_t>(d.tokens);
}

std::int64_t row_at(const dump& d, std::size_t r, int t) {
  return d.position_rows[r * static_cast<std::size_t>(d.tokens) + static_cast<std::size_t>(t)];
}

std::string sections_text(const rope_config& c) {
  std::string s = std::string(to_string(c.mrope)) + " [";
  for (std::size_t r = 0; r < c.mrope_section.size(); ++r) s += (r ? ", " : "") + std::to_string(c.mrope_section[r]);
  return s + "]";
}

// One alternative: the dump's rows rearranged and/or another band-to-row split, and what it says.
struct hypothesis {
  std::string bug_class;
  std::string what;
  std::vector<std::int64_t> rows;  // position_rows of the alternative dump
  rope_config cfg;                 // the alternative claim
};

struct judged {
  double worst = 0;     // worst error/allowance over every token of the subset
  double worst_mm = 0;  // over the multimodal tokens
  double worst_text = 0;
  bool pass = false;
};

judged rejudge(const mrope_frame& f, const dump& d, const rope_config& cfg, const std::vector<char>& is_text) {
  audit_options opt = f.jf.opt;
  opt.progress = nullptr;
  const dump_view dv = view_of(d);
  const judging_frame jf{dv, cfg, opt, f.jf.ref, f.jf.AL, f.jf.seq_len};
  verdict tmp;
  (void)judge_elements(jf, tmp);
  judged j;
  j.pass = tmp.pass;
  j.worst = tmp.worst_ratio;
  for (std::size_t t = 0; t < tmp.per_position.size(); ++t) {
    double& w = is_text[t] ? j.worst_text : j.worst_mm;
    w = std::max(w, tmp.per_position[t].worst_ratio);
  }
  return j;
}

std::vector<hypothesis> hypotheses(const mrope_frame& f, const std::vector<int>& mm) {
  const dump& d = f.d;
  const rope_config& claim = f.jf.claimed;
  const std::size_t rows = row_count(d);
  const auto tokens = static_cast<std::size_t>(d.tokens);
  std::vector<hypothesis> out;
  // One row for every band, each row in turn (the temporal row first: the text position).
  for (std::size_t r = 0; r < rows; ++r) {
    hypothesis h{classes::mrope_text_positions, "", {}, claim};
    for (std::size_t k = 0; k < rows; ++k)
      h.rows.insert(h.rows.end(), d.position_rows.begin() + static_cast<std::ptrdiff_t>(r * tokens),
                    d.position_rows.begin() + static_cast<std::ptrdiff_t>((r + 1) * tokens));
    h.what = fmt("the %zu multimodal tokens (rows differ) were rotated with %s in every band, as text tokens are", mm.size(),
                 row_name(static_cast<int>(rows), static_cast<int>(r)).c_str());
    out.push_back(std::move(h));
  }
  // Every other permutation of the rows.
  std::vector<std::size_t> perm(rows);
  std::iota(perm.begin(), perm.end(), std::size_t{0});
  while (std::next_permutation(perm.begin(), perm.end())) {
    hypothesis h{classes::mrope_rows_swapped, "", {}, claim};
    std::string fed;
    for (std::size_t r = 0; r < rows; ++r) {
      h.rows.insert(h.rows.end(), d.position_rows.begin() + static_cast<std::ptrdiff_t>(perm[r] * tokens),
                    d.position_rows.begin() + static_cast<std::ptrdiff_t>((perm[r] + 1) * tokens));
      if (perm[r] != r)
        fed += fmt("%spositions of %s where %s belongs", fed.empty() ? "" : ", ",
                   row_name(static_cast<int>(rows), static_cast<int>(perm[r])).c_str(),
                   row_name(static_cast<int>(rows), static_cast<int>(r)).c_str());
    }
    h.what = "the position rows are permuted: the bands of each row were turned by another row's positions (" + fed + ")";
    out.push_back(std::move(h));
  }
  // Other splits: the other kind with the claimed sections, and the fitted ones.
  std::vector<rope_config> splits;
  rope_config other = claim;
  other.mrope = claim.mrope == mrope_kind::contiguous ? mrope_kind::interleaved : mrope_kind::contiguous;
  try {
    validate_mrope(other);
    splits.push_back(other);
  } catch (const std::invalid_argument&) {
  }
  for (rope_config& c : fitted_splits(f, mm))
    if (!(c.mrope == claim.mrope && c.mrope_section == claim.mrope_section) &&
        std::none_of(splits.begin(), splits.end(), [&](const rope_config& s) { return s == c; }))
      splits.push_back(std::move(c));
  for (rope_config& c : splits) {
    int moved = 0, first = -1;
    for (int b = 0; b < c.bands(); ++b)
      if (c.position_row(b) != claim.position_row(b)) ++moved, first = first < 0 ? b : first;
    if (moved == 0) continue;
    hypothesis h{classes::mrope_section_wrong, "", d.position_rows, c};
    h.what = fmt("the bands take their rows as %s M-RoPE, not the claimed %s: %d of %d bands take another row (first "
                 "band %d: %s, claimed %s)",
                 sections_text(c).c_str(), sections_text(claim).c_str(), moved, c.bands(), first,
                 row_name(static_cast<int>(rows), c.position_row(first)).c_str(),
                 row_name(static_cast<int>(rows), claim.position_row(first)).c_str());
    out.push_back(std::move(h));
  }
  return out;
}

// The M-RoPE classes: the first hypothesis that passes (or, with a 1-D bug besides, that brings the
// multimodal tokens within what the text tokens reach). True when one was named.
bool structural(const mrope_frame& f, const std::vector<int>& mm, const std::vector<char>& is_text, verdict& v) {
  const judged as_claimed = rejudge(f, f.d, f.jf.claimed, is_text);
  const bool text_fails = as_claimed.worst_text > 1.0;
  const double text_level = std::max(1.0, as_claimed.worst_text);
  std::optional<std::pair<hypothesis, judged>> best;
  for (hypothesis& h : hypotheses(f, mm)) {
    dump alt = f.d;
    alt.position_rows = h.rows;
    alt.positions.assign(h.rows.begin(), h.rows.begin() + f.d.tokens);
    const judged j = rejudge(f, alt, h.cfg, is_text);
    const bool fits = j.pass || (text_fails && as_claimed.worst_mm > text_level && j.worst_mm <= text_level);
    if (!fits) continue;
    // A passing alternative before one that only matches the text tokens; then the smaller error.
    const bool better = !best || (j.pass && !best->second.pass) ||
                        (j.pass == best->second.pass && (j.pass ? j.worst < best->second.worst : j.worst_mm < best->second.worst_mm));
    if (better) best.emplace(std::move(h), j);
  }
  if (!best) return false;
  const auto& [h, j] = *best;
  const std::string how =
      j.pass ? fmt("re-judged so, the dump passes (worst error/allowance %.3g; %.3g as claimed on the %zu multimodal tokens)",
                   j.worst, as_claimed.worst_mm, mm.size())
             : fmt("re-judged so, the %zu multimodal tokens reach worst error/allowance %.3g (%.3g as claimed), no more "
                   "than the text tokens' %.3g: the rest is a 1-D error named below",
                   mm.size(), j.worst_mm, as_claimed.worst_mm, as_claimed.worst_text);
  add(v, h.bug_class, h.what + "; " + how, 0.95);
  return true;
}

// The 1-D judge on the text tokens, as plain RoPE over the same frequencies; its findings are copied
// (all of them on a failure, the drift warning on a pass).
bool text_findings(const mrope_frame& f, const std::vector<int>& text, verdict& v) {
  if (text.empty()) return false;
  dump sub = widen_tokens(view_of(f.d), text);  // the text tokens (doubles to doubles: exact)
  sub.position_rows.clear();
  rope_config plain = f.jf.claimed;
  plain.mrope = mrope_kind::none;
  plain.mrope_section.clear();
  audit_options opt = f.jf.opt;
  opt.progress = nullptr;
  const verdict tv = audit(sub, plain, opt);
  bool named = false;
  for (const finding& x : tv.findings) {
    if (f.pass && x.bug_class != classes::angle_drift_fp32) continue;
    add(v, x.bug_class,
        fmt("on the %zu text tokens (all rows equal, judged as plain RoPE): %s", text.size(), x.sentence.c_str()),
        x.confidence);
    named = named || x.bug_class != classes::angle_drift_fp32;
  }
  return named;
}

}  // namespace

std::string row_name(int rows, int r) {
  static const char* const names[] = {"temporal", "height", "width"};
  return rows == 3 && r >= 0 && r < 3 ? fmt("the %s row (row %d)", names[r], r) : fmt("row %d", r);
}

void check_position_rows(const dump& d, const rope_config& claimed) {
  if (d.position_rows.empty()) return;
  const auto tokens = static_cast<std::size_t>(d.tokens);
  if (tokens == 0 || d.position_rows.size() % tokens != 0)
    throw std::invalid_argument(fmt("audit: position_rows holds %zu values, not rows x %zu tokens",
                                    d.position_rows.size(), tokens));
  const std::size_t rows = d.position_rows.size() / tokens;
  for (std::size_t t = 0; t < tokens; ++t)
    if (d.position_rows[t] != d.positions[t])
      throw std::invalid_argument("audit: positions must equal position row 0 (the temporal/text row)");
  if (claimed.mrope == mrope_kind::none) {
    const std::vector<int> mm = text_tokens(d, false);
    if (!mm.empty())
      throw std::invalid_argument(fmt(
          "audit: the dump's positions are %zu rows x %zu tokens and %zu tokens have rows that differ: it looks "
          "multimodal (M-RoPE), but the claim is 1-D RoPE; set mrope (contiguous | interleaved) and mrope_section "
          "(config.json: rope_scaling {\"type\": \"mrope\", \"mrope_section\": [...]})",
          rows, tokens, mm.size()));
    return;
  }
  if (rows != static_cast<std::size_t>(claimed.position_rows()))
    throw std::invalid_argument(fmt("audit: the dump has %zu position rows, the M-RoPE claim (%s) has %d", rows,
                                    sections_text(claimed).c_str(), claimed.position_rows()));
}

dump text_rows(const dump& d, const rope_config& claimed) {
  dump out = d;
  out.position_rows.clear();
  for (int r = 0; r < claimed.position_rows(); ++r) out.position_rows.insert(out.position_rows.end(), d.positions.begin(), d.positions.end());
  return out;
}

std::vector<int> text_tokens(const dump& d, bool text) {
  std::vector<int> out;
  const std::size_t rows = row_count(d);
  for (int t = 0; t < d.tokens; ++t) {
    bool equal = true;
    for (std::size_t r = 1; r < rows; ++r) equal = equal && row_at(d, r, t) == row_at(d, 0, t);
    if (equal == text) out.push_back(t);
  }
  return out;
}

void diagnose_mrope(const mrope_frame& f, verdict& v) {
  const std::vector<int> text = text_tokens(f.d, true), mm = text_tokens(f.d, false);
  if (f.pass) {
    if (f.needed_angle_allowance) (void)text_findings(f, text, v);
    return;
  }
  std::vector<char> is_text(static_cast<std::size_t>(f.d.tokens), 0);
  for (int t : text) is_text[static_cast<std::size_t>(t)] = 1;
  const bool named_mm = !mm.empty() && structural(f, mm, is_text, v);
  const bool named_text = text_findings(f, text, v);
  if (named_mm || named_text) return;
  add(v, classes::unexplained,
      fmt("%zu multimodal tokens (rows differ) and %zu text tokens (rows equal): the text tokens %s; no permutation of "
          "the rows, no single row for every band and no other section split (contiguous or interleaved, fitted band "
          "by band) makes the dump pass",
          mm.size(), text.size(), text.empty() ? "are absent (the 1-D classes need them)" : "show no 1-D class"),
      0.5);
}

}  // namespace ropecheck::judge::detail
