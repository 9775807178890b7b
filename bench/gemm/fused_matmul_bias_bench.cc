// fused_matmul_bias against the chain it replaces, and the two routes of its epilogue GEMM,
// on one thread (the runtime's setting without --threads_per_device). Per case (the mlp's
// forward layer, x [256, 1024] . w [1024, 1024] + b [1024], and the gpt's up projection,
// x [1024, 256] . w [256, 1024] + b [1024], each with and without relu and with w stored
// transposed; the gpt's other biased forward products and the mlp's head) five sides run:
//
//   unfused:        the registered CPU kernels matmul, bias_add and (with relu) relu, each
//                   writing its own output tensor, as the runtime runs the unfused graph;
//   fused:          the fused_matmul_bias kernel (FindCpuKernel: argument checks included);
//   plain:          Sgemm alone, no epilogue (the floor both routes sit on);
//   separate_pass:  SgemmBiasReluWith(kSeparatePass): Sgemm's own backend, then one pass
//                   of bias and relu over c;
//   dnnl_post_ops:  SgemmBiasReluWith(kDnnlPostOps): oneDNN's matmul primitive with a bias
//                   argument and a relu post-op.
//
// Each round runs every case in passes of one call per side, in an order shuffled anew
// for each pass, until --min_ms have gone; times are the median call over all rounds,
// ratios the median over passes of the two sides' calls in the same pass (paired: a
// neighbour's burst on a shared machine slows both calls of a pass alike). The order is
// shuffled, not rotated, because a side's time depends on what ran before it: with a
// fixed cyclic order, the side after one that had just written the same output buffer
// ran 2.5% faster on the gpt shape (its 4 MiB output still in L3 and the TLB) than the
// identical call after the unfused chain, which streams three other 4 MiB tensors.
// Every side writes its own output, so each starts with its output about as cold as an
// op's output is in a training step. Two JSON lines per case:
//   {"bench":"fused_matmul_bias","name":"mlp_fwd","m":256,"n":1024,"k":1024,"relu":true,
//    "unfused_ms":..,"fused_ms":..,"fused_over_unfused":..,"route":"..",...}
//   {"bench":"epilogue_route","name":"mlp_fwd",...,"plain_ms":..,"separate_pass_ms":..,
//    "dnnl_post_ops_ms":..,"post_ops_over_separate":..,"separate_over_plain":..,...}
//
//   bazel build -c opt --jobs=2 //bench/gemm:fused_matmul_bias_bench
//   taskset -c 1 bazel-out/k8-opt/bin/bench/gemm/fused_matmul_bias_bench --rounds=15 --min_ms=150
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "bench/lib/statistics.h"
#include "kernels/cpu/blas_core.h"
#include "kernels/cpu/registry.h"
#include "kernels/cpu/sgemm.h"
#include "kernels/kernel.h"

ABSL_FLAG(int, rounds, 7, "rounds; each times every side of every case");
ABSL_FLAG(double, min_ms, 100, "each case's passes in a round repeat for this long");
ABSL_FLAG(std::string, filter, "", "run only cases whose name contains this");

namespace oneflow {
namespace {

struct BenchCase {
  std::string name;
  int64_t m, n, k;
  bool transpose_b;  // w stored [out, in], as torch's Linear keeps it
  bool relu;
};

// out [m, n] = x [m, k] . w [k, n] (w^T with transpose_b) + b [n]: the forward layers of
// bench/train's mlp (1024-1024-1024-1024-10 at batch 256) and gpt (hidden 256, 1024 tokens).
std::vector<BenchCase> Cases() {
  return {
      {"mlp_fwd", 256, 1024, 1024, false, true},
      {"mlp_fwd", 256, 1024, 1024, false, false},
      {"gpt_fc_fwd", 1024, 1024, 256, false, true},
      {"gpt_fc_fwd", 1024, 1024, 256, false, false},
      // The same with the weights stored transposed.
      {"mlp_fwd_nt", 256, 1024, 1024, true, true},
      {"gpt_fc_fwd_nt", 1024, 1024, 256, true, true},
      // The other forward products with a bias: the gpt's mlp down projection and its
      // q/k/v/o projections, the mlp's head (n = 10, below the primitive's best shapes).
      {"gpt_proj_fwd", 1024, 256, 1024, false, false},
      {"gpt_qkvo_fwd", 1024, 256, 256, false, false},
      {"mlp_head_fwd", 256, 10, 1024, false, false},
  };
}

KernelArgument Argument(std::vector<float>* data, const Shape& shape) {
  return {data->data(), DType::kF32, shape, {shape, TensorSlice::Whole(shape)}};
}

double MaxAbsDifference(const std::vector<float>& x, const std::vector<float>& y) {
  double largest = 0;
  for (size_t i = 0; i < x.size(); ++i) largest = std::max(largest, double(std::fabs(x[i] - y[i])));
  return largest;
}

enum Side { kUnfused, kFused, kPlain, kSeparatePass, kDnnlPostOps, kSides };

// Runs one case; false if a kernel returned an error.
bool RunCase(const BenchCase& c) {
  const bool tb = c.transpose_b;
  const int64_t ldb = tb ? c.k : c.n;
  const Shape a_shape{c.m, c.k}, b_shape = tb ? Shape{c.n, c.k} : Shape{c.k, c.n};
  const Shape bias_shape{c.n}, out_shape{c.m, c.n};
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  std::vector<float> a(a_shape.NumElements()), b(b_shape.NumElements()), bias(c.n);
  for (float& v : a) v = uniform(rng);
  for (float& v : b) v = uniform(rng);
  for (float& v : bias) v = uniform(rng);
  // The unfused chain's three tensors, as the runtime allocates one per op output.
  std::vector<float> product(out_shape.NumElements()), biased(product.size());
  std::vector<float> activated(product.size()), fused_out(product.size());
  std::vector<float> plain_out(product.size()), separate_out(product.size());
  std::vector<float> post_ops_out(product.size());

  const AttrMap no_attrs;
  const AttrMap matmul_attrs = {{"transpose_b", tb}};
  const AttrMap fused_attrs = {{"transpose_b", tb}, {"relu", c.relu}};
  KernelContext matmul, bias_add, relu, fused;
  matmul.attrs = &matmul_attrs;
  bias_add.attrs = relu.attrs = &no_attrs;
  fused.attrs = &fused_attrs;
  matmul.inputs = {Argument(&a, a_shape), Argument(&b, b_shape)};
  matmul.outputs = {Argument(&product, out_shape)};
  bias_add.inputs = {Argument(&product, out_shape), Argument(&bias, bias_shape)};
  bias_add.outputs = {Argument(&biased, out_shape)};
  relu.inputs = {Argument(&biased, out_shape)};
  relu.outputs = {Argument(&activated, out_shape)};
  fused.inputs = {Argument(&a, a_shape), Argument(&b, b_shape), Argument(&bias, bias_shape)};
  fused.outputs = {Argument(&fused_out, out_shape)};
  const KernelFunction matmul_kernel = *FindCpuKernel("matmul");
  const KernelFunction bias_add_kernel = *FindCpuKernel("bias_add");
  const KernelFunction relu_kernel = *FindCpuKernel("relu");
  const KernelFunction fused_kernel = *FindCpuKernel("fused_matmul_bias");

  bool ok = true;
  auto check = [&](const absl::Status& status) {
    if (!status.ok() && ok)
      std::fprintf(stderr, "%s: %s\n", c.name.c_str(), status.ToString().c_str());
    ok = ok && status.ok();
  };
  const std::function<void()> sides[kSides] = {
      [&] {
        check(matmul_kernel(matmul));
        check(bias_add_kernel(bias_add));
        if (c.relu) check(relu_kernel(relu));
      },
      [&] { check(fused_kernel(fused)); },
      [&] {
        cpu::Sgemm(false, tb, c.m, c.n, c.k, a.data(), c.k, b.data(), ldb, plain_out.data(), c.n);
      },
      [&] {
        cpu::SgemmBiasReluWith(cpu::EpilogueRoute::kSeparatePass, false, tb, c.m, c.n, c.k,
                               a.data(), c.k, b.data(), ldb, bias.data(), c.relu,
                               separate_out.data(), c.n);
      },
      [&] {
        cpu::SgemmBiasReluWith(cpu::EpilogueRoute::kDnnlPostOps, false, tb, c.m, c.n, c.k, a.data(),
                               c.k, b.data(), ldb, bias.data(), c.relu, post_ops_out.data(), c.n);
      },
  };
  for (const auto& side : sides) side();  // warm up: page faults, primitives, packing buffers

  std::vector<double> seconds[kSides];
  std::vector<double> fused_over_unfused, post_ops_over_separate, separate_over_plain;
  const int rounds = absl::GetFlag(FLAGS_rounds);
  const double min_seconds = absl::GetFlag(FLAGS_min_ms) * 1e-3;
  std::mt19937 shuffler(7);
  int order[kSides];
  for (int side = 0; side < kSides; ++side) order[side] = side;
  for (int round = 0; round < rounds; ++round) {
    double spent = 0;
    for (int pass = 0; pass < 3 || spent < min_seconds; ++pass) {
      double call[kSides];
      std::shuffle(order, order + kSides, shuffler);
      for (const int side : order) {
        const auto start = std::chrono::steady_clock::now();
        sides[side]();
        call[side] =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        spent += call[side];
      }
      for (int side = 0; side < kSides; ++side) seconds[side].push_back(call[side]);
      fused_over_unfused.push_back(call[kFused] / call[kUnfused]);
      post_ops_over_separate.push_back(call[kDnnlPostOps] / call[kSeparatePass]);
      separate_over_plain.push_back(call[kSeparatePass] / call[kPlain]);
    }
  }
  const std::vector<float>& unfused_out = c.relu ? activated : biased;
  const char* relu_text = c.relu ? "true" : "false";
  const char* tb_text = tb ? "true" : "false";
  const long long m = c.m, n = c.n, k = c.k;
  const double gflop = 2e-9 * c.m * c.n * c.k;
  std::printf(
      "{\"bench\":\"fused_matmul_bias\",\"name\":\"%s\",\"m\":%lld,\"n\":%lld,\"k\":%lld,"
      "\"transpose_b\":%s,\"relu\":%s,\"unfused_ms\":%.3f,\"fused_ms\":%.3f,"
      "\"fused_over_unfused\":%.3f,\"fused_gflops\":%.1f,\"route\":\"%s\",\"max_abs_diff\":%.1e,\"threads\":1,"
      "\"calls_per_side\":%zu,\"ok\":%s}\n",
      c.name.c_str(), m, n, k, tb_text, relu_text, Median(seconds[kUnfused]) * 1e3,
      Median(seconds[kFused]) * 1e3, Median(fused_over_unfused), gflop / Median(seconds[kFused]),
      cpu::EpilogueRouteName(cpu::EpilogueRouteFor(false, tb, c.m, c.n, c.k)),
      MaxAbsDifference(unfused_out, fused_out), seconds[kFused].size(), ok ? "true" : "false");
  std::printf(
      "{\"bench\":\"epilogue_route\",\"name\":\"%s\",\"m\":%lld,\"n\":%lld,\"k\":%lld,"
      "\"transpose_b\":%s,\"relu\":%s,\"plain_ms\":%.3f,\"separate_pass_ms\":%.3f,"
      "\"dnnl_post_ops_ms\":%.3f,\"post_ops_over_separate\":%.3f,\"separate_over_plain\":%.3f,\"plain_backend\":\"%s\","
      "\"max_abs_diff\":%.1e}\n",
      c.name.c_str(), m, n, k, tb_text, relu_text, Median(seconds[kPlain]) * 1e3,
      Median(seconds[kSeparatePass]) * 1e3, Median(seconds[kDnnlPostOps]) * 1e3,
      Median(post_ops_over_separate), Median(separate_over_plain),
      cpu::SgemmBackendName(cpu::SgemmBackendFor(false, tb, c.m, c.n, c.k)),
      MaxAbsDifference(separate_out, post_ops_out));
  std::fflush(stdout);
  return ok;
}

int Run() {
  const std::string filter = absl::GetFlag(FLAGS_filter);
  bool ok = true;
  for (const BenchCase& c : Cases()) {
    if (!filter.empty() && c.name.find(filter) == std::string::npos) continue;
    ok = RunCase(c) && ok;
  }
  return ok ? 0 : 1;
}

}  // namespace
}  // namespace oneflow

int main(int argc, char** argv) {
  oneflow::cpu::UseBestBlasCore();  // First: it may restart the program.
  absl::ParseCommandLine(argc, argv);
  return oneflow::Run();
}
