// conformance/src/conventions.cpp — conventions for an adapter's convention(): an HF config.json or a
// preset, read exactly as `ropecheck report --config / --preset` reads them (nlohmann-json stays here).
#include <stdexcept>
#include <string>
#include <string_view>

#include "ropecheck/config_json.hpp"
#include "ropecheck/conformance/kernel.hpp"
#include "ropecheck/presets.hpp"

namespace ropecheck::conformance {

rope_config hf_config(const std::string& path) {
  try {
    return load_hf_config(path);
  } catch (const config_error& e) {  // names the file and the field already
    throw std::invalid_argument(e.what());
  }
}

rope_config preset(std::string_view name) {
  if (const auto c = find_preset(name)) return *c;
  throw std::invalid_argument("unknown preset \"" + std::string(name) + "\" (known: " + preset_names() + ")");
}

}  // namespace ropecheck::conformance
