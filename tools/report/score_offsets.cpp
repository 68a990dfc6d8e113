// tools/report/score_offsets.cpp — see score_offsets.hpp.
#include "score_offsets.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>
#include <map>
#include <vector>

#include "engine.hpp"
#include "sweep/measure.hpp"

namespace ropecheck::report {
namespace {

constexpr int query_positions = 48;
constexpr std::int64_t near_offsets[] = {1, 3, 16, 255};

// The bucket of d: 0 for d = 0, else sign(d) (1 + floor(log2 |d|)).
int bucket_of(std::int64_t d) {
  if (d == 0) return 0;
  const int k = static_cast<int>(std::bit_width(static_cast<std::uint64_t>(d < 0 ? -d : d)));  // |d| in [2^(k-1), 2^k)
  return d < 0 ? -k : k;
}

std::int64_t bucket_lo(int b) {
  if (b == 0) return 0;
  const std::int64_t a = std::int64_t{1} << (std::abs(b) - 1);
  return b > 0 ? a : -(2 * a - 1);
}
std::int64_t bucket_hi(int b) {
  if (b == 0) return 0;
  const std::int64_t a = std::int64_t{1} << (std::abs(b) - 1);
  return b > 0 ? 2 * a - 1 : -a;
}

}  // namespace

std::vector<std::int64_t> score_query_positions(std::int64_t max_position) {
  const std::vector<std::int64_t> sweep = sweep_positions(max_position);
  std::vector<std::int64_t> out{0, max_position};
  const double top = std::log2(static_cast<double>(max_position) + 1);
  for (int i = 1; i + 1 < query_positions; ++i) {
    const double target = std::exp2(top * i / (query_positions - 1)) - 1;
    // the sweep position nearest the log-spaced target
    const auto it = std::lower_bound(sweep.begin(), sweep.end(), static_cast<std::int64_t>(target));
    std::int64_t p = it == sweep.end() ? sweep.back() : *it;
    if (it != sweep.begin() && it != sweep.end() && target - static_cast<double>(*(it - 1)) < static_cast<double>(*it) - target)
      p = *(it - 1);
    out.push_back(std::min(p, max_position));
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

score_pairs exact_score_pairs(const reference::rope_reference& ref, std::int64_t max_position,
                              std::span<const double> q, std::span<const double> k) {
  const rope_config& cfg = ref.config();
  const auto rd = static_cast<std::size_t>(cfg.rotary_dim);
  const long double af = ref.attention_factor().value();
  score_pairs sp;
  const std::vector<std::int64_t> qp = score_query_positions(max_position);
  for (const std::int64_t m : qp) {
    std::vector<std::int64_t> keys = qp;
    for (const std::int64_t d : near_offsets)
      for (const std::int64_t n : {m - d, m + d})
        if (n >= 0 && n <= max_position) keys.push_back(n);
    std::sort(keys.begin(), keys.end());
    keys.erase(std::unique(keys.begin(), keys.end()), keys.end());
    for (const std::int64_t n : keys) sp.pairs.emplace_back(m, n);
  }
  long double nq = 0, nk = 0;
  for (std::size_t j = 0; j < rd; ++j) {
    nq += static_cast<long double>(q[j]) * q[j];
    nk += static_cast<long double>(k[j]) * k[j];
  }
  sp.norm = af * af * std::sqrt(nq * nk);
  // One reference rotation per distinct offset n - m: af <q, R(n - m) k> (the reference's R carries af).
  std::map<std::int64_t, long double> by_offset;
  std::vector<reference::dd> rk(k.size());
  sp.exact.reserve(sp.pairs.size());
  for (const auto& [m, n] : sp.pairs) {
    auto [it, fresh] = by_offset.try_emplace(n - m, 0.0L);
    if (fresh) {
      ref.rotate(n - m, k, rk);
      long double s = 0;
      for (std::size_t j = 0; j < rd; ++j) s += static_cast<long double>(q[j]) * rk[j].value();
      it->second = af * s;
    }
    sp.exact.push_back(it->second);
  }
  return sp;
}

std::vector<score_offset_row> score_by_offset(const sweep::detail::runner& impl, const score_pairs& sp,
                                              const rope_config& cfg, std::span<const double> q,
                                              std::span<const double> k) {
  const auto hd = static_cast<std::size_t>(cfg.head_dim), rd = static_cast<std::size_t>(cfg.rotary_dim);
  std::map<std::int64_t, std::vector<long double>> rq, rk;  // the implementation's R~_m q, R~_n k
  auto rotated = [&](std::map<std::int64_t, std::vector<long double>>& cache, std::span<const double> x,
                     std::int64_t p) -> const std::vector<long double>& {
    auto [it, fresh] = cache.try_emplace(p);
    if (fresh) {
      it->second.resize(hd);
      impl.rotate_at(p, x, it->second);
    }
    return it->second;
  };
  struct acc {
    std::int64_t pairs = 0;
    long double sum2 = 0;
    double max = 0;
    std::int64_t m = 0, n = 0;
  };
  std::map<int, acc> buckets;
  for (std::size_t i = 0; i < sp.pairs.size(); ++i) {
    const auto [m, n] = sp.pairs[i];
    const auto& y = rotated(rq, q, m);
    const auto& z = rotated(rk, k, n);
    long double s = 0;
    for (std::size_t j = 0; j < rd; ++j) s += y[j] * z[j];
    const long double e = std::fabs(s - sp.exact[i]) / sp.norm;
    const double v = std::isnan(e) ? std::numeric_limits<double>::infinity() : static_cast<double>(e);
    acc& a = buckets[bucket_of(m - n)];
    ++a.pairs;
    a.sum2 += static_cast<long double>(v) * v;
    if (a.pairs == 1 || v > a.max) a.max = v, a.m = m, a.n = n;
  }
  std::vector<score_offset_row> rows;
  for (const auto& [b, a] : buckets)  // std::map: most negative bucket first
    rows.push_back({bucket_lo(b), bucket_hi(b), a.pairs, a.max,
                    static_cast<double>(std::sqrt(a.sum2 / static_cast<long double>(a.pairs))), a.m, a.n});
  return rows;
}

}  // namespace ropecheck::report
