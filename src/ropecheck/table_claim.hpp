// ropecheck/table_claim.hpp — what a residual-stream scheme claims: a position vector added to the token at the
// input, either a sinusoid (Vaswani et al. 2017, sec. 3.5, and the ports that differ from it) or a learned table
// (GPT-2's wpe, BERT's position_embeddings, OPT's and BART's offset tables). The first of the seeds' three
// placements of position (docs/tables.md). A table claim is plain data every door carries (config -> claim ->
// probe -> judge), as rope_config is for RoPE and bias_claim for the score biases; the rule that turns it into the
// row a token reads is here, once.
//
// The sinusoid families differ in three things, each a field (docs/tables.md cites the code of each):
//   layout       which column holds sin and which cos of which frequency: the paper's interleaving (2i sin, 2i+1
//                cos), or concatenated halves [sin | cos] (tensor2tensor, fairseq, Marian, Whisper's sinusoids)
//   denominator  the frequency of band i (0-based, of d/2) is base^(-i / D): the paper's D = d/2 (2i/d), fairseq's
//                and tensor2tensor's D = d/2 - 1 (log(base) / (half_dim - 1))
//   offset       the position evaluated (a sinusoid) or the row read (a table) for the token at position p is
//                p + offset: fairseq's positions start at padding_idx + 1 (M2M100, NLLB, XGLM: 2), OPT's and
//                BART's learned tables are indexed at p + 2
// and in how a token's position is counted when the batch is left-padded (padding_rule).
//
// Light header: no JSON, no MPFR. Covered by tests/core/table_claim_test.cpp.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace ropecheck {

enum class table_scheme : std::uint8_t { sinusoidal, learned };

[[nodiscard]] constexpr std::string_view to_string(table_scheme s) noexcept {
  return s == table_scheme::sinusoidal ? "sinusoidal" : "learned";
}

enum class sinusoid_layout : std::uint8_t {
  interleaved,             // column 2i sin, 2i+1 cos of band i (the paper; DistilBERT, XLM's create_sinusoidal_embeddings)
  interleaved_cos_first,   // column 2i cos, 2i+1 sin
  concatenated,            // columns [0, d/2) sin, [d/2, d) cos of bands 0..d/2-1 (fairseq, tensor2tensor, Marian, Whisper)
  concatenated_cos_first,  // [cos | sin]
};

[[nodiscard]] constexpr std::string_view to_string(sinusoid_layout l) noexcept {
  switch (l) {
    case sinusoid_layout::interleaved: return "interleaved";
    case sinusoid_layout::interleaved_cos_first: return "interleaved_cos_first";
    case sinusoid_layout::concatenated: return "concatenated";
    case sinusoid_layout::concatenated_cos_first: return "concatenated_cos_first";
  }
  return "?";
}
[[nodiscard]] inline std::optional<sinusoid_layout> sinusoid_layout_from(std::string_view s) {
  for (auto l : {sinusoid_layout::interleaved, sinusoid_layout::interleaved_cos_first, sinusoid_layout::concatenated,
                 sinusoid_layout::concatenated_cos_first})
    if (to_string(l) == s) return l;
  return std::nullopt;
}

// How a token's position is counted in a left-padded batch.
enum class padding_rule : std::uint8_t {
  counted,  // positions count every token from the sequence's start, padding included (arange: GPT-2, BERT, BART,
            // Marian, Whisper): a token after k padding tokens is at k + j
  skipped,  // positions count the non-padding tokens only (RoBERTa's and fairseq's create_position_ids_from_input_ids,
            // OPT's cumsum of the attention mask): the j-th real token is at j; a padding token reads padding_row
};

[[nodiscard]] constexpr std::string_view to_string(padding_rule r) noexcept { return r == padding_rule::counted ? "counted" : "skipped"; }

struct table_claim {
  table_scheme scheme = table_scheme::sinusoidal;
  int width = 0;  // d: the row's width (the model's hidden size)

  // The sinusoid (scheme sinusoidal).
  sinusoid_layout layout = sinusoid_layout::interleaved;
  double denominator = 0;  // D: band i's frequency is base^(-i / D) (0: the paper's d/2)
  double base = 10000;

  // Both.
  std::int64_t offset = 0;       // the token at position p reads row (evaluates the sinusoid at) p + offset
  padding_rule padding = padding_rule::counted;
  std::int64_t padding_row = -1; // skipped: the row a padding token reads (RoBERTa, fairseq: padding_idx; OPT: 1)
  bool padding_row_zero = false; // a sinusoid's padding row is zeros (fairseq: emb[padding_idx, :] = 0)
  std::int64_t rows = 0;         // the table's rows (0: a sinusoid evaluated at any position, no end)

  // The learned table's values when the user gives them (--table-weights; Python claim={"weights": ...}):
  // [rows][width], row-major. The judge reads which row each position took from them.
  std::vector<double> weights;

  [[nodiscard]] double effective_denominator() const noexcept { return denominator > 0 ? denominator : width / 2.0; }

  // The last position whose row is inside the table (rows - 1 - offset), or -1 with no end.
  [[nodiscard]] std::int64_t last_position() const noexcept { return rows > 0 ? rows - 1 - offset : -1; }

  // The row (the sinusoid's evaluated position) of the token at position p: p + offset.
  [[nodiscard]] std::int64_t row_of(std::int64_t p) const noexcept { return p + offset; }

  friend bool operator==(const table_claim&, const table_claim&) = default;
};

// Column c of a layout: the band and whether it holds sin (else cos). d even.
struct sinusoid_column {
  int band = 0;
  bool is_sin = true;
};
[[nodiscard]] constexpr sinusoid_column column_of(sinusoid_layout l, int d, int c) noexcept {
  const int half = d / 2;
  switch (l) {
    case sinusoid_layout::interleaved: return {c / 2, c % 2 == 0};
    case sinusoid_layout::interleaved_cos_first: return {c / 2, c % 2 != 0};
    case sinusoid_layout::concatenated: return {c < half ? c : c - half, c < half};
    case sinusoid_layout::concatenated_cos_first: return {c < half ? c : c - half, c >= half};
  }
  return {};
}

// One line for the claim: "sinusoidal concatenated [sin | cos], frequencies 10000^(-i/511), offset 2 (padding skipped: a
// padding token reads row 1, zeros), no end" / "learned table of 1026 rows, offset 2 (padding counted)".
[[nodiscard]] inline std::string describe(const table_claim& c) {
  std::string s;
  if (c.scheme == table_scheme::sinusoidal) {
    const bool concat = c.layout == sinusoid_layout::concatenated || c.layout == sinusoid_layout::concatenated_cos_first;
    const bool cos_first = c.layout == sinusoid_layout::interleaved_cos_first || c.layout == sinusoid_layout::concatenated_cos_first;
    char b[160];
    std::snprintf(b, sizeof b, "sinusoidal %s %s, frequencies %g^(-i/%g)", concat ? "concatenated" : "interleaved",
                  cos_first ? (concat ? "[cos | sin]" : "(cos, sin)") : (concat ? "[sin | cos]" : "(sin, cos)"), c.base,
                  c.effective_denominator());
    s = b;
  } else {
    s = "learned table of " + std::to_string(c.rows) + " rows";
  }
  s += ", offset " + std::to_string(c.offset);
  if (c.padding == padding_rule::skipped)
    s += " (padding skipped: a padding token reads row " + std::to_string(c.padding_row) + (c.padding_row_zero ? ", zeros)" : ")");
  else
    s += " (padding counted)";
  if (c.scheme == table_scheme::sinusoidal)
    s += c.rows > 0 ? ", a table of " + std::to_string(c.rows) + " rows" : ", no end (evaluated at any position)";
  return s;
}

// The claim's checks that need no file: a positive even width for a sinusoid, a denominator > 0, a base > 1, an offset
// that leaves row 0 for position 0 inside the table, a learned table's rows given and its weights (when given) of
// rows x width. Throws std::invalid_argument naming the field.
inline void check_table_claim(const table_claim& c) {
  if (c.width <= 0) throw std::invalid_argument("table width: must be positive, got " + std::to_string(c.width));
  if (c.scheme == table_scheme::sinusoidal) {
    if (c.width % 2 != 0)
      throw std::invalid_argument("table width: " + std::to_string(c.width) + " is odd; ropecheck's sinusoid claims are of even widths");
    if (!(c.effective_denominator() > 0)) throw std::invalid_argument("denominator: must be positive");
    if (!(c.base > 1) || !std::isfinite(c.base)) throw std::invalid_argument("base: must be finite and > 1");
  } else if (c.rows <= 0) {
    throw std::invalid_argument("table rows: a learned table claim needs its length (the rows of its weight)");
  }
  if (c.offset < 0) throw std::invalid_argument("offset: must be >= 0, got " + std::to_string(c.offset));
  if (c.rows > 0 && c.offset >= c.rows)
    throw std::invalid_argument("offset: " + std::to_string(c.offset) + " is not below the table's " + std::to_string(c.rows) + " rows");
  if (c.padding == padding_rule::skipped && (c.padding_row < 0 || (c.rows > 0 && c.padding_row >= c.rows)))
    throw std::invalid_argument("padding_idx: a padding-skipping claim needs the padding row inside the table, got " +
                                std::to_string(c.padding_row));
  if (!c.weights.empty() && c.weights.size() != static_cast<std::size_t>(c.rows) * static_cast<std::size_t>(c.width))
    throw std::invalid_argument("table weights: " + std::to_string(c.weights.size()) + " values for a table of " +
                                std::to_string(c.rows) + " rows x " + std::to_string(c.width));
}

}  // namespace ropecheck
