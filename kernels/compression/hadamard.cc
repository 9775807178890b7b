#include "kernels/compression/hadamard.h"

#include <cmath>
#include <cstring>

#include "kernels/compression/lanes.h"

namespace oneflow {
namespace {

// Stages with stride h >= `first_stride` over n elements, one pair at a time.
void ScalarStages(float* data, int64_t n, int64_t first_stride) {
  for (int64_t h = first_stride; h < n; h *= 2) {
    for (int64_t i = 0; i < n; i += 2 * h) {
      for (int64_t j = i; j < i + h; ++j) {
        const float a = data[j];
        const float b = data[j + h];
        data[j] = a + b;
        data[j + h] = a - b;
      }
    }
  }
}

#if defined(__GNUC__)

// Strides 1, 2 and 4 inside one eight-lane vector: lane j pairs with lane j ^ h; the
// lower lane gets a + b (written b + a: the same float), the upper one a + (-b) = a - b.
inline F32x8 InRegisterStages(F32x8 v) {
  v = __builtin_shufflevector(v, v, 1, 0, 3, 2, 5, 4, 7, 6) +
      v * F32x8{1, -1, 1, -1, 1, -1, 1, -1};
  v = __builtin_shufflevector(v, v, 2, 3, 0, 1, 6, 7, 4, 5) +
      v * F32x8{1, 1, -1, -1, 1, 1, -1, -1};
  v = __builtin_shufflevector(v, v, 4, 5, 6, 7, 0, 1, 2, 3) +
      v * F32x8{1, 1, 1, 1, -1, -1, -1, -1};
  return v;
}
#endif

}  // namespace

void FastWalshHadamard(float* data, int64_t n) { FastWalshHadamard(data, data, n); }

void FastWalshHadamard(const float* in, float* out, int64_t n) {
#if defined(__GNUC__)
  if (n >= compression::kLanes) {
    // The first three stages read `in` and write `out`; the rest work in place on `out`.
    for (int64_t i = 0; i < n; i += compression::kLanes) {
      compression::StoreFloats(out + i, InRegisterStages(compression::LoadFloats(in + i)));
    }
    // Two stages per pass (strides h and 2h over a, b, c, d = x[j], x[j + h], x[j + 2h],
    // x[j + 3h]): the same sums in the same order as one stage at a time, half the loads
    // and stores.
    int64_t h = compression::kLanes;
    for (; 4 * h <= n; h *= 4) {
      for (int64_t i = 0; i < n; i += 4 * h) {
        for (int64_t j = i; j < i + h; j += compression::kLanes) {
          const F32x8 a = compression::LoadFloats(out + j);
          const F32x8 b = compression::LoadFloats(out + j + h);
          const F32x8 c = compression::LoadFloats(out + j + 2 * h);
          const F32x8 d = compression::LoadFloats(out + j + 3 * h);
          const F32x8 ab_sum = a + b, ab_difference = a - b;
          const F32x8 cd_sum = c + d, cd_difference = c - d;
          compression::StoreFloats(out + j, ab_sum + cd_sum);
          compression::StoreFloats(out + j + h, ab_difference + cd_difference);
          compression::StoreFloats(out + j + 2 * h, ab_sum - cd_sum);
          compression::StoreFloats(out + j + 3 * h, ab_difference - cd_difference);
        }
      }
    }
    if (h < n) {  // one stage left (n / 8 is an odd power of two)
      for (int64_t j = 0; j < h; j += compression::kLanes) {
        const F32x8 a = compression::LoadFloats(out + j);
        const F32x8 b = compression::LoadFloats(out + j + h);
        compression::StoreFloats(out + j, a + b);
        compression::StoreFloats(out + j + h, a - b);
      }
    }
    return;
  }
#endif
  if (out != in) std::memcpy(out, in, n * sizeof(float));
  ScalarStages(out, n, 1);
}

float HadamardNorm(int64_t n) {
  return static_cast<float>(1.0 / std::sqrt(static_cast<double>(n)));
}

void HadamardRotate(float* data, int64_t n) {
  int64_t begin = 0;
  for (int64_t piece = int64_t{1} << 62; piece > 1; piece >>= 1) {
    if ((n & piece) == 0) continue;
    FastWalshHadamard(data + begin, piece);
    const float norm = HadamardNorm(piece);
    int64_t i = begin;
#if defined(__GNUC__)
    for (; i + compression::kLanes <= begin + piece; i += compression::kLanes) {
      compression::StoreFloats(data + i, compression::LoadFloats(data + i) * norm);
    }
#endif
    for (; i < begin + piece; ++i) data[i] *= norm;
    begin += piece;
  }
}

}  // namespace oneflow
