// The matmul kernel on attention's batched products against the best direct BLAS call on
// the same shapes (issue 16: "batched and small matmuls within 80% of what the BLAS
// reaches on the same shapes when called well, one batched call or a loop, whichever is
// faster, measured"). One thread, the runtime's setting.
//
//   bazel build -c opt --jobs=2 //bench/gemm:batched_matmul_bench
//   bazel-out/k8-opt/bin/bench/gemm/batched_matmul_bench --rounds=5
//
// Shapes: the gpt of bench/train (batch 8 x 4 heads = 32 products of seq 128 x head 64;
// 16 on each device at dp=2), in the forms its attention runs: scores q k^T and their
// gradient (NT), context p v and dq (NN), dk and dv (TN).
//
// Sides, each the whole batch per call:
//   kernel:           the matmul kernel (FindCpuKernel("matmul")), what the runtime calls;
//   openblas_loop:    cblas_sgemm per product;
//   dnnl_sgemm_loop:  dnnl_sgemm per product;
//   dnnl_matmul_loop: oneDNN's 2-D matmul primitive per product (created once);
//   dnnl_batched:     oneDNN's 3-D matmul primitive, the whole batch in one call.
// A round runs passes of one call per side (the order rotating) for --min_ms; a side's
// figure is its median call over all rounds. Per shape one JSON line: each side's GFLOP/s,
// `best_direct` (the fastest direct side), `ratio` = kernel / best direct from the
// medians, and `paired_ratio`, the median over passes of (best direct call in the pass /
// the kernel's call in the pass), which a busy neighbour disturbs less. `ok` is false if
// the kernel failed or its result differs from OpenBLAS's by more than float rounding.
#include <cblas.h>
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "bench/lib/statistics.h"
#include "kernels/cpu/blas_core.h"
#include "kernels/cpu/registry.h"
#include "kernels/kernel.h"
#include "oneapi/dnnl/dnnl.hpp"

extern "C" void openblas_set_num_threads(int num_threads);

ABSL_FLAG(int, rounds, 5, "rounds; each times every side on every shape");
ABSL_FLAG(double, min_ms, 40, "each shape's passes in a round last this long, at least");

namespace oneflow {
namespace {

struct BatchedShape {
  const char* name;
  int64_t batch, m, n, k;
  bool ta, tb;
};

const BatchedShape kShapes[] = {
    {"gpt_attn_scores_nt", 32, 128, 128, 64, false, true},    // q k^T; dp = dctx v^T
    {"gpt_attn_context_nn", 32, 128, 64, 128, false, false},  // p v; dq = dscores k
    {"gpt_attn_dkv_tn", 32, 128, 64, 128, true, false},       // dk = dscores^T q; dv
    {"gpt_dp2_attn_scores_nt", 16, 128, 128, 64, false, true},
    {"gpt_dp2_attn_context_nn", 16, 128, 64, 128, false, false},
    {"gpt_dp2_attn_dkv_tn", 16, 128, 64, 128, true, false},
};

constexpr int kSides = 5;
const char* const kSideNames[kSides] = {"kernel", "openblas_loop", "dnnl_sgemm_loop",
                                        "dnnl_matmul_loop", "dnnl_batched"};

KernelArgument Argument(std::vector<float>* data, const Shape& shape) {
  return {data->data(), DType::kF32, shape, {shape, TensorSlice::Whole(shape)}};
}

// A matmul primitive over `batch` products of s's form, strides from the stored layout.
dnnl::matmul Primitive(const BatchedShape& s, int64_t batch, const dnnl::engine& engine,
                       dnnl::memory::desc* a_md, dnnl::memory::desc* b_md,
                       dnnl::memory::desc* c_md) {
  using dims = dnnl::memory::dims;
  const int64_t lda = s.ta ? s.m : s.k, ldb = s.tb ? s.k : s.n;
  const dims a_strides = s.ta ? dims{s.m * s.k, 1, lda} : dims{s.m * s.k, lda, 1};
  const dims b_strides = s.tb ? dims{s.k * s.n, 1, ldb} : dims{s.k * s.n, ldb, 1};
  const auto f32 = dnnl::memory::data_type::f32;
  if (batch == 1) {
    *a_md = dnnl::memory::desc({s.m, s.k}, f32, dims{a_strides[1], a_strides[2]});
    *b_md = dnnl::memory::desc({s.k, s.n}, f32, dims{b_strides[1], b_strides[2]});
    *c_md = dnnl::memory::desc({s.m, s.n}, f32, dims{s.n, 1});
  } else {
    *a_md = dnnl::memory::desc({batch, s.m, s.k}, f32, a_strides);
    *b_md = dnnl::memory::desc({batch, s.k, s.n}, f32, b_strides);
    *c_md = dnnl::memory::desc({batch, s.m, s.n}, f32, dims{s.m * s.n, s.n, 1});
  }
  const dnnl::matmul::desc desc(*a_md, *b_md, *c_md);
  return dnnl::matmul(dnnl::matmul::primitive_desc(desc, engine));
}

int Run() {
  openblas_set_num_threads(1);
  omp_set_num_threads(1);  // oneDNN's OpenMP: one thread on this thread (as sgemm.h does)
  const KernelFunction matmul = *FindCpuKernel("matmul");
  dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  dnnl::stream stream(engine);
  const int rounds = absl::GetFlag(FLAGS_rounds);
  const double min_seconds = absl::GetFlag(FLAGS_min_ms) * 1e-3;
  bool all_ok = true;
  for (const BatchedShape& s : kShapes) {
    const int64_t lda = s.ta ? s.m : s.k, ldb = s.tb ? s.k : s.n;
    const Shape a_shape = s.ta ? Shape{s.batch, s.k, s.m} : Shape{s.batch, s.m, s.k};
    const Shape b_shape = s.tb ? Shape{s.batch, s.n, s.k} : Shape{s.batch, s.k, s.n};
    const Shape c_shape{s.batch, s.m, s.n};
    std::mt19937 rng(1);
    std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
    std::vector<float> a(a_shape.NumElements()), b(b_shape.NumElements());
    for (float& v : a) v = uniform(rng);
    for (float& v : b) v = uniform(rng);
    std::vector<std::vector<float>> c(kSides, std::vector<float>(c_shape.NumElements()));

    const AttrMap attrs = {{"transpose_a", s.ta}, {"transpose_b", s.tb}};
    KernelContext context;
    context.attrs = &attrs;
    context.inputs = {Argument(&a, a_shape), Argument(&b, b_shape)};
    context.outputs = {Argument(&c[0], c_shape)};
    bool kernel_ok = true;

    dnnl::memory::desc a1, b1, c1, an, bn, cn;
    dnnl::matmul single = Primitive(s, 1, engine, &a1, &b1, &c1);
    dnnl::matmul batched = Primitive(s, s.batch, engine, &an, &bn, &cn);
    dnnl::memory a1_mem(a1, engine, DNNL_MEMORY_NONE), b1_mem(b1, engine, DNNL_MEMORY_NONE),
        c1_mem(c1, engine, DNNL_MEMORY_NONE);
    dnnl::memory an_mem(an, engine, a.data()), bn_mem(bn, engine, b.data()),
        cn_mem(cn, engine, c[4].data());

    auto run_side = [&](int side) {
      switch (side) {
        case 0:
          kernel_ok = kernel_ok && matmul(context).ok();
          break;
        case 1:
          for (int64_t i = 0; i < s.batch; ++i) {
            cblas_sgemm(CblasRowMajor, s.ta ? CblasTrans : CblasNoTrans,
                        s.tb ? CblasTrans : CblasNoTrans, s.m, s.n, s.k, 1.0f,
                        a.data() + i * s.m * s.k, lda, b.data() + i * s.k * s.n, ldb, 0.0f,
                        c[1].data() + i * s.m * s.n, s.n);
          }
          break;
        case 2:
          for (int64_t i = 0; i < s.batch; ++i) {
            dnnl_sgemm(s.ta ? 'T' : 'N', s.tb ? 'T' : 'N', s.m, s.n, s.k, 1.0f,
                       a.data() + i * s.m * s.k, lda, b.data() + i * s.k * s.n, ldb, 0.0f,
                       c[2].data() + i * s.m * s.n, s.n);
          }
          break;
        case 3:
          for (int64_t i = 0; i < s.batch; ++i) {
            a1_mem.set_data_handle(a.data() + i * s.m * s.k);
            b1_mem.set_data_handle(b.data() + i * s.k * s.n);
            c1_mem.set_data_handle(c[3].data() + i * s.m * s.n);
            single.execute(stream, {{DNNL_ARG_SRC, a1_mem},
                                    {DNNL_ARG_WEIGHTS, b1_mem},
                                    {DNNL_ARG_DST, c1_mem}});
          }
          stream.wait();
          break;
        case 4:
          batched.execute(stream, {{DNNL_ARG_SRC, an_mem},
                                   {DNNL_ARG_WEIGHTS, bn_mem},
                                   {DNNL_ARG_DST, cn_mem}});
          stream.wait();
          break;
      }
    };
    for (int side = 0; side < kSides; ++side) run_side(side);  // warm up
    std::vector<std::vector<double>> seconds(kSides);
    std::vector<double> paired;
    for (int round = 0; round < rounds; ++round) {
      double spent = 0;
      for (int pass = 0; pass < 3 || spent < min_seconds; ++pass) {
        double call[kSides];
        for (int j = 0; j < kSides; ++j) {
          const int side = (j + pass + round) % kSides;
          const auto start = std::chrono::steady_clock::now();
          run_side(side);
          call[side] =
              std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
          spent += call[side];
        }
        for (int side = 0; side < kSides; ++side) seconds[side].push_back(call[side]);
        paired.push_back(*std::min_element(call + 1, call + kSides) / call[0]);
      }
    }
    // Every side's result against OpenBLAS's: float rounding of k terms at most.
    double scale = 0, worst = 0;
    for (size_t e = 0; e < c[1].size(); ++e) {
      scale = std::max(scale, double(std::fabs(c[1][e])));
      for (int side = 0; side < kSides; ++side) {
        worst = std::max(worst, double(std::fabs(c[side][e] - c[1][e])));
      }
    }
    const bool ok = kernel_ok && worst <= 1e-5 * std::sqrt(double(s.k)) * scale;
    all_ok = all_ok && ok;
    const double flops = 2.0 * s.batch * s.m * s.n * s.k;
    double gflops[kSides];
    int best = 1;
    for (int side = 0; side < kSides; ++side) {
      gflops[side] = flops / Median(seconds[side]) * 1e-9;
      if (side > 0 && gflops[side] > gflops[best]) best = side;
    }
    std::printf("{\"bench\":\"batched_matmul\",\"name\":\"%s\",\"batch\":%lld,\"m\":%lld,"
                "\"n\":%lld,\"k\":%lld,\"transpose_a\":%s,\"transpose_b\":%s",
                s.name, static_cast<long long>(s.batch), static_cast<long long>(s.m),
                static_cast<long long>(s.n), static_cast<long long>(s.k),
                s.ta ? "true" : "false", s.tb ? "true" : "false");
    for (int side = 0; side < kSides; ++side) {
      std::printf(",\"%s_gflops\":%.1f", kSideNames[side], gflops[side]);
    }
    std::printf(",\"best_direct\":\"%s\",\"ratio\":%.3f,\"paired_ratio\":%.3f,"
                "\"meets_0_8\":%s,\"ok\":%s,\"calls_per_side\":%zu,\"threads\":1}\n",
                kSideNames[best], gflops[0] / gflops[best], Median(paired),
                gflops[0] / gflops[best] >= 0.8 ? "true" : "false", ok ? "true" : "false",
                seconds[0].size());
    std::fflush(stdout);
  }
  return all_ok ? 0 : 1;
}

}  // namespace
}  // namespace oneflow

int main(int argc, char** argv) {
  oneflow::cpu::UseBestBlasCore();  // First: it may restart the program.
  absl::ParseCommandLine(argc, argv);
  return oneflow::Run();
}
