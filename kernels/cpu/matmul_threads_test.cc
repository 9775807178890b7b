// matmul split over a device pool: every transpose combination, cut by rows, by columns
// and by batches, equals a double-precision product and the one-thread kernel.
#include <cmath>
#include <random>
#include <vector>

#include "gtest/gtest.h"
#include "kernels/cpu/registry.h"
#include "kernels/cpu/thread_pool.h"
#include "kernels/kernel.h"

namespace oneflow {
namespace {

KernelArgument Argument(void* data, Shape shape) {
  return {data, DType::kF32, shape, {shape, TensorSlice::Whole(shape)}};
}

struct Case {
  std::vector<int64_t> batch;
  int64_t m, n, k;
};

std::vector<float> Random(int64_t size, uint32_t seed) {
  std::mt19937 engine(seed);
  std::normal_distribution<float> normal;
  std::vector<float> values(size);
  for (float& v : values) v = normal(engine);
  return values;
}

// op(a) * op(b) through the matmul kernel with `pool` current (nullptr: one thread).
std::vector<float> RunMatMul(const Case& c, bool ta, bool tb, const std::vector<float>& a,
                       const std::vector<float>& b, KernelThreadPool* pool) {
  std::vector<int64_t> a_dims = c.batch, b_dims = c.batch, out_dims = c.batch;
  a_dims.insert(a_dims.end(), {ta ? c.k : c.m, ta ? c.m : c.k});
  b_dims.insert(b_dims.end(), {tb ? c.n : c.k, tb ? c.k : c.n});
  out_dims.insert(out_dims.end(), {c.m, c.n});
  const Shape out_shape(out_dims);
  std::vector<float> out(out_shape.NumElements(), NAN);
  const AttrMap attrs = {{"transpose_a", ta}, {"transpose_b", tb}};
  KernelContext context;
  context.attrs = &attrs;
  context.inputs = {Argument(const_cast<float*>(a.data()), Shape(a_dims)),
                    Argument(const_cast<float*>(b.data()), Shape(b_dims))};
  context.outputs = {Argument(out.data(), out_shape)};
  ScopedKernelThreadPool scope(pool);
  const absl::Status status = (*FindCpuKernel("matmul"))(context);
  EXPECT_TRUE(status.ok()) << status;
  return out;
}

TEST(MatMulThreadsTest, SplitProductsMatchDoubleAndOneThread) {
  // Sizes past the split threshold (2^20 multiply-adds a part), not multiples of the
  // 16-wide cut, so the last part is ragged: rows cut, columns cut, batches spread.
  const std::vector<Case> cases = {{{}, 515, 37, 300}, {{}, 37, 515, 300}, {{5}, 130, 140, 90}};
  KernelThreadPool pool(3);
  for (const Case& c : cases) {
    int64_t batches = 1;
    for (int64_t d : c.batch) batches *= d;
    const std::vector<float> a = Random(batches * c.m * c.k, 1), b = Random(batches * c.k * c.n, 2);
    for (bool ta : {false, true}) {
      for (bool tb : {false, true}) {
        SCOPED_TRACE(testing::Message() << "m=" << c.m << " n=" << c.n << " k=" << c.k
                                        << " batches=" << batches << " ta=" << ta << " tb=" << tb);
        const std::vector<float> one = RunMatMul(c, ta, tb, a, b, nullptr);
        const std::vector<float> three = RunMatMul(c, ta, tb, a, b, &pool);
        for (int64_t s = 0; s < batches; ++s) {
          for (int64_t i = 0; i < c.m; ++i) {
            for (int64_t j = 0; j < c.n; ++j) {
              double want = 0;
              for (int64_t p = 0; p < c.k; ++p) {
                const float x = a[s * c.m * c.k + (ta ? p * c.m + i : i * c.k + p)];
                const float y = b[s * c.k * c.n + (tb ? j * c.k + p : p * c.n + j)];
                want += static_cast<double>(x) * y;
              }
              const int64_t at = (s * c.m + i) * c.n + j;
              // k <= 300 float products of N(0,1) values: |error| well under 1e-3.
              ASSERT_NEAR(three[at], want, 1e-3) << "out[" << s << ", " << i << ", " << j << "]";
              // The cut changes which call computes an element, not its sum: within
              // float rounding of the one-thread result.
              ASSERT_NEAR(three[at], one[at], 1e-4 * (1 + std::abs(one[at])));
            }
          }
        }
      }
    }
  }
}

}  // namespace
}  // namespace oneflow
