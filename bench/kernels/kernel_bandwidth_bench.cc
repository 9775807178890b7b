// Memory bandwidth of the memory-bound CPU kernels beside single-thread memcpy measured
// in the same run. One JSON line per case:
//   {"bench":"kernel_bandwidth","name":"gelu_grad","kernel":"gelu_grad",
//    "shapes":"[4096, 4096] [4096, 4096] -> [4096, 4096]","elements":16777216,
//    "bytes":201326592,"kernel_ms":..,"kernel_gbps":..,"memcpy_gbps":..,"ratio":..,
//    "ns_per_element":..,"ok":true}
//
//   bazel run -c opt //bench/kernels:kernel_bandwidth_bench
//   bazel run -c opt //bench/kernels:kernel_bandwidth_bench -- --filter=gelu --min_seconds=1
//
// bytes = the bytes the kernel must read and write at least: every input read once and
// every output written once (in-place updates count their state read and written; a
// broadcast operand counts its own size; embedding counts the rows it gathers, not the
// whole table). kernel_gbps = bytes / time. memcpy_gbps copies a buffer of the case's
// largest tensor (16 M floats by default, 64 MiB: larger than the caches) and counts
// its bytes read plus written, so ratio = kernel_gbps / memcpy_gbps compares like with
// like: 1 is a kernel that streams its data as fast as memcpy streams a copy.
// ns_per_element is the time per element of the case's largest tensor.
//
// Both sides run on this thread through the same entry the runtime uses (FindCpuKernel;
// argument checks included). Single calls of the kernel and of memcpy alternate and each
// side keeps its fastest, so a busy neighbour on a shared machine or a change of clock
// speed affects both alike. Buffers are touched once before timing (no page faults).
//
// Note on the ceiling: a store to a line that is not in the cache first reads the line
// (read for ownership), so a kernel reading one tensor and writing one with plain stores
// moves 3 bytes for every 2 counted; streaming (non-temporal) stores do not, and the
// kernels use them for outputs above 3/4 of the L3 cache (kernels/cpu/stream_store.h).
// glibc's memcpy streams only above 3/4 of the L3 size the CPU reports, which under the
// build VM's KVM is 320 MiB (the host's; `ld.so --list-tunables`:
// x86_non_temporal_threshold 240 MiB), so at 64 MiB memcpy copies with `rep movsb`
// through the cache here, and the simplest kernels reach 1.2-1.4 (docs/kernels.md).
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "kernels/cpu/blas_core.h"
#include "kernels/cpu/registry.h"
#include "kernels/kernel.h"

ABSL_FLAG(int64_t, elements, int64_t{1} << 24,
          "elements of the main tensor of each case (a power of 4 keeps the shapes square)");
ABSL_FLAG(double, min_seconds, 0.5, "time spent on each side of each case, at least");
ABSL_FLAG(int, min_calls, 5, "calls of each side per case, at least");
ABSL_FLAG(std::string, filter, "", "run only the cases whose name contains this");

namespace oneflow {
namespace {

using Ints = std::vector<int64_t>;

struct Tensor {
  Shape shape;
  DType dtype = DType::kF32;
  // Values: uniform in [low, high) for floats; ids in [0, limit) for indices.
  float low = -2.0f, high = 2.0f;
  int64_t limit = 0;
};

struct Case {
  std::string name;
  std::string kernel;
  std::vector<Tensor> inputs;
  std::vector<Shape> outputs;  // f32
  AttrMap attrs;
  // Bytes the kernel must read and write; 0: every input and output once (in-place
  // updates: see in_place_written).
  int64_t bytes = 0;
  int in_place_written = 0;  // Inputs the kernel also writes (optimizer state), counted twice.
};

int64_t Bytes(const Shape& shape, DType dtype) { return shape.NumElements() * SizeOf(dtype); }

// The cases: GPT-like shapes of `n` elements (n = 4^k for square shapes: [side, side]).
std::vector<Case> Cases(int64_t n) {
  const DType f = DType::kF32;
  const DType i32 = DType::kI32;
  int64_t side = 1;
  while (side * side < n) side *= 2;
  const int64_t rows = n / side;
  const Shape matrix{rows, side};
  const Shape row{side};
  // Rows of 1024 as the hidden size, the normalizations' and attention's widths.
  const int64_t hidden = std::min<int64_t>(1024, side);
  const Shape tokens{n / hidden, hidden};
  const Shape hidden_row{hidden};
  // Attention scores [heads, seq, seq] and q/k/v in [batch, seq, heads, head_dim].
  const int64_t seq = std::min<int64_t>(1024, side);
  const Shape scores{n / (seq * seq), seq, seq};
  const Shape heads_last{n / (seq * 16 * 64) > 0 ? n / (seq * 16 * 64) : 1, seq, 16, 64};
  const AttrMap adamw = {{"beta1", 0.9},    {"beta2", 0.999},
                         {"epsilon", 1e-8}, {"weight_decay", 0.01},
                         {"base_lr", 3e-4}, {"lr_schedule", std::string("constant")}};
  const AttrMap sgd = {
      {"momentum", 0.9}, {"lr_schedule", std::string("constant")}, {"base_lr", 0.1}};
  const Tensor x{matrix};
  const Tensor positive{matrix, f, 0.5f, 2.0f};
  std::vector<Case> cases = {
      {"add", "add", {x, x}, {matrix}, {}},
      {"add_row_broadcast", "add", {x, {row}}, {matrix}, {}},
      {"sub", "sub", {x, x}, {matrix}, {}},
      {"mul", "mul", {x, x}, {matrix}, {}},
      {"mul_column_broadcast", "mul", {x, {Shape{rows, 1}}}, {matrix}, {}},
      {"div", "div", {x, positive}, {matrix}, {}},
      {"bias_add", "bias_add", {{tokens}, {hidden_row}}, {tokens}, {}},
      {"relu", "relu", {x}, {matrix}, {}},
      {"gelu", "gelu", {x}, {matrix}, {}},
      {"scalar_mul", "scalar_mul", {x}, {matrix}, {{"scalar", 0.5}}},
      {"scalar_add", "scalar_add", {x}, {matrix}, {{"scalar", 0.5}}},
      {"ones_like", "ones_like", {x}, {matrix}, {}, Bytes(matrix, f)},
      {"relu_grad", "relu_grad", {x, x}, {matrix}, {}},
      {"gelu_grad", "gelu_grad", {x, x}, {matrix}, {}},
      {"dropout", "dropout", {x}, {matrix}, {{"rate", 0.1}, {"seed", int64_t{7}}}},
      {"dropout_grad", "dropout_grad", {x}, {matrix}, {{"rate", 0.1}, {"seed", int64_t{7}}}},
      {"causal_mask", "causal_mask", {{scores}}, {scores}, {{"fill", -1e9}}},
      {"softmax", "softmax", {{tokens}}, {tokens}, {}},
      {"log_softmax", "log_softmax", {{tokens}}, {tokens}, {}},
      {"softmax_grad", "softmax_grad", {{tokens}, {tokens, f, 0.0f, 0.01f}}, {tokens}, {}},
      {"log_softmax_grad",
       "log_softmax_grad",
       {{tokens}, {tokens, f, -12.0f, -2.0f}},
       {tokens},
       {}},
      {"layer_norm",
       "layer_norm",
       {{tokens}, {hidden_row}, {hidden_row}},
       {tokens},
       {{"epsilon", 1e-5}}},
      {"layer_norm_grad",
       "layer_norm_grad",
       {{tokens}, {hidden_row}, {tokens}},
       {tokens, hidden_row, hidden_row},
       {{"epsilon", 1e-5}}},
      {"sparse_softmax_cross_entropy",
       "sparse_softmax_cross_entropy",
       {x, {Shape{rows}, i32, 0, 0, side}},
       {Shape{rows}},
       {}},
      {"sparse_softmax_cross_entropy_grad",
       "sparse_softmax_cross_entropy_grad",
       {x, {Shape{rows}, i32, 0, 0, side}, {Shape{rows}}},
       {matrix},
       {}},
      {"reshape", "reshape", {x}, {Shape{rows * side}}, {{"shape", Ints{rows * side}}}},
      {"identity", "identity", {x}, {matrix}, {}},
      {"transpose_2d", "transpose", {x}, {Shape{side, rows}}, {{"perm", Ints{1, 0}}}},
      {"transpose_heads",
       "transpose",
       {{heads_last}},
       {Shape{heads_last.dim(0), 16, seq, 64}},
       {{"perm", Ints{0, 2, 1, 3}}}},
      {"slice_half",
       "slice",
       {x},
       {Shape{rows, side / 2}},
       {{"begin", Ints{0, side / 4}}, {"end", Ints{rows, side / 4 + side / 2}}}},
      {"slice_grad_half",
       "slice_grad",
       {{Shape{rows, side / 2}}, x},
       {matrix},
       {{"begin", Ints{0, side / 4}}, {"end", Ints{rows, side / 4 + side / 2}}},
       Bytes(Shape{rows, side / 2}, f) + Bytes(matrix, f)},
      {"concat_last_axis",
       "concat",
       {{Shape{rows, side / 2}}, {Shape{rows, side / 2}}},
       {matrix},
       {{"axis", int64_t{1}}}},
      {"reduce_sum_rows", "reduce_sum", {x}, {Shape{rows}}, {{"axes", Ints{1}}}},
      {"reduce_sum_columns", "reduce_sum", {x}, {row}, {{"axes", Ints{0}}}},
      {"reduce_mean_all", "reduce_mean", {x}, {Shape{}}, {{"axes", Ints{}}}},
      {"reduce_sum_like_bias",
       "reduce_sum_like",
       {{tokens}, {hidden_row}},
       {hidden_row},
       {},
       Bytes(tokens, f) + Bytes(hidden_row, f)},
      {"broadcast_like_rows",
       "broadcast_like",
       {{hidden_row}, {tokens}},
       {tokens},
       {{"axes", Ints{0}}},
       Bytes(hidden_row, f) + Bytes(tokens, f)},
      {"embedding",
       "embedding",
       {{Shape{n / hidden / 2, hidden}}, {Shape{n / hidden}, i32, 0, 0, n / hidden / 2}},
       {tokens},
       {},
       Bytes(Shape{n / hidden}, i32) + 2 * Bytes(tokens, f)},
      {"embedding_grad",
       "embedding_grad",
       {{Shape{n / hidden}, i32, 0, 0, n / hidden / 2}, {tokens}},
       {Shape{n / hidden / 2, hidden}},
       {{"vocab", n / hidden / 2}},
       // ids and dy read, dtable zeroed and its rows read and written once per id.
       Bytes(Shape{n / hidden}, i32) + Bytes(tokens, f) + Bytes(Shape{n / hidden / 2, hidden}, f) +
           2 * Bytes(tokens, f)},
      {"sgd_update", "sgd_update", {x, x, x}, {}, sgd, 0, 2},
      {"adamw_update", "adamw_update", {x, x, x, positive}, {}, adamw, 0, 3},
  };
  return cases;
}

// A fast deterministic fill (a 64-bit LCG's high bits): 16 M values per buffer, many
// buffers, where mt19937 would dominate the run.
void Fill(const Tensor& tensor, void* data, uint64_t seed) {
  uint64_t state = seed * 0x9E3779B97F4A7C15ull + 1;
  const int64_t n = tensor.shape.NumElements();
  for (int64_t i = 0; i < n; ++i) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    const uint32_t bits = static_cast<uint32_t>(state >> 40);  // 24 bits
    if (tensor.dtype == DType::kF32) {
      static_cast<float*>(data)[i] =
          tensor.low + (tensor.high - tensor.low) * (static_cast<float>(bits) * 0x1p-24f);
    } else if (tensor.dtype == DType::kI32) {
      static_cast<int32_t*>(data)[i] = static_cast<int32_t>(bits % tensor.limit);
    } else {
      static_cast<int64_t*>(data)[i] = static_cast<int64_t>(bits % tensor.limit);
    }
  }
}

KernelArgument Argument(std::vector<char>* buffer, const Shape& shape, DType dtype) {
  return {buffer->data(), dtype, shape, {shape, TensorSlice::Whole(shape)}};
}

template <typename Fn>
double Seconds(Fn&& fn) {
  const auto start = std::chrono::steady_clock::now();
  fn();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

std::string ShapesText(const Case& c) {
  std::vector<std::string> in, out;
  for (const Tensor& t : c.inputs) in.push_back(t.shape.ToString());
  for (const Shape& s : c.outputs) out.push_back(s.ToString());
  return absl::StrCat(absl::StrJoin(in, " "), " -> ",
                      out.empty() ? "(in place)" : absl::StrJoin(out, " "));
}

// Runs one case; false if the kernel returned an error.
bool RunCase(const Case& c) {
  const absl::StatusOr<KernelFunction> kernel = FindCpuKernel(c.kernel);
  if (!kernel.ok()) {
    std::fprintf(stderr, "%s\n", kernel.status().ToString().c_str());
    return false;
  }
  std::vector<std::vector<char>> buffers;
  buffers.reserve(c.inputs.size() + c.outputs.size());
  KernelContext context;
  context.attrs = &c.attrs;
  context.step = 10;
  int64_t bytes = 0, largest = 0;
  for (size_t k = 0; k < c.inputs.size(); ++k) {
    const Tensor& t = c.inputs[k];
    buffers.emplace_back(Bytes(t.shape, t.dtype));
    Fill(t, buffers.back().data(), k + 1);
    context.inputs.push_back(Argument(&buffers.back(), t.shape, t.dtype));
    bytes += Bytes(t.shape, t.dtype);
    largest = std::max(largest, Bytes(t.shape, t.dtype));
  }
  const DType out_dtype = DType::kF32;  // Every case moves floats.
  for (const Shape& shape : c.outputs) {
    buffers.emplace_back(Bytes(shape, out_dtype));
    std::memset(buffers.back().data(), 0, buffers.back().size());
    context.outputs.push_back(Argument(&buffers.back(), shape, out_dtype));
    bytes += Bytes(shape, out_dtype);
    largest = std::max(largest, Bytes(shape, out_dtype));
  }
  for (int k = 0; k < c.in_place_written; ++k) bytes += Bytes(c.inputs[k].shape, c.inputs[k].dtype);
  if (c.bytes > 0) bytes = c.bytes;

  std::vector<char> copy_from(largest, 1), copy_to(largest, 0);
  bool ok = true;
  auto run_kernel = [&] {
    const absl::Status status = (*kernel)(context);
    if (!status.ok() && ok)
      std::fprintf(stderr, "%s: %s\n", c.name.c_str(), status.ToString().c_str());
    ok = ok && status.ok();
  };
  auto run_memcpy = [&] { std::memcpy(copy_to.data(), copy_from.data(), copy_from.size()); };
  run_kernel();
  run_memcpy();
  double kernel_seconds = 1e30, memcpy_seconds = 1e30, spent = 0;
  for (int calls = 0;
       calls < absl::GetFlag(FLAGS_min_calls) || spent < 2 * absl::GetFlag(FLAGS_min_seconds);
       ++calls) {
    const double kernel_call = Seconds(run_kernel);
    const double memcpy_call = Seconds(run_memcpy);
    kernel_seconds = std::min(kernel_seconds, kernel_call);
    memcpy_seconds = std::min(memcpy_seconds, memcpy_call);
    spent += kernel_call + memcpy_call;
  }
  // The largest tensor's element count: ns_per_element is per element of that tensor.
  int64_t elements = 0;
  for (const Tensor& t : c.inputs) elements = std::max(elements, t.shape.NumElements());
  for (const Shape& shape : c.outputs) elements = std::max(elements, shape.NumElements());
  const double kernel_gbps = bytes / kernel_seconds * 1e-9;
  const double memcpy_gbps = 2.0 * largest / memcpy_seconds * 1e-9;
  std::printf(
      "{\"bench\":\"kernel_bandwidth\",\"name\":\"%s\",\"kernel\":\"%s\",\"shapes\":\"%s\","
      "\"elements\":%lld,\"bytes\":%lld,\"kernel_ms\":%.3f,\"kernel_gbps\":%.2f,"
      "\"memcpy_gbps\":%.2f,\"ratio\":%.3f,\"ns_per_element\":%.3f,\"ok\":%s}\n",
      c.name.c_str(), c.kernel.c_str(), ShapesText(c).c_str(), static_cast<long long>(elements),
      static_cast<long long>(bytes), kernel_seconds * 1e3, kernel_gbps, memcpy_gbps,
      kernel_gbps / memcpy_gbps, kernel_seconds * 1e9 / std::max<int64_t>(elements, 1),
      ok ? "true" : "false");
  std::fflush(stdout);
  return ok;
}

int Run() {
  const std::string filter = absl::GetFlag(FLAGS_filter);
  bool ok = true;
  for (const Case& c : Cases(absl::GetFlag(FLAGS_elements))) {
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
