// Sgemm's two backends (sgemm.h) against a double-precision product, in every transpose
// form, with leading dimensions wider than the rows, on shapes below and above the size
// where the choice switches; the choice itself; and that a oneDNN call starts no threads.
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
  const std::vector<float> a = Random(c.m * c.k, 3), b = Random(c.k * c.n, 4);
  std::vector<float> out(c.m * c.n);
  auto call = [&] {
    SgemmWith(SgemmBackend::kDnnl, false, false, c.m, c.n, c.k, a.data(), c.k, b.data(), c.n,
              out.data(), c.n);
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
      }
    }
  }
}

TEST(SgemmTest, SmallProductsGoToOpenBlasLargeOnesToDnnl) {
  if (std::getenv("OF_SGEMM_BACKEND") != nullptr) GTEST_SKIP() << "OF_SGEMM_BACKEND is set";
  EXPECT_EQ(SgemmBackendFor(false, false, 96, 96, 96), SgemmBackend::kOpenBlas);
  EXPECT_EQ(SgemmBackendFor(false, true, 128, 127, 64), SgemmBackend::kOpenBlas);
  EXPECT_EQ(SgemmBackendFor(false, true, 128, 128, 64), SgemmBackend::kDnnl);  // attention
  EXPECT_EQ(SgemmBackendFor(false, false, 128, 128, 128), SgemmBackend::kDnnl);
  EXPECT_EQ(SgemmBackendFor(true, false, 1024, 1024, 256), SgemmBackend::kDnnl);
  EXPECT_EQ(SgemmBackendFor(false, true, 256, 1024, 10), SgemmBackend::kDnnl);
  EXPECT_EQ(SgemmBackendFor(true, false, 256, 1024, 1024), SgemmBackend::kDnnl);
  // Weight gradients with a tall output over a long k: OpenBLAS is as fast.
  EXPECT_EQ(SgemmBackendFor(true, false, 1024, 256, 1024), SgemmBackend::kOpenBlas);
  EXPECT_EQ(SgemmBackendFor(false, false, 1024, 256, 1024), SgemmBackend::kDnnl);
  EXPECT_EQ(SgemmBackendFor(true, false, 1024, 10, 256), SgemmBackend::kDnnl);  // mlp head
}

}  // namespace
}  // namespace cpu
}  // namespace oneflow
