// judge/src/judging.cpp — see judging.hpp; covered by tests/judge/judge_test.cpp. The allowance
// per element (judge::allowance, from error_model.hpp), for dtype T with u_T = 2^-digits(T):
//   angle    k u_A |p theta_i|   angles formed in A = fp32 (fp64 for float64 dumps, and for every
//            dtype in strict mode); only against the exact reference
//   cos/sin  3 u_T   libm cos/sin (< 1 ulp = 2u) and the multiply by af, or one cache rounding
//   rotation 2 u_T + 4 u_T^2   two products and a sum in T
//   store    u_T when T is a 16-bit type
#include "judging.hpp"
#include "ropecheck/judge/classes.hpp"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <exception>
#include <limits>
#include <mutex>
#include <numeric>
#include <optional>
#include <span>
#include <stdexcept>
#include <thread>
#include <vector>

#include "evidence.hpp"
#include "ropecheck/angle.hpp"
#include "ropecheck/mrope.hpp"
#include "ropecheck/rope.hpp"
#include "ropecheck/schedule.hpp"

namespace ropecheck::judge::detail {
namespace {

// One worker's share of the judging; merged in token order (ties keep the earlier token), so the
// verdict does not depend on the number of threads.
struct judge_acc {
  distance ex, hf;        // ex.worst_ratio/hf.worst_ratio: against each reference's own allowance
  double sel_abs = 0;     // largest |error| against the chosen reference
  bool needed_angle_allowance = false;
  std::int64_t elements = 0;
  std::int64_t non_finite = 0, first_non_finite_pos = 0;
  bool seen_non_finite = false;
  void note(distance& D, double rel, double ratio, double abs, std::int64_t p, int band) {
    if (rel > D.max_ulps) D.max_ulps = rel, D.max_abs = abs, D.at_position = p, D.at_band = band;
    if (ratio > D.worst_ratio) D.worst_ratio = ratio, D.worst_position = p, D.worst_band = band;
  }
  void saw_non_finite(std::int64_t p) {
    if (!seen_non_finite) seen_non_finite = true, first_non_finite_pos = p;
    ++non_finite;
  }
  void merge(const judge_acc& o) {
    auto m = [](distance& a, const distance& b) {
      if (b.max_ulps > a.max_ulps) a.max_ulps = b.max_ulps, a.max_abs = b.max_abs, a.at_position = b.at_position, a.at_band = b.at_band;
      if (b.worst_ratio > a.worst_ratio) a.worst_ratio = b.worst_ratio, a.worst_position = b.worst_position, a.worst_band = b.worst_band;
    };
    m(ex, o.ex);
    m(hf, o.hf);
    sel_abs = std::max(sel_abs, o.sel_abs);
    needed_angle_allowance = needed_angle_allowance || o.needed_angle_allowance;
    elements += o.elements;
    if (o.seen_non_finite && !seen_non_finite) first_non_finite_pos = o.first_non_finite_pos, seen_non_finite = true;
    non_finite += o.non_finite;
  }
};

// HF's fp32 inv_freq at this sequence length: the emulation, or the dump's own when it is within 2
// ulps of it in every band (torch's pow and glibc's powf differ by an ulp in some bands).
std::pair<std::vector<float>, std::string> hf_inv_freq(const judging_frame& f) {
  const int nb = f.claimed.bands();
  std::vector<float> inv = hf_frequencies_fp32(f.claimed, f.seq_len).inv_freq;
  if (static_cast<int>(inv.size()) != nb) throw std::invalid_argument("audit: HF schedule has the wrong band count");
  if (!f.opt.hf_inv_freq || static_cast<int>(f.opt.hf_inv_freq->size()) != nb)
    return {inv, "emulated (torch's fp32 steps with glibc powf)"};
  int differ = 0;
  bool close = true;
  for (int i = 0; i < nb; ++i) {
    const float a = (*f.opt.hf_inv_freq)[static_cast<std::size_t>(i)], b = inv[static_cast<std::size_t>(i)];
    if (a != b) ++differ;
    close = close && std::isfinite(a) && std::fabs(static_cast<double>(a) - b) <= 2 * std::ldexp(1.0, std::ilogb(b) - 23);
  }
  if (!close) return {inv, "emulated (the dump's inv_freq is more than 2 ulps from it in some band: not HF's)"};
  return {*f.opt.hf_inv_freq,
          fmt("the dump's own fp32 inv_freq (within 2 ulps of the emulation; differs in %d of %d bands)", differ, nb)};
}

// x and y read in the view's own storage: element j of the head starting at element o.
template <storage S>
struct stored_values {
  const void* data;
  [[nodiscard]] double operator()(std::size_t o, std::size_t j) const noexcept { return stored_value<S>(data, o + j); }
};
// Any storage, through a coordinate map (a transformed view, or x and y stored in different types).
struct mapped_values {
  stored_tensor t;
  const double* sign;  // nullptr: +1
  const int* src;      // nullptr: coordinate j itself
  [[nodiscard]] double operator()(std::size_t o, std::size_t j) const noexcept {
    const double v = t.at(o + (src ? static_cast<std::size_t>(src[j]) : j));
    return sign ? sign[j] * v : v;
  }
};

// The judging of a range of tokens, the reference once per (token, band) shared by all heads.
struct element_judge {
  const judging_frame& f;
  const std::vector<float>& hf_inv;
  const std::optional<ggml_angle>& ggml;
  std::vector<token_error>& per_token;
  rope_geometry geo;
  int nb;
  double af;
  long double af_l;
  double uT, epsT, tol_fixed;
  std::optional<double> flat;
  bool wide, use_ggml, fw_sel;
  std::vector<int> band_rows;  // M-RoPE: the claimed row of every band; empty for 1-D RoPE
  int rows = 1;

  void tokens(int t0, int t1, judge_acc& A, std::atomic<std::int64_t>* done) const;
  template <class X, class Y>
  void tokens(int t0, int t1, judge_acc& A, std::atomic<std::int64_t>* done, X xv, Y yv) const;
};

// The storage type chosen once per range: one instantiation of the element loop per type.
void element_judge::tokens(int t0, int t1, judge_acc& A, std::atomic<std::int64_t>* done) const {
  const dump_view& v = f.full;
  if (v.identity() && v.x.type == v.y.type) switch (v.x.type) {
      case storage::f32: return tokens(t0, t1, A, done, stored_values<storage::f32>{v.x.data}, stored_values<storage::f32>{v.y.data});
      case storage::bf16: return tokens(t0, t1, A, done, stored_values<storage::bf16>{v.x.data}, stored_values<storage::bf16>{v.y.data});
      case storage::f16: return tokens(t0, t1, A, done, stored_values<storage::f16>{v.x.data}, stored_values<storage::f16>{v.y.data});
      case storage::f64: return tokens(t0, t1, A, done, stored_values<storage::f64>{v.x.data}, stored_values<storage::f64>{v.y.data});
    }
  tokens(t0, t1, A, done, mapped_values{v.x, v.x_sign.empty() ? nullptr : v.x_sign.data(), nullptr},
         mapped_values{v.y, v.y_sign.empty() ? nullptr : v.y_sign.data(), v.y_src.empty() ? nullptr : v.y_src.data()});
}

template <class X, class Y>
void element_judge::tokens(int t0, int t1, judge_acc& A, std::atomic<std::int64_t>* done, X xv, Y yv) const {
  const dump_view& full = f.full;
  const auto hd = static_cast<std::size_t>(full.head_dim);
  const auto row = static_cast<std::size_t>(full.heads) * hd;
  // epsT and uT are powers of two: dividing by them and multiplying by their inverse round alike.
  const double inv_epsT = 1 / epsT, inv_uT = 1 / uT;
  std::vector<reference::dd> angles(static_cast<std::size_t>(nb));
  std::vector<reference::cos_sin_dd> cs(static_cast<std::size_t>(nb));
  std::vector<long double> hc(static_cast<std::size_t>(nb)), hs(static_cast<std::size_t>(nb));
  std::vector<double> hc_d(static_cast<std::size_t>(nb)), hs_d(static_cast<std::size_t>(nb));
  std::vector<double> tol_ex(static_cast<std::size_t>(nb));
  std::vector<float> fw_angles(static_cast<std::size_t>(nb));
  std::vector<std::int64_t> pb(static_cast<std::size_t>(nb));  // each band's position
  std::vector<std::pair<std::size_t, std::size_t>> pairs(static_cast<std::size_t>(nb));
  for (int i = 0; i < nb; ++i) {
    const auto [ia, ib] = geo.pair_of(i);
    pairs[static_cast<std::size_t>(i)] = {static_cast<std::size_t>(ia), static_cast<std::size_t>(ib)};
  }
  // M-RoPE: each row's values, copied into the bands that row rotates.
  std::vector<reference::dd> row_angles(band_rows.empty() ? 0 : static_cast<std::size_t>(nb));
  std::vector<reference::cos_sin_dd> row_cs(row_angles.size());
  std::vector<float> row_fw(row_angles.size());
  const auto tokens_n = static_cast<std::size_t>(full.tokens);
  // Chunks of about 4 MiB of x (in doubles' terms): after each, the view hears the tokens are read.
  const int chunk = static_cast<int>(std::clamp<std::size_t>((std::size_t{4} << 20) / (8 * std::max<std::size_t>(row, 1)), 1, 1 << 16));
  for (int c0 = t0; c0 < t1; c0 += chunk) {
    const int c1 = std::min(t1, c0 + chunk);
    for (int t = c0; t < c1; ++t) {
      const std::int64_t p = full.positions[static_cast<std::size_t>(t)];
      if (band_rows.empty()) {
        f.ref.all_bands(p, angles, cs);
        if (use_ggml) ggml->fill_angles(p, fw_angles);
        std::fill(pb.begin(), pb.end(), p);
      } else {
        for (int r = 0; r < rows; ++r) {
          const std::int64_t q = full.position_rows[static_cast<std::size_t>(r) * tokens_n + static_cast<std::size_t>(t)];
          f.ref.all_bands(q, row_angles, row_cs);
          if (use_ggml) ggml->fill_angles(q, row_fw);
          for (std::size_t b = 0; b < pb.size(); ++b)
            if (band_rows[b] == r) pb[b] = q, angles[b] = row_angles[b], cs[b] = row_cs[b], fw_angles[b] = row_fw[b];
        }
      }
      for (int i = 0; i < nb; ++i) {
        const auto b = static_cast<std::size_t>(i);
        if (full.allowance_positions.empty()) {
          tol_ex[b] = f.AL.angle_term(pb[b], i, std::fabs(angles[b].hi)) + tol_fixed;
        } else {  // evidence read from scores: the angles of both sides (judge::dump::allowance_positions)
          const std::int64_t pa = full.allowance_positions[static_cast<std::size_t>(t)];
          tol_ex[b] = f.AL.angle_term(pa, i, std::fabs(static_cast<double>(f.ref.angle(pa, i).hi))) + tol_fixed;
        }
        // The framework: the fp32 angle, then cos/sin of that exact number. x87 sincosl (error
        // ~2^-63, far below an ulp of any audited dtype; reference::cos_sin_of_angle, MPFR, agrees
        // and is tested to, but costs ~3 us a value: 6 s for a 1 GiB dump).
        const float a32 = use_ggml ? fw_angles[b] : static_cast<float>(pb[b]) * hf_inv[b];
        hc[b] = std::cos(static_cast<long double>(a32)), hs[b] = std::sin(static_cast<long double>(a32));
        hc_d[b] = static_cast<double>(hc[b]), hs_d[b] = static_cast<double>(hs[b]);
      }
      double tok_ulps = 0, tok_ratio = 0;  // this token's largest error and error/allowance
      for (int h = 0; h < full.heads; ++h) {
        const std::size_t o = full.layout.offset(t, h);
        for (int i = 0; i < nb; ++i) {
          const auto b = static_cast<std::size_t>(i);
          const auto [ia, ib] = pairs[b];
          const double xa = xv(o, ia), xb = xv(o, ib), ya = yv(o, ia), yb = yv(o, ib);
          double ea, eb, ha, hb;  // errors against the exact and the framework reference
          if (!wide) {
            const double c = cs[b].cos.hi, s = cs[b].sin.hi;
            ea = std::fabs(ya - af * (xa * c - xb * s));
            eb = std::fabs(yb - af * (xa * s + xb * c));
            const double c2 = hc_d[b], s2 = hs_d[b];
            ha = std::fabs(ya - af * (xa * c2 - xb * s2));
            hb = std::fabs(yb - af * (xa * s2 + xb * c2));
          } else {  // float64 dumps: reference arithmetic in long double
            const long double c = cs[b].cos.value(), s = cs[b].sin.value();
            const long double la = xa, lb = xb;
            ea = static_cast<double>(std::fabs(ya - af_l * (la * c - lb * s)));
            eb = static_cast<double>(std::fabs(yb - af_l * (la * s + lb * c)));
            ha = static_cast<double>(std::fabs(ya - af_l * (la * hc[b] - lb * hs[b])));
            hb = static_cast<double>(std::fabs(yb - af_l * (la * hs[b] + lb * hc[b])));
          }
          if (!std::isfinite(ya) || !std::isfinite(yb)) {
            A.saw_non_finite(pb[b]);
            ea = eb = ha = hb = std::numeric_limits<double>::infinity();
          }
          const double scale = af * (std::fabs(xa) + std::fabs(xb));
          const double e_ex = std::max(ea, eb), e_hf = std::max(ha, hb);
          const double r_ex = scale > 0 ? e_ex / scale : (e_ex == 0 ? 0.0 : std::numeric_limits<double>::infinity());
          const double r_hf = scale > 0 ? e_hf / scale : (e_hf == 0 ? 0.0 : std::numeric_limits<double>::infinity());
          const double t_ex = flat ? *flat : tol_ex[b], t_hf = flat ? *flat : tol_fixed;
          A.note(A.ex, r_ex * inv_epsT, r_ex / t_ex, e_ex, pb[b], i);
          A.note(A.hf, r_hf * inv_epsT, r_hf / t_hf, e_hf, pb[b], i);
          A.sel_abs = std::max(A.sel_abs, fw_sel ? e_hf : e_ex);
          if (!flat && !fw_sel && r_ex > tol_fixed) A.needed_angle_allowance = true;
          tok_ulps = std::max(tok_ulps, (fw_sel ? r_hf : r_ex) * inv_epsT);
          tok_ratio = std::max(tok_ratio, fw_sel ? r_hf / t_hf : r_ex / t_ex);
        }
        for (std::size_t j = static_cast<std::size_t>(f.claimed.rotary_dim); j < hd; ++j) {
          const double x = xv(o, j), y = yv(o, j);
          const double e = std::isfinite(y) ? std::fabs(y - x) : std::numeric_limits<double>::infinity();
          if (!std::isfinite(y)) A.saw_non_finite(p);
          const double scale = std::fabs(x);
          const double r = scale > 0 ? e / scale : (e == 0 ? 0.0 : std::numeric_limits<double>::infinity());
          A.note(A.ex, r * inv_epsT, r * inv_uT, e, p, -1);
          A.note(A.hf, r * inv_epsT, r * inv_uT, e, p, -1);
          A.sel_abs = std::max(A.sel_abs, e);
          tok_ulps = std::max(tok_ulps, r * inv_epsT);
          tok_ratio = std::max(tok_ratio, r * inv_uT);
        }
      }
      A.elements += static_cast<std::int64_t>(row);
      per_token[static_cast<std::size_t>(t)] = {p, tok_ulps, tok_ratio};  // each worker owns its tokens
      if (done) {
        const auto k = done->fetch_add(1, std::memory_order_relaxed) + 1;
        if (f.opt.progress && t0 == 0 && (k % 256 == 0 || k == full.tokens)) f.opt.progress(k, full.tokens);
      }
    }
    if (full.done_with) full.done_with(c0, c1);
  }
}

// Token ranges over the workers (the last range on this thread); the accumulators merged in order.
judge_acc run_workers(const element_judge& J, const judging_frame& f) {
  const int tokens = f.full.tokens;
  const unsigned hw = std::max(1u, std::thread::hardware_concurrency());
  const int workers = std::clamp(f.opt.threads > 0 ? f.opt.threads : static_cast<int>(hw), 1, std::max(1, tokens / 64));
  std::vector<judge_acc> accs(static_cast<std::size_t>(workers));
  std::atomic<std::int64_t> done{0};
  std::vector<std::thread> pool;
  std::exception_ptr failure;
  std::mutex failure_mutex;
  for (int w = 0; w < workers; ++w) {
    const int t0 = static_cast<int>(static_cast<std::int64_t>(tokens) * w / workers);
    const int t1 = static_cast<int>(static_cast<std::int64_t>(tokens) * (w + 1) / workers);
    auto job = [&, t0, t1, w] {
      try {
        J.tokens(t0, t1, accs[static_cast<std::size_t>(w)], &done);
      } catch (...) {
        const std::lock_guard lock(failure_mutex);
        if (!failure) failure = std::current_exception();
      }
    };
    if (w + 1 == workers) job();
    else pool.emplace_back(job);
  }
  for (auto& th : pool) th.join();
  if (failure) std::rethrow_exception(failure);
  judge_acc all;
  for (const auto& a : accs) all.merge(a);
  if (f.opt.progress) f.opt.progress(tokens, tokens);
  return all;
}

// The allowance at the element with the largest error, and the sentence saying what it is made of.
void state_tolerance(const judging_frame& f, const element_judge& J, verdict& v) {
  const audit_options& opt = f.opt;
  const judge::dtype_info T = f.AL.dtype();
  const std::string& dtype = f.full.dtype;
  const distance& D = J.fw_sel ? v.from_framework : v.from_exact;
  double tol_at = J.flat ? *J.flat : J.tol_fixed;
  if (!J.flat && D.at_band >= 0 && opt.reference == reference_kind::exact)
    tol_at += f.AL.angle_term(D.at_position, D.at_band,
                              std::fabs(static_cast<double>(f.ref.angle(D.at_position, D.at_band).value())));
  if (D.at_band < 0) tol_at = J.uT;
  v.tolerance = tol_at / J.epsT;
  const std::string where = D.worst_band >= 0 ? fmt("band %d", D.worst_band) : std::string("a pass-through coordinate");
  const auto worst_pos = static_cast<long long>(D.worst_position);
  if (J.flat) {
    v.tolerance_reason = fmt("%s dump against the %s reference: flat allowance %.4g ulps of %s (given with "
                             "--tolerance-ulps, replacing the derived one) relative to af(|x_a|+|x_b|); the largest "
                             "error/allowance is %.3g, at position %lld %s",
                             dtype.c_str(), J.use_ggml ? "ggml fp32-angle" : J.fw_sel ? "HF fp32-angle" : "exact",
                             *opt.tolerance_ulps, dtype.c_str(), D.worst_ratio, worst_pos, where.c_str());
  } else if (J.fw_sel) {
    v.tolerance_reason = fmt("%s dump against %s convention computed exactly (%s, exact cos/sin): per element allowance = cos/sin rounding 3u + rotation "
                             "arithmetic 2u%s = %.3g ulps of %s, relative to af(|x_a|+|x_b|); the largest "
                             "error/allowance is %.3g, at position %lld %s",
                             dtype.c_str(), J.use_ggml ? "ggml's" : "HF's",
                             J.use_ggml ? "fp32 chain of products p theta_scale^i" : "fp32 inv_freq, fp32 product p*inv_freq",
                             T.narrow16 ? " + store u" : "", J.tol_fixed / J.epsT, dtype.c_str(), D.worst_ratio,
                             worst_pos, where.c_str());
  } else {
    v.tolerance_reason = fmt("%s dump against exact mathematics: per element allowance = %s angle formation "
                             "(k u |p theta|, k = %.3g..%.3g) + cos/sin rounding 3u + rotation arithmetic 2u%s, "
                             "relative to af(|x_a|+|x_b|) (pass-through: u |x_j|), in ulps of %s; the largest "
                             "error/allowance is %.3g, at position %lld %s",
                             dtype.c_str(), f.AL.fp32_angles() ? "fp32" : "fp64", f.AL.k_min() + 1, f.AL.k_max() + 2,
                             T.narrow16 ? " + store u" : "", dtype.c_str(), D.worst_ratio, worst_pos, where.c_str());
  }
}

}  // namespace

judgement judge_elements(const judging_frame& f, verdict& v) {
  const audit_options& opt = f.opt;
  const judge::dtype_info T = f.AL.dtype();
  const bool use_ggml = opt.reference == reference_kind::ggml;
  std::optional<ggml_angle> ggml;
  if (use_ggml) ggml.emplace(f.claimed, f.seq_len);
  auto [hf_inv, hf_source] = hf_inv_freq(f);
  std::vector<token_error> per_token(static_cast<std::size_t>(f.full.tokens));
  const element_judge J{f,
                        hf_inv,
                        ggml,
                        per_token,
                        rope_geometry::of(f.claimed),
                        f.claimed.bands(),
                        static_cast<double>(f.ref.attention_factor().value()),
                        f.ref.attention_factor().value(),
                        T.u(),
                        T.eps(),
                        f.AL.fixed(),
                        opt.tolerance_ulps ? std::optional<double>(*opt.tolerance_ulps * T.eps()) : std::nullopt,
                        T.digits >= 53,
                        use_ggml,
                        opt.reference != reference_kind::exact,
                        f.claimed.mrope == mrope_kind::none ? std::vector<int>{} : mrope_band_rows_of(f.claimed),
                        f.claimed.position_rows()};
  const judge_acc A = run_workers(J, f);

  v.reference = opt.reference;
  v.framework = use_ggml ? "ggml" : "hf";
  v.hf_inv_freq_source = use_ggml ? "ggml's fp32 chain theta_scale^i (powf(base, -2/d))" : hf_source;
  v.from_exact = A.ex;
  v.from_framework = A.hf;
  v.elements = A.elements;
  const distance& D = J.fw_sel ? A.hf : A.ex;
  v.worst_ratio = D.worst_ratio;
  v.pass = D.worst_ratio <= 1.0 && A.non_finite == 0;
  v.max_error_ulps = D.max_ulps;
  v.max_error_abs = A.sel_abs;
  state_tolerance(f, J, v);
  v.per_position = std::move(per_token);
  if (A.non_finite > 0)
    add(v, classes::non_finite,
        fmt("the output holds %lld NaN or infinite values (first at position %lld) where the input is finite",
            static_cast<long long>(A.non_finite), static_cast<long long>(A.first_non_finite_pos)),
        0.99);
  return {A.needed_angle_allowance, A.non_finite};
}

void score_violation(const dump& d, const rope_config& claimed, const reference::rope_reference& ref, verdict& v) {
  const std::vector<int> order = by_position(d);
  const auto hd = static_cast<std::size_t>(d.head_dim);
  const long double af_l = ref.attention_factor().value();
  const int hs = std::min(d.heads, 4);
  std::vector<reference::dd> rx(hd);
  // M-RoPE: R(n - m) turns each band by the difference of its own row's positions.
  const bool rows_given = claimed.mrope != mrope_kind::none && !d.position_rows.empty();
  const auto nrows = static_cast<std::size_t>(claimed.position_rows());
  std::vector<std::int64_t> diff(nrows);
  auto check_pair = [&](int m, int n) {
    const std::int64_t pm = d.positions[static_cast<std::size_t>(m)], pn = d.positions[static_cast<std::size_t>(n)];
    for (std::size_t r = 0; r < nrows; ++r)
      diff[r] = rows_given ? d.position_rows[r * static_cast<std::size_t>(d.tokens) + static_cast<std::size_t>(n)] -
                                 d.position_rows[r * static_cast<std::size_t>(d.tokens) + static_cast<std::size_t>(m)]
                           : pn - pm;
    for (int h = 0; h < hs; ++h) {
      const std::size_t om = (static_cast<std::size_t>(m) * d.heads + h) * hd;
      const std::size_t on = (static_cast<std::size_t>(n) * d.heads + h) * hd;
      if (claimed.mrope != mrope_kind::none)  // af R(n - m) x_n
        ref.rotate_rows(diff, std::span<const double>(d.x.data() + on, hd), rx);
      else
        ref.rotate(pn - pm, std::span<const double>(d.x.data() + on, hd), rx);
      long double got = 0, want = 0, nm = 0, nn = 0;
      for (std::size_t j = 0; j < static_cast<std::size_t>(claimed.rotary_dim); ++j) {
        got += static_cast<long double>(d.y[om + j]) * d.y[on + j];
        want += static_cast<long double>(d.x[om + j]) * rx[j].value() * af_l;
        nm += static_cast<long double>(d.x[om + j]) * d.x[om + j];
        nn += static_cast<long double>(d.x[on + j]) * d.x[on + j];
      }
      const long double scale = af_l * af_l * std::sqrt(nm * nn);
      const double viol = scale > 0 ? static_cast<double>(std::fabs(got - want) / scale) : 0.0;
      if (!(viol <= v.score_violation)) {  // NaN propagates as the worst
        v.score_violation = std::isnan(viol) ? std::numeric_limits<double>::infinity() : viol;
        v.score_violation_m = pm, v.score_violation_n = pn;
      }
    }
  };
  for (std::size_t k = 1; k < order.size(); ++k) {
    check_pair(order[0], order[k]);
    if (k >= 2) check_pair(order[k - 1], order[k]);
  }
}

bool not_framework_convention(const judging_frame& f, const judgement& j, verdict& v) {
  if (f.opt.reference == reference_kind::exact || !(v.from_exact.worst_ratio <= 1.0) || j.non_finite != 0) return false;
  const bool use_ggml = f.opt.reference == reference_kind::ggml;
  add(v, use_ggml ? classes::not_ggml_convention : classes::not_hf_convention,
      fmt("the output follows exact angles (%.3g ulps from exact mathematics, within that allowance) rather than "
          "%s fp32 angles (%.3g ulps from them, largest at position %lld band %d): correct mathematics, but not "
          "%s convention",
          v.from_exact.max_ulps, use_ggml ? "ggml's" : "HF's", v.from_framework.max_ulps,
          static_cast<long long>(v.from_framework.at_position), v.from_framework.at_band, use_ggml ? "ggml's" : "HF's"),
      0.9);
  return true;
}

}  // namespace ropecheck::judge::detail
