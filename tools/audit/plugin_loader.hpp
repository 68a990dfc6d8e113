// tools/audit/plugin_loader.hpp — loading a foreign RoPE kernel behind ropecheck/plugin.h.
//
// load_plugin(path) dlopen()s a shared library, resolves ropecheck_plugin_describe and
// ropecheck_plugin_apply (ropecheck_plugin_name is optional; ABI 2: ropecheck_plugin_apply2, which
// replaces apply when exported; ABI 3: ropecheck_plugin_apply_qk, the qk form's entry, in addition),
// checks the ABI (1 to 3), asks for the declared convention and
// validates it as a rope_config: ABI 1's flat fields, or ABI 2's config.json read as `ropecheck audit
// --config` reads it (config_path, layer, part), and the kernel's limits (max_position,
// negative_positions, supports_inverse, position_rows). Every failure throws plugin_error whose
// message names the file and what went wrong (the missing symbol, the ABI pair, describe()'s
// return code, the invalid field: "rope_config.<field>: ..." or "ropecheck_convention.<field>: ...").
//
// loaded_plugin is a cheap, copyable handle: copies share the library, which is dlclose()d when
// the last copy goes. Calls into the plugin are serialised (one mutex per loaded library), as
// plugin.h promises plugins.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "ropecheck/config.hpp"
#include "ropecheck/plugin.h"

namespace ropecheck::plugin {

class plugin_error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Element type of the plugin's buffers (mirrors enum ropecheck_dtype).
enum class dtype : std::int32_t { f32 = ROPECHECK_DTYPE_F32, f64 = ROPECHECK_DTYPE_F64, bf16 = ROPECHECK_DTYPE_BF16, f16 = ROPECHECK_DTYPE_F16 };
[[nodiscard]] std::string_view to_string(dtype t) noexcept;  // "float", "double", "bfloat16", "float16"
[[nodiscard]] std::size_t element_bytes(dtype t) noexcept;   // 4, 8, 2, 2

// The wire format of apply()'s buffers. to_wire converts each value exactly into t (a value t cannot
// hold throws std::domain_error naming its index: inputs are chosen exact, so this is a guard);
// from_wire widens exactly (every plugin dtype is a subset of double).
void to_wire(dtype t, std::span<const double> x, void* out);
void to_wire(dtype t, std::span<const long double> x, void* out);
void from_wire(dtype t, const void* in, std::span<double> out);
void from_wire(dtype t, const void* in, std::span<long double> out);

// Test hooks: the symbol names to resolve (a wrong name exercises the missing-symbol path).
struct load_options {
  std::string describe_symbol = "ropecheck_plugin_describe";
  std::string apply_symbol = "ropecheck_plugin_apply";
  std::string name_symbol = "ropecheck_plugin_name";
  std::string apply2_symbol = "ropecheck_plugin_apply2";
  std::string apply_qk_symbol = "ropecheck_plugin_apply_qk";
};

// What the kernel accepts (ABI 2's options; conformance::options' counterparts). ABI 1 plugins: no
// limit, negative positions and inverse accepted (ABI 1 requires both), one position row.
struct kernel_limits {
  std::int64_t max_position = 0;  // the kernel's last position; 0: no limit beyond the dtype's
  bool negative_positions = true;
  bool supports_inverse = true;
  int rows = 1;                   // position rows: 1, or the M-RoPE claim's sections
  // R(p)^T can be asked: honoured inverse, or apply at -p (conformance/src/driven.cpp driven).
  [[nodiscard]] bool has_inverse() const { return supports_inverse || negative_positions; }
};

// The probe needs its dense positions 0..63 (judge/src/probe.cpp probe_positions): a max_position
// below this is refused.
inline constexpr std::int64_t min_max_position = 63;

// An ABI 2 config_path as the loader reads it: absolute as is, relative against the directory of
// `library` (the plugin file).
[[nodiscard]] std::filesystem::path resolve_config_path(const std::string& config_path,
                                                        const std::filesystem::path& library);

// The C convention as a rope_config; throws plugin_error naming the field (`origin` prefixes
// the message, e.g. the file name). ABI 2 with a config_path: that file read by ropecheck's config
// reader (relative to `library`'s directory), its layer and part; notes (when given) receives the
// reader's decisions.
[[nodiscard]] rope_config to_rope_config(const ropecheck_convention& c, const std::string& origin = "plugin",
                                         const std::filesystem::path& library = {},
                                         std::vector<std::string>* notes = nullptr);

// The kernel's limits from an ABI 2 convention (ABI 1: the defaults above), validated against the
// claim: max_position 0 or >= min_max_position, position_rows (0 read as 1) equal to the claim's
// rows, apply2 exported when rows > 1. Throws plugin_error naming the field.
[[nodiscard]] kernel_limits limits_of(const ropecheck_convention& c, const rope_config& claim, bool has_apply2,
                                      const std::string& origin = "plugin");

class loaded_plugin {
 public:
  [[nodiscard]] rope_config declared() const;            // the validated convention
  [[nodiscard]] const ropecheck_convention& convention() const;  // as describe() filled it
  [[nodiscard]] dtype element_type() const;
  [[nodiscard]] std::string name() const;                // ropecheck_plugin_name(), or the file's stem
  [[nodiscard]] const std::string& path() const;
  [[nodiscard]] const kernel_limits& limits() const;       // ABI 2's options (ABI 1: the defaults)
  [[nodiscard]] const std::vector<std::string>& claim_notes() const;  // the config reader's, with a config_path

  // Rotate `heads` heads of one token at `pos` (inverse: R(-pos)). x and y hold heads * head_dim
  // values; each x value must be representable in the plugin's dtype (converted exactly, else
  // std::domain_error), and y is the plugin's output widened exactly. Throws plugin_error when
  // apply() returns nonzero, std::invalid_argument on a size mismatch.
  void apply(std::span<const long double> x, std::span<long double> y, int heads, std::int64_t pos,
             bool inverse) const;

  // apply() itself on wire buffers of `tokens` tokens (serialised like every call); its return code.
  // With limits().rows > 1 every row is `positions` (text tokens; apply2). An inverse a kernel
  // without supports_inverse cannot honour is asked as apply at -p (negative_positions), else
  // std::logic_error (the audit never asks it: it skips the inverse property).
  [[nodiscard]] int apply_raw(const void* x, void* y, const std::int64_t* positions, std::int64_t tokens, int heads,
                              bool inverse) const;
  // The same with `rows` position rows, [rows][tokens] row-major (rows must be limits().rows, or 1:
  // replicated); apply2 when exported, else apply (rows 1 only).
  [[nodiscard]] int apply_rows_raw(const void* x, void* y, const std::int64_t* rows_positions, int rows,
                                   std::int64_t tokens, int heads, bool inverse) const;

  // ABI 3: the library exports ropecheck_plugin_apply_qk (read only when it declares abi >= 3).
  [[nodiscard]] bool has_apply_qk() const;
  // apply_qk() itself on wire buffers (serialised like every call): q, q_out of tokens * q_heads * head_dim
  // elements, k, k_out of tokens * k_heads * head_dim; its return code. std::logic_error without has_apply_qk().
  [[nodiscard]] int apply_qk_raw(const void* q, const void* k, void* q_out, void* k_out, const std::int64_t* positions,
                                 std::int64_t tokens, int q_heads, int k_heads) const;

  struct state;  // the library handle and the resolved symbols

 private:
  friend loaded_plugin load_plugin(const std::string&, const load_options&);
  explicit loaded_plugin(std::shared_ptr<state> s) : s_(std::move(s)) {}
  std::shared_ptr<state> s_;
};

// Throws plugin_error: file missing or not loadable (dlerror's text), a required symbol missing,
// ABI mismatch, describe() failure, invalid convention, apply_qk exported by an M-RoPE claim (position_rows > 1:
// apply_qk takes one position per token).
[[nodiscard]] loaded_plugin load_plugin(const std::string& path, const load_options& options = {});

}  // namespace ropecheck::plugin
