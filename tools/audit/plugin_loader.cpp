// tools/audit/plugin_loader.cpp — see plugin_loader.hpp.
#include "plugin_loader.hpp"

#include <dlfcn.h>

#include <cmath>
#include <exception>
#include <mutex>
#include <string_view>
#include <vector>

#include "ropecheck/config_json.hpp"
#include "ropecheck/scalar.hpp"
#include "ropecheck/schedule.hpp"

namespace ropecheck::plugin {

std::string_view to_string(dtype t) noexcept {
  switch (t) {
    case dtype::f32: return "float";
    case dtype::f64: return "double";
    case dtype::bf16: return "bfloat16";
    case dtype::f16: return "float16";
  }
  return "?";
}

struct loaded_plugin::state {
  std::string path;
  void* handle = nullptr;
  ropecheck_plugin_describe_fn describe = nullptr;
  ropecheck_plugin_apply_fn apply = nullptr;
  ropecheck_plugin_apply2_fn apply2 = nullptr;  // ABI 2, when exported (then used for every call)
  ropecheck_plugin_apply_qk_fn apply_qk = nullptr;  // ABI 3, when exported (the qk form's calls only)
  ropecheck_plugin_name_fn name = nullptr;
  ropecheck_convention conv{};
  std::string config_path, part;  // copies of conv's strings (conv's pointers are the plugin's)
  rope_config cfg;
  kernel_limits limits;
  std::vector<std::string> notes;
  std::mutex call;
  ~state() {
    if (handle) dlclose(handle);
  }
};

namespace {

[[noreturn]] void fail(const std::string& origin, const std::string& what) { throw plugin_error(origin + ": " + what); }

[[noreturn]] void bad_field(const std::string& origin, const char* field, const std::string& what) {
  fail(origin, std::string("ropecheck_convention.") + field + ": " + what);
}

void* symbol(void* handle, const std::string& path, const std::string& name, bool required) {
  dlerror();
  void* p = dlsym(handle, name.c_str());
  const char* err = dlerror();
  if ((err || !p) && required)
    fail(path, "missing required symbol '" + name + "'" + (err ? std::string(" (") + err + ")" : std::string()));
  return err ? nullptr : p;
}

template <class T, class V>
T narrow_exactly(V v, std::size_t index) {
  T t;
  if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>)
    t = static_cast<T>(v);
  else
    t = scalar_traits<T>::narrow(static_cast<long double>(v));
  const long double back = scalar_traits<T>::widen(t);
  if (!(back == static_cast<long double>(v)) && !(std::isnan(back) && std::isnan(v)))
    throw std::domain_error("plugin apply: x[" + std::to_string(index) + "] is not representable in " +
                            std::string(scalar_name<T>()));
  return t;
}

template <class T, class Wire, class V>
void to_wire_as(std::span<const V> x, void* out) {
  auto* w = static_cast<Wire*>(out);
  for (std::size_t j = 0; j < x.size(); ++j) {
    const T t = narrow_exactly<T>(x[j], j);
    if constexpr (std::is_same_v<T, Wire>)
      w[j] = t;
    else
      w[j] = scalar_traits<T>::bits(t);
  }
}

template <class T, class Wire, class V>
void from_wire_as(const void* in, std::span<V> out) {
  const auto* w = static_cast<const Wire*>(in);
  for (std::size_t j = 0; j < out.size(); ++j) {
    if constexpr (std::is_same_v<T, Wire>)
      out[j] = static_cast<V>(scalar_traits<T>::widen(w[j]));
    else
      out[j] = static_cast<V>(scalar_traits<T>::widen(scalar_traits<T>::from_bits(w[j])));
  }
}

template <class V>
void to_wire_any(dtype t, std::span<const V> x, void* out) {
  switch (t) {
    case dtype::f32: return to_wire_as<float, float>(x, out);
    case dtype::f64: return to_wire_as<double, double>(x, out);
    case dtype::bf16: return to_wire_as<bfloat16, std::uint16_t>(x, out);
    case dtype::f16: return to_wire_as<float16, std::uint16_t>(x, out);
  }
}

template <class V>
void from_wire_any(dtype t, const void* in, std::span<V> out) {
  switch (t) {
    case dtype::f32: return from_wire_as<float, float>(in, out);
    case dtype::f64: return from_wire_as<double, double>(in, out);
    case dtype::bf16: return from_wire_as<bfloat16, std::uint16_t>(in, out);
    case dtype::f16: return from_wire_as<float16, std::uint16_t>(in, out);
  }
}

}  // namespace

std::size_t element_bytes(dtype t) noexcept { return t == dtype::f64 ? 8 : t == dtype::f32 ? 4 : 2; }
void to_wire(dtype t, std::span<const double> x, void* out) { to_wire_any(t, x, out); }
void to_wire(dtype t, std::span<const long double> x, void* out) { to_wire_any(t, x, out); }
void from_wire(dtype t, const void* in, std::span<double> out) { from_wire_any(t, in, out); }
void from_wire(dtype t, const void* in, std::span<long double> out) { from_wire_any(t, in, out); }

namespace {

constexpr std::uint32_t oldest_abi = 1;

std::string str_or_empty(const char* s) { return s ? std::string(s) : std::string(); }

// ABI 2's claim by a config.json, read as `ropecheck audit --config` reads it (tools/cli_common.hpp
// convention_flags::resolve: load_hf_config_with_notes, layer_convention, the indexer's convention).
rope_config config_claim(const ropecheck_convention& c, const std::string& origin, const std::filesystem::path& library,
                         std::vector<std::string>* notes) {
  const std::filesystem::path file = resolve_config_path(c.config_path, library);
  hf_config_parse parsed;
  try {
    parsed = load_hf_config_with_notes(file);
  } catch (const std::exception& e) {
    bad_field(origin, "config_path", "cannot read '" + file.string() + "': " + e.what());
  }
  rope_config r = parsed.config;
  if (parsed.primary_layer < 0 && c.layer < 0)
    bad_field(origin, "config_path", "'" + file.string() + "': no layer has RoPE (" + parsed.no_rope + ")");
  if (c.layer >= 0) {
    try {
      r = layer_convention(parsed, c.layer);
    } catch (const std::exception& e) {
      bad_field(origin, "layer", std::to_string(c.layer) + " in '" + file.string() + "': " + e.what());
    }
  } else if (c.layer != -1) {
    bad_field(origin, "layer", std::to_string(c.layer) + ": expected -1 (the primary layer) or a layer index >= 0");
  }
  const std::string part = str_or_empty(c.part);
  if (part == "indexer") {
    if (!parsed.indexer)
      bad_field(origin, "part", "\"indexer\", but '" + file.string() + "' (" +
                                    (parsed.family.empty() ? std::string("this config") : parsed.family) +
                                    ") has no lightning indexer with a RoPE of its own");
    r = parsed.indexer->config;
  } else if (!part.empty() && part != "attention") {
    bad_field(origin, "part", "\"" + part + "\": expected \"attention\" (or NULL / \"\") or \"indexer\"");
  }
  if (c.head_dim != 0 && c.head_dim != r.head_dim)
    bad_field(origin, "head_dim", std::to_string(c.head_dim) + ", but '" + file.string() + "' gives head_dim " +
                                      std::to_string(r.head_dim) + " (leave it 0 with a config_path, or make them agree)");
  if (notes) {
    notes->push_back("convention read from " + file.string() + " (the plugin's config_path" +
                     (c.layer >= 0 ? ", layer " + std::to_string(c.layer) : std::string()) +
                     (part == "indexer" ? ", the lightning indexer" : "") + ")");
    notes->insert(notes->end(), parsed.notes.begin(), parsed.notes.end());
    for (const auto& a : parsed.assumptions) notes->push_back("assumption: " + a);
  }
  return r;
}

}  // namespace

std::filesystem::path resolve_config_path(const std::string& config_path, const std::filesystem::path& library) {
  const std::filesystem::path p(config_path);
  if (p.is_absolute() || library.empty()) return p;
  return library.parent_path() / p;
}

rope_config to_rope_config(const ropecheck_convention& c, const std::string& origin, const std::filesystem::path& library,
                           std::vector<std::string>* notes) {
  if (c.abi < oldest_abi || c.abi > ROPECHECK_PLUGIN_ABI)
    bad_field(origin, "abi", "ABI mismatch: plugin declares " + std::to_string(c.abi) + ", loader implements " +
                                 std::to_string(oldest_abi) + " to " + std::to_string(ROPECHECK_PLUGIN_ABI));
  if (c.dtype < ROPECHECK_DTYPE_F32 || c.dtype > ROPECHECK_DTYPE_F16)
    bad_field(origin, "dtype", "unknown dtype " + std::to_string(c.dtype));
  if (c.abi >= 2 && c.config_path && *c.config_path) {
    rope_config r = config_claim(c, origin, library, notes);
    try {
      validate(r);
    } catch (const std::invalid_argument& e) {
      fail(origin, std::string("invalid convention: ") + e.what());
    }
    return r;
  }
  if (c.layout != ROPECHECK_LAYOUT_INTERLEAVED && c.layout != ROPECHECK_LAYOUT_HALF_SPLIT)
    bad_field(origin, "layout", "unknown layout " + std::to_string(c.layout));
  if (c.scaling < ROPECHECK_SCALING_NONE || c.scaling > ROPECHECK_SCALING_LONGROPE)
    bad_field(origin, "scaling", "unknown scaling kind " + std::to_string(c.scaling));
  if (c.scaling == ROPECHECK_SCALING_LONGROPE)
    bad_field(origin, "scaling", "LONGROPE needs per-band factors, which the flat fields cannot carry (ABI " +
                                     std::to_string(c.abi) + "; ABI 2: claim it by config_path)");
  rope_config r;
  r.head_dim = c.head_dim;
  r.rotary_dim = c.rotary_dim;
  r.base = c.base;
  r.pair_layout = c.layout == ROPECHECK_LAYOUT_INTERLEAVED ? layout::interleaved : layout::half_split;
  static constexpr scaling_kind kinds[] = {scaling_kind::none, scaling_kind::linear,   scaling_kind::ntk,
                                           scaling_kind::dynamic_ntk, scaling_kind::yarn, scaling_kind::llama3,
                                           scaling_kind::longrope};
  r.scaling = kinds[c.scaling];
  r.factor = c.factor;
  r.max_position_embeddings = c.max_position_embeddings;
  r.original_max_position_embeddings = c.original_max_position_embeddings;
  r.beta_fast = c.beta_fast;
  r.beta_slow = c.beta_slow;
  r.low_freq_factor = c.low_freq_factor;
  r.high_freq_factor = c.high_freq_factor;
  if (c.attention_factor > 0 || std::isnan(c.attention_factor)) r.attention_factor = c.attention_factor;
  try {
    validate(r);  // message starts with "rope_config.<field>:"
  } catch (const std::invalid_argument& e) {
    fail(origin, std::string("invalid convention: ") + e.what());
  }
  return r;
}

kernel_limits limits_of(const ropecheck_convention& c, const rope_config& claim, bool has_apply2,
                        const std::string& origin) {
  kernel_limits l;
  const int claim_rows = claim.position_rows();
  if (c.abi < 2) {
    if (claim_rows != 1) bad_field(origin, "abi", "an M-RoPE claim needs ABI 2 (position_rows, apply2)");
    return l;
  }
  if (c.max_position < 0)
    bad_field(origin, "max_position", std::to_string(c.max_position) + ": expected 0 (no limit) or the kernel's last position");
  if (c.max_position > 0 && c.max_position < min_max_position)
    bad_field(origin, "max_position",
              std::to_string(c.max_position) + " is below the probe's dense positions 0.." + std::to_string(min_max_position) +
                  " (positions " + std::to_string(c.max_position + 1) + ".." + std::to_string(min_max_position) +
                  " could not be asked; the judge needs them all): expected 0 or >= " + std::to_string(min_max_position));
  l.max_position = c.max_position;
  l.negative_positions = c.negative_positions != 0;
  l.supports_inverse = c.supports_inverse != 0;
  const int rows = c.position_rows == 0 ? 1 : c.position_rows;
  if (rows < 1) bad_field(origin, "position_rows", std::to_string(c.position_rows) + ": expected 1 (1-D RoPE) or the M-RoPE claim's rows");
  if (rows != claim_rows) {
    std::string sections;
    for (const int v : claim.mrope_section) sections += (sections.empty() ? "" : ", ") + std::to_string(v);
    bad_field(origin, "position_rows",
              std::to_string(rows) + (claim_rows == 1 ? ", but the claim is 1-D RoPE (one position row)"
                                                      : ", but the claim is M-RoPE with " + std::to_string(claim_rows) +
                                                            " position rows (mrope_section [" + sections + "])"));
  }
  if (rows > 1 && !has_apply2)
    bad_field(origin, "position_rows", std::to_string(rows) + " rows need ropecheck_plugin_apply2, which the library does not export");
  l.rows = rows;
  return l;
}

loaded_plugin load_plugin(const std::string& given, const load_options& options) {
  // A bare name (no '/') is the file in the working directory, as `--plugin libk.so` means on a command
  // line; dlopen(3) would search the library path for it instead. Every door loads through here (and
  // load_plugin_guarded's child too), and every message names the path tried.
  const std::string path = given.find('/') == std::string::npos ? "./" + given : given;
  auto s = std::make_shared<loaded_plugin::state>();
  s->path = path;
  dlerror();
  s->handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!s->handle) {
    const char* err = dlerror();
    fail(path, std::string("cannot load plugin: ") + (err ? err : "dlopen failed"));
  }
  s->describe = reinterpret_cast<ropecheck_plugin_describe_fn>(symbol(s->handle, path, options.describe_symbol, true));
  s->apply2 = reinterpret_cast<ropecheck_plugin_apply2_fn>(symbol(s->handle, path, options.apply2_symbol, false));
  s->apply = reinterpret_cast<ropecheck_plugin_apply_fn>(symbol(s->handle, path, options.apply_symbol, false));
  s->name = reinterpret_cast<ropecheck_plugin_name_fn>(symbol(s->handle, path, options.name_symbol, false));
  s->apply_qk = reinterpret_cast<ropecheck_plugin_apply_qk_fn>(symbol(s->handle, path, options.apply_qk_symbol, false));
  ropecheck_convention c{};
  const int rc = s->describe(&c);
  if (rc != 0) fail(path, "ropecheck_plugin_describe returned error code " + std::to_string(rc));
  if (c.abi < 2) s->apply2 = nullptr;  // ABI 1 knows no apply2: never call a symbol of that name
  if (c.abi < 3) s->apply_qk = nullptr;  // nor ABI 1 or 2 apply_qk: they are audited exactly as before
  if (!s->apply && !s->apply2)
    (void)symbol(s->handle, path, options.apply_symbol, true);  // throws: missing required symbol
  // The library's own file (dladdr of describe), for a relative config_path: not the working
  // directory, and right however dlopen found a bare name.
  std::filesystem::path library(path);
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(s->describe), &info) != 0 && info.dli_fname && *info.dli_fname)
    library = std::filesystem::absolute(info.dli_fname);
  if (c.abi >= 2) {  // the plugin's strings are copied (plugin.h: the loader copies them)
    s->config_path = str_or_empty(c.config_path);
    s->part = str_or_empty(c.part);
  }
  s->cfg = to_rope_config(c, path, library, &s->notes);
  s->limits = limits_of(c, s->cfg, s->apply2 != nullptr, path);
  if (s->apply_qk && s->limits.rows > 1)
    bad_field(path, "position_rows",
              std::to_string(s->limits.rows) + " rows, but ropecheck_plugin_apply_qk takes one position per token: an "
              "M-RoPE kernel cannot export it (plugin.h ABI 3)");
  s->conv = c;
  s->conv.config_path = c.abi >= 2 && c.config_path ? s->config_path.c_str() : nullptr;
  s->conv.part = c.abi >= 2 && c.part ? s->part.c_str() : nullptr;
  return loaded_plugin(std::move(s));
}

rope_config loaded_plugin::declared() const { return s_->cfg; }
const ropecheck_convention& loaded_plugin::convention() const { return s_->conv; }
dtype loaded_plugin::element_type() const { return static_cast<dtype>(s_->conv.dtype); }
const std::string& loaded_plugin::path() const { return s_->path; }
const kernel_limits& loaded_plugin::limits() const { return s_->limits; }
const std::vector<std::string>& loaded_plugin::claim_notes() const { return s_->notes; }

std::string loaded_plugin::name() const {
  if (s_->name) {
    const std::lock_guard<std::mutex> lock(s_->call);
    if (const char* n = s_->name()) return n;
  }
  const auto slash = s_->path.find_last_of('/');
  std::string stem = slash == std::string::npos ? s_->path : s_->path.substr(slash + 1);
  if (const auto dot = stem.find('.'); dot != std::string::npos) stem.resize(dot);
  return stem;
}

int loaded_plugin::apply_raw(const void* x, void* y, const std::int64_t* positions, std::int64_t tokens, int heads,
                             bool inverse) const {
  return apply_rows_raw(x, y, positions, 1, tokens, heads, inverse);
}

int loaded_plugin::apply_rows_raw(const void* x, void* y, const std::int64_t* rows_positions, int rows,
                                  std::int64_t tokens, int heads, bool inverse) const {
  const kernel_limits& l = s_->limits;
  if (rows != 1 && rows != l.rows)
    throw std::invalid_argument("plugin apply: " + std::to_string(rows) + " position rows given, the plugin declares " +
                                std::to_string(l.rows));
  const auto n = static_cast<std::size_t>(tokens < 0 ? 0 : tokens);
  std::vector<std::int64_t> p;  // the rows the kernel is given, when they differ from rows_positions
  const std::int64_t* given = rows_positions;
  if (rows != l.rows || (inverse && !l.supports_inverse)) {
    if (inverse && !l.supports_inverse && !l.negative_positions)
      throw std::logic_error("plugin apply: R(p)^T asked of a kernel that declares neither supports_inverse nor "
                             "negative_positions");
    p.resize(n * static_cast<std::size_t>(l.rows));
    for (std::size_t r = 0; r < static_cast<std::size_t>(l.rows); ++r)
      for (std::size_t t = 0; t < n; ++t) {
        const std::int64_t v = rows_positions[(rows == 1 ? 0 : r) * n + t];
        p[r * n + t] = inverse && !l.supports_inverse ? -v : v;  // R(p)^T = R(-p) (conformance's driven())
      }
    given = p.data();
    if (!l.supports_inverse) inverse = false;
  }
  const std::lock_guard<std::mutex> lock(s_->call);
  if (s_->apply2) return s_->apply2(x, y, given, l.rows, tokens, heads, inverse ? 1 : 0);
  return s_->apply(x, y, given, tokens, heads, inverse ? 1 : 0);
}

bool loaded_plugin::has_apply_qk() const { return s_->apply_qk != nullptr; }

int loaded_plugin::apply_qk_raw(const void* q, const void* k, void* q_out, void* k_out, const std::int64_t* positions,
                                std::int64_t tokens, int q_heads, int k_heads) const {
  if (!s_->apply_qk) throw std::logic_error("plugin apply_qk: " + s_->path + " does not export ropecheck_plugin_apply_qk");
  if (q_heads < 1 || k_heads < 1 || q_heads % k_heads != 0)
    throw std::invalid_argument("plugin apply_qk: " + std::to_string(k_heads) + " key heads must divide " +
                                std::to_string(q_heads) + " query heads (plugin.h)");
  const std::lock_guard<std::mutex> lock(s_->call);
  return s_->apply_qk(q, k, q_out, k_out, positions, tokens, q_heads, k_heads);
}

void loaded_plugin::apply(std::span<const long double> x, std::span<long double> y, int heads, std::int64_t pos,
                          bool inverse) const {
  const auto n = static_cast<std::size_t>(heads) * static_cast<std::size_t>(s_->cfg.head_dim);
  if (heads <= 0 || x.size() != n || y.size() != n)
    throw std::invalid_argument("plugin apply: x and y must hold heads * head_dim = " + std::to_string(n) +
                                " values, got " + std::to_string(x.size()) + " and " + std::to_string(y.size()));
  const dtype t = element_type();
  const std::size_t bytes = element_bytes(t);
  std::vector<unsigned char> xs(n * bytes), ys(n * bytes);
  to_wire(t, x, xs.data());
  const int rc = apply_raw(xs.data(), ys.data(), &pos, 1, heads, inverse);
  if (rc != 0)
    fail(s_->path, "ropecheck_plugin_apply returned error code " + std::to_string(rc) + " (position " +
                       std::to_string(pos) + ", heads " + std::to_string(heads) + ")");
  from_wire(t, ys.data(), y);
}

}  // namespace ropecheck::plugin
