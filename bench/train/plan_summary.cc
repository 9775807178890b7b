// plan_summary PLAN: what vs_pytorch.py needs to check that a PyTorch model is the same
// model as a plan, and which OpenBLAS kernels our binaries run, as one JSON line:
//
//   {"plan": "/tmp/mlp.plan", "devices": 1, "batch": 256, "trainable_variables": 8,
//    "params": 3159050, "param_sizes": [10, 1024, ...], "variable_shapes":
//    {"layer0/weight": [1024, 1024], ...}, "ops": 39, "op_types": {"matmul": 11, ...},
//    "forward_op_types": {"matmul": 4, "relu": 3, ...}, "matmul_gflop_per_iter": 4.3196,
//    "openblas_core": "Cooperlake"}
//
// params counts trainable variables only (not optimizer state); param_sizes are their
// element counts, sorted, so a framework that stores a weight transposed compares equal.
// ops are the plan's logical ops after autograd, the optimizer pass and epilogue fusion;
// op_types and forward_op_types count a fused op as the ops it was made of; forward_op_types
// counts those of the forward pass (up to the loss), which vs_pytorch.py compares with
// the nodes of PyTorch's autograd graph. matmul_gflop_per_iter is the work of one
// iteration's products (MatMulGflopPerIteration), for the GEMM floor vs_pytorch.py prints.
//
// It settles the OpenBLAS core first in main() as `oneflow run` does (UseBestBlasCore,
// kernels/cpu/blas_core.h), so openblas_core is the core `oneflow run` runs on this
// machine with this environment.
#include <algorithm>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "kernels/cpu/blas_core.h"
#include "proto/plan.pb.h"
#include "plan/plan_io.h"

// Debian's OpenBLAS; declared here, as in kernels/cpu/blas_core.cc, to need no BLAS header.
extern "C" char* openblas_get_corename(void);

namespace oneflow {
namespace {

// Plan names are identifiers and paths; only quotes and backslashes need escaping.
std::string Quoted(const std::string& text) {
  std::string out = "\"";
  for (char c : text) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

// Floating-point operations of one iteration's products (matmul and fused_matmul_bias,
// forward and backward, whole logical shapes): 2 * m * n * k per product, every
// micro-batch counted. Ops or tensors it cannot read count nothing.
double MatMulGflopPerIteration(const proto::Job& job,
                               const std::map<std::string, const proto::TensorDef*>& tensors) {
  double flops = 0;
  for (const proto::OpDef& op : job.ops()) {
    if (op.type() != "matmul" && op.type() != "fused_matmul_bias") continue;
    const auto a = op.inputs().find("a");
    const auto out = op.outputs().find("out");
    if (a == op.inputs().end() || out == op.outputs().end()) continue;
    const auto a_def = tensors.find(a->second);
    const auto out_def = tensors.find(out->second);
    if (a_def == tensors.end() || out_def == tensors.end() || a_def->second->shape_size() < 2) continue;
    const auto attr = op.attrs().find("transpose_a");
    const bool transpose_a = attr != op.attrs().end() && attr->second.b();
    const auto& a_shape = a_def->second->shape();
    const int64_t k = a_shape[a_shape.size() - (transpose_a ? 2 : 1)];
    double out_elements = 1;
    for (int64_t d : out_def->second->shape()) out_elements *= static_cast<double>(d);
    flops += 2 * out_elements * static_cast<double>(k);
  }
  return flops * static_cast<double>(std::max<int64_t>(1, job.micro_batches())) / 1e9;
}

int Main(const std::string& path) {
  absl::StatusOr<proto::Plan> plan = ReadPlanFile(path);
  if (!plan.ok()) {
    std::fprintf(stderr, "plan_summary: %s\n", std::string(plan.status().message()).c_str());
    return 1;
  }
  const proto::Job& job = plan->job();
  std::map<std::string, const proto::TensorDef*> tensors;
  for (const proto::TensorDef& tensor : job.tensors()) tensors[tensor.name()] = &tensor;
  int64_t params = 0;
  std::vector<int64_t> sizes;
  std::vector<std::string> shapes;
  for (const proto::VariableDef& variable : job.variables()) {
    if (!variable.trainable()) continue;
    const auto it = tensors.find(variable.tensor());
    if (it == tensors.end()) {
      std::fprintf(stderr, "plan_summary: variable '%s' has no tensor in the plan\n", variable.tensor().c_str());
      return 1;
    }
    int64_t n = 1;
    for (int64_t d : it->second->shape()) n *= d;
    params += n;
    sizes.push_back(n);
    shapes.push_back(absl::StrCat(Quoted(variable.tensor()), ": [", absl::StrJoin(it->second->shape(), ", "), "]"));
  }
  std::sort(sizes.begin(), sizes.end());
  // The compiler's autograd pass appends the backward and update ops after the forward
  // ones, so the forward pass is every op up to the one producing the loss.
  std::map<std::string, int> op_types, forward_op_types;
  bool forward = true;
  for (const proto::OpDef& op : job.ops()) {
    // A fused_matmul_bias (compiler/passes/epilogue_fusion_pass.h) counts as the ops it
    // was made of, so the counts describe the model as written whether or not it fused.
    std::vector<std::string> types = {op.type()};
    if (op.type() == "fused_matmul_bias") {
      types = {"matmul", "bias_add"};
      auto relu = op.attrs().find("relu");
      if (relu != op.attrs().end() && relu->second.b()) types.push_back("relu");
    }
    for (const std::string& type : types) {
      ++op_types[type];
      if (forward) ++forward_op_types[type];
    }
    for (const auto& [name, tensor] : op.outputs()) {
      if (tensor == job.loss()) forward = false;
    }
  }
  auto counts = [](const std::map<std::string, int>& types) {
    std::vector<std::string> out;
    for (const auto& [type, count] : types) out.push_back(absl::StrCat(Quoted(type), ": ", count));
    return absl::StrJoin(out, ", ");
  };
  std::printf(
      "{\"plan\": %s, \"devices\": %d, \"batch\": %lld, \"trainable_variables\": %zu, \"params\": %lld, "
      "\"param_sizes\": [%s], \"variable_shapes\": {%s}, \"ops\": %d, \"op_types\": {%s}, "
      "\"forward_op_types\": {%s}, \"matmul_gflop_per_iter\": %.4f, \"openblas_core\": %s}\n",
      Quoted(path).c_str(), plan->devices_size(), static_cast<long long>(job.batch_size()), sizes.size(),
      static_cast<long long>(params), absl::StrJoin(sizes, ", ").c_str(), absl::StrJoin(shapes, ", ").c_str(),
      job.ops_size(), counts(op_types).c_str(), counts(forward_op_types).c_str(), MatMulGflopPerIteration(job, tensors),
      Quoted(openblas_get_corename()).c_str());
  return 0;
}

}  // namespace
}  // namespace oneflow

int main(int argc, char** argv) {
  oneflow::cpu::UseBestBlasCore();  // First: it may restart the program.
  if (argc != 2) {
    std::fprintf(stderr, "usage: plan_summary PLAN\n");
    return 2;
  }
  return oneflow::Main(argv[1]);
}
