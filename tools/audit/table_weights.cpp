// tools/audit/table_weights.cpp — see table_weights.hpp.
#include "table_weights.hpp"

#include <string>

#include "one_tensor.hpp"

namespace ropecheck::audit {

std::vector<double> read_table_weights(const std::filesystem::path& file, std::int64_t rows, int width) {
  return read_one_tensor(file, "--table-weights", {"wpe.weight", "position_embeddings.weight", "embed_positions.weight"}, {rows, width},
                         "[rows " + std::to_string(rows) + ", width " + std::to_string(width) + "] (nn.Embedding(num_positions, dim).weight)")
      .values;
}

}  // namespace ropecheck::audit
