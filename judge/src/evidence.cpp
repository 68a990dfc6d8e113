// judge/src/evidence.cpp — see evidence.hpp. Covered through the passes that reason from it
// (see evidence.hpp).
#include "evidence.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "ropecheck/scalar.hpp"

namespace ropecheck::judge::detail {

double wrap(double x) {
  double r = std::remainder(x, 2 * kPi);
  if (r <= -kPi) r += 2 * kPi;
  return r;
}

double median(std::vector<double> v) {
  if (v.empty()) return std::numeric_limits<double>::quiet_NaN();
  const auto mid = v.begin() + static_cast<std::ptrdiff_t>(v.size() / 2);
  std::nth_element(v.begin(), mid, v.end());
  return *mid;
}

double round_to_digits(double v, int digits) {
  if (v == 0 || !std::isfinite(v)) return v;
  if (digits == 8) return static_cast<double>(static_cast<float>(scalar_traits<bfloat16>::narrow(v)));
  if (digits == 11) return static_cast<double>(static_cast<float>(scalar_traits<float16>::narrow(v)));
  if (digits == 24) return static_cast<double>(static_cast<float>(v));
  return v;
}
const char* grid_name(int digits) { return digits == 8 ? "bfloat16" : "float16"; }
double grid_distance(double v, int digits) {
  if (v == 0) return 0;
  const double ulp = std::ldexp(1.0, std::ilogb(v) - (digits - 1));
  return std::fabs(v - round_to_digits(v, digits)) / ulp;
}

void add(verdict& v, std::string cls, std::string sentence, double conf) {
  v.findings.push_back({std::move(cls), std::move(sentence), conf});
}

// Complex gain per (token, band) for a pairing; bands = rd / 2.
std::vector<cell> gains(const dump& d, layout lay, int rd) {
  const rope_geometry geo{d.head_dim, rd, lay};
  const int nb = rd / 2;
  std::vector<cell> out(static_cast<std::size_t>(d.tokens) * nb);
  const auto hd = static_cast<std::size_t>(d.head_dim);
  for (int t = 0; t < d.tokens; ++t)
    for (int i = 0; i < nb; ++i) {
      const auto [ia, ib] = geo.pair_of(i);
      cplx num{0, 0};
      double den = 0, ny = 0;
      auto z = [&](const std::vector<double>& v, int h) {
        const std::size_t o = (static_cast<std::size_t>(t) * d.heads + h) * hd;
        return cplx{v[o + ia], v[o + ib]};
      };
      for (int h = 0; h < d.heads; ++h) {
        const cplx zx = z(d.x, h), zy = z(d.y, h);
        num += std::conj(zx) * zy;
        den += std::norm(zx);
        ny += std::norm(zy);
      }
      cell& c = out[static_cast<std::size_t>(t) * nb + i];
      if (!(den > 0) || !std::isfinite(ny)) continue;
      c.g = num / den;
      double r = 0;
      for (int h = 0; h < d.heads; ++h) r += std::norm(z(d.y, h) - c.g * z(d.x, h));
      c.resid = ny > 0 ? r / ny : 0;
      c.ok = true;
    }
  return out;
}

std::vector<double> thetas(const reference::rope_reference& r) {
  std::vector<double> th(static_cast<std::size_t>(r.bands()));
  for (int i = 0; i < r.bands(); ++i) th[static_cast<std::size_t>(i)] = static_cast<double>(r.inv_freq(i).value());
  return th;
}

implied implied_position(const std::vector<double>& a, const std::vector<double>& w, const std::vector<double>& th,
                         double pmax) {
  std::vector<int> order;
  for (int i = 0; i < static_cast<int>(th.size()); ++i)
    if (th[static_cast<std::size_t>(i)] > 0 && w[static_cast<std::size_t>(i)] > 0) order.push_back(i);
  implied best;
  if (order.empty()) return best;
  std::sort(order.begin(), order.end(), [&](int l, int r) { return th[static_cast<std::size_t>(l)] < th[static_cast<std::size_t>(r)]; });
  const auto bs = static_cast<std::size_t>(order.front());
  const double period = 2 * kPi / th[bs];
  const long kmax = std::min<long>(static_cast<long>(std::ceil(pmax / period)) + 1, 20000);
  for (long k = -kmax; k <= kmax; ++k) {
    double p = (a[bs] + 2 * kPi * static_cast<double>(k)) / th[bs];
    if (std::fabs(p) > pmax + period) continue;
    for (int i : order) p += wrap(a[static_cast<std::size_t>(i)] - p * th[static_cast<std::size_t>(i)]) / th[static_cast<std::size_t>(i)];
    double s = 0, sw = 0;
    for (int i : order) {
      const double r = wrap(a[static_cast<std::size_t>(i)] - p * th[static_cast<std::size_t>(i)]);
      s += w[static_cast<std::size_t>(i)] * r * r;
      sw += w[static_cast<std::size_t>(i)];
    }
    const double rms = std::sqrt(s / sw);
    if (rms < best.resid) best = {p, rms};
  }
  return best;
}

line fit_band(const std::vector<std::pair<double, double>>& pts_sorted, double slope0) {
  line L;
  L.slope = slope0;
  double n = 0, sp = 0, sf = 0, spp = 0, spf = 0;
  std::vector<std::pair<double, double>> unwrapped;
  for (const auto& [p, a] : pts_sorted) {
    const double pred = L.slope * p + L.intercept;
    const double phi = pred + wrap(a - pred);
    unwrapped.emplace_back(p, phi);
    n += 1, sp += p, sf += phi, spp += p * p, spf += p * phi;
    const double det = n * spp - sp * sp;
    if (n >= 2 && det > 0) {
      L.slope = (n * spf - sp * sf) / det;
      L.intercept = (sf - L.slope * sp) / n;
    } else {
      L.intercept = phi - L.slope * p;
    }
  }
  double s = 0;
  for (const auto& [p, phi] : unwrapped) s += (phi - L.slope * p - L.intercept) * (phi - L.slope * p - L.intercept);
  L.rms = unwrapped.empty() ? 0 : std::sqrt(s / static_cast<double>(unwrapped.size()));
  L.ok = n >= 2;
  return L;
}

std::vector<int> diagnosis_subset(const dump& d, int limit) {
  std::vector<int> order(static_cast<std::size_t>(d.tokens));
  std::iota(order.begin(), order.end(), 0);
  if (d.tokens <= limit) return order;
  std::stable_sort(order.begin(), order.end(), [&](int l, int r) {
    return d.positions[static_cast<std::size_t>(l)] < d.positions[static_cast<std::size_t>(r)];
  });
  constexpr std::size_t smallest = kDiagnosisSmallest;  // limit >= it (check_dump)
  std::vector<int> pick(order.begin(), order.begin() + smallest);
  const std::size_t rest = order.size() - smallest, want = static_cast<std::size_t>(limit) - smallest;
  for (std::size_t k = 0; k < want; ++k) pick.push_back(order[smallest + k * rest / want]);
  std::sort(pick.begin(), pick.end());
  pick.erase(std::unique(pick.begin(), pick.end()), pick.end());
  return pick;
}

std::vector<int> by_position(const dump& d) {
  std::vector<int> order(static_cast<std::size_t>(d.tokens));
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int l, int r) {
    return d.positions[static_cast<std::size_t>(l)] < d.positions[static_cast<std::size_t>(r)];
  });
  return order;
}

}  // namespace ropecheck::judge::detail
