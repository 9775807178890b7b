// Sgemm's three backends (sgemm.h) against a double-precision product, in every transpose
// form, with leading dimensions wider than the rows, on shapes below and above the size
// where the choice switches, single and batched; the choice itself; that oneDNN calls
// (dnnl_sgemm and the matmul primitive, with and without an epilogue) start no threads;
// and SgemmBiasRelu's two routes (bias, relu) against the double product with its
// epilogue, and their choice.
#include "kernels/cpu/sgemm.h"

#include <dirent.h>

#include <cmath>
#include <cstdlib>
#include <random>
#include <thread>
#include <vector>

#include "gtest/gtest.h"

namespace oneflow {
namespace cpu {
namespace {

int CountThreads() {
  int count = 0;
  if (DIR* dir = opendir("/proc/self/task")) {
    while (dirent* entry = readdir(dir)) count += entry->d_name[0] != '.';
    closedir(dir);
  }
  return count;
}

struct Case {
  int64_t m, n, k;
};

std::vector<float> Random(int64_t size, uint32_t seed) {
  std::mt19937 engine(seed);
  std::normal_distribution<float> normal;
  std::vector<float> values(size);
  for (float& v : values) v = normal(engine);
  return values;
}


// Runs `backend` on op(a) op(b) with padded leading dimensions and checks every element
// against the double product: |error| <= 1e-5 * sqrt(k) * sum |a_ip b_pj| (float
// rounding of k products and their sum, any order), and that padding is left alone.
void CheckBackend(SgemmBackend backend, const Case& c, bool ta, bool tb) {
  SCOPED_TRACE(testing::Message() << SgemmBackendName(backend) << " m=" << c.m << " n=" << c.n
                                  << " k=" << c.k << " ta=" << ta << " tb=" << tb);
  const int64_t a_rows = ta ? c.k : c.m, a_cols = ta ? c.m : c.k;
  const int64_t b_rows = tb ? c.n : c.k, b_cols = tb ? c.k : c.n;
  const int64_t lda = a_cols + 3, ldb = b_cols + 5, ldc = c.n + 7;
  const std::vector<float> a = Random(a_rows * lda, 1), b = Random(b_rows * ldb, 2);
  std::vector<float> out(c.m * ldc, 12345.0f);
  SgemmWith(backend, ta, tb, c.m, c.n, c.k, a.data(), lda, b.data(), ldb, out.data(), ldc);
  auto a_at = [&](int64_t i, int64_t p) { return double(ta ? a[p * lda + i] : a[i * lda + p]); };
  auto b_at = [&](int64_t p, int64_t j) { return double(tb ? b[j * ldb + p] : b[p * ldb + j]); };
  int failures = 0;
  for (int64_t i = 0; i < c.m; ++i) {
    for (int64_t j = 0; j < ldc; ++j) {
      const float got = out[i * ldc + j];
      if (j >= c.n) {
        if (got != 12345.0f && failures++ < 5) ADD_FAILURE() << "padding (" << i << ", " << j << ") written";
        continue;
      }
      double sum = 0, magnitude = 0;
      for (int64_t p = 0; p < c.k; ++p) {
        sum += a_at(i, p) * b_at(p, j);
        magnitude += std::fabs(a_at(i, p) * b_at(p, j));
      }
      const double tolerance = 1e-5 * std::sqrt(double(c.k)) * magnitude + 1e-30;
      if (!(std::fabs(got - sum) <= tolerance) && failures++ < 5) {
        ADD_FAILURE() << "(" << i << ", " << j << "): " << got << " vs " << sum
                      << ", tolerance " << tolerance;
      }
    }
  }
}

// Debian's oneDNN runs on OpenMP: without the per-thread cap a call on a 2-core machine
// would start an OpenMP team (and keep it). Calls from the main thread and from new threads (as device
// threads and pool helpers are) must leave the process's thread count as it was.
TEST(SgemmTest, DnnlCallsStartNoThreads) {
  const Case c{256, 256, 256};
  const std::vector<float> a = Random(2 * c.m * c.k, 3), b = Random(2 * c.k * c.n, 4);
  std::vector<float> out(2 * c.m * c.n);
  auto call = [&] {
    SgemmWith(SgemmBackend::kDnnl, false, false, c.m, c.n, c.k, a.data(), c.k, b.data(), c.n,
              out.data(), c.n);
    SgemmWith(SgemmBackend::kDnnlMatmul, false, true, c.m, c.n, c.k, a.data(), c.k, b.data(),
              c.k, out.data(), c.n);
    SgemmBatchedWith(SgemmBackend::kDnnlMatmul, false, false, 2, c.m, c.n, c.k, a.data(), c.k,
                     c.m * c.k, b.data(), c.n, c.k * c.n, out.data(), c.n, c.m * c.n);
    // The primitive with a bias and a relu post-op.
    SgemmBiasReluWith(EpilogueRoute::kDnnlPostOps, false, false, c.m, c.n, c.k, a.data(), c.k,
                      b.data(), c.n, b.data(), true, out.data(), c.n);
  };
  const int before = CountThreads();  // First in this file: before any oneDNN call.
  call();
  call();
  int during = 0;
  std::thread other([&] {
    call();
    call();
    during = CountThreads();  // this thread included
  });
  other.join();
  EXPECT_EQ(during, before + 1);
  EXPECT_EQ(CountThreads(), before);
}

const Case kCases[] = {
    {1, 1, 1}, {3, 5, 7}, {17, 33, 9}, {64, 64, 64},             // OpenBLAS by default
    {128, 128, 128}, {256, 100, 70}, {130, 260, 40}, {50, 10, 2100},  // oneDNN by default
};

TEST(SgemmTest, BothBackendsMatchTheDoubleProductInEveryForm) {
  for (const Case& c : kCases) {
    for (bool ta : {false, true}) {
      for (bool tb : {false, true}) {
        CheckBackend(SgemmBackend::kOpenBlas, c, ta, tb);
        CheckBackend(SgemmBackend::kDnnl, c, ta, tb);
        CheckBackend(SgemmBackend::kDnnlMatmul, c, ta, tb);
      }
    }
  }
}

// SgemmBatchedWith on `batch` products stored `gap` floats apart beyond their size (so the
// strides are not the dense ones), each against the double product as CheckBackend does;
// c's batches dense (the matmul kernel's layout) or not (the primitive's fallback), and
// the gaps left untouched.
void CheckBatched(SgemmBackend backend, const Case& c, int64_t batch, bool ta, bool tb,
                  int64_t c_gap) {
  SCOPED_TRACE(testing::Message() << SgemmBackendName(backend) << " batch=" << batch << " m="
                                  << c.m << " n=" << c.n << " k=" << c.k << " ta=" << ta
                                  << " tb=" << tb << " c_gap=" << c_gap);
  const int64_t a_rows = ta ? c.k : c.m, a_cols = ta ? c.m : c.k;
  const int64_t b_rows = tb ? c.n : c.k, b_cols = tb ? c.k : c.n;
  const int64_t lda = a_cols + 1, ldb = b_cols + 2, ldc = c.n;
  const int64_t stride_a = a_rows * lda + 3, stride_b = b_rows * ldb + 5;
  const int64_t stride_c = c.m * ldc + c_gap;
  const std::vector<float> a = Random(batch * stride_a, 5), b = Random(batch * stride_b, 6);
  std::vector<float> out(batch * stride_c, 12345.0f);
  SgemmBatchedWith(backend, ta, tb, batch, c.m, c.n, c.k, a.data(), lda, stride_a, b.data(),
                   ldb, stride_b, out.data(), ldc, stride_c);
  int failures = 0;
  for (int64_t i = 0; i < batch; ++i) {
    const float* ai = a.data() + i * stride_a;
    const float* bi = b.data() + i * stride_b;
    auto a_at = [&](int64_t r, int64_t p) {
      return double(ta ? ai[p * lda + r] : ai[r * lda + p]);
    };
    auto b_at = [&](int64_t p, int64_t j) {
      return double(tb ? bi[j * ldb + p] : bi[p * ldb + j]);
    };
    for (int64_t e = 0; e < stride_c; ++e) {
      const float got = out[i * stride_c + e];
      const int64_t r = e / ldc, j = e % ldc;
      if (r >= c.m) {
        if (got != 12345.0f && failures++ < 5) ADD_FAILURE() << "gap of batch " << i << " written";
        continue;
      }
      double sum = 0, magnitude = 0;
      for (int64_t p = 0; p < c.k; ++p) {
        sum += a_at(r, p) * b_at(p, j);
        magnitude += std::fabs(a_at(r, p) * b_at(p, j));
      }
      const double tolerance = 1e-5 * std::sqrt(double(c.k)) * magnitude + 1e-30;
      if (!(std::fabs(got - sum) <= tolerance) && failures++ < 5) {
        ADD_FAILURE() << "batch " << i << " (" << r << ", " << j << "): " << got << " vs " << sum;
      }
    }
  }
}

TEST(SgemmTest, BatchedProductsMatchTheDoubleProductOnEveryBackend) {
  for (const Case& c : {Case{5, 7, 3}, Case{128, 64, 128}, Case{33, 70, 65}}) {
    for (bool ta : {false, true}) {
      for (bool tb : {false, true}) {
        for (SgemmBackend backend :
             {SgemmBackend::kOpenBlas, SgemmBackend::kDnnl, SgemmBackend::kDnnlMatmul}) {
          CheckBatched(backend, c, 3, ta, tb, 0);
          CheckBatched(backend, c, 3, ta, tb, 11);
          CheckBatched(backend, c, 1, ta, tb, 0);
        }
      }
    }
  }
}

// A thread reuses its primitive for a shape it ran before, and keeps the results right
// when the data moves (new handles each call) and when many shapes overflow its cache.
TEST(SgemmTest, CachedPrimitivesFollowTheirData) {
  for (int round = 0; round < 2; ++round) {
    for (int64_t n = 1; n <= 300; ++n) {  // more shapes than a thread's cache holds
      if (n % 37 != 0 && round == 0) continue;
      const Case c{4, n, 3};
      std::vector<float> a = Random(c.m * c.k, 7 + n), b = Random(c.k * c.n, 8 + n);
      std::vector<float> out(c.m * c.n);
      SgemmWith(SgemmBackend::kDnnlMatmul, false, false, c.m, c.n, c.k, a.data(), c.k,
                b.data(), c.n, out.data(), c.n);
      for (int64_t i = 0; i < c.m; ++i) {
        for (int64_t j = 0; j < c.n; ++j) {
          double sum = 0;
          for (int64_t p = 0; p < c.k; ++p) sum += double(a[i * c.k + p]) * b[p * c.n + j];
          ASSERT_NEAR(out[i * c.n + j], sum, 1e-5 * (1 + std::fabs(sum))) << "n=" << n;
        }
      }
    }
  }
}

// SgemmBiasReluWith through `route` on op(a) op(b) + bias, relu'd when asked, with padded
// leading dimensions (ldc > n: the padding must stay untouched), against the double
// product with the double epilogue. The values are N(0, 1), so about half the sums are
// negative and relu changes them; the tolerance is CheckBackend's (the bias adds one
// rounding of a value of magnitude ~1, inside it since k >= 1 gives a sum of |a b| > 0).
void CheckEpilogue(EpilogueRoute route, const Case& c, bool ta, bool tb, bool with_bias,
                   bool relu) {
  SCOPED_TRACE(testing::Message() << EpilogueRouteName(route) << " m=" << c.m << " n=" << c.n
                                  << " k=" << c.k << " ta=" << ta << " tb=" << tb
                                  << " bias=" << with_bias << " relu=" << relu);
  const int64_t a_rows = ta ? c.k : c.m, a_cols = ta ? c.m : c.k;
  const int64_t b_rows = tb ? c.n : c.k, b_cols = tb ? c.k : c.n;
  const int64_t lda = a_cols + 3, ldb = b_cols + 5, ldc = c.n + 7;
  const std::vector<float> a = Random(a_rows * lda, 11), b = Random(b_rows * ldb, 12);
  const std::vector<float> bias = Random(c.n, 13);
  std::vector<float> out(c.m * ldc, 12345.0f);
  SgemmBiasReluWith(route, ta, tb, c.m, c.n, c.k, a.data(), lda, b.data(), ldb,
                    with_bias ? bias.data() : nullptr, relu, out.data(), ldc);
  auto a_at = [&](int64_t i, int64_t p) { return double(ta ? a[p * lda + i] : a[i * lda + p]); };
  auto b_at = [&](int64_t p, int64_t j) { return double(tb ? b[j * ldb + p] : b[p * ldb + j]); };
  int failures = 0, clamped = 0;
  for (int64_t i = 0; i < c.m; ++i) {
    for (int64_t j = 0; j < ldc; ++j) {
      const float got = out[i * ldc + j];
      if (j >= c.n) {
        if (got != 12345.0f && failures++ < 5) {
          ADD_FAILURE() << "padding (" << i << ", " << j << ") written";
        }
        continue;
      }
      double sum = with_bias ? bias[j] : 0.0, magnitude = std::fabs(sum);
      for (int64_t p = 0; p < c.k; ++p) {
        sum += a_at(i, p) * b_at(p, j);
        magnitude += std::fabs(a_at(i, p) * b_at(p, j));
      }
      const double tolerance = 1e-5 * std::sqrt(double(c.k) + 1) * magnitude + 1e-30;
      // A sum clearly below zero must come out as relu's exact zero on every route.
      if (relu && sum < -tolerance) {
        ++clamped;
        if (got != 0.0f && failures++ < 5) {
          ADD_FAILURE() << "(" << i << ", " << j << "): " << got << " where relu gives 0";
        }
      }
      if (relu && sum < 0) sum = 0;
      if (!(std::fabs(got - sum) <= tolerance) && failures++ < 5) {
        ADD_FAILURE() << "(" << i << ", " << j << "): " << got << " vs " << sum
                      << ", tolerance " << tolerance;
      }
    }
  }
  if (relu && c.m * c.n >= 16) {
    EXPECT_GT(clamped, 0) << "no negative sum: relu untested";
  }
}

TEST(SgemmTest, EpilogueMatchesTheDoubleProductOnEveryRoute) {
  for (const Case& c : kCases) {
    for (bool ta : {false, true}) {
      for (bool tb : {false, true}) {
        for (EpilogueRoute route : {EpilogueRoute::kSeparatePass, EpilogueRoute::kDnnlPostOps}) {
          CheckEpilogue(route, c, ta, tb, /*with_bias=*/true, /*relu=*/false);
          CheckEpilogue(route, c, ta, tb, /*with_bias=*/true, /*relu=*/true);
          CheckEpilogue(route, c, ta, tb, /*with_bias=*/false, /*relu=*/true);
          CheckEpilogue(route, c, ta, tb, /*with_bias=*/false, /*relu=*/false);
        }
      }
    }
  }
  // The mlp's forward shape, the one the route was measured on.
  for (EpilogueRoute route : {EpilogueRoute::kSeparatePass, EpilogueRoute::kDnnlPostOps}) {
    CheckEpilogue(route, Case{256, 1024, 1024}, false, false, true, true);
  }
}

// k = 0: the epilogue of an empty sum, a and b never read (null here).
TEST(SgemmTest, EpilogueOfAnEmptySumIsTheBias) {
  const std::vector<float> bias = {-1.5f, 0.0f, 2.5f};
  for (EpilogueRoute route : {EpilogueRoute::kSeparatePass, EpilogueRoute::kDnnlPostOps}) {
    for (bool relu : {false, true}) {
      std::vector<float> out(2 * 4, 7.0f);  // ldc 4: the fourth column is padding
      SgemmBiasReluWith(route, false, false, 2, 3, 0, nullptr, 1, nullptr, 1, bias.data(), relu,
                        out.data(), 4);
      const float first = relu ? 0.0f : -1.5f;
      EXPECT_EQ(out, (std::vector<float>{first, 0, 2.5f, 7, first, 0, 2.5f, 7}))
          << EpilogueRouteName(route) << " relu=" << relu;
    }
  }
}

// A NaN in a row of a makes that output row NaN; relu then gives 0 on both routes, as
// oneDNN's relu post-op and the relu kernel (`x > 0 ? x : 0`) do, so fusing a relu does
// not change a NaN's fate. Without relu the row stays NaN.
TEST(SgemmTest, EpilogueReluMapsNaNToZeroOnEveryRoute) {
  const Case c{128, 128, 128};
  std::vector<float> a = Random(c.m * c.k, 31);
  const std::vector<float> b = Random(c.k * c.n, 32), bias = Random(c.n, 33);
  a[5 * c.k + 7] = NAN;
  for (EpilogueRoute route : {EpilogueRoute::kSeparatePass, EpilogueRoute::kDnnlPostOps}) {
    std::vector<float> relu(c.m * c.n), biased(c.m * c.n);
    SgemmBiasReluWith(route, false, false, c.m, c.n, c.k, a.data(), c.k, b.data(), c.n,
                      bias.data(), true, relu.data(), c.n);
    SgemmBiasReluWith(route, false, false, c.m, c.n, c.k, a.data(), c.k, b.data(), c.n,
                      bias.data(), false, biased.data(), c.n);
    for (int64_t j = 0; j < c.n; ++j) {
      ASSERT_EQ(relu[5 * c.n + j], 0.0f) << EpilogueRouteName(route) << " column " << j;
      ASSERT_TRUE(std::isnan(biased[5 * c.n + j])) << EpilogueRouteName(route) << " column " << j;
      ASSERT_FALSE(std::isnan(relu[4 * c.n + j])) << EpilogueRouteName(route) << " column " << j;
    }
  }
}

// The epilogue's primitives are cached beside the plain ones (the key includes bias and
// relu): the same shape run plain, with bias, and with bias and relu, in turns, gives
// each its own result.
TEST(SgemmTest, EpiloguePrimitivesAreKeptApartFromPlainOnes) {
  const Case c{128, 128, 128};
  const std::vector<float> a = Random(c.m * c.k, 21), b = Random(c.k * c.n, 22);
  const std::vector<float> bias = Random(c.n, 23);
  std::vector<float> plain(c.m * c.n), biased(c.m * c.n), relu(c.m * c.n);
  for (int round = 0; round < 2; ++round) {
    SgemmWith(SgemmBackend::kDnnlMatmul, false, false, c.m, c.n, c.k, a.data(), c.k, b.data(),
              c.n, plain.data(), c.n);
    SgemmBiasReluWith(EpilogueRoute::kDnnlPostOps, false, false, c.m, c.n, c.k, a.data(), c.k,
                      b.data(), c.n, bias.data(), false, biased.data(), c.n);
    SgemmBiasReluWith(EpilogueRoute::kDnnlPostOps, false, false, c.m, c.n, c.k, a.data(), c.k,
                      b.data(), c.n, bias.data(), true, relu.data(), c.n);
    for (int64_t e = 0; e < c.m * c.n; ++e) {
      const float want = plain[e] + bias[e % c.n];
      ASSERT_NEAR(biased[e], want, 1e-5f * (1 + std::fabs(want))) << "round " << round;
      ASSERT_NEAR(relu[e], want < 0 ? 0.0f : want, 1e-5f * (1 + std::fabs(want)))
          << "round " << round;
    }
  }
}

TEST(SgemmTest, SmallProductsGoToOpenBlasLargeOnesToDnnl) {
  if (std::getenv("OF_SGEMM_BACKEND") != nullptr) GTEST_SKIP() << "OF_SGEMM_BACKEND is set";
  EXPECT_EQ(SgemmBackendFor(false, false, 96, 96, 96), SgemmBackend::kOpenBlas);
  EXPECT_EQ(SgemmBackendFor(false, true, 128, 127, 64), SgemmBackend::kOpenBlas);
  EXPECT_EQ(SgemmBackendFor(false, true, 128, 128, 64), SgemmBackend::kDnnl);
  EXPECT_EQ(SgemmBackendFor(false, false, 128, 128, 128), SgemmBackend::kDnnl);
  EXPECT_EQ(SgemmBackendFor(true, false, 1024, 1024, 256), SgemmBackend::kDnnl);
  EXPECT_EQ(SgemmBackendFor(true, false, 256, 1024, 1024), SgemmBackend::kDnnl);
  EXPECT_EQ(SgemmBackendFor(false, false, 256, 1024, 1024), SgemmBackend::kDnnl);  // mlp fwd
  EXPECT_EQ(SgemmBackendFor(false, true, 1024, 1024, 256), SgemmBackend::kDnnl);
  // Weight gradients with a tall output over a long k: OpenBLAS is as fast.
  EXPECT_EQ(SgemmBackendFor(true, false, 1024, 256, 1024), SgemmBackend::kOpenBlas);
  EXPECT_EQ(SgemmBackendFor(false, false, 1024, 256, 1024), SgemmBackend::kDnnl);
  // The matmul primitive: the mlp's input gradients (NT, m <= n / 2), its head's weight
  // gradient (TN, n < 16), attention's batched NN and NT products; not its TN ones.
  EXPECT_EQ(SgemmBackendFor(false, true, 256, 1024, 1024), SgemmBackend::kDnnlMatmul);
  EXPECT_EQ(SgemmBackendFor(false, true, 256, 1024, 10), SgemmBackend::kDnnlMatmul);
  EXPECT_EQ(SgemmBackendFor(true, false, 1024, 10, 256), SgemmBackend::kDnnlMatmul);
  EXPECT_EQ(SgemmBackendFor(false, true, 128, 128, 64, 32), SgemmBackend::kDnnlMatmul);
  EXPECT_EQ(SgemmBackendFor(false, false, 128, 64, 128, 32), SgemmBackend::kDnnlMatmul);
  EXPECT_EQ(SgemmBackendFor(true, false, 128, 64, 128, 32), SgemmBackend::kDnnl);
  EXPECT_EQ(SgemmBackendFor(false, true, 64, 64, 64, 32), SgemmBackend::kOpenBlas);
}

// The epilogue keeps the GEMM the plain route runs: the primitive with post-ops only where
// Sgemm runs the primitive.
TEST(SgemmTest, EpiloguesGoToThePrimitiveOnlyWhereSgemmDoes) {
  if (std::getenv("OF_SGEMM_BACKEND") != nullptr) GTEST_SKIP() << "OF_SGEMM_BACKEND is set";
  const EpilogueRoute separate = EpilogueRoute::kSeparatePass;
  const EpilogueRoute post_ops = EpilogueRoute::kDnnlPostOps;
  EXPECT_EQ(EpilogueRouteFor(false, false, 96, 96, 96), separate);       // OpenBLAS's size
  EXPECT_EQ(EpilogueRouteFor(false, false, 256, 1024, 1024), separate);  // mlp forward
  EXPECT_EQ(EpilogueRouteFor(false, true, 256, 1024, 1024), post_ops);   // its NT form
  EXPECT_EQ(EpilogueRouteFor(false, false, 1024, 1024, 256), separate);  // gpt up
  EXPECT_EQ(EpilogueRouteFor(false, true, 1024, 1024, 256), separate);
  EXPECT_EQ(EpilogueRouteFor(true, false, 1024, 10, 256), post_ops);     // TN, n < 16
  EXPECT_EQ(EpilogueRouteFor(true, false, 1024, 256, 1024), separate);   // OpenBLAS's TN
}

// Fusing does not change the result: SgemmBiasRelu equals Sgemm then BiasReluInPlace bit for
// bit, on either route (the post-ops add the bias to the finished product and clamp as the
// pass does), so fused_matmul_bias equals matmul -> bias_add -> relu.
TEST(SgemmTest, EpilogueEqualsSgemmThenThePassBitForBit) {
  const struct {
    bool ta, tb;
    int64_t m, n, k;
  } shapes[] = {{false, false, 17, 33, 9},     {false, false, 128, 96, 128},
                {false, true, 128, 512, 64},   {false, true, 256, 1024, 1024},
                {true, false, 300, 10, 256},   {false, false, 256, 1024, 1024},
                {false, false, 1024, 256, 1024}};
  for (const auto& s : shapes) {
    const std::vector<float> a = Random(s.m * s.k, 51), b = Random(s.k * s.n, 52);
    const std::vector<float> bias = Random(s.n, 53);
    const int64_t lda = s.ta ? s.m : s.k, ldb = s.tb ? s.k : s.n;
    for (EpilogueRoute route : {EpilogueRoute::kSeparatePass, EpilogueRoute::kDnnlPostOps}) {
      for (bool relu : {false, true}) {
        SCOPED_TRACE(testing::Message() << EpilogueRouteName(route) << " m=" << s.m << " n="
                                        << s.n << " k=" << s.k << " ta=" << s.ta
                                        << " tb=" << s.tb << " relu=" << relu);
        // The plain product through the GEMM the route runs.
        const SgemmBackend backend = route == EpilogueRoute::kDnnlPostOps
                                         ? SgemmBackend::kDnnlMatmul
                                         : SgemmBackendFor(s.ta, s.tb, s.m, s.n, s.k);
        std::vector<float> fused(s.m * s.n), unfused(s.m * s.n);
        SgemmBiasReluWith(route, s.ta, s.tb, s.m, s.n, s.k, a.data(), lda, b.data(), ldb,
                          bias.data(), relu, fused.data(), s.n);
        SgemmWith(backend, s.ta, s.tb, s.m, s.n, s.k, a.data(), lda, b.data(), ldb,
                  unfused.data(), s.n);
        BiasReluInPlace(s.m, s.n, bias.data(), relu, unfused.data(), s.n);
        ASSERT_EQ(fused, unfused);
      }
    }
    // And the automatic choice against the automatic plain product.
    std::vector<float> fused(s.m * s.n), unfused(s.m * s.n);
    SgemmBiasRelu(s.ta, s.tb, s.m, s.n, s.k, a.data(), lda, b.data(), ldb, bias.data(), true,
                  fused.data(), s.n);
    Sgemm(s.ta, s.tb, s.m, s.n, s.k, a.data(), lda, b.data(), ldb, unfused.data(), s.n);
    BiasReluInPlace(s.m, s.n, bias.data(), true, unfused.data(), s.n);
    EXPECT_EQ(fused, unfused) << "m=" << s.m << " n=" << s.n << " k=" << s.k;
  }
}

}  // namespace
}  // namespace cpu
}  // namespace oneflow
