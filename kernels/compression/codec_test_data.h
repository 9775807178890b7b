// The codec tests' data: standard normal values, and the same with rare large outliers, as
// functions of a seed and the element index (oneflow_core/random.h), so every test and
// every codec sees the same values.
#ifndef KERNELS_COMPRESSION_CODEC_TEST_DATA_H_
#define KERNELS_COMPRESSION_CODEC_TEST_DATA_H_

#include <cstdint>
#include <vector>

#include "oneflow_core/random.h"

namespace oneflow {
namespace codec_testing {

inline std::vector<float> Gaussian(int64_t count, uint64_t seed = 2024) {
  std::vector<float> values(count);
  BlockNormals(LogicalRandom(seed), 0, count, values.data());
  return values;
}

// Gaussian with 0.1% of the elements (chosen by a second stream) multiplied by 100.
inline std::vector<float> GaussianWithOutliers(int64_t count, uint64_t seed = 2024) {
  std::vector<float> values = Gaussian(count, seed);
  const LogicalRandom pick(seed, /*stream=*/1);
  for (int64_t i = 0; i < count; ++i) {
    if (pick.Uniform(i) < 0.001f) values[i] *= 100.0f;
  }
  return values;
}

}  // namespace codec_testing
}  // namespace oneflow

#endif  // KERNELS_COMPRESSION_CODEC_TEST_DATA_H_
