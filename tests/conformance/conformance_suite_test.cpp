// The conformance suite as a user instantiates it (ropecheck/conformance.hpp), over ropecheck's own
// correct kernels in the conventions real engines use: HF's fp32 path stored in fp32, bf16 and fp16,
// llama.cpp's fp32 chain of products, fp64 angles, MPFR (judged as float64), Llama 3.1 scaling and
// GPT-J's interleaved partial rotary. Every test must pass (a drift warning at most). And the header registers exactly the
// library's properties.
#include "ropecheck/conformance.hpp"

#include <string>
#include <vector>

#include "own_kernels.hpp"
#include "ropecheck/reference/reference.hpp"
#include "ropecheck/scalar_mpfr.hpp"

namespace rct = ropecheck::conformance::testing;
using ropecheck::bfloat16;
using ropecheck::float16;

// An MPFR kernel: rotate_heads over Boost.Multiprecision's mpfr backend with cos/sin from the reference
// carried into MPFR exactly (compute_frequencies<mpfr> would form inv_freq in fp32, which the judge
// rightly fails for a kernel judged as float64).
class reference_cos_sin_mpfr {
 public:
  explicit reference_cos_sin_mpfr(const ropecheck::rope_config& c) : ref_(c) {}
  [[nodiscard]] ropecheck::cos_sin_pair<ropecheck::mpfr_default> cos_sin(std::int64_t pos, int band) const {
    using mp = ropecheck::mpfr_default;
    const auto cs = ref_.cos_sin(pos, band);
    const auto af = ref_.attention_factor();
    const mp a = mp(af.hi) + mp(af.lo);
    return {(mp(cs.cos.hi) + mp(cs.cos.lo)) * a, (mp(cs.sin.hi) + mp(cs.sin.lo)) * a};
  }

 private:
  ropecheck::reference::rope_reference ref_;
};

template <class S, class C, class Strategy, ropecheck::rope_config (*Config)(), const char* Name>
struct named : rct::own_kernel<S, C, Strategy, Config> {
  static constexpr const char* name = Name;
};
constexpr char hf_f32[] = "hf_float32", hf_bf16[] = "hf_bfloat16_storage", hf_f16[] = "hf_float16_storage",
               ggml_f32[] = "ggml_float32", direct_f64[] = "direct_float64", gptj_f32[] = "gptj_hf_float32",
               reference_mpfr[] = "reference_cos_sin_mpfr";

ROPECHECK_CONFORMANCE(own_kernels,
                      named<float, float, ropecheck::hf_angle<float>, rct::llama3_8b, hf_f32>,
                      named<bfloat16, float, ropecheck::hf_angle<float>, rct::llama3_8b, hf_bf16>,
                      named<float16, float, ropecheck::hf_angle<float>, rct::llama3_8b, hf_f16>,
                      named<float, float, ropecheck::ggml_angle, rct::llama3_8b, ggml_f32>,
                      named<double, double, ropecheck::direct_angle<double>, rct::llama3_8b, direct_f64>,
                      named<float, float, ropecheck::hf_angle<float>, rct::gptj, gptj_f32>,
                      named<ropecheck::mpfr_default, ropecheck::mpfr_default, reference_cos_sin_mpfr, rct::llama3_8b, reference_mpfr>);

// Keys by a kernel of their own (apply_k): queries by HF's fp32 angles, keys by llama.cpp's chain of fp32
// products (fp32 storage) or by HF's in bf16 / fp16 storage, two key heads for the four query heads. Their
// scores must pass query_key_scores_match_reference (and the queries every other check).
constexpr char pair_f32[] = "hf_queries_ggml_keys_float32", pair_bf16[] = "hf_pair_bfloat16_storage",
               pair_f16[] = "hf_pair_float16_storage";
template <class S, class KeyStrategy, const char* Name>
struct named_pair : rct::own_pair<S, float, ropecheck::hf_angle<float>, KeyStrategy, rct::llama3_8b> {
  static constexpr const char* name = Name;
};
ROPECHECK_CONFORMANCE(own_pairs, named_pair<float, ropecheck::ggml_angle, pair_f32>,
                      named_pair<bfloat16, ropecheck::hf_angle<float>, pair_bf16>,
                      named_pair<float16, ropecheck::hf_angle<float>, pair_f16>);

// Every adapter gets the judge in both call forms, every property of the library and the query/key score
// check, under "own_kernels/<name>", in the library's order.
TEST(ConformanceHeader, registers_every_check_for_every_adapter_in_order) {
  std::vector<std::string> want{"prefill_outputs_pass_the_judge", "decode_outputs_pass_the_judge"};
  for (const auto& p : ropecheck::conformance::property_names()) want.push_back(p);
  want.emplace_back("query_key_scores_match_reference");
  ASSERT_EQ(want.size(), 10u);  // the 7 properties of conformance/drivers/rope_properties.hpp, and the score check
  const auto& unit = *::testing::UnitTest::GetInstance();
  int suites = 0;
  for (int i = 0; i < unit.total_test_suite_count(); ++i) {
    const auto& suite = *unit.GetTestSuite(i);
    if (std::string(suite.name()).rfind("own_kernels/", 0) != 0) continue;
    ++suites;
    ASSERT_EQ(suite.total_test_count(), static_cast<int>(want.size())) << suite.name();
    for (int j = 0; j < suite.total_test_count(); ++j) EXPECT_EQ(suite.GetTestInfo(j)->name(), want[static_cast<std::size_t>(j)]);
  }
  EXPECT_EQ(suites, 7);
}

TEST(ConformanceHeader, names_default_to_the_dtype_and_the_compute_type) {
  using ropecheck::conformance::adapter_name;
  EXPECT_EQ((adapter_name<rct::own_kernel<float, float, ropecheck::hf_angle<float>, rct::llama3_8b>>()), "float32");
  EXPECT_EQ((adapter_name<rct::own_kernel<bfloat16, float, ropecheck::hf_angle<float>, rct::llama3_8b>>()),
            "bfloat16_float32_compute");
  EXPECT_EQ((adapter_name<rct::own_kernel<long double, long double, ropecheck::direct_angle<long double>, rct::llama3_8b>>()),
            "long_double");
  EXPECT_EQ((adapter_name<named<float, float, ropecheck::ggml_angle, rct::llama3_8b, ggml_f32>>()), "ggml_float32");
}

// Two adapters whose default names agree (both "float32"): the second is "float32_1".
ROPECHECK_CONFORMANCE(same_names, rct::own_kernel<float, float, ropecheck::hf_angle<float>, rct::llama3_8b>,
                      rct::own_kernel<float, float, ropecheck::ggml_angle, rct::llama3_8b>);

TEST(ConformanceHeader, a_name_two_adapters_share_gets_the_index_appended) {
  std::vector<std::string> suites;
  const auto& unit = *::testing::UnitTest::GetInstance();
  for (int i = 0; i < unit.total_test_suite_count(); ++i)
    if (std::string(unit.GetTestSuite(i)->name()).rfind("same_names/", 0) == 0) suites.emplace_back(unit.GetTestSuite(i)->name());
  EXPECT_EQ(suites, (std::vector<std::string>{"same_names/float32", "same_names/float32_1"}));
}
