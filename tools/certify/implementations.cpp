// tools/certify/implementations.cpp — see implementations.hpp.
#include "implementations.hpp"

#include <openssl/evp.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <sstream>
#include <stdexcept>
#include <type_traits>
#include <utility>

#include "plugin_child.hpp"
#include "plugin_loader.hpp"
#include "plugin_probe.hpp"
#include "ropecheck/angle_batch.hpp"
#include "ropecheck/rope.hpp"
#include "sweep/strategies.hpp"

namespace ropecheck::certify {
namespace {

template <class Storage>
std::string judge_dtype() {
  if constexpr (std::is_same_v<Storage, float>) return "float32";
  else if constexpr (std::is_same_v<Storage, double>) return "float64";
  else if constexpr (std::is_same_v<Storage, bfloat16>) return "bfloat16";
  else if constexpr (std::is_same_v<Storage, float16>) return "float16";
  else static_assert(!sizeof(Storage), "the judge knows float32, bfloat16, float16 and float64");
}

// A strategy's blocks through angle_batch.hpp (bit-identical to its cos_sin, tested there): one per
// thread, so that a block starting inside a run of equal held positions reuses the last row.
template <class S>
class strategy_source final : public block_source {
 public:
  explicit strategy_source(std::shared_ptr<const S> s) : s_(std::move(s)), blocks_(*s_) {}
  void fill(std::int64_t first, std::int64_t count, std::span<double> c, std::span<double> s) override {
    blocks_.fill(first, count, c, s);
  }

 private:
  std::shared_ptr<const S> s_;
  cos_sin_blocks<S> blocks_;
};

struct entry {
  implementation_id id;
  bool in_default_set = true;
  bool precise = false;
  std::function<std::function<std::unique_ptr<block_source>()>(const rope_config&, std::int64_t)> maker;
};

const std::vector<entry>& registry() {
  static const std::vector<entry> entries = [] {
    std::vector<entry> r;
    sweep::for_each_strategy([&r]<class Compute, class Storage>(const char* name, const char* description, const char*,
                                                                 bool in_default_set, auto make, const sweep::arithmetic&) {
      entry e;
      e.id = {name, description, judge_dtype<Storage>(), "builtin"};
      e.in_default_set = in_default_set;
      using strategy = decltype(make(rope_config{}, std::int64_t{0}));
      e.precise = std::is_same_v<typename strategy::value_type, double> || std::is_same_v<Compute, double>;
      e.maker = [make](const rope_config& cfg, std::int64_t seq_len) {
        auto shared = std::make_shared<const strategy>(make(cfg, seq_len));  // built once, shared read-only
        return std::function<std::unique_ptr<block_source>()>(
            [shared] { return std::make_unique<strategy_source<strategy>>(shared); });
      };
      r.push_back(std::move(e));
    });
    return r;
  }();
  return entries;
}

// Applied pairs read off a plugin kernel: one head per token, every pair (1, 0), in calls of a block
// of consecutive positions through the source's own child process (a fault is plugin_call_failed).
class plugin_source final : public block_source {
 public:
  plugin_source(const plugin::loaded_plugin& p, const rope_config& cfg, double timeout_seconds)
      : t_(p.element_type()), path_(p.path()), door_(p, timeout_seconds), g_(rope_geometry::of(cfg)) {}
  void fill(std::int64_t first, std::int64_t count, std::span<double> c, std::span<double> s) override {
    const auto hd = static_cast<std::size_t>(g_.head_dim);
    const auto n = static_cast<std::size_t>(count);
    const std::size_t bytes = plugin::element_bytes(t_);
    std::vector<double> x(n * hd, 0.0), y(n * hd);
    for (std::size_t t = 0; t < n; ++t)
      for (int b = 0; b < g_.bands(); ++b) x[t * hd + static_cast<std::size_t>(g_.pair_of(b).first)] = 1.0;
    std::vector<unsigned char> xw(n * hd * bytes), yw(n * hd * bytes);
    plugin::to_wire(t_, x, xw.data());
    std::vector<std::int64_t> pos(n);
    for (std::size_t t = 0; t < n; ++t) pos[t] = first + static_cast<std::int64_t>(t);
    if (const auto o = door_.apply({xw, yw, pos, 1, false}); !o.ok()) {
      const judge::finding f = audit::door_finding(
          o, "certify's sweep, the call of positions " + std::to_string(first) + ".." + std::to_string(first + count - 1));
      throw plugin_call_failed(f.bug_class, "plugin " + path_ + ": " + f.sentence);
    }
    plugin::from_wire(t_, yw.data(), y);
    const auto nb = static_cast<std::size_t>(g_.bands());
    for (std::size_t t = 0; t < n; ++t)
      for (int b = 0; b < g_.bands(); ++b) {
        const auto [ia, ib] = g_.pair_of(b);
        c[t * nb + static_cast<std::size_t>(b)] = y[t * hd + static_cast<std::size_t>(ia)];
        s[t * nb + static_cast<std::size_t>(b)] = y[t * hd + static_cast<std::size_t>(ib)];
      }
  }

 private:
  plugin::dtype t_;
  std::string path_;
  plugin::child_process_door door_;
  rope_geometry g_;
};

std::string read_file_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read " + path);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

}  // namespace

std::vector<implementation> known_builtin_implementations() {
  std::vector<implementation> out;
  for (const auto& e : registry()) out.push_back({e.id, e.in_default_set, e.precise, {}});
  return out;
}

std::vector<implementation> builtin_implementations(const std::vector<std::string>& names, const rope_config& cfg,
                                                    std::int64_t seq_len) {
  std::vector<const entry*> chosen;
  if (names.empty()) {
    for (const auto& e : registry())
      if (e.in_default_set) chosen.push_back(&e);
  }
  for (const auto& n : names) {
    const auto it = std::find_if(registry().begin(), registry().end(), [&](const entry& e) { return e.id.name == n; });
    if (it == registry().end()) {
      std::string known;
      for (const auto& e : registry()) known += (known.empty() ? "" : ", ") + e.id.name;
      throw std::invalid_argument("certify: unknown implementation '" + n + "' (known: " + known + ")");
    }
    if (std::find(chosen.begin(), chosen.end(), &*it) == chosen.end()) chosen.push_back(&*it);
  }
  std::vector<implementation> out;
  for (const entry* e : chosen) out.push_back({e->id, e->in_default_set, e->precise, e->maker(cfg, seq_len)});
  return out;
}

plugin_implementation load_plugin_implementation(const std::string& path, double timeout_seconds) {
  plugin::loaded_plugin p = plugin::load_plugin_guarded(path, timeout_seconds);
  plugin_implementation out;
  out.declared = p.declared();
  const plugin::dtype t = p.element_type();
  out.impl.id.name = p.name();
  out.impl.id.description = "plugin kernel " + path;
  out.impl.id.dtype = t == plugin::dtype::f32 ? "float32" : t == plugin::dtype::f64 ? "float64"
                      : t == plugin::dtype::bf16 ? "bfloat16" : "float16";
  out.impl.id.source = "plugin sha256:" + sha256_hex(read_file_bytes(path));
  out.impl.precise = t == plugin::dtype::f64;
  const rope_config cfg = out.declared;
  out.impl.make_source = [p, cfg, timeout_seconds] { return std::make_unique<plugin_source>(p, cfg, timeout_seconds); };
  return out;
}

std::string sha256_hex(std::string_view bytes) {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  if (EVP_Digest(bytes.data(), bytes.size(), md, &len, EVP_sha256(), nullptr) != 1)
    throw std::runtime_error("sha256: OpenSSL EVP_Digest failed");
  std::string hex;
  char buf[3];
  for (unsigned int i = 0; i < len; ++i) {
    std::snprintf(buf, sizeof buf, "%02x", md[i]);
    hex += buf;
  }
  return hex;
}

}  // namespace ropecheck::certify
