// tools/certify/implementations.hpp — what `ropecheck certify` can certify: the report's strategies
// (tools/sweep/strategies.hpp, one list for every door) and a kernel behind the C plugin interface.
//
// Each is a block_source: the applied cos/sin pair (attention factor included, after every cast and
// cache: what the implementation feeds its rotation) of every band at a block of consecutive
// positions. A strategy's pair is its cos_sin(); a plugin's is read off its kernel by rotating, at
// every position of the block, one head whose pairs are all (1, 0): y_a = af c, y_b = af s.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "certify_data.hpp"

namespace ropecheck::certify {

class block_source {
 public:
  virtual ~block_source() = default;
  // cos_out/sin_out: count * bands values, element (p - first) * bands + b. One source per thread.
  virtual void fill(std::int64_t first, std::int64_t count, std::span<double> cos_out, std::span<double> sin_out) = 0;
};

struct implementation {
  implementation_id id;
  bool in_default_set = true;
  // Values with more than 24 significand bits (double): measured in double-double, not double.
  bool precise = false;
  std::function<std::unique_ptr<block_source>()> make_source;
};

// The builtin implementations of `names` in the order given (duplicates dropped; empty = the default
// set), made for `cfg` at sequence length seq_len. Throws std::invalid_argument for an unknown name
// (the message lists the known ones).
[[nodiscard]] std::vector<implementation> builtin_implementations(const std::vector<std::string>& names,
                                                                  const rope_config& cfg, std::int64_t seq_len);

// Every builtin name, description, dtype and default-set flag (for --list-implementations).
[[nodiscard]] std::vector<implementation> known_builtin_implementations();

// A plugin kernel: its declared convention (validated) and the implementation reading it.
struct plugin_implementation {
  rope_config declared;
  implementation impl;
};
// Loaded as `ropecheck audit --plugin` loads it (plugin_child.hpp load_plugin_guarded: a library that
// crashes or hangs while loading is an error, not a crash), and every apply() of the sweep runs in a
// child process (child_process_door, one per source, i.e. per thread) with timeout_seconds a call.
// Throws plugin::plugin_error naming the file and the problem (plugin_loader's messages).
[[nodiscard]] plugin_implementation load_plugin_implementation(const std::string& path, double timeout_seconds = 10);

// What fill() throws when a plugin's apply() crashed, hung, wrote past y or returned an error code:
// the door's finding (plugin_crashed, plugin_timeout, plugin_out_of_bounds, plugin_error), naming the
// positions of the call. The CLI turns it into a failed verdict (exit 1), never a crash.
class plugin_call_failed : public std::runtime_error {
 public:
  plugin_call_failed(std::string bug_class, const std::string& sentence)
      : std::runtime_error(sentence), bug_class_(std::move(bug_class)) {}
  [[nodiscard]] const std::string& bug_class() const noexcept { return bug_class_; }

 private:
  std::string bug_class_;
};

// SHA-256 of bytes, as 64 lowercase hex digits (OpenSSL).
[[nodiscard]] std::string sha256_hex(std::string_view bytes);

}  // namespace ropecheck::certify
