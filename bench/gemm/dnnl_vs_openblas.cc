// Single-thread sgemm: oneDNN (Debian's libdnnl 2.6) against OpenBLAS (Debian's 0.3.21, on
// the core //kernels/cpu:blas_core leaves it with), on the shapes our benchmark models run
// (bench/train: the mlp 1024-1024-1024-1024-10 at batch 256, the gpt with hidden 256, seq
// 128, batch 8, 4 heads, vocab 1024), each in the forms its forward and backward use.
//
//   bazel build -c opt --jobs=2 //bench/gemm:dnnl_vs_openblas
//   bazel-out/k8-opt/bin/bench/gemm/dnnl_vs_openblas --rounds=7
//
// Three ways to run a product on one thread:
//   openblas:     cblas_sgemm (row-major), what kernels/cpu/matmul.cc calls;
//   dnnl_sgemm:   oneDNN's BLAS-like C call dnnl_sgemm (row-major, like cblas);
//   dnnl_matmul:  oneDNN's matmul primitive, created once per shape and reused (what a
//                 framework would cache), strides giving the transposes.
// Every round runs each shape for >= --min_ms in passes of one call per side (the order
// rotating); a line gives each side's GFLOP/s from its median call over all rounds, and
// each ratio to OpenBLAS as the median over passes of (OpenBLAS's call / that side's call
// in the same pass). The machine may be shared: compare the paired ratios.
//
// oneDNN from Debian is built with OpenMP: a call uses omp_get_max_threads() threads.
// This bench calls omp_set_num_threads(1) on its thread first, and checks that the process
// has no more threads after the calls than before (no OpenMP pool started).
#include <cblas.h>
#include <dirent.h>
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
#include "oneapi/dnnl/dnnl.hpp"

extern "C" void openblas_set_num_threads(int num_threads);
extern "C" char* openblas_get_corename(void);

ABSL_FLAG(int, rounds, 7, "rounds; each times every side on every shape once");
ABSL_FLAG(double, min_ms, 40, "each side's timing in a round repeats calls for this long");
ABSL_FLAG(bool, matmul_primitive, true, "also time oneDNN's matmul primitive");
ABSL_FLAG(std::string, only, "", "run only shapes whose name contains this");

using oneflow::Median;

namespace {

struct GemmShape {
  const char* name;
  int64_t batch, m, n, k;
  bool ta, tb;
};

// out[m, n] = op(a) op(b); a is [m, k] ([k, m] if ta), b is [k, n] ([n, k] if tb).
const std::vector<GemmShape>& Shapes() {
  static const std::vector<GemmShape> shapes = {
      // mlp: x [256, 1024] . w [1024, 1024], and its two gradients (8 of the step's 11).
      {"mlp_fwd_nn", 1, 256, 1024, 1024, false, false},
      {"mlp_dx_nt", 1, 256, 1024, 1024, false, true},
      {"mlp_dw_tn", 1, 1024, 1024, 256, true, false},
      // mlp's last layer, 1024 -> 10 (the other 3 of the step's 11 products).
      {"mlp_head_fwd_nn", 1, 256, 10, 1024, false, false},
      {"mlp_head_dx_nt", 1, 256, 1024, 10, false, true},
      {"mlp_head_dw_tn", 1, 1024, 10, 256, true, false},
      // gpt, 1024 rows (batch 8 x seq 128), hidden 256: q/k/v/o projections.
      {"gpt_qkvo_fwd_nn", 1, 1024, 256, 256, false, false},
      {"gpt_qkvo_dx_nt", 1, 1024, 256, 256, false, true},
      {"gpt_qkvo_dw_tn", 1, 256, 256, 1024, true, false},
      // mlp up 256 -> 1024 and down 1024 -> 256.
      {"gpt_fc_fwd_nn", 1, 1024, 1024, 256, false, false},
      {"gpt_fc_dx_nt", 1, 1024, 256, 1024, false, true},
      {"gpt_fc_dw_tn", 1, 256, 1024, 1024, true, false},
      {"gpt_proj_fwd_nn", 1, 1024, 256, 1024, false, false},
      {"gpt_proj_dx_nt", 1, 1024, 1024, 256, false, true},
      {"gpt_proj_dw_tn", 1, 1024, 256, 1024, true, false},
      // logits = x [1024, 256] . wte [1024, 256]^T (tied), and its gradients.
      {"gpt_logits_fwd_nt", 1, 1024, 1024, 256, false, true},
      {"gpt_logits_dx_nn", 1, 1024, 256, 1024, false, false},
      {"gpt_logits_dw_tn", 1, 1024, 256, 1024, true, false},
      // attention, 32 (batch 8 x 4 heads) of seq 128 x head 64.
      {"gpt_attn_scores_nt", 32, 128, 128, 64, false, true},
      {"gpt_attn_context_nn", 32, 128, 64, 128, false, false},
      {"gpt_attn_dscores_nt", 32, 128, 128, 64, false, true},
      {"gpt_attn_dq_nn", 32, 128, 64, 128, false, false},
      {"gpt_attn_dkv_tn", 32, 128, 64, 128, true, false},
      // reference points: small to large squares
      {"square_16", 1, 16, 16, 16, false, false},
      {"square_32", 1, 32, 32, 32, false, false},
      {"square_64", 1, 64, 64, 64, false, false},
      {"square_80", 1, 80, 80, 80, false, false},
      {"square_96", 1, 96, 96, 96, false, false},
      {"square_128", 1, 128, 128, 128, false, false},
      {"square_128_nt", 1, 128, 128, 128, false, true},
      {"square_128_tn", 1, 128, 128, 128, true, false},
      {"square_1024", 1, 1024, 1024, 1024, false, false},
  };
  return shapes;
}

int CountThreads() {
  int count = 0;
  if (DIR* dir = opendir("/proc/self/task")) {
    while (dirent* entry = readdir(dir)) count += entry->d_name[0] != '.';
    closedir(dir);
  }
  return count;
}

struct Problem {
  GemmShape s;
  std::vector<float> a, b, c_blas, c_sgemm, c_matmul;
  int64_t lda, ldb;
  dnnl::matmul matmul;
  dnnl::memory a_mem, b_mem, c_mem;
};

}  // namespace

int main(int argc, char** argv) {
  oneflow::cpu::UseBestBlasCore();  // First: it may restart the program.
  absl::ParseCommandLine(argc, argv);
  openblas_set_num_threads(1);
  omp_set_num_threads(1);
  const int threads_before = CountThreads();
  const bool with_matmul = absl::GetFlag(FLAGS_matmul_primitive);
  dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  dnnl::stream stream(engine);

  std::vector<Problem> problems;
  for (const GemmShape& s : Shapes()) {
    if (!absl::GetFlag(FLAGS_only).empty() &&
        std::string(s.name).find(absl::GetFlag(FLAGS_only)) == std::string::npos) {
      continue;
    }
    Problem p;
    p.s = s;
    std::mt19937 rng(1);
    std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
    p.a.resize(s.batch * s.m * s.k);
    p.b.resize(s.batch * s.k * s.n);
    for (float& v : p.a) v = uniform(rng);
    for (float& v : p.b) v = uniform(rng);
    p.c_blas.assign(s.batch * s.m * s.n, 0.0f);
    p.c_sgemm = p.c_blas;
    p.c_matmul = p.c_blas;
    p.lda = s.ta ? s.m : s.k;
    p.ldb = s.tb ? s.k : s.n;
    if (with_matmul) {
      using dt = dnnl::memory::data_type;
      using dims = dnnl::memory::dims;
      // Logical [batch, m, k] with strides giving the stored layout.
      const dims a_strides = s.ta ? dims{s.m * s.k, 1, s.m} : dims{s.m * s.k, s.k, 1};
      const dims b_strides = s.tb ? dims{s.k * s.n, 1, s.k} : dims{s.k * s.n, s.n, 1};
      dnnl::memory::desc a_md({s.batch, s.m, s.k}, dt::f32, a_strides);
      dnnl::memory::desc b_md({s.batch, s.k, s.n}, dt::f32, b_strides);
      dnnl::memory::desc c_md({s.batch, s.m, s.n}, dt::f32, dims{s.m * s.n, s.n, 1});
      dnnl::matmul::desc desc(a_md, b_md, c_md);
      dnnl::matmul::primitive_desc pd(desc, engine);
      std::fprintf(stderr, "{\"shape\":\"%s\",\"dnnl_matmul_impl\":\"%s\"}\n", s.name,
                   pd.impl_info_str());
      p.matmul = dnnl::matmul(pd);
      p.a_mem = dnnl::memory(a_md, engine, p.a.data());
      p.b_mem = dnnl::memory(b_md, engine, p.b.data());
      p.c_mem = dnnl::memory(c_md, engine, p.c_matmul.data());
    }
    problems.push_back(std::move(p));
  }

  auto run_blas = [](Problem& p) {
    const GemmShape& s = p.s;
    for (int64_t i = 0; i < s.batch; ++i) {
      cblas_sgemm(CblasRowMajor, s.ta ? CblasTrans : CblasNoTrans, s.tb ? CblasTrans : CblasNoTrans,
                  s.m, s.n, s.k, 1.0f, p.a.data() + i * s.m * s.k, p.lda,
                  p.b.data() + i * s.k * s.n, p.ldb, 0.0f, p.c_blas.data() + i * s.m * s.n, s.n);
    }
  };
  auto run_sgemm = [](Problem& p) {
    const GemmShape& s = p.s;
    for (int64_t i = 0; i < s.batch; ++i) {
      dnnl_sgemm(s.ta ? 'T' : 'N', s.tb ? 'T' : 'N', s.m, s.n, s.k, 1.0f,
                 p.a.data() + i * s.m * s.k, p.lda, p.b.data() + i * s.k * s.n, p.ldb, 0.0f,
                 p.c_sgemm.data() + i * s.m * s.n, s.n);
    }
  };
  auto run_matmul = [&](Problem& p) {
    p.matmul.execute(stream, {{DNNL_ARG_SRC, p.a_mem},
                              {DNNL_ARG_WEIGHTS, p.b_mem},
                              {DNNL_ARG_DST, p.c_mem}});
    stream.wait();
  };

  const int sides = with_matmul ? 3 : 2;
  const int rounds = absl::GetFlag(FLAGS_rounds);
  const double min_seconds = absl::GetFlag(FLAGS_min_ms) * 1e-3;
  auto run_side = [&](int side, Problem& p) {
    if (side == 0) run_blas(p);
    if (side == 1) run_sgemm(p);
    if (side == 2) run_matmul(p);
  };
  // Per problem and side, the seconds of every timed call; per problem and side > 0, the
  // ratio of OpenBLAS's call to that side's call in the same pass (paired, so a neighbour's
  // burst that slows one pass slows both of its calls alike).
  std::vector<std::vector<std::vector<double>>> seconds(problems.size(),
                                                        std::vector<std::vector<double>>(sides));
  std::vector<std::vector<std::vector<double>>> paired(problems.size(),
                                                       std::vector<std::vector<double>>(sides));
  for (size_t i = 0; i < problems.size(); ++i) {
    for (int side = 0; side < sides; ++side) run_side(side, problems[i]);  // warm up
  }
  for (int round = 0; round < rounds; ++round) {
    for (size_t i = 0; i < problems.size(); ++i) {
      Problem& p = problems[i];
      // Passes of one call per side, the order rotating, until min_seconds have gone.
      double spent = 0;
      for (int pass = 0; pass < 3 || spent < min_seconds; ++pass) {
        std::vector<double> call(sides);
        for (int j = 0; j < sides; ++j) {
          const int side = (j + pass + round) % sides;
          const auto start = std::chrono::steady_clock::now();
          run_side(side, p);
          call[side] =
              std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
          spent += call[side];
        }
        for (int side = 0; side < sides; ++side) {
          seconds[i][side].push_back(call[side]);
          if (side > 0) paired[i][side].push_back(call[0] / call[side]);
        }
      }
    }
  }
  std::vector<std::vector<double>> gflops_median(problems.size(), std::vector<double>(sides));
  for (size_t i = 0; i < problems.size(); ++i) {
    const double flops = 2.0 * problems[i].s.batch * problems[i].s.m * problems[i].s.n *
                         problems[i].s.k;
    for (int side = 0; side < sides; ++side) {
      gflops_median[i][side] = flops / Median(seconds[i][side]) * 1e-9;
    }
  }
  const int threads_after = CountThreads();

  for (size_t i = 0; i < problems.size(); ++i) {
    const Problem& p = problems[i];
    double diff_sgemm = 0, diff_matmul = 0, scale = 0;
    for (size_t e = 0; e < p.c_blas.size(); ++e) {
      scale = std::max(scale, double(std::fabs(p.c_blas[e])));
      diff_sgemm = std::max(diff_sgemm, double(std::fabs(p.c_blas[e] - p.c_sgemm[e])));
      if (with_matmul) {
        diff_matmul = std::max(diff_matmul, double(std::fabs(p.c_blas[e] - p.c_matmul[e])));
      }
    }
    const double blas = gflops_median[i][0];
    const double sgemm = gflops_median[i][1];
    const double matmul = with_matmul ? gflops_median[i][2] : 0;
    const double sgemm_ratio = Median(paired[i][1]);
    const double matmul_ratio = with_matmul ? Median(paired[i][2]) : 0;
    std::printf(
        "{\"bench\":\"dnnl_vs_openblas\",\"name\":\"%s\",\"batch\":%lld,\"m\":%lld,\"n\":%lld,"
        "\"k\":%lld,\"transpose_a\":%s,\"transpose_b\":%s,\"openblas_gflops\":%.1f,"
        "\"dnnl_sgemm_gflops\":%.1f,\"dnnl_matmul_gflops\":%.1f,\"sgemm_ratio\":%.3f,"
        "\"matmul_ratio\":%.3f,\"max_rel_diff_sgemm\":%.1e,\"max_rel_diff_matmul\":%.1e,"
        "\"rounds\":%d,\"calls_per_side\":%zu}\n",
        p.s.name, (long long)p.s.batch, (long long)p.s.m, (long long)p.s.n, (long long)p.s.k,
        p.s.ta ? "true" : "false", p.s.tb ? "true" : "false", blas, sgemm, matmul, sgemm_ratio,
        matmul_ratio, diff_sgemm / scale, diff_matmul / scale, rounds,
        seconds[i][0].size());
  }
  std::printf(
      "{\"bench\":\"dnnl_vs_openblas\",\"openblas_core\":\"%s\",\"dnnl_version\":\"%d.%d.%d\","
      "\"omp_max_threads\":%d,\"process_threads_before\":%d,\"process_threads_after\":%d}\n",
      openblas_get_corename(), dnnl_version()->major, dnnl_version()->minor,
      dnnl_version()->patch, omp_get_max_threads(), threads_before, threads_after);
  return 0;
}
