// tests/core/table_claim_test.cpp — ropecheck/table_claim.hpp: the column map of each layout, the table's last
// position and the row a position reads (at the boundary), the claim's checks naming the field, and describe().
#include "ropecheck/table_claim.hpp"

#include <gtest/gtest.h>

#include <set>
#include <stdexcept>
#include <string>

namespace {

using namespace ropecheck;

TEST(TableClaim, EachLayoutMapsEveryBandOnceToASinAndACos) {
  for (const auto l : {sinusoid_layout::interleaved, sinusoid_layout::interleaved_cos_first, sinusoid_layout::concatenated,
                       sinusoid_layout::concatenated_cos_first}) {
    std::set<std::pair<int, bool>> seen;
    for (int c = 0; c < 8; ++c) {
      const sinusoid_column sc = column_of(l, 8, c);
      EXPECT_GE(sc.band, 0);
      EXPECT_LT(sc.band, 4);
      seen.insert({sc.band, sc.is_sin});
    }
    EXPECT_EQ(seen.size(), 8u) << to_string(l);
    EXPECT_EQ(sinusoid_layout_from(to_string(l)), l);
  }
  // The paper: column 2i sin, 2i+1 cos; fairseq: [sin | cos] (column d/2 is band 0's cos).
  EXPECT_TRUE(column_of(sinusoid_layout::interleaved, 8, 2).is_sin);
  EXPECT_EQ(column_of(sinusoid_layout::interleaved, 8, 3).band, 1);
  EXPECT_FALSE(column_of(sinusoid_layout::concatenated, 8, 4).is_sin);
  EXPECT_EQ(column_of(sinusoid_layout::concatenated, 8, 4).band, 0);
  EXPECT_TRUE(column_of(sinusoid_layout::concatenated, 8, 3).is_sin);
  EXPECT_FALSE(sinusoid_layout_from("half_split"));
}

TEST(TableClaim, TheLastPositionIsTheLastRowMinusTheOffset) {
  table_claim c;
  c.scheme = table_scheme::learned;
  c.width = 4;
  c.rows = 2050;
  c.offset = 2;
  EXPECT_EQ(c.last_position(), 2047);
  EXPECT_EQ(c.row_of(2047), 2049);  // the last row
  EXPECT_EQ(c.row_of(2048), 2050);  // past it
  table_claim s;
  s.width = 8;
  EXPECT_EQ(s.last_position(), -1);  // a sinusoid without end
  EXPECT_EQ(s.effective_denominator(), 4);
  s.denominator = 3;
  EXPECT_EQ(s.effective_denominator(), 3);
}

std::string refusal(const table_claim& c) {
  try {
    check_table_claim(c);
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "(accepted)";
}

TEST(TableClaim, ChecksNameTheField) {
  table_claim s;
  s.width = 8;
  EXPECT_EQ(refusal(s), "(accepted)");
  s.width = 7;
  EXPECT_NE(refusal(s).find("table width: 7 is odd"), std::string::npos);
  s.width = 0;
  EXPECT_NE(refusal(s).find("table width"), std::string::npos);
  s.width = 8;
  s.base = 1;
  EXPECT_NE(refusal(s).find("base"), std::string::npos);
  s.base = 10000;
  s.offset = -1;
  EXPECT_NE(refusal(s).find("offset"), std::string::npos);
  table_claim l;
  l.scheme = table_scheme::learned;
  l.width = 4;
  EXPECT_NE(refusal(l).find("table rows"), std::string::npos);
  l.rows = 10;
  l.offset = 9;  // the boundary: row 9 is the last, position 0 reads it
  EXPECT_EQ(refusal(l), "(accepted)");
  l.offset = 10;
  EXPECT_NE(refusal(l).find("offset: 10 is not below the table's 10 rows"), std::string::npos);
  l.offset = 0;
  l.padding = padding_rule::skipped;
  EXPECT_NE(refusal(l).find("padding_idx"), std::string::npos);
  l.padding_row = 9;
  EXPECT_EQ(refusal(l), "(accepted)");
  l.padding_row = 10;
  EXPECT_NE(refusal(l).find("padding_idx"), std::string::npos);
  l.padding_row = 1;
  l.weights.assign(39, 0.0);
  EXPECT_NE(refusal(l).find("table weights: 39 values"), std::string::npos);
  l.weights.assign(40, 0.0);
  EXPECT_EQ(refusal(l), "(accepted)");
}

TEST(TableClaim, DescribeSaysTheRule) {
  table_claim f;
  f.width = 1024;
  f.layout = sinusoid_layout::concatenated;
  f.denominator = 511;
  f.offset = 2;
  f.padding = padding_rule::skipped;
  f.padding_row = 1;
  f.padding_row_zero = true;
  EXPECT_EQ(describe(f), "sinusoidal concatenated [sin | cos], frequencies 10000^(-i/511), offset 2 (padding skipped: a padding "
                         "token reads row 1, zeros), no end (evaluated at any position)");
  table_claim l;
  l.scheme = table_scheme::learned;
  l.width = 8;
  l.rows = 1026;
  l.offset = 2;
  EXPECT_EQ(describe(l), "learned table of 1026 rows, offset 2 (padding counted)");
}

}  // namespace
