// tools/audit/plugin_audit.cpp — see plugin_audit.hpp.
//
// The property drivers, the implementation-under-test binding and the RapidCheck runner are the
// test suite's own headers (tests/properties/rope_properties.hpp, rope_under_test.hpp,
// property_runner.hpp; none includes GoogleTest), so the audit of a foreign kernel is exactly
// what tests/properties/plugin_test.cpp runs.
#include "plugin_audit.hpp"

#include <chrono>
#include <charconv>
#include <cstdlib>
#include <iostream>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <string_view>
#include <unordered_map>

#include "plugin_loader.hpp"
#include "property_runner.hpp"
#include "rope_properties.hpp"

namespace ropecheck::test {

rope_under_test bind_plugin(const plugin::loaded_plugin& p) {
  using plugin::dtype;
  const named_config nc{p.name(), p.declared(), 0};
  rope_under_test r;
  r.name = "plugin:" + p.name() + " " + std::string(plugin::to_string(p.element_type()));
  r.declared = nc.cfg;
  r.seq_len = nc.seq_len;
  const dtype t = p.element_type();
  if (t == dtype::f16) r.max_position = 65504;
  r.wide_compute = t == dtype::f64;  // positions to 2^31 for double buffers, 2^24 otherwise
  r.ref = std::make_shared<const reference::rope_reference>(nc.cfg, nc.seq_len);
  switch (t) {
    case dtype::f32: r.to_storage = [](long double v) { return static_cast<long double>(static_cast<float>(v)); }; break;
    case dtype::f64: r.to_storage = [](long double v) { return static_cast<long double>(static_cast<double>(v)); }; break;
    case dtype::bf16: r.to_storage = [](long double v) { return scalar_traits<bfloat16>::widen(scalar_traits<bfloat16>::narrow(v)); }; break;
    case dtype::f16: r.to_storage = [](long double v) { return scalar_traits<float16>::widen(scalar_traits<float16>::narrow(v)); }; break;
  }
  r.rotate = [p](std::span<const long double> x, std::span<long double> y, int heads, std::int64_t pos,
                 rotation_sense sense) { p.apply(x, y, heads, pos, sense == rotation_sense::inverse); };
  // HF's fp32 path (fp32 inv_freq, angle, cos/sin and arithmetic) with its result stored in the
  // plugin's dtype: the storage rounding is charged for bf16 and fp16 and is nil for fp32 and fp64.
  const auto ref = r.ref;
  const auto model = hf_model<float>(nc);
  r.bound = [ref, model, t](std::int64_t pos, int band) {
    const long double af = ref->attention_factor().value();
    const long double cs = cos_sin_bound(model, *ref, pos, band);
    switch (t) {
      case dtype::bf16: return rotation_bound<float, bfloat16>(cs, af) / af;
      case dtype::f16: return rotation_bound<float, float16>(cs, af) / af;
      case dtype::f64: return rotation_bound<float, double>(cs, af) / af;
      case dtype::f32: break;
    }
    return rotation_bound<float, float>(cs, af) / af;
  };
  return r;
}

}  // namespace ropecheck::test

namespace ropecheck::audit {
namespace {

std::string_view element_type_name(plugin::dtype t) {
  switch (t) {
    case plugin::dtype::f32: return "float32";
    case plugin::dtype::f64: return "float64";
    case plugin::dtype::bf16: return "bfloat16";
    case plugin::dtype::f16: return "float16";
  }
  return "?";
}

std::string shortest(double v) {  // the shortest decimal that reads back as v
  char buf[64];
  const auto r = std::to_chars(buf, buf + sizeof buf, v);
  return std::string(buf, r.ptr);
}

std::string convention_line(const rope_config& c) {
  std::ostringstream s;
  s << "head_dim " << c.head_dim << ", rotary_dim " << c.rotary_dim << ", base " << shortest(c.base) << ", scaling "
    << to_string(c.scaling) << ", factor " << shortest(c.factor) << ", layout " << to_string(c.pair_layout)
    << ", max_position_embeddings " << c.max_position_embeddings;
  if (c.original_max_position_embeddings > 0)
    s << ", original_max_position_embeddings " << c.original_max_position_embeddings;
  if (c.scaling == scaling_kind::yarn) s << ", beta_fast " << shortest(c.beta_fast) << ", beta_slow " << shortest(c.beta_slow);
  if (c.scaling == scaling_kind::llama3)
    s << ", low_freq_factor " << shortest(c.low_freq_factor) << ", high_freq_factor " << shortest(c.high_freq_factor);
  if (c.attention_factor) s << ", attention_factor " << shortest(*c.attention_factor);
  return s.str();
}

// A word for a POSIX shell: as is when it needs no quoting, else in single quotes.
std::string shell_word(const std::string& w) {
  const bool plain = !w.empty() && w.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
                                                       "0123456789_./-+:=@%,") == std::string::npos;
  if (plain) return w;
  std::string q = "'";
  for (const char ch : w) q += ch == '\'' ? std::string("'\\''") : std::string(1, ch);
  return q + "'";
}

// A property's message without RapidCheck's preamble ("<file>:<line>:\nRC_FAIL(<expression>)\n\n"):
// the source line of the test suite's driver means nothing to the author of a foreign kernel.
std::string property_message(const std::string& description) {
  const auto blank = description.find("\n\n");
  if (blank == std::string::npos || description.find(":\nRC_") > blank) return description;
  return description.substr(blank + 2);
}

// Verbose mode: RapidCheck's progress on stderr ('.' a case passed, 'x' the first failing case,
// then each accepted shrink's message). Observes only, so results do not depend on it.
class progress_listener final : public rc::detail::TestListener {
 public:
  void onTestCaseFinished(const rc::detail::CaseDescription& d) override {
    using T = rc::detail::CaseResult::Type;
    if (d.result.type == T::Failure) {
      std::cerr << "x\n  falsified: " << first_line(property_message(d.result.description)) << "\n";
    } else {
      std::cerr << (d.result.type == T::Success ? '.' : '-');
    }
  }
  void onShrinkTried(const rc::detail::CaseDescription& d, bool accepted) override {
    if (accepted) std::cerr << "  shrunk:    " << first_line(property_message(d.result.description)) << "\n";
  }
  void onTestFinished(const rc::detail::TestMetadata& m, const rc::detail::TestResult& r) override {
    std::cerr << "\n  " << m.id << ": " << (r.is<rc::detail::SuccessResult>() ? "passed" : "FAILED") << "\n";
  }

 private:
  static std::string first_line(const std::string& s) { return s.substr(0, s.find('\n')); }
};

}  // namespace

std::vector<std::string> plugin_property_names() {
  std::vector<std::string> v;
  for (const auto& p : test::rope_properties()) v.emplace_back(p.name);
  return v;
}

plugin_audit_result audit_plugin(const std::filesystem::path& lib, const plugin_audit_options& options) {
  if (options.max_success < 1)
    throw std::invalid_argument("audit_plugin: max_success must be >= 1, got " + std::to_string(options.max_success));
  const plugin::loaded_plugin loaded = plugin::load_plugin(lib.string());
  const test::rope_under_test impl = test::bind_plugin(loaded);

  // RapidCheck's parameters: options.rc_params, else RC_PARAMS' (RapidCheck's configuration, which
  // announces itself on stderr, is only read when RC_PARAMS is set). Their max_size, discard
  // ratio, noshrink and reproduce entries apply; max_success is ours, and so is the seed if given.
  const char* env_params = std::getenv("RC_PARAMS");
  rc::detail::Configuration config;
  if (options.rc_params) {
    try {
      config = rc::detail::configFromString(*options.rc_params);
    } catch (const std::exception& e) {
      throw std::invalid_argument("audit_plugin: rc_params \"" + *options.rc_params + "\": " + e.what());
    }
  } else if (env_params) {
    config = rc::detail::configuration();
  }
  const auto seed = [&]() -> std::uint64_t {
    if (options.seed) return *options.seed;
    if (!options.rc_params) return test::detail::environment_seed();  // RC_PARAMS, ROPECHECK_SEED, default
    if (options.rc_params->find("seed=") != std::string::npos) return config.testParams.seed;
    const char* env = std::getenv("ROPECHECK_SEED");
    return env ? static_cast<std::uint64_t>(std::strtoull(env, nullptr, 0)) : test::default_property_seed;
  }();

  plugin_audit_result out;
  out.plugin_path = lib.string();
  out.plugin_name = loaded.name();
  out.element_type = element_type_name(loaded.element_type());
  out.convention = convention_line(loaded.declared());
  out.seed = seed;
  out.max_success = options.max_success;
  out.rerun = "ropecheck audit --plugin " + shell_word(out.plugin_path) + " --seed " + std::to_string(out.seed);
  if (out.max_success != 100) out.rerun += " --max-success " + std::to_string(out.max_success);

  test::detail::silent_listener silent;
  progress_listener progress;
  test::property_run run;
  run.params = config.testParams;
  run.params.seed = out.seed;
  run.params.maxSuccess = out.max_success;
  run.listener = options.verbose ? static_cast<rc::detail::TestListener*>(&progress) : &silent;
  run.reproduce = &config.reproduce;

  const auto properties = test::rope_properties();
  const int total = static_cast<int>(properties.size());
  out.passed = true;
  for (int i = 0; i < total; ++i) {
    const auto& p = properties[static_cast<std::size_t>(i)];
    if (options.on_property) options.on_property(p.name, i, total);
    if (options.verbose) std::cerr << "[ropecheck audit] " << p.name << " ";
    run.cases = p.cases;
    const auto t0 = std::chrono::steady_clock::now();
    const test::property_outcome o = test::run_property(std::string("audit/") + p.name, p.make(impl), run);
    const auto t1 = std::chrono::steady_clock::now();
    plugin_property_result r;
    r.name = p.name;
    r.passed = o.passed;
    r.successes = o.successes;
    r.description = property_message(o.description);
    r.counterexample = o.counterexample;
    r.reproduce = o.reproduce;
    if (!o.reproduce.empty())
      r.replay = "RC_PARAMS=\"" + o.reproduce + "\" ropecheck audit --plugin " + shell_word(out.plugin_path);
    r.seconds = std::chrono::duration<double>(t1 - t0).count();
    out.passed = out.passed && r.passed;
    out.properties.push_back(std::move(r));
  }
  return out;
}

}  // namespace ropecheck::audit
