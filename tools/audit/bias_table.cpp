// tools/audit/bias_table.cpp — see bias_table.hpp.
#include "bias_table.hpp"

#include <string>

#include "one_tensor.hpp"

namespace ropecheck::audit {

std::vector<double> read_t5_table(const std::filesystem::path& file, int num_buckets, int heads) {
  return read_one_tensor(file, "--t5-table", {"relative_attention_bias.weight"}, {num_buckets, heads},
                         "[num_buckets " + std::to_string(num_buckets) + ", heads " + std::to_string(heads) +
                             "] (relative_attention_bias.weight, nn.Embedding(num_buckets, n_heads))")
      .values;
}

}  // namespace ropecheck::audit
