// tests/reference/mrope_reference_test.cpp — the reference's M-RoPE: its band-to-row map (rebuilt as HF
// builds its cos/sin, reference/src/mrope.cpp) against config.hpp's position_row (what the kernels and
// the judge use) for every band of every valid section split of 2..12 bands into 2 or 3 rows, both
// kinds; the published Qwen2-VL and Qwen3-VL splits at their section boundaries; and rotate_rows
// against rotate.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <stdexcept>
#include <vector>

#include "ropecheck/config.hpp"
#include "ropecheck/reference/reference.hpp"
#include "ropecheck/schedule.hpp"

namespace {

using ropecheck::mrope_kind;
using ropecheck::rope_config;
using ropecheck::reference::dd;
using ropecheck::reference::mrope_band_rows;
using ropecheck::reference::rope_reference;

rope_config mrope_config(mrope_kind k, std::vector<int> sections) {
  rope_config c;
  int bands = 0;
  for (int s : sections) bands += s;
  c.head_dim = c.rotary_dim = 2 * bands;
  c.base = 1000000.0;
  c.mrope = k;
  c.mrope_section = std::move(sections);
  return c;
}

bool valid(const rope_config& c) {
  try {
    ropecheck::validate_mrope(c);
    return true;
  } catch (const std::invalid_argument&) {
    return false;
  }
}

TEST(MropeReference, BandRowsAgreeWithPositionRowForEverySplit) {
  int checked = 0;
  for (mrope_kind k : {mrope_kind::contiguous, mrope_kind::interleaved})
    for (int bands = 2; bands <= 12; ++bands)
      for (int s0 = 0; s0 <= bands; ++s0)
        for (int s1 = 0; s0 + s1 <= bands; ++s1) {
          std::vector<std::vector<int>> splits = {{s0, s1, bands - s0 - s1}};
          if (s1 == 0) splits.push_back({s0, bands - s0});  // two rows
          for (const auto& sec : splits) {
            const rope_config c = mrope_config(k, sec);
            if (!valid(c)) continue;
            const std::vector<int> rows = mrope_band_rows(c);
            ASSERT_EQ(static_cast<int>(rows.size()), bands);
            for (int b = 0; b < bands; ++b)
              EXPECT_EQ(rows[static_cast<std::size_t>(b)], c.position_row(b))
                  << to_string(k) << " sections " << sec[0] << "," << sec[1] << " band " << b;
            ++checked;
          }
        }
  std::printf("checked %d valid section splits\n", checked);
  EXPECT_GT(checked, 100);
}

TEST(MropeReference, Qwen2VlContiguousSectionsAtTheirBoundaries) {
  const auto rows = mrope_band_rows(mrope_config(mrope_kind::contiguous, {16, 24, 24}));
  ASSERT_EQ(rows.size(), 64u);
  EXPECT_EQ(rows[0], 0);
  EXPECT_EQ(rows[15], 0);
  EXPECT_EQ(rows[16], 1);
  EXPECT_EQ(rows[39], 1);
  EXPECT_EQ(rows[40], 2);
  EXPECT_EQ(rows[63], 2);
}

TEST(MropeReference, Qwen3VlInterleavedSectionsAtTheirBoundaries) {
  const auto rows = mrope_band_rows(mrope_config(mrope_kind::interleaved, {24, 20, 20}));
  ASSERT_EQ(rows.size(), 64u);
  const std::vector<int> head = {0, 1, 2, 0, 1, 2};
  for (std::size_t b = 0; b < head.size(); ++b) EXPECT_EQ(rows[b], head[b]) << b;
  EXPECT_EQ(rows[58], 1);  // 58 = 1 + 3 * 19: the last of row 1's 20 (idx < 60)
  EXPECT_EQ(rows[59], 2);  // the last of row 2's
  EXPECT_EQ(rows[60], 0);  // past 3 * 20: temporal
  EXPECT_EQ(rows[61], 0);
  EXPECT_EQ(rows[62], 0);
  EXPECT_EQ(rows[63], 0);
}

TEST(MropeReference, OneDimensionalConfigIsAllRowZero) {
  rope_config c;
  c.head_dim = c.rotary_dim = 16;
  EXPECT_EQ(mrope_band_rows(c), std::vector<int>(8, 0));
}

TEST(MropeReference, SectionsNotCoveringTheBandsAreRefused) {
  for (mrope_kind k : {mrope_kind::contiguous, mrope_kind::interleaved}) {
    auto c = mrope_config(k, {16, 24, 24});
    c.rotary_dim = c.head_dim = 126;  // 63 bands, the sections cover 64
    EXPECT_THROW((void)mrope_band_rows(c), std::invalid_argument) << to_string(k);
  }
}

// Rows all equal give rotate() bit for bit; rows that differ turn each band by its own row.
TEST(MropeReference, RotateRowsIsRotateWithEachBandsRow) {
  for (mrope_kind k : {mrope_kind::contiguous, mrope_kind::interleaved}) {
    const rope_config c = k == mrope_kind::contiguous ? mrope_config(k, {4, 6, 6}) : mrope_config(k, {6, 5, 5});
    const rope_reference R(c);
    std::vector<double> x(static_cast<std::size_t>(c.head_dim));
    for (std::size_t j = 0; j < x.size(); ++j) x[j] = (static_cast<double>(j) - 7.0) / 8.0;
    std::vector<dd> y(x.size()), z(x.size());
    for (std::int64_t p : {std::int64_t{0}, std::int64_t{1}, std::int64_t{4097}, std::int64_t{1} << 40}) {
      const std::vector<std::int64_t> equal = {p, p, p};
      R.rotate_rows(equal, x, y);
      R.rotate(p, x, z);
      for (std::size_t j = 0; j < x.size(); ++j) {
        EXPECT_EQ(y[j].hi, z[j].hi) << j;
        EXPECT_EQ(y[j].lo, z[j].lo) << j;
      }
    }
    const std::vector<std::int64_t> rows = {100, 7, 12};
    R.rotate_rows(rows, x, y);
    const int nb = c.bands();
    for (int b = 0; b < nb; ++b) {
      R.rotate(rows[static_cast<std::size_t>(c.position_row(b))], x, z);
      for (auto j : {static_cast<std::size_t>(b), static_cast<std::size_t>(b + nb)}) {
        EXPECT_EQ(y[j].hi, z[j].hi) << to_string(k) << " band " << b;
        EXPECT_EQ(y[j].lo, z[j].lo) << to_string(k) << " band " << b;
      }
    }
    EXPECT_THROW(R.rotate_rows(std::vector<std::int64_t>{1, 2}, x, y), std::invalid_argument);
  }
}

}  // namespace
