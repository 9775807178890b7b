// bf16 against fp32 on this CPU, one thread, as JSON lines (docs/memory_and_precision.md,
// "Precision"); every ratio is against a reference measured in the same run:
//
//   {"bench":"bf16_matmul","m":1024,"n":1024,"k":1024,"fp32_gflops":..,"bf16_gflops":..,
//    "bf16_kernel_gflops":..,"fma_peak_gflops":..,"bf16_vs_fma_peak":..,"bf16_vs_fp32":..}
//   {"bench":"bf16_arena","model":"llama",...,"fp32_arena_bytes":..,"bf16_arena_bytes":..,"ratio":..}
//   {"bench":"bf16_step","model":"llama",...,"fp32_step_ms":..,"bf16_step_ms":..,"ratio":..}
//
// route: dnnl_bf16 (oneDNN's bf16 primitive) or rounded_sgemm (a CPU without AVX-512:
// the rounded operands through fp32 Sgemm, sgemm.h), with the CPU's bf16 instruction sets;
// bf16_gflops: Bf16MatmulBatched on operands already in bf16;
// bf16_kernel_gflops: the matmul kernel with compute_dtype="bf16", which also rounds both
// f32 operands to bf16 on every call (what a training step pays); fp32_gflops: Sgemm on
// the same shape; fma_peak_gflops: this core's fp32 FMA peak (bench/gemm/fma_peak.h).
// The step: the llama example on one device, fp32 then bf16 plans of the same model,
// median step of the iterations after the warm-up.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "actors/runtime.h"
#include "bench/gemm/fma_peak.h"
#include "compiler/compiler.h"
#include "examples/common/parallel_layout.h"
#include "examples/llama/llama_model.h"
#include "kernels/cpu/blas_core.h"
#include "kernels/cpu/registry.h"
#include "kernels/kernel.h"
#include "kernels/cpu/sgemm.h"
#include "oneflow_core/dtype.h"
#include "oneflow_core/status.h"

ABSL_FLAG(int64_t, size, 1024, "m = n = k of the matmul comparison.");
ABSL_FLAG(int64_t, hidden, 512, "The llama's --hidden.");
ABSL_FLAG(int64_t, layers, 4, "The llama's --layers.");
ABSL_FLAG(int64_t, seq, 256, "The llama's --seq.");
ABSL_FLAG(int64_t, batch, 2, "The llama's --batch.");
ABSL_FLAG(int64_t, heads, 8, "The llama's --heads.");
ABSL_FLAG(int64_t, kv_heads, 4, "The llama's --kv_heads.");
ABSL_FLAG(int64_t, vocab, 512, "The llama's --vocab.");
ABSL_FLAG(int64_t, iterations, 8, "Training iterations per precision; the first 3 are warm-up.");

namespace oneflow {
namespace {

using Clock = std::chrono::steady_clock;

double Seconds(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

// GFLOP/s of `run` (one m x n x k product per call), repeated for at least 0.5 s after a
// warm-up call; the best of 3 such rounds.
template <typename Run>
double Gflops(int64_t m, int64_t n, int64_t k, Run run) {
  run();
  double best = 0;
  for (int round = 0; round < 3; ++round) {
    int64_t calls = 0;
    const Clock::time_point start = Clock::now();
    do {
      run();
      ++calls;
    } while (Seconds(start) < 0.5);
    best = std::max(best, 2.0 * m * n * k * calls / Seconds(start) / 1e9);
  }
  return best;
}

int MatmulBench() {
  const int64_t s = absl::GetFlag(FLAGS_size);
  std::vector<float> a(s * s), b(s * s), c(s * s);
  for (int64_t i = 0; i < s * s; ++i) {
    a[i] = static_cast<float>((i * 7) % 13) / 13.0f - 0.5f;
    b[i] = static_cast<float>((i * 5) % 11) / 11.0f - 0.5f;
  }
  std::vector<BFloat16> a16(s * s), b16(s * s);
  ConvertToBFloat16(a.data(), s * s, a16.data());
  ConvertToBFloat16(b.data(), s * s, b16.data());
  const double fp32 = Gflops(s, s, s, [&] { cpu::Sgemm(false, false, s, s, s, a.data(), s, b.data(), s, c.data(), s); });
  bool ok = true;
  const double bf16 = Gflops(s, s, s, [&] {
    cpu::Bf16MatmulBatched(false, false, 1, s, s, s, a16.data(), s, s * s, b16.data(), s, s * s, nullptr, false,
                           c.data(), s);
  });
  absl::StatusOr<KernelFunction> matmul = FindCpuKernel("matmul");
  if (!matmul.ok()) return 1;
  const AttrMap attrs = {{"compute_dtype", std::string("bf16")}};
  const Shape shape{s, s};
  auto argument = [&](std::vector<float>* data) {
    return KernelArgument{data->data(), DType::kF32, shape, {shape, TensorSlice::Whole(shape)}};
  };
  KernelContext context;
  context.attrs = &attrs;
  context.inputs = {argument(&a), argument(&b)};
  context.outputs = {argument(&c)};
  const double kernel = Gflops(s, s, s, [&] { ok &= (*matmul)(context).ok(); });
  if (!ok) {
    std::fprintf(stderr, "the bf16 matmul kernel failed\n");
    return 1;
  }
  const CpuBf16Support cpu_support = ProbeCpuBf16Support();
  float sink = 0;
  // The best of 5 short runs: on a shared machine interference only lowers a run.
  double peak = 0;
  for (int run = 0; run < 5; ++run) {
    peak = std::max(peak, __builtin_cpu_supports("avx512f") ? bench::Avx512(&sink, 20'000'000)
                                                             : bench::Avx2(&sink, 20'000'000));
  }
  std::printf(
      "{\"bench\":\"bf16_matmul\",\"cpu_avx512_bf16\":%s,\"cpu_amx_bf16\":%s,\"route\":\"%s\",\"m\":%lld,\"n\":%lld,\"k\":%lld,\"fp32_gflops\":%.1f,\"bf16_gflops\":%.1f,"
      "\"bf16_kernel_gflops\":%.1f,\"fma_peak_gflops\":%.1f,\"bf16_vs_fma_peak\":%.3f,\"bf16_vs_fp32\":%.3f,"
      "\"sink\":%g}\n",
      cpu_support.avx512_bf16 ? "true" : "false", cpu_support.amx_bf16 ? "true" : "false",
      cpu::Bf16MatmulUsesDnnl() ? "dnnl_bf16" : "rounded_sgemm", static_cast<long long>(s),
      static_cast<long long>(s), static_cast<long long>(s), fp32, bf16, kernel, peak,
      bf16 / peak, bf16 / fp32, static_cast<double>(sink));
  return 0;
}

// The llama example's plan on one device in `precision`.
absl::StatusOr<proto::Plan> LlamaPlan(const examples::LlamaConfig& config, Precision precision) {
  OF_ASSIGN_OR_RETURN(const examples::ParallelLayout layout, examples::ParallelLayout::Create(examples::ParallelFlags{}));
  OF_ASSIGN_OR_RETURN(const proto::Job job, examples::BuildLlama(config, layout));
  CompileOptions options;
  options.cluster = layout.cluster();
  options.precision = precision;
  return Compile(job, options);
}

// Median step (ms) of the llama trained in `precision`, after 3 warm-up iterations.
absl::StatusOr<double> LlamaStepMs(const examples::LlamaConfig& config, Precision precision) {
  OF_ASSIGN_OR_RETURN(const proto::Plan plan, LlamaPlan(config, precision));
  actors::TrainOptions train;
  train.node = -1;
  train.iterations = absl::GetFlag(FLAGS_iterations);
  OF_ASSIGN_OR_RETURN(const actors::TrainResult result, actors::TrainPlan(plan, train));
  std::vector<double> steps;
  for (size_t i = 3; i < result.iterations.size(); ++i) steps.push_back(result.iterations[i].step_ms);
  if (steps.empty()) return absl::InvalidArgumentError("--iterations must be at least 4");
  std::sort(steps.begin(), steps.end());
  return steps[steps.size() / 2];
}

int StepBench() {
  examples::LlamaConfig config;
  config.hidden = absl::GetFlag(FLAGS_hidden);
  config.layers = absl::GetFlag(FLAGS_layers);
  config.seq = absl::GetFlag(FLAGS_seq);
  config.batch = absl::GetFlag(FLAGS_batch);
  config.heads = absl::GetFlag(FLAGS_heads);
  config.kv_heads = absl::GetFlag(FLAGS_kv_heads);
  config.vocab = absl::GetFlag(FLAGS_vocab);
  // The activation arena (memory block 1) as planned: bf16 keeps the activations that
  // backward reads in bf16 (compiler/passes/activation_storage_pass.h).
  const absl::StatusOr<proto::Plan> fp32_plan = LlamaPlan(config, Precision::kFp32);
  const absl::StatusOr<proto::Plan> bf16_plan = LlamaPlan(config, Precision::kBf16);
  if (!fp32_plan.ok() || !bf16_plan.ok()) {
    std::fprintf(stderr, "%s\n", (!fp32_plan.ok() ? fp32_plan.status() : bf16_plan.status()).ToString().c_str());
    return 1;
  }
  const int64_t fp32_arena = fp32_plan->devices(0).memory_blocks(1).size_bytes();
  const int64_t bf16_arena = bf16_plan->devices(0).memory_blocks(1).size_bytes();
  std::printf(
      "{\"bench\":\"bf16_arena\",\"model\":\"llama\",\"hidden\":%lld,\"layers\":%lld,\"seq\":%lld,\"batch\":%lld,"
      "\"devices\":1,\"fp32_arena_bytes\":%lld,\"bf16_arena_bytes\":%lld,\"ratio\":%.3f}\n",
      static_cast<long long>(config.hidden), static_cast<long long>(config.layers),
      static_cast<long long>(config.seq), static_cast<long long>(config.batch), static_cast<long long>(fp32_arena),
      static_cast<long long>(bf16_arena), static_cast<double>(bf16_arena) / static_cast<double>(fp32_arena));
  std::fflush(stdout);
  const absl::StatusOr<double> fp32 = LlamaStepMs(config, Precision::kFp32);
  const absl::StatusOr<double> bf16 = LlamaStepMs(config, Precision::kBf16);
  if (!fp32.ok() || !bf16.ok()) {
    std::fprintf(stderr, "%s\n", (!fp32.ok() ? fp32.status() : bf16.status()).ToString().c_str());
    return 1;
  }
  std::printf(
      "{\"bench\":\"bf16_step\",\"model\":\"llama\",\"hidden\":%lld,\"layers\":%lld,\"seq\":%lld,\"batch\":%lld,"
      "\"devices\":1,\"fp32_step_ms\":%.1f,\"bf16_step_ms\":%.1f,\"ratio\":%.3f}\n",
      static_cast<long long>(config.hidden), static_cast<long long>(config.layers),
      static_cast<long long>(config.seq), static_cast<long long>(config.batch), *fp32, *bf16, *bf16 / *fp32);
  return 0;
}

}  // namespace
}  // namespace oneflow

int main(int argc, char** argv) {
  oneflow::cpu::UseBestBlasCore();  // First: it may restart the program.
  absl::ParseCommandLine(argc, argv);
  const int matmul = oneflow::MatmulBench();
  std::fflush(stdout);
  return matmul != 0 ? matmul : oneflow::StepBench();
}
