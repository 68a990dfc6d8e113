// tools/certify/certificate.cpp — see certificate.hpp for the format and the rules.
#include "certificate.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <set>
#include <stdexcept>
#include <string>

#include "bound.hpp"
#include "sweep/config_to_json.hpp"
#include "implementations.hpp"
#include "ropecheck/reference/reference.hpp"

namespace ropecheck::certify {
namespace {

using ojson = nlohmann::ordered_json;
constexpr const char* format_name = "ropecheck-certificate";
constexpr int format_version = 1;
constexpr double inf = std::numeric_limits<double>::infinity();

// ---------------------------------------------------------------------------------------------
// Writing.
ojson number(double v) { return std::isfinite(v) ? ojson(v) : ojson("inf"); }
ojson pos_json(std::int64_t p) { return p < 0 ? ojson(nullptr) : ojson(p); }

ojson inputs_json(const certificate_inputs& in) {
  ojson j;
  j["config_name"] = in.config_name;
  j["config"] = sweep::config_to_json(in.config);
  j["config_notes"] = in.config_notes;
  ojson impls = ojson::array();
  for (const auto& i : in.implementations)
    impls.push_back({{"name", i.name}, {"description", i.description}, {"dtype", i.dtype}, {"source", i.source}});
  j["implementations"] = std::move(impls);
  j["max_position"] = in.max_position;
  j["seq_len"] = in.seq_len;
  j["angle_threshold_rad"] = in.angle_threshold_rad;
  j["position_threshold_tokens"] = in.position_threshold_tokens;
  j["ropecheck_version"] = in.ropecheck_version;
  j["reference"] = in.reference;
  j["allowance"] = in.allowance;
  return j;
}

std::string inputs_hash(const ojson& inputs) { return sha256_hex(inputs.dump()); }

ojson band_json(int band, double theta, const band_stats& s) {
  ojson j;
  j["band"] = band;
  j["inv_freq"] = theta;
  j["worst_angle_rad"] = number(s.angle.value);
  j["worst_angle_position"] = pos_json(s.angle.position);
  j["worst_pair_error"] = number(s.pair.value);
  j["worst_pair_error_position"] = pos_json(s.pair.position);
  j["worst_ratio_to_allowance"] = number(s.ratio.value);
  j["worst_ratio_position"] = pos_json(s.ratio.position);
  j["first_angle_over_threshold"] = pos_json(s.first_angle_over);
  j["first_position_error_over_threshold"] = pos_json(s.first_tokens_over);
  j["first_equal_to_next"] = pos_json(s.first_equal_next);
  return j;
}

// The frequencies the certificate reports (and tokens are measured in): the reference's.
std::vector<double> thetas(const certificate_inputs& in) {
  const reference::rope_reference ref(in.config, in.seq_len, 256);
  std::vector<double> t;
  for (int b = 0; b < ref.bands(); ++b) t.push_back(static_cast<double>(ref.inv_freq(b).value()));
  return t;
}

ojson head(const char* kind, const certificate_inputs& in) {
  ojson j;
  j["format"] = format_name;
  j["format_version"] = format_version;
  j["kind"] = kind;
  ojson inputs = inputs_json(in);
  const std::string hash = inputs_hash(inputs);
  j["inputs"] = std::move(inputs);
  j["inputs_sha256"] = hash;
  return j;
}

// ---------------------------------------------------------------------------------------------
// Reading (strict: every key known, every type checked).
struct reader {
  std::string origin;
  [[noreturn]] void fail(const std::string& what) const { throw std::invalid_argument(origin + ": " + what); }
  const ojson& at(const ojson& o, const char* key, const std::string& where) const {
    if (!o.is_object()) fail(where + " is not an object");
    const auto it = o.find(key);
    if (it == o.end()) fail(where + " has no key '" + key + "'");
    return *it;
  }
  void only(const ojson& o, std::initializer_list<const char*> keys, const std::string& where) const {
    for (const auto& [k, v] : o.items())
      if (std::none_of(keys.begin(), keys.end(), [&](const char* x) { return k == x; }))
        fail(where + ": unknown key '" + k + "'");
  }
  double num(const ojson& v, const std::string& where) const {
    if (v.is_string() && v.get<std::string>() == "inf") return inf;
    if (!v.is_number()) fail(where + " is not a number");
    return v.get<double>();
  }
  std::int64_t integer(const ojson& v, const std::string& where) const {
    if (!v.is_number_integer()) fail(where + " is not an integer");
    return v.get<std::int64_t>();
  }
  std::int64_t pos(const ojson& v, const std::string& where) const { return v.is_null() ? -1 : integer(v, where); }
  std::string str(const ojson& v, const std::string& where) const {
    if (!v.is_string()) fail(where + " is not a string");
    return v.get<std::string>();
  }
};

rope_config config_from_json(const reader& r, const ojson& j) {
  const std::string w = "inputs.config";
  r.only(j, {"head_dim", "rotary_dim", "base", "layout", "outputs", "mrope", "mrope_section", "scaling", "factor",
             "max_position_embeddings", "original_max_position_embeddings", "beta_fast", "beta_slow", "truncate",
             "attention_factor", "mscale", "mscale_all_dim", "low_freq_factor", "high_freq_factor", "short_factor",
             "long_factor", "direction", "frozen_bands", "short_mscale", "long_mscale"},
         w);
  rope_config c;
  c.head_dim = static_cast<int>(r.integer(r.at(j, "head_dim", w), w + ".head_dim"));
  c.rotary_dim = static_cast<int>(r.integer(r.at(j, "rotary_dim", w), w + ".rotary_dim"));
  c.base = r.num(r.at(j, "base", w), w + ".base");
  auto pick = [&](const char* key, auto values) {
    const std::string s = r.str(r.at(j, key, w), w + "." + key);
    for (const auto v : values)
      if (to_string(v) == s) return v;
    r.fail(w + "." + key + ": unknown value '" + s + "'");
  };
  c.pair_layout = pick("layout", std::initializer_list<layout>{layout::half_split, layout::interleaved});
  c.outputs = pick("outputs", std::initializer_list<output_order>{output_order::in_place, output_order::half_split});
  c.mrope = pick("mrope", std::initializer_list<mrope_kind>{mrope_kind::none, mrope_kind::contiguous, mrope_kind::interleaved});
  c.scaling = pick("scaling", std::initializer_list<scaling_kind>{scaling_kind::none, scaling_kind::linear, scaling_kind::ntk,
                                                                  scaling_kind::dynamic_ntk, scaling_kind::yarn,
                                                                  scaling_kind::llama3, scaling_kind::longrope});
  for (const auto& v : r.at(j, "mrope_section", w)) c.mrope_section.push_back(static_cast<int>(r.integer(v, w + ".mrope_section")));
  c.factor = r.num(r.at(j, "factor", w), w + ".factor");
  c.max_position_embeddings = r.integer(r.at(j, "max_position_embeddings", w), w + ".max_position_embeddings");
  c.original_max_position_embeddings =
      r.integer(r.at(j, "original_max_position_embeddings", w), w + ".original_max_position_embeddings");
  c.beta_fast = r.num(r.at(j, "beta_fast", w), w + ".beta_fast");
  c.beta_slow = r.num(r.at(j, "beta_slow", w), w + ".beta_slow");
  if (!r.at(j, "truncate", w).is_boolean()) r.fail(w + ".truncate is not a boolean");
  c.truncate = r.at(j, "truncate", w).get<bool>();
  auto opt = [&](const char* key) -> std::optional<double> {
    const ojson& v = r.at(j, key, w);
    if (v.is_null()) return std::nullopt;
    return r.num(v, w + "." + key);
  };
  c.attention_factor = opt("attention_factor");
  c.mscale = opt("mscale");
  c.mscale_all_dim = opt("mscale_all_dim");
  // The keys written only when they differ from the default (config_to_json.hpp).
  if (j.contains("direction"))
    c.direction = pick("direction", std::initializer_list<rotation_direction>{rotation_direction::forward, rotation_direction::reversed});
  if (j.contains("frozen_bands")) c.frozen_bands = static_cast<int>(r.integer(j["frozen_bands"], w + ".frozen_bands"));
  if (j.contains("short_mscale")) c.short_mscale = r.num(j["short_mscale"], w + ".short_mscale");
  if (j.contains("long_mscale")) c.long_mscale = r.num(j["long_mscale"], w + ".long_mscale");
  c.low_freq_factor = r.num(r.at(j, "low_freq_factor", w), w + ".low_freq_factor");
  c.high_freq_factor = r.num(r.at(j, "high_freq_factor", w), w + ".high_freq_factor");
  for (const auto& v : r.at(j, "short_factor", w)) c.short_factor.push_back(r.num(v, w + ".short_factor"));
  for (const auto& v : r.at(j, "long_factor", w)) c.long_factor.push_back(r.num(v, w + ".long_factor"));
  return c;
}

certificate_inputs inputs_from_json(const reader& r, const ojson& j) {
  const std::string w = "inputs";
  r.only(j, {"config_name", "config", "config_notes", "implementations", "max_position", "seq_len", "angle_threshold_rad",
             "position_threshold_tokens", "ropecheck_version", "reference", "allowance"},
         w);
  certificate_inputs in;
  in.config_name = r.str(r.at(j, "config_name", w), w + ".config_name");
  in.config = config_from_json(r, r.at(j, "config", w));
  for (const auto& n : r.at(j, "config_notes", w)) in.config_notes.push_back(r.str(n, w + ".config_notes"));
  for (const auto& i : r.at(j, "implementations", w)) {
    const std::string wi = w + ".implementations[]";
    r.only(i, {"name", "description", "dtype", "source"}, wi);
    in.implementations.push_back({r.str(r.at(i, "name", wi), wi + ".name"), r.str(r.at(i, "description", wi), wi + ".description"),
                                  r.str(r.at(i, "dtype", wi), wi + ".dtype"), r.str(r.at(i, "source", wi), wi + ".source")});
  }
  in.max_position = r.integer(r.at(j, "max_position", w), w + ".max_position");
  in.seq_len = r.integer(r.at(j, "seq_len", w), w + ".seq_len");
  in.angle_threshold_rad = r.num(r.at(j, "angle_threshold_rad", w), w + ".angle_threshold_rad");
  in.position_threshold_tokens = r.num(r.at(j, "position_threshold_tokens", w), w + ".position_threshold_tokens");
  in.ropecheck_version = r.str(r.at(j, "ropecheck_version", w), w + ".ropecheck_version");
  in.reference = r.str(r.at(j, "reference", w), w + ".reference");
  in.allowance = r.str(r.at(j, "allowance", w), w + ".allowance");
  return in;
}

// The file's JSON after its format, format_version and kind are checked.
ojson parse_file(const reader& r, const std::string& text, const char* kind, const char* wrong_kind) {
  ojson j;
  try {
    j = ojson::parse(text);
  } catch (const nlohmann::json::parse_error& e) {
    r.fail(std::string("not JSON: ") + e.what());
  }
  if (r.str(r.at(j, "format", "the file"), "format") != format_name) r.fail("format is not '" + std::string(format_name) + "'");
  if (r.integer(r.at(j, "format_version", "the file"), "format_version") != format_version)
    r.fail("format_version " + j["format_version"].dump() + " is not " + std::to_string(format_version));
  const std::string k = r.str(r.at(j, "kind", "the file"), "kind");
  if (k != kind) r.fail("kind is '" + k + "': " + wrong_kind);
  return j;
}

// ---------------------------------------------------------------------------------------------
// The verdict's pieces.
std::string fmt(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}
std::string at_position(std::int64_t p) { return p < 0 ? std::string("never") : std::to_string(p); }

struct first_event {
  std::int64_t position = -1;
  int band = -1;
  void take(std::int64_t p, int b) {
    if (p >= 0 && (position < 0 || p < position)) position = p, band = b;
  }
  [[nodiscard]] ojson json() const {
    return position < 0 ? ojson(nullptr) : ojson{{"position", position}, {"band", band}};
  }
};

struct worst_event {
  double value = 0;
  int band = -1;
  std::int64_t position = -1;
  void take(const worst_at& w, int b) {  // larger value; on a tie the smaller position, then the lower band
    if (w.position < 0) return;
    if (band < 0 || w.value > value || (w.value == value && w.position < position)) value = w.value, band = b, position = w.position;
  }
  [[nodiscard]] ojson json() const { return {{"value", number(value)}, {"band", band}, {"position", pos_json(position)}}; }
};

}  // namespace

// ---------------------------------------------------------------------------------------------

std::string partial_json(const partial_certificate& p) {
  ojson j = head("partial", p.inputs);
  j["shard"] = {{"index", p.shard_index}, {"count", p.shard_count}, {"first", p.range.first}, {"last", p.range.last}};
  const std::vector<double> theta = thetas(p.inputs);
  ojson impls = ojson::array();
  for (std::size_t i = 0; i < p.stats.size(); ++i) {
    ojson e;
    e["name"] = p.inputs.implementations[i].name;
    e["dtype"] = p.inputs.implementations[i].dtype;
    ojson bands = ojson::array();
    for (std::size_t b = 0; b < p.stats[i].size(); ++b) bands.push_back(band_json(static_cast<int>(b), theta[b], p.stats[i][b]));
    e["bands"] = std::move(bands);
    impls.push_back(std::move(e));
  }
  j["implementations"] = std::move(impls);
  return j.dump(1) + "\n";
}

partial_certificate read_partial(const std::string& text, const std::string& origin) {
  const reader r{origin};
  const ojson j = parse_file(r, text, "partial", "merge reads partials (certify --shard k/N)");
  r.only(j, {"format", "format_version", "kind", "inputs", "inputs_sha256", "shard", "implementations"}, "the file");
  partial_certificate p;
  p.inputs = inputs_from_json(r, r.at(j, "inputs", "the file"));
  if (r.str(r.at(j, "inputs_sha256", "the file"), "inputs_sha256") != inputs_hash(inputs_json(p.inputs)))
    r.fail("inputs_sha256 does not match its inputs (the file was edited)");
  const ojson& sh = r.at(j, "shard", "the file");
  r.only(sh, {"index", "count", "first", "last"}, "shard");
  p.shard_index = static_cast<int>(r.integer(r.at(sh, "index", "shard"), "shard.index"));
  p.shard_count = static_cast<int>(r.integer(r.at(sh, "count", "shard"), "shard.count"));
  p.range = {r.integer(r.at(sh, "first", "shard"), "shard.first"), r.integer(r.at(sh, "last", "shard"), "shard.last")};
  if (p.shard_count < 1 || p.shard_index < 1 || p.shard_index > p.shard_count) r.fail("shard is not k/N with 1 <= k <= N");
  const position_range expect = shard_range(p.inputs.max_position, p.shard_index, p.shard_count);
  if (expect.first != p.range.first || expect.last != p.range.last)
    r.fail("shard " + std::to_string(p.shard_index) + "/" + std::to_string(p.shard_count) + " should cover " +
           std::to_string(expect.first) + ".." + std::to_string(expect.last));
  const ojson& impls = r.at(j, "implementations", "the file");
  if (!impls.is_array() || impls.size() != p.inputs.implementations.size())
    r.fail("implementations does not list the inputs' implementations");
  const int bands = p.inputs.config.bands();
  for (std::size_t i = 0; i < impls.size(); ++i) {
    const std::string w = "implementations[" + std::to_string(i) + "]";
    r.only(impls[i], {"name", "dtype", "bands"}, w);
    if (r.str(r.at(impls[i], "name", w), w + ".name") != p.inputs.implementations[i].name) r.fail(w + ".name differs from the inputs'");
    const ojson& bj = r.at(impls[i], "bands", w);
    if (!bj.is_array() || static_cast<int>(bj.size()) != bands) r.fail(w + ".bands does not hold " + std::to_string(bands) + " bands");
    std::vector<band_stats> st(static_cast<std::size_t>(bands));
    for (int b = 0; b < bands; ++b) {
      const ojson& x = bj[static_cast<std::size_t>(b)];
      const std::string wb = w + ".bands[" + std::to_string(b) + "]";
      r.only(x, {"band", "inv_freq", "worst_angle_rad", "worst_angle_position", "worst_pair_error", "worst_pair_error_position",
                 "worst_ratio_to_allowance", "worst_ratio_position", "first_angle_over_threshold",
                 "first_position_error_over_threshold", "first_equal_to_next"},
             wb);
      band_stats& s = st[static_cast<std::size_t>(b)];
      s.angle = {r.num(r.at(x, "worst_angle_rad", wb), wb), r.pos(r.at(x, "worst_angle_position", wb), wb)};
      s.pair = {r.num(r.at(x, "worst_pair_error", wb), wb), r.pos(r.at(x, "worst_pair_error_position", wb), wb)};
      s.ratio = {r.num(r.at(x, "worst_ratio_to_allowance", wb), wb), r.pos(r.at(x, "worst_ratio_position", wb), wb)};
      s.first_angle_over = r.pos(r.at(x, "first_angle_over_threshold", wb), wb);
      s.first_tokens_over = r.pos(r.at(x, "first_position_error_over_threshold", wb), wb);
      s.first_equal_next = r.pos(r.at(x, "first_equal_to_next", wb), wb);
    }
    p.stats.push_back(std::move(st));
  }
  return p;
}

partial_certificate merge_partials(const std::vector<partial_certificate>& parts, const std::vector<std::string>& origins) {
  if (parts.empty()) throw std::invalid_argument("merge: no partial certificates given");
  auto name = [&](std::size_t i) { return i < origins.size() ? origins[i] : "partial " + std::to_string(i + 1); };
  const std::string hash = inputs_hash(inputs_json(parts[0].inputs));
  const int count = parts[0].shard_count;
  std::vector<int> seen(static_cast<std::size_t>(count) + 1, -1);
  for (std::size_t i = 0; i < parts.size(); ++i) {
    if (inputs_hash(inputs_json(parts[i].inputs)) != hash)
      throw std::invalid_argument("merge: " + name(i) + " has other inputs than " + name(0) + " (inputs_sha256 differs)");
    if (parts[i].shard_count != count)
      throw std::invalid_argument("merge: " + name(i) + " is a shard of " + std::to_string(parts[i].shard_count) + ", " +
                                  name(0) + " of " + std::to_string(count));
    int& s = seen[static_cast<std::size_t>(parts[i].shard_index)];
    if (s >= 0)
      throw std::invalid_argument("merge: shard " + std::to_string(parts[i].shard_index) + "/" + std::to_string(count) +
                                  " is given twice (" + name(static_cast<std::size_t>(s)) + " and " + name(i) + ")");
    s = static_cast<int>(i);
  }
  std::string missing;
  for (int k = 1; k <= count; ++k)
    if (seen[static_cast<std::size_t>(k)] < 0) missing += (missing.empty() ? "" : ", ") + std::to_string(k);
  if (!missing.empty())
    throw std::invalid_argument("merge: shards " + missing + " of " + std::to_string(count) + " are missing");
  partial_certificate out;
  out.inputs = parts[0].inputs;
  out.range = {0, out.inputs.max_position};
  out.stats = parts[0].stats;
  for (auto& impl : out.stats)
    for (auto& b : impl) b = band_stats{};
  for (const auto& p : parts)
    for (std::size_t i = 0; i < out.stats.size(); ++i)
      for (std::size_t b = 0; b < out.stats[i].size(); ++b) out.stats[i][b].merge(p.stats[i][b]);
  return out;
}

certificate finalize(const partial_certificate& p) {
  if (p.range.first != 0 || p.range.last != p.inputs.max_position)
    throw std::invalid_argument("certificate: the statistics cover " + std::to_string(p.range.first) + ".." +
                                std::to_string(p.range.last) + ", not 0.." + std::to_string(p.inputs.max_position) +
                                " (merge every shard first)");
  certificate out;
  ojson j = head("certificate", p.inputs);
  const std::vector<double> theta = thetas(p.inputs);
  ojson impls = ojson::array();
  bool all_pass = true;
  for (std::size_t i = 0; i < p.stats.size(); ++i) {
    const implementation_id& id = p.inputs.implementations[i];
    const bool builtin = id.source == "builtin";
    std::vector<band_bound> bounds;
    if (builtin) bounds = applied_angle_bounds(id.name, p.inputs.config, p.inputs.seq_len, p.inputs.max_position);
    worst_event ratio, angle, tokens;
    first_event f_angle, f_tokens, f_equal;
    bool holds = builtin, within = builtin;
    double r_min = inf, r_max = 0;
    std::set<std::string> notes;
    ojson bands = ojson::array();
    for (std::size_t b = 0; b < p.stats[i].size(); ++b) {
      band_stats s = p.stats[i][b];
      const int band = static_cast<int>(b);
      // Proportional RoPE's frozen bands (inv_freq 0) never turn: no token scale, and a pair equal to the
      // next one by design; their angle and ratio still count.
      const bool frozen = band >= p.inputs.config.turning_bands();
      if (frozen) s.first_tokens_over = s.first_equal_next = -1;
      ratio.take(s.ratio, band);
      angle.take(s.angle, band);
      const worst_at tok{frozen ? 0.0 : s.angle.value / theta[b], s.angle.position};
      if (!frozen) tokens.take(tok, band);
      f_angle.take(s.first_angle_over, band);
      f_tokens.take(s.first_tokens_over, band);
      f_equal.take(s.first_equal_next, band);
      ojson e = band_json(band, theta[b], s);
      e["worst_position_tokens"] = frozen ? ojson(nullptr) : number(tok.value);
      e["worst_position_tokens_position"] = frozen ? ojson(nullptr) : pos_json(tok.position);
      if (frozen) e["frozen"] = true;
      if (builtin) {
        const band_bound& bb = bounds[b];
        e["bound_rad"] = number(bb.angle_rad);
        const double q = std::isfinite(bb.angle_rad) && bb.angle_rad > 0 ? s.angle.value / bb.angle_rad : inf;
        e["worst_over_bound"] = std::isfinite(q) ? ojson(q) : ojson(nullptr);
        e["bound_note"] = bb.why;
        if (!(s.angle.value <= bb.angle_rad)) holds = false;
        if (!(q >= 0.5)) {
          within = false;
          if (!bb.why.empty()) notes.insert(bb.why);
        }
        if (std::isfinite(q)) r_min = std::min(r_min, q), r_max = std::max(r_max, q);
      } else {
        e["bound_rad"] = nullptr;
        e["worst_over_bound"] = nullptr;
        e["bound_note"] = "a plugin's arithmetic is unknown: no error model of its own";
      }
      bands.push_back(std::move(e));
    }
    const bool pass = ratio.value <= 1.0;
    all_pass = all_pass && pass;
    ojson e;
    e["name"] = id.name;
    e["dtype"] = id.dtype;
    e["pass"] = pass;
    e["worst_ratio_to_allowance"] = ratio.json();
    e["worst_angle_rad"] = angle.json();
    e["worst_position_tokens"] = tokens.json();
    e["first_angle_over_threshold"] = f_angle.json();
    e["first_position_error_over_threshold"] = f_tokens.json();
    e["first_adjacent_positions_equal"] = f_equal.json();
    e["bound"] = {{"holds", holds},
                  {"within_2x", within},
                  {"worst_over_bound_min", std::isfinite(r_min) ? ojson(r_min) : ojson(nullptr)},
                  {"worst_over_bound_max", builtin ? ojson(r_max) : ojson(nullptr)},
                  {"notes", std::vector<std::string>(notes.begin(), notes.end())}};
    e["bands"] = std::move(bands);
    impls.push_back(std::move(e));
    out.result.summary.push_back(
        id.name + ": " + (pass ? "PASS" : "FAIL") + fmt(" worst %.3g of the allowance", ratio.value) + " (band " +
        std::to_string(ratio.band) + ", position " + at_position(ratio.position) + "); angle " + fmt("%.3g rad", angle.value) +
        ", " + fmt("%.3g tokens", tokens.value) + "; first > angle threshold " + at_position(f_angle.position) +
        ", first >= token threshold " + at_position(f_tokens.position) + ", first p ~ p+1 " + at_position(f_equal.position) +
        (!builtin ? std::string("; no error model (plugin)")
         : std::isfinite(r_min) ? fmt("; worst/bound %.2f", r_min) + fmt("..%.2f", r_max) + (holds ? "" : " BOUND EXCEEDED")
                                : std::string("; bound +inf in every band") + (holds ? "" : " BOUND EXCEEDED")));
  }
  out.result.pass = all_pass;
  j["verdict"] = all_pass ? "pass" : "fail";
  j["implementations"] = std::move(impls);
  out.json = j.dump(1) + "\n";
  return out;
}

certificate_reading read_certificate_figures(const std::string& text, const std::string& origin) {
  const reader r{origin};
  const ojson j = parse_file(r, text, "certificate", "a partial: merge the shards first");
  certificate_reading out;
  const certificate_inputs in = inputs_from_json(r, r.at(j, "inputs", "the file"));
  out.config = in.config;
  auto& f = out.figures;
  f.file = origin;
  f.inputs_sha256 = r.str(r.at(j, "inputs_sha256", "the file"), "inputs_sha256");
  f.verdict = r.str(r.at(j, "verdict", "the file"), "verdict");
  f.max_position = in.max_position;
  for (const auto& e : r.at(j, "implementations", "the file")) {
    const std::string w = "implementations[]";
    sweep::certificate_row row;
    row.name = r.str(r.at(e, "name", w), w + ".name");
    if (!r.at(e, "pass", w).is_boolean()) r.fail(w + ".pass is not a boolean");
    row.pass = e["pass"].get<bool>();
    const ojson& wr = r.at(e, "worst_ratio_to_allowance", w);
    row.worst_ratio = r.num(r.at(wr, "value", w), w + ".worst_ratio_to_allowance.value");
    row.worst_ratio_band = static_cast<int>(r.integer(r.at(wr, "band", w), w + ".worst_ratio_to_allowance.band"));
    row.worst_ratio_position = r.pos(r.at(wr, "position", w), w + ".worst_ratio_to_allowance.position");
    row.worst_angle_rad = r.num(r.at(r.at(e, "worst_angle_rad", w), "value", w), w + ".worst_angle_rad.value");
    row.worst_position_tokens = r.num(r.at(r.at(e, "worst_position_tokens", w), "value", w), w + ".worst_position_tokens.value");
    auto first = [&](const char* key) {
      const ojson& v = r.at(e, key, w);
      return v.is_null() ? std::int64_t{-1} : r.integer(r.at(v, "position", w), w + "." + key + ".position");
    };
    row.first_angle_over = first("first_angle_over_threshold");
    row.first_tokens_over = first("first_position_error_over_threshold");
    row.first_equal = first("first_adjacent_positions_equal");
    f.rows.push_back(std::move(row));
  }
  return out;
}

}  // namespace ropecheck::certify
