// GEMM throughput of the CPU matmul kernel next to the sgemm backend it uses for the shape
// (kernels/cpu/sgemm.h: oneDNN's dnnl_sgemm or matmul primitive, or OpenBLAS's cblas_sgemm,
// SgemmBatchedWith for batched shapes) called directly in
// the same process, both on one thread (the runtime's setting: one kernel per device
// thread). One JSON line per shape:
//   {"bench":"gemm","name":"square","m":1024,"n":1024,"k":1024,"batch":1,...,
//    "kernel_gflops":..,"blas_gflops":..,"ratio":..,"backend":"dnnl"}
// ratio = kernel / BLAS; the kernel adds argument checks to the same call, so it should
// stay within a few percent of 1. Single calls of the
// two alternate and each side keeps its fastest call, so drift in clock speed or a busy
// neighbour on a shared machine affects both alike.
//
//   bazel run -c opt //bench/gemm:gemm_bench
//   bazel run -c opt //bench/gemm:gemm_bench -- --min_seconds=0.2 --max_size=1024
//
// "openblas_core" is the kernel set OpenBLAS runs (openblas_get_corename()). Where Debian's
// OpenBLAS 0.3.21 does not recognise the CPU, UseBestBlasCore() (first in main) has
// restarted the bench with OPENBLAS_CORETYPE set to the core cpuid implies, saying so in one line on
// stderr; a user-set OPENBLAS_CORETYPE is kept (docs/kernels.md, "Which OpenBLAS kernel runs").
// bench/gemm:dnnl_vs_openblas compares the two backends themselves.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/status/statusor.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "kernels/cpu/blas_core.h"
#include "kernels/cpu/registry.h"
#include "kernels/cpu/sgemm.h"
#include "kernels/kernel.h"

extern "C" void openblas_set_num_threads(int num_threads);
extern "C" char* openblas_get_corename(void);

ABSL_FLAG(double, min_seconds, 1.0, "time spent on each side of each shape, at least");
ABSL_FLAG(int, min_calls, 5, "calls of each side per shape, at least");
ABSL_FLAG(int64_t, max_size, 2048, "skip square shapes larger than this");
ABSL_FLAG(std::string, shapes, "",
          "MxNxK[xBATCH],...: time these shapes (no transposes) instead of the default list, e.g. the small "
          "GEMMs of the auto-parallel benches' gpt (32x96x96 is one sequence of 32 tokens through hidden 96)");

namespace oneflow {
namespace {

struct GemmShape {
  std::string name;
  int64_t batch, m, n, k;
  bool transpose_a = false;
  bool transpose_b = false;
};

// --shapes: "MxNxK" or "MxNxKxBATCH" items separated by commas.
absl::StatusOr<std::vector<GemmShape>> ShapesFromFlag(const std::string& text) {
  std::vector<GemmShape> shapes;
  for (absl::string_view item : absl::StrSplit(text, ',', absl::SkipEmpty())) {
    std::vector<int64_t> dims;
    for (absl::string_view part : absl::StrSplit(item, 'x')) {
      int64_t value = 0;
      if (!absl::SimpleAtoi(part, &value) || value < 1) {
        return absl::InvalidArgumentError(absl::StrCat("--shapes=", text, ": '", item,
                                                       "' is not MxNxK or MxNxKxBATCH of whole numbers >= 1"));
      }
      dims.push_back(value);
    }
    if (dims.size() != 3 && dims.size() != 4) {
      return absl::InvalidArgumentError(
          absl::StrCat("--shapes=", text, ": '", item, "' is not MxNxK or MxNxKxBATCH"));
    }
    shapes.push_back({std::string(item), dims.size() == 4 ? dims[3] : 1, dims[0], dims[1], dims[2]});
  }
  return shapes;
}

std::vector<GemmShape> Shapes(int64_t max_size) {
  std::vector<GemmShape> shapes;
  for (int64_t size : {256, 512, 1024, 2048}) {
    if (size <= max_size) shapes.push_back({"square", 1, size, size, size});
  }
  // GPT with hidden 1024, 16 heads of 64, 2 sequences of 1024 tokens on one device.
  shapes.push_back({"gpt_qkv_projection", 1, 2048, 3072, 1024});
  shapes.push_back({"gpt_mlp_down", 1, 2048, 1024, 4096});
  shapes.push_back({"gpt_weight_grad", 1, 1024, 3072, 2048, /*ta=*/true, /*tb=*/false});
  shapes.push_back({"gpt_attention_scores", 32, 1024, 1024, 64, false, /*tb=*/true});
  shapes.push_back({"gpt_attention_values", 32, 1024, 64, 1024});
  return shapes;
}

Shape Dims(int64_t batch, int64_t rows, int64_t cols) {
  return batch == 1 ? Shape{rows, cols} : Shape{batch, rows, cols};
}

KernelArgument Argument(std::vector<float>* data, const Shape& shape) {
  return {data->data(), DType::kF32, shape, {shape, TensorSlice::Whole(shape)}};
}

// Seconds taken by one call of fn.
template <typename Fn>
double Seconds(Fn&& fn) {
  const auto start = std::chrono::steady_clock::now();
  fn();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

int Run() {
  openblas_set_num_threads(1);
  const KernelFunction matmul = *FindCpuKernel("matmul");
  std::vector<GemmShape> shapes = Shapes(absl::GetFlag(FLAGS_max_size));
  if (!absl::GetFlag(FLAGS_shapes).empty()) {
    absl::StatusOr<std::vector<GemmShape>> given = ShapesFromFlag(absl::GetFlag(FLAGS_shapes));
    if (!given.ok()) {
      std::fprintf(stderr, "gemm_bench: %s\n", std::string(given.status().message()).c_str());
      return 2;
    }
    shapes = *std::move(given);
  }
  for (const GemmShape& s : shapes) {
    const Shape a_shape = s.transpose_a ? Dims(s.batch, s.k, s.m) : Dims(s.batch, s.m, s.k);
    const Shape b_shape = s.transpose_b ? Dims(s.batch, s.n, s.k) : Dims(s.batch, s.k, s.n);
    const Shape c_shape = Dims(s.batch, s.m, s.n);
    std::mt19937 rng(1);
    std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
    std::vector<float> a(a_shape.NumElements()), b(b_shape.NumElements());
    std::vector<float> c_kernel(c_shape.NumElements()), c_blas(c_shape.NumElements());
    for (float& v : a) v = uniform(rng);
    for (float& v : b) v = uniform(rng);
    const AttrMap attrs = {{"transpose_a", s.transpose_a}, {"transpose_b", s.transpose_b}};
    KernelContext context;
    context.attrs = &attrs;
    context.inputs = {Argument(&a, a_shape), Argument(&b, b_shape)};
    context.outputs = {Argument(&c_kernel, c_shape)};
    bool kernel_ok = true;
    auto run_kernel = [&] { kernel_ok = kernel_ok && matmul(context).ok(); };
    const cpu::SgemmBackend backend =
        cpu::SgemmBackendFor(s.transpose_a, s.transpose_b, s.m, s.n, s.k, s.batch);
    auto run_blas = [&] {
      cpu::SgemmBatchedWith(backend, s.transpose_a, s.transpose_b, s.batch, s.m, s.n, s.k,
                            a.data(), a_shape.dim(a_shape.rank() - 1), s.m * s.k, b.data(),
                            b_shape.dim(b_shape.rank() - 1), s.k * s.n, c_blas.data(), s.n,
                            s.m * s.n);
    };
    // Warm up both (page faults, OpenBLAS buffers), then alternate single calls and keep
    // each side's fastest: the machine may be shared, and interference only adds time.
    run_kernel();
    run_blas();
    double kernel_seconds = 1e30, blas_seconds = 1e30, spent = 0;
    for (int calls = 0;
         calls < absl::GetFlag(FLAGS_min_calls) || spent < 2 * absl::GetFlag(FLAGS_min_seconds);
         ++calls) {
      const double kernel_call = Seconds(run_kernel);
      const double blas_call = Seconds(run_blas);
      kernel_seconds = std::min(kernel_seconds, kernel_call);
      blas_seconds = std::min(blas_seconds, blas_call);
      spent += kernel_call + blas_call;
    }
    const double flops = 2.0 * s.batch * s.m * s.n * s.k;
    const double kernel_gflops = flops / kernel_seconds * 1e-9;
    const double blas_gflops = flops / blas_seconds * 1e-9;
    std::printf(
        "{\"bench\":\"gemm\",\"name\":\"%s\",\"m\":%lld,\"n\":%lld,\"k\":%lld,\"batch\":%lld,"
        "\"transpose_a\":%s,\"transpose_b\":%s,\"kernel_gflops\":%.2f,\"blas_gflops\":%.2f,"
        "\"ratio\":%.3f,\"same_result\":%s,\"kernel_ok\":%s,\"threads\":1,"
        "\"backend\":\"%s\",\"openblas_core\":\"%s\"}\n",
        s.name.c_str(), static_cast<long long>(s.m), static_cast<long long>(s.n),
        static_cast<long long>(s.k), static_cast<long long>(s.batch),
        s.transpose_a ? "true" : "false", s.transpose_b ? "true" : "false", kernel_gflops,
        blas_gflops, kernel_gflops / blas_gflops, c_kernel == c_blas ? "true" : "false",
        kernel_ok ? "true" : "false", cpu::SgemmBackendName(backend), openblas_get_corename());
    std::fflush(stdout);
    if (!kernel_ok) return 1;
  }
  return 0;
}

}  // namespace
}  // namespace oneflow

int main(int argc, char** argv) {
  oneflow::cpu::UseBestBlasCore();  // First: it may restart the program.
  absl::ParseCommandLine(argc, argv);
  return oneflow::Run();
}
