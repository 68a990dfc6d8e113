// Uses the installed headers and reference: rotates a head with ropecheck's fp32 kernel and the
// HF angle strategy, and exits 0 only if it is within 1e-4 of the reference at position 1000.
#include <cmath>
#include <cstdio>
#include <vector>

#include "ropecheck/angle.hpp"
#include "ropecheck/reference/reference.hpp"
#include "ropecheck/rope.hpp"

int main() {
  ropecheck::rope_config cfg;
  const ropecheck::reference::rope_reference ref(cfg);
  const ropecheck::hf_angle<float> cs(cfg);
  std::vector<float> x(128, 0.5f), y(128);
  std::vector<double> xd(x.begin(), x.end());
  std::vector<ropecheck::reference::dd> want(128);
  ropecheck::rotate_heads<float>(std::span<const float>(x), std::span<float>(y), 1, ropecheck::rope_geometry::of(cfg), 1000, cs);
  ref.rotate(1000, xd, want);
  double worst = 0;
  for (int j = 0; j < 128; ++j) worst = std::fmax(worst, static_cast<double>(std::fabs(y[j] - want[j].value())));
  std::printf("consumer: worst |y - reference| = %g\n", worst);
  return worst < 1e-4 ? 0 : 1;
}
