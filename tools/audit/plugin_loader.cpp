// tools/audit/plugin_loader.cpp — see plugin_loader.hpp.
#include "plugin_loader.hpp"

#include <dlfcn.h>

#include <cmath>
#include <mutex>
#include <string_view>
#include <vector>

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
  ropecheck_plugin_name_fn name = nullptr;
  ropecheck_convention conv{};
  rope_config cfg;
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

rope_config to_rope_config(const ropecheck_convention& c, const std::string& origin) {
  if (c.abi != ROPECHECK_PLUGIN_ABI)
    bad_field(origin, "abi", "ABI mismatch: plugin declares " + std::to_string(c.abi) + ", loader implements " +
                                 std::to_string(ROPECHECK_PLUGIN_ABI));
  if (c.layout != ROPECHECK_LAYOUT_INTERLEAVED && c.layout != ROPECHECK_LAYOUT_HALF_SPLIT)
    bad_field(origin, "layout", "unknown layout " + std::to_string(c.layout));
  if (c.scaling < ROPECHECK_SCALING_NONE || c.scaling > ROPECHECK_SCALING_LONGROPE)
    bad_field(origin, "scaling", "unknown scaling kind " + std::to_string(c.scaling));
  if (c.scaling == ROPECHECK_SCALING_LONGROPE)
    bad_field(origin, "scaling", "LONGROPE needs per-band factors, which ABI " +
                                     std::to_string(ROPECHECK_PLUGIN_ABI) + " cannot carry");
  if (c.dtype < ROPECHECK_DTYPE_F32 || c.dtype > ROPECHECK_DTYPE_F16)
    bad_field(origin, "dtype", "unknown dtype " + std::to_string(c.dtype));
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

loaded_plugin load_plugin(const std::string& path, const load_options& options) {
  auto s = std::make_shared<loaded_plugin::state>();
  s->path = path;
  dlerror();
  s->handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!s->handle) {
    const char* err = dlerror();
    fail(path, std::string("cannot load plugin: ") + (err ? err : "dlopen failed"));
  }
  s->describe = reinterpret_cast<ropecheck_plugin_describe_fn>(symbol(s->handle, path, options.describe_symbol, true));
  s->apply = reinterpret_cast<ropecheck_plugin_apply_fn>(symbol(s->handle, path, options.apply_symbol, true));
  s->name = reinterpret_cast<ropecheck_plugin_name_fn>(symbol(s->handle, path, options.name_symbol, false));
  ropecheck_convention c{};
  const int rc = s->describe(&c);
  if (rc != 0) fail(path, "ropecheck_plugin_describe returned error code " + std::to_string(rc));
  s->conv = c;
  s->cfg = to_rope_config(c, path);
  return loaded_plugin(std::move(s));
}

rope_config loaded_plugin::declared() const { return s_->cfg; }
const ropecheck_convention& loaded_plugin::convention() const { return s_->conv; }
dtype loaded_plugin::element_type() const { return static_cast<dtype>(s_->conv.dtype); }
const std::string& loaded_plugin::path() const { return s_->path; }

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
  const std::lock_guard<std::mutex> lock(s_->call);
  return s_->apply(x, y, positions, tokens, heads, inverse ? 1 : 0);
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
