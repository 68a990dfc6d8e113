// judge/src/pass_heads.cpp — the evidence per head: which heads are rotated right and which are not.
//
// A kernel whose head loop is wrong (a heads stride bug: num_key_value_heads for the query's heads, a
// loop that runs to 1) rotates some heads and copies the others, leaves them unwritten (the caller's
// zeros), or rotates a head from another head's input. The rigid fit over heads (evidence.cpp `gains`)
// mixes such heads into one gain per (token, band) and explains nothing; so, on a failing 1-D dump
// with >= 2 heads, each head of the diagnosis subset is judged alone, in the claim's frame (judging.cpp
// judge_in_frame: the claim's allowance, reference and sequence length), and put in one state:
//   right       it passes
//   copied      it fails and every rotated coordinate is its input (|y - x| <= u_T |x|: a copy, or a
//               store of one, in the dump dtype; a correct head fails only far beyond u_T)
//   unwritten   it fails and every rotated coordinate is exactly 0 (the caller's zeroed buffer)
//   other_head  it fails, and passes with another head's input in place of its own (y_h = R(p) x_h')
//   wrong       it fails otherwise (rotated, wrongly: the rest of the diagnosis says how)
// heads_wrong is named unless every head is in the same state among copied / unwritten / wrong: a bug
// every head shares (a wrong base in all of them, nothing written at all) is the other passes' to name.
// Covered by tests/judge/pass_heads_test.cpp.
#include <algorithm>
#include <cmath>
#include <string>

#include "judging.hpp"
#include "ropecheck/rope.hpp"
#include "ropecheck/judge/classes.hpp"
#include "passes.hpp"

namespace ropecheck::judge::detail {
namespace {

// y of head `hy` against x of head `hx` (the same head for its own judgement), as a one-head dump.
dump one_head(const dump& d, int hx, int hy) {
  dump o;
  o.positions = d.positions;
  o.position_rows = d.position_rows;
  o.tokens = d.tokens, o.heads = 1, o.head_dim = d.head_dim;
  o.dtype = d.dtype;
  const auto hd = static_cast<std::size_t>(d.head_dim);
  for (int t = 0; t < d.tokens; ++t) {
    const auto base = static_cast<std::size_t>(t) * static_cast<std::size_t>(d.heads) * hd;
    const auto ox = static_cast<std::ptrdiff_t>(base + static_cast<std::size_t>(hx) * hd);
    const auto oy = static_cast<std::ptrdiff_t>(base + static_cast<std::size_t>(hy) * hd);
    o.x.insert(o.x.end(), d.x.begin() + ox, d.x.begin() + ox + static_cast<std::ptrdiff_t>(hd));
    o.y.insert(o.y.end(), d.y.begin() + oy, d.y.begin() + oy + static_cast<std::ptrdiff_t>(hd));
  }
  return o;
}

// Every rotated coordinate of head h satisfies pred(x, y).
template <class Pred>
bool every_rotated(const context& c, int h, Pred pred) {
  const dump& d = c.d;
  const auto hd = static_cast<std::size_t>(d.head_dim);
  const auto rd = static_cast<std::size_t>(std::min(c.claimed.rotary_dim, d.head_dim));
  for (int t = 0; t < d.tokens; ++t) {
    const auto o = (static_cast<std::size_t>(t) * static_cast<std::size_t>(d.heads) + static_cast<std::size_t>(h)) * hd;
    for (std::size_t j = 0; j < rd; ++j)
      if (!pred(d.x[o + j], d.y[o + j])) return false;
  }
  return true;
}

// A rotation keeps each pair's length (times the attention factor): y_h can be R(p) x_s only if every pair of
// the first 8 tokens agrees in length (pair_lengths_agree, passes.hpp). A cheap test before judging head h
// against head s's input, which costs a judgement.
bool norms_match(const context& c, int s, int h) {
  const dump& d = c.d;
  const auto hd = static_cast<std::size_t>(d.head_dim);
  const rope_geometry g = rope_geometry::of(c.claimed);
  for (int t = 0; t < std::min(d.tokens, 8); ++t) {
    const auto row = static_cast<std::size_t>(t) * static_cast<std::size_t>(d.heads) * hd;
    const auto xs = row + static_cast<std::size_t>(s) * hd, yh = row + static_cast<std::size_t>(h) * hd;
    for (int i = 0; i < g.bands(); ++i) {
      const auto [a, b] = g.pair_of(i);
      const double nx = c.af * std::hypot(d.x[xs + static_cast<std::size_t>(a)], d.x[xs + static_cast<std::size_t>(b)]);
      const double ny = std::hypot(d.y[yh + static_cast<std::size_t>(a)], d.y[yh + static_cast<std::size_t>(b)]);
      if (!pair_lengths_agree(ny, nx)) return false;
    }
  }
  return true;
}

head_judgement judge_head(const context& c, const judging_frame& jf, int h) {
  head_judgement out;
  const verdict own = judge_in_frame(jf, one_head(c.d, h, h));
  out.worst_ratio = own.worst_ratio;
  if (own.pass) return out;  // right
  const double u = c.uT;
  if (every_rotated(c, h, [u](double x, double y) { return std::fabs(y - x) <= u * std::fabs(x); })) {
    out.state = head_state::copied;
  } else if (every_rotated(c, h, [](double, double y) { return y == 0; })) {
    out.state = head_state::unwritten;
  } else {
    out.state = head_state::wrong;
    for (int s = 0; s < c.d.heads; ++s)
      if (s != h && norms_match(c, s, h) && judge_in_frame(jf, one_head(c.d, s, h)).pass) {
        out.state = head_state::other_head, out.source = s;
        break;
      }
  }
  return out;
}

}  // namespace

bool pair_lengths_agree(double output_length, double rotated_input_length) {
  return std::fabs(output_length - rotated_input_length) <= kPairLengthSlack * rotated_input_length;
}

std::string head_list(const std::vector<int>& heads) {
  std::string s;
  for (std::size_t k = 0; k < heads.size();) {
    std::size_t e = k;
    while (e + 1 < heads.size() && heads[e + 1] == heads[e] + 1) ++e;
    if (!s.empty()) s += ", ";
    s += e == k ? std::to_string(heads[k]) : fmt("%d..%d", heads[k], heads[e]);
    k = e + 1;
  }
  return (heads.size() == 1 ? "head " : "heads ") + s;
}

bool heads_differ(const std::vector<head_judgement>& heads) {
  if (heads.size() < 2) return false;
  const head_state s0 = heads.front().state;
  const bool same = std::all_of(heads.begin(), heads.end(), [s0](const head_judgement& j) { return j.state == s0; });
  // All right cannot happen on a failing subset; all another head's (a permutation of heads) is a heads bug.
  return !same || s0 == head_state::other_head;
}

dump heads_of(const dump& d, const std::vector<int>& heads) {
  dump o;
  o.positions = d.positions;
  o.position_rows = d.position_rows;
  o.tokens = d.tokens, o.heads = static_cast<int>(heads.size()), o.head_dim = d.head_dim;
  o.dtype = d.dtype;
  const auto hd = static_cast<std::ptrdiff_t>(d.head_dim);
  for (int t = 0; t < d.tokens; ++t)
    for (int h : heads) {
      const auto off = (static_cast<std::ptrdiff_t>(t) * d.heads + h) * hd;
      o.x.insert(o.x.end(), d.x.begin() + off, d.x.begin() + off + hd);
      o.y.insert(o.y.end(), d.y.begin() + off, d.y.begin() + off + hd);
    }
  return o;
}

heads_evidence pass_heads(const context& c, const judging_frame& jf) {
  heads_evidence H;
  if (c.d.heads < 2) return H;
  for (int h = 0; h < c.d.heads; ++h) H.heads.push_back(judge_head(c, jf, h));
  if (!heads_differ(H.heads)) return H;
  H.named = true;
  std::vector<int> right, copied, unwritten;
  double right_worst = 0, wrong_worst = 0;
  std::string others;
  for (int h = 0; h < c.d.heads; ++h) {
    const head_judgement& j = H.heads[static_cast<std::size_t>(h)];
    switch (j.state) {
      case head_state::right: right.push_back(h), right_worst = std::max(right_worst, j.worst_ratio); break;
      case head_state::copied: copied.push_back(h); break;
      case head_state::unwritten: unwritten.push_back(h); break;
      case head_state::wrong: H.wrong.push_back(h), wrong_worst = std::max(wrong_worst, j.worst_ratio); break;
      case head_state::other_head:
        others += fmt("%shead %d is rotated from head %d's input (y_%d = R(p) x_%d)", others.empty() ? "" : "; ", h,
                      j.source, h, j.source);
        break;
    }
  }
  const int n = c.d.heads;
  std::string s;
  auto part = [&s](const std::string& p) { s += (s.empty() ? "" : "; ") + p; };
  if (!copied.empty()) part(fmt("%s of %d %s not rotated: their outputs equal their inputs", head_list(copied).c_str(), n, copied.size() == 1 ? "is" : "are"));
  if (!unwritten.empty()) part(fmt("%s of %d %s not written: their outputs are zero", head_list(unwritten).c_str(), n, unwritten.size() == 1 ? "is" : "are"));
  if (!others.empty()) part(others);
  if (!H.wrong.empty())
    part(fmt("%s of %d %s rotated wrong (worst error/allowance %.3g; the findings below are theirs)",
             head_list(H.wrong).c_str(), n, H.wrong.size() == 1 ? "is" : "are", wrong_worst));
  s += right.empty() ? " (no head rotated right)"
                     : fmt(" (%s rotated right, worst error/allowance %.2g)", head_list(right).c_str(), right_worst);
  add(c.v, classes::heads_wrong, s, kHeadsWrongConfidence);
  return H;
}

}  // namespace ropecheck::judge::detail
