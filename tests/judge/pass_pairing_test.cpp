// tests/judge/pass_pairing_test.cpp — which (layout, rotary dim) a dump rotates by (pass_pairing.cpp).
#include "judge/judge_dumps.hpp"

namespace {

using namespace ropecheck;
using namespace ropecheck::judge_test;

TEST(Diagnose, LayoutSwapped) {
  const auto c = claimed_config();
  auto g = rope_geometry::of(c);
  g.pair_layout = layout::interleaved;
  const auto v = judge::audit(make_dump<float>(g, hf_angle<float>(c), kPos, kPos, "float32"), c);
  print("interleaved, claimed half_split", v);
  expect_top(v, "layout_swapped");
}

TEST(Diagnose, RotaryDimAllCoordinatesRotated) {
  auto c = claimed_config(64);
  c.rotary_dim = 32;
  auto impl = c;
  impl.rotary_dim = 64;
  const auto v = judge::audit(make_dump<float>(rope_geometry::of(impl), hf_angle<float>(impl), kPos, kPos, "float32"), c);
  print("rotary over head_dim", v);
  expect_top(v, "rotary_dim_wrong");
}

// One head: no rigidity across heads, the pairing is judged by the magnitude ratios.
TEST(Diagnose, OneHeadLayoutSwapped) {
  const auto c = claimed_config();
  auto impl = c;
  impl.pair_layout = layout::interleaved;
  dump d = make_dump<float>(rope_geometry::of(impl), hf_angle<float>(c), kPos, kPos, "float32");
  // keep head 0 only
  dump one = d;
  one.heads = 1;
  one.x.clear();
  one.y.clear();
  for (int t = 0; t < d.tokens; ++t) {
    const auto o = static_cast<std::ptrdiff_t>(static_cast<std::size_t>(t) * kHeads * d.head_dim);
    one.x.insert(one.x.end(), d.x.begin() + o, d.x.begin() + o + d.head_dim);
    one.y.insert(one.y.end(), d.y.begin() + o, d.y.begin() + o + d.head_dim);
  }
  const auto v = judge::audit(one, c);
  print("one head, interleaved claimed half_split", v);
  expect_top(v, "layout_swapped");
}

// GLM-style partial rotary: head_dim 128, rotary_dim 64, pairs interleaved within the rotary part,
// coordinates 64..127 copied, judged against a half-split claim. Over all 128 coordinates the copied
// ones fit a "rotation" by angle 0, which is no evidence of a wider rotary dim: the one finding is
// layout_swapped (not rotary_dim_wrong, and no base fitted to a pairing that is not in use).
TEST(Diagnose, PartialRotaryInterleavedClaimedHalfSplitIsOnlyLayoutSwapped) {
  auto c = claimed_config(128);
  c.rotary_dim = 64;
  auto impl = c;
  impl.pair_layout = layout::interleaved;
  const auto v = judge::audit(make_dump<float>(rope_geometry::of(impl), hf_angle<float>(c), kPos, kPos, "float32"), c);
  print("GLM-style: interleaved rotary 64 of 128, claimed half-split", v);
  expect_top(v, "layout_swapped");
  EXPECT_EQ(v.findings.size(), 1u);
}

// The equality case of the rule above: when the coordinates past the claimed rotary dim are NOT
// copied but rotated (interleaved over all 128), the wider pairing is evidence: both are named.
TEST(Diagnose, EveryCoordinateRotatedInterleavedClaimedHalfSplitPartial) {
  auto c = claimed_config(128);
  c.rotary_dim = 64;
  auto impl = c;
  impl.pair_layout = layout::interleaved;
  impl.rotary_dim = 128;
  const auto v = judge::audit(make_dump<float>(rope_geometry::of(impl), hf_angle<float>(impl), kPos, kPos, "float32"), c);
  print("interleaved over all 128, claimed half-split rotary 64", v);
  expect_top(v, "layout_swapped");
  std::vector<std::string> classes;
  for (const auto& f : v.findings) classes.push_back(f.bug_class);
  EXPECT_EQ(classes, (std::vector<std::string>{"layout_swapped", "rotary_dim_wrong"}));
}

// The pass-through rule at its edges, on the GLM-style dump: exactly a tenth of the values past the
// claimed rotary dim changed (doubled) still counts as copied (one finding, layout_swapped); one more
// value changed is named (rotary_dim_wrong: should pass through unchanged), and being far from
// "most of them changed" it is no evidence of a wider rotary dim.
TEST(Diagnose, PassThroughChangedAtATenthIsCopiedAndOneMoreIsNamed) {
  auto c = claimed_config(128);
  c.rotary_dim = 64;
  auto impl = c;
  impl.pair_layout = layout::interleaved;
  const dump glm = make_dump<float>(rope_geometry::of(impl), hf_angle<float>(c), kPos, kPos, "float32");
  const std::size_t rows = static_cast<std::size_t>(glm.tokens) * glm.heads, total = rows * 64;
  auto with_changed = [&](std::size_t n) {
    dump d = glm;
    for (std::size_t k = 0; k < n; ++k) {
      const std::size_t o = (k / 64) * 128 + 64 + k % 64;
      d.y[o] = 2 * d.x[o];
    }
    return d;
  };
  const auto at = judge::audit(with_changed(total / 10), c);
  print("GLM-style, a tenth of the pass-through doubled", at);
  expect_top(at, "layout_swapped");
  EXPECT_EQ(at.findings.size(), 1u);
  const auto past = judge::audit(with_changed(total / 10 + 1), c);
  print("GLM-style, a tenth + 1 of the pass-through doubled", past);
  expect_top(past, "layout_swapped");
  ASSERT_EQ(past.findings.size(), 2u);
  EXPECT_EQ(past.findings[1].bug_class, "rotary_dim_wrong");
  EXPECT_NE(past.findings[1].sentence.find("should pass through unchanged but 948 of 9472"), std::string::npos)
      << past.findings[1].sentence;
}

}  // namespace
