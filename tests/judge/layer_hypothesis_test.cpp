// tests/judge/layer_hypothesis_test.cpp — layer_convention_wrong (judge/src/layer_hypothesis.cpp): a dump
// of one layer type judged as another's is named so, first, only when it passes under the other.
#include <gtest/gtest.h>

#include "judge_dumps.hpp"
#include "ropecheck/judge/classes.hpp"

namespace ropecheck::judge_test {
namespace {

// Gemma-3-like: a local (sliding) layer type at base 10000 and a global one at base 1e6.
rope_config local_layer() {
  auto c = claimed_config();
  c.base = 10000.0;
  return c;
}
rope_config global_layer() {
  auto c = claimed_config();
  c.base = 1000000.0;
  return c;
}

judge::audit_options with_layers(std::vector<judge::audit_options::other_layer> layers) {
  judge::audit_options o;
  o.other_layers = std::move(layers);
  return o;
}

TEST(LayerHypothesis, AnotherLayerTypesRopeIsNamedFirst) {
  const auto local = local_layer(), global = global_layer();
  const dump d = make_dump<float>(rope_geometry::of(local), hf_angle<float>(local), kPos, kPos, "float32");
  const auto plain = judge::audit(d, global);
  print("local dump, global claim, no layers", plain);
  ASSERT_FALSE(plain.pass);
  ASSERT_FALSE(plain.findings.empty());
  EXPECT_NE(plain.findings.front().bug_class, judge::classes::layer_convention_wrong);

  const auto v = judge::audit(d, global, with_layers({{5, "full_attention", global}, {0, "sliding_attention", local}}));
  print("local dump, global claim, both layer types", v);
  expect_top(v, judge::classes::layer_convention_wrong);
  EXPECT_NE(v.findings.front().sentence.find("\"sliding_attention\" layer (layer 0"), std::string::npos)
      << v.findings.front().sentence;
  EXPECT_EQ(v.findings.size(), plain.findings.size() + 1) << "the claim's own diagnosis is kept after it";
  EXPECT_EQ(v.worst_ratio, plain.worst_ratio) << "the verdict is the claim's";
}

TEST(LayerHypothesis, NotNamedWhenNoOtherLayerPassesOrTheDumpPasses) {
  const auto local = local_layer(), global = global_layer();
  auto other = local;
  other.base = 50000.0;  // neither the dump's nor the claim's
  const dump d = make_dump<float>(rope_geometry::of(local), hf_angle<float>(local), kPos, kPos, "float32");
  for (const auto& f : judge::audit(d, global, with_layers({{0, "sliding_attention", other}})).findings)
    EXPECT_NE(f.bug_class, judge::classes::layer_convention_wrong) << f.sentence;
  auto wider = local;  // another head_dim: never tried, even when its bands would fit
  wider.head_dim = wider.rotary_dim = 128;
  for (const auto& f : judge::audit(d, global, with_layers({{0, "sliding_attention", wider}})).findings)
    EXPECT_NE(f.bug_class, judge::classes::layer_convention_wrong) << f.sentence;
  const auto pass = judge::audit(d, local, with_layers({{5, "full_attention", global}}));
  expect_pass(pass);
}

}  // namespace
}  // namespace ropecheck::judge_test
