// matmul and fused_matmul_bias split over a device pool: every transpose combination, cut
// by rows, by columns and by batches, equals a double-precision product (plus bias, relu'd)
// and the one-thread kernel; and fused_matmul_bias equals matmul -> bias_add -> relu bit for
// bit, on one thread and on a pool.
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

// op(a) * op(b) through the matmul kernel, or with `bias` (+ bias, relu'd when `relu`)
// through fused_matmul_bias, with `pool` current (nullptr: one thread).
std::vector<float> RunProduct(const Case& c, bool ta, bool tb, const std::vector<float>& a,
                              const std::vector<float>& b, const std::vector<float>* bias, bool relu,
                              KernelThreadPool* pool) {
  std::vector<int64_t> a_dims = c.batch, b_dims = c.batch, out_dims = c.batch;
  a_dims.insert(a_dims.end(), {ta ? c.k : c.m, ta ? c.m : c.k});
  b_dims.insert(b_dims.end(), {tb ? c.n : c.k, tb ? c.k : c.n});
  out_dims.insert(out_dims.end(), {c.m, c.n});
  const Shape out_shape(out_dims);
  std::vector<float> out(out_shape.NumElements(), NAN);
  AttrMap attrs = {{"transpose_a", ta}, {"transpose_b", tb}};
  KernelContext context;
  context.inputs = {Argument(const_cast<float*>(a.data()), Shape(a_dims)),
                    Argument(const_cast<float*>(b.data()), Shape(b_dims))};
  if (bias != nullptr) {
    attrs["relu"] = relu;
    context.inputs.push_back(Argument(const_cast<float*>(bias->data()), Shape{c.n}));
  }
  context.attrs = &attrs;
  context.outputs = {Argument(out.data(), out_shape)};
  context.thread_pool = pool;
  const absl::Status status = (*FindCpuKernel(bias != nullptr ? "fused_matmul_bias" : "matmul"))(context);
  EXPECT_TRUE(status.ok()) << status;
  return out;
}

std::vector<float> RunMatMul(const Case& c, bool ta, bool tb, const std::vector<float>& a,
                             const std::vector<float>& b, KernelThreadPool* pool) {
  return RunProduct(c, ta, tb, a, b, nullptr, false, pool);
}

// `many` (a pool's result) against the double-precision product (+ bias, relu'd) and
// against `one` (the one-thread result).
void ExpectProduct(const Case& c, bool ta, bool tb, const std::vector<float>& a, const std::vector<float>& b,
                   const std::vector<float>* bias, bool relu, const std::vector<float>& one,
                   const std::vector<float>& many) {
  int64_t batches = 1;
  for (int64_t d : c.batch) batches *= d;
  for (int64_t s = 0; s < batches; ++s) {
    for (int64_t i = 0; i < c.m; ++i) {
      for (int64_t j = 0; j < c.n; ++j) {
        double want = bias != nullptr ? (*bias)[j] : 0.0;
        for (int64_t p = 0; p < c.k; ++p) {
          const float x = a[s * c.m * c.k + (ta ? p * c.m + i : i * c.k + p)];
          const float y = b[s * c.k * c.n + (tb ? j * c.k + p : p * c.n + j)];
          want += static_cast<double>(x) * y;
        }
        if (relu && want < 0) want = 0;
        const int64_t at = (s * c.m + i) * c.n + j;
        // k <= 300 float products of N(0,1) values (and one bias term): |error| well
        // under 1e-3.
        ASSERT_NEAR(many[at], want, 1e-3) << "out[" << s << ", " << i << ", " << j << "]";
        // The cut changes which call computes an element, not its sum; a part may take
        // another backend or route than the whole (its size decides), so equal to float
        // rounding of the one-thread result, not bit for bit.
        ASSERT_NEAR(many[at], one[at], 1e-4 * (1 + std::abs(one[at])));
      }
    }
  }
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
        ExpectProduct(c, ta, tb, a, b, nullptr, false, RunMatMul(c, ta, tb, a, b, nullptr),
                      RunMatMul(c, ta, tb, a, b, &pool));
      }
    }
  }
}

// The fused kernel cuts as matmul does; a column block must take the bias from its own
// first column (a block given bias[0..] would pass the one-thread comparison only if
// the bias were constant, so the bias here is random and the double product checks it).
// With a 2-thread pool, 515 rows or columns over k 300 make two parts of >= 2^20
// multiply-adds, the second ragged; 5 batches of 130x140 over k 90 spread over both.
TEST(MatMulThreadsTest, FusedSplitProductsMatchDoubleAndOneThread) {
  const std::vector<Case> cases = {{{}, 515, 37, 300}, {{}, 37, 515, 300}, {{5}, 130, 140, 90}};
  KernelThreadPool pool(2);
  for (const Case& c : cases) {
    int64_t batches = 1;
    for (int64_t d : c.batch) batches *= d;
    const std::vector<float> a = Random(batches * c.m * c.k, 3), b = Random(batches * c.k * c.n, 4);
    const std::vector<float> bias = Random(c.n, 5);
    for (bool ta : {false, true}) {
      for (bool tb : {false, true}) {
        for (bool relu : {false, true}) {
          SCOPED_TRACE(testing::Message() << "m=" << c.m << " n=" << c.n << " k=" << c.k
                                          << " batches=" << batches << " ta=" << ta
                                          << " tb=" << tb << " relu=" << relu);
          ExpectProduct(c, ta, tb, a, b, &bias, relu, RunProduct(c, ta, tb, a, b, &bias, relu, nullptr),
                        RunProduct(c, ta, tb, a, b, &bias, relu, &pool));
        }
      }
    }
  }
}

// matmul, then bias_add, then relu (when `relu`), each kernel writing its own tensor, as
// the unfused graph runs them, each given `pool`.
std::vector<float> RunUnfused(const Case& c, bool ta, bool tb, bool relu,
                              const std::vector<float>& a, const std::vector<float>& b,
                              const std::vector<float>& bias, KernelThreadPool* pool) {
  const std::vector<float> product = RunMatMul(c, ta, tb, a, b, pool);
  std::vector<int64_t> out_dims = c.batch;
  out_dims.insert(out_dims.end(), {c.m, c.n});
  const Shape out_shape(out_dims);
  std::vector<float> biased(product.size(), NAN), activated(product.size(), NAN);
  KernelContext bias_add;
  bias_add.thread_pool = pool;
  bias_add.inputs = {Argument(const_cast<float*>(product.data()), out_shape),
                     Argument(const_cast<float*>(bias.data()), Shape{c.n})};
  bias_add.outputs = {Argument(biased.data(), out_shape)};
  EXPECT_TRUE((*FindCpuKernel("bias_add"))(bias_add).ok());
  if (!relu) return biased;
  KernelContext relu_context;
  relu_context.inputs = {Argument(biased.data(), out_shape)};
  relu_context.outputs = {Argument(activated.data(), out_shape)};
  relu_context.thread_pool = pool;
  EXPECT_TRUE((*FindCpuKernel("relu"))(relu_context).ok());
  return activated;
}

// Fusing changes no bit: the fused kernel cuts as matmul does and each part's GEMM is the
// one the unfused part runs (EpilogueRouteFor), so on one thread and on a pool it equals
// the unfused chain on the same thread count exactly. Shapes on OpenBLAS, dnnl_sgemm and
// the matmul primitive (NT with m <= n / 2), cut by rows, columns and batches.
TEST(MatMulThreadsTest, FusedEqualsTheUnfusedChainBitForBit) {
  struct Form {
    Case c;
    bool ta, tb;
  };
  const std::vector<Form> forms = {{{{}, 515, 37, 300}, false, false},
                                   {{{}, 37, 515, 300}, false, false},
                                   {{{}, 128, 512, 64}, false, true},
                                   {{{}, 300, 200, 90}, true, false},
                                   {{{5}, 130, 140, 90}, false, false}};
  KernelThreadPool pool(2);
  for (const Form& form : forms) {
    const Case& c = form.c;
    int64_t batches = 1;
    for (int64_t d : c.batch) batches *= d;
    const std::vector<float> a = Random(batches * c.m * c.k, 6), b = Random(batches * c.k * c.n, 7);
    const std::vector<float> bias = Random(c.n, 8);
    for (KernelThreadPool* threads : {static_cast<KernelThreadPool*>(nullptr), &pool}) {
      for (bool relu : {false, true}) {
        SCOPED_TRACE(testing::Message() << "m=" << c.m << " n=" << c.n << " k=" << c.k
                                        << " batches=" << batches << " ta=" << form.ta
                                        << " tb=" << form.tb << " relu=" << relu
                                        << " pool=" << (threads != nullptr));
        EXPECT_EQ(RunProduct(c, form.ta, form.tb, a, b, &bias, relu, threads),
                  RunUnfused(c, form.ta, form.tb, relu, a, b, bias, threads));
      }
    }
  }
}

}  // namespace
}  // namespace oneflow
