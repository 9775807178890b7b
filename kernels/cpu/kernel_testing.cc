#include "kernels/cpu/kernel_testing.h"

#include <algorithm>
#include <limits>

#include "absl/strings/str_cat.h"
#include "kernels/cpu/registry.h"
#include "kernels/kernel.h"
#include "oneflow_core/ops/registry.h"
#include "oneflow_core/status.h"

namespace oneflow {
namespace {

// Host storage of one kernel argument in its dtype.
struct Buffer {
  DType dtype = DType::kF32;
  std::vector<float> f32;
  std::vector<int32_t> i32;
  std::vector<int64_t> i64;
  std::vector<BFloat16> bf16;
  std::vector<Float16> f16;

  static Buffer From(const Dense& dense) {
    Buffer buffer{dense.dtype};
    for (double v : dense.values) {
      switch (dense.dtype) {
        case DType::kI32:
          buffer.i32.push_back(static_cast<int32_t>(v));
          break;
        case DType::kI64:
          buffer.i64.push_back(static_cast<int64_t>(v));
          break;
        case DType::kBF16:
          buffer.bf16.push_back(ToBFloat16(static_cast<float>(v)));
          break;
        case DType::kF16:
          buffer.f16.push_back(ToFloat16(static_cast<float>(v)));
          break;
        default:
          buffer.f32.push_back(static_cast<float>(v));
      }
    }
    return buffer;
  }

  void* data() {
    if (dtype == DType::kI32) return i32.data();
    if (dtype == DType::kI64) return i64.data();
    if (dtype == DType::kBF16) return bf16.data();
    if (dtype == DType::kF16) return f16.data();
    return f32.data();
  }

  Dense ToDense(const Shape& shape) const {
    Dense dense = Dense::Zeros(shape, dtype);
    for (size_t i = 0; i < dense.values.size(); ++i) {
      dense.values[i] = dtype == DType::kI32    ? i32[i]
                        : dtype == DType::kI64  ? static_cast<double>(i64[i])
                        : dtype == DType::kBF16 ? ToFloat(bf16[i])
                        : dtype == DType::kF16  ? ToFloat(f16[i])
                                                : f32[i];
    }
    return dense;
  }
};

}  // namespace

Dense RoundToFloat(Dense dense) {
  if (IsFloating(dense.dtype)) {
    for (double& v : dense.values) {
      const float value = static_cast<float>(v);
      v = dense.dtype == DType::kBF16 ? ToFloat(ToBFloat16(value))
          : dense.dtype == DType::kF16 ? ToFloat(ToFloat16(value))
                                       : value;
    }
  }
  return dense;
}

absl::StatusOr<std::vector<Dense>> RunCpuKernel(const std::string& op_type,
                                                const std::vector<Dense>& inputs,
                                                const AttrMap& attrs,
                                                const ReferenceContext& context) {
  OF_ASSIGN_OR_RETURN(const OpDefinition* op, OpRegistry::Get().Find(op_type));
  OF_ASSIGN_OR_RETURN(const KernelFunction kernel, FindCpuKernel(op->kernel));
  if (inputs.size() != op->inputs.size() ||
      (!context.inputs.empty() && context.inputs.size() != inputs.size())) {
    return absl::InvalidArgumentError(absl::StrCat("op '", op_type, "' takes ", op->inputs.size(),
                                                   " inputs, got ", inputs.size(), " (and ",
                                                   context.inputs.size(), " layouts)"));
  }
  KernelContext kernel_context;
  kernel_context.attrs = &attrs;
  kernel_context.step = context.step;
  std::vector<Buffer> buffers;
  buffers.reserve(inputs.size() + op->outputs.size());
  std::vector<TensorType> logical_types;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const TensorLayout layout =
        context.inputs.empty() ? TensorLayout{inputs[i].shape, TensorSlice::Whole(inputs[i].shape)}
                               : context.inputs.at(i);
    logical_types.push_back({layout.logical, inputs[i].dtype});
    buffers.push_back(Buffer::From(inputs[i]));
    kernel_context.inputs.push_back(
        {buffers.back().data(), inputs[i].dtype, inputs[i].shape, layout});
  }
  OF_ASSIGN_OR_RETURN(const std::vector<TensorType> output_types, op->infer(logical_types, attrs));
  if (!context.outputs.empty() && context.outputs.size() != output_types.size()) {
    return absl::InvalidArgumentError(absl::StrCat("op '", op_type, "' has ", output_types.size(),
                                                   " outputs, got ", context.outputs.size(),
                                                   " output layouts"));
  }
  for (size_t i = 0; i < output_types.size(); ++i) {
    const TensorLayout layout =
        context.outputs.empty()
            ? TensorLayout{output_types[i].shape, TensorSlice::Whole(output_types[i].shape)}
            : context.outputs.at(i);
    Dense sentinel = Dense::Zeros(layout.slice.shape(), output_types[i].dtype);
    if (IsFloating(sentinel.dtype)) {
      std::fill(sentinel.values.begin(), sentinel.values.end(),
                std::numeric_limits<double>::quiet_NaN());
    }
    buffers.push_back(Buffer::From(sentinel));
    kernel_context.outputs.push_back(
        {buffers.back().data(), output_types[i].dtype, layout.slice.shape(), layout});
  }
  // The scratch the op declares, as memory planning reserves it for a plan (filled with
  // NaN: a kernel that read it before writing would show in the comparison).
  std::vector<float> workspace;
  if (op->workspace_bytes) {
    std::vector<TensorType> local_types;
    for (const Dense& input : inputs) local_types.push_back({input.shape, input.dtype});
    const int64_t bytes = op->workspace_bytes(local_types, attrs);
    workspace.assign(static_cast<size_t>((bytes + 3) / 4), std::numeric_limits<float>::quiet_NaN());
    kernel_context.workspace = workspace.data();
    kernel_context.workspace_bytes = bytes;
  }
  OF_RETURN_IF_ERROR(kernel(kernel_context));
  std::vector<Dense> results;
  for (size_t i = 0; i < output_types.size(); ++i) {
    results.push_back(buffers[inputs.size() + i].ToDense(kernel_context.outputs[i].shape));
  }
  for (const std::string& updated : op->updated_inputs) {
    const size_t k = std::find(op->inputs.begin(), op->inputs.end(), updated) - op->inputs.begin();
    results.push_back(buffers.at(k).ToDense(inputs[k].shape));
  }
  return results;
}

absl::StatusOr<std::map<std::string, Dense>> EvaluateGraphWithCpuKernels(
    const Graph& graph, const std::map<std::string, Dense>& feeds, int64_t step) {
  OF_RETURN_IF_ERROR(graph.status());
  std::map<std::string, Dense> values;
  for (const auto& [name, value] : feeds) values.emplace(name, RoundToFloat(value));
  ReferenceContext context;
  context.step = step;
  for (const Graph::OpRecord& op : graph.ops()) {
    std::vector<Dense> inputs;
    for (const auto& [argument, id] : op.inputs) {
      const Graph::TensorRecord& tensor = graph.tensor(id);
      auto it = values.find(tensor.name);
      if (it == values.end()) {
        return absl::InvalidArgumentError(absl::StrCat("op '", op.name, "' reads tensor '",
                                                       tensor.name,
                                                       "', which is neither fed nor computed"));
      }
      inputs.push_back(it->second);
      inputs.back().dtype = tensor.type.dtype;
    }
    absl::StatusOr<std::vector<Dense>> outputs = RunCpuKernel(op.type, inputs, op.attrs, context);
    if (!outputs.ok()) {
      return absl::Status(outputs.status().code(),
                          absl::StrCat("op '", op.name, "': ", outputs.status().message()));
    }
    OF_ASSIGN_OR_RETURN(const OpDefinition* definition, OpRegistry::Get().Find(op.type));
    // Outputs by name, or for updates the updated inputs (RunCpuKernel's order).
    std::vector<int64_t> result_ids;
    for (const auto& [argument, id] : op.outputs) result_ids.push_back(id);
    for (const std::string& updated : definition->updated_inputs) {
      for (const auto& [argument, id] : op.inputs) {
        if (argument == updated) result_ids.push_back(id);
      }
    }
    for (size_t i = 0; i < result_ids.size() && i < outputs->size(); ++i) {
      values[graph.tensor(result_ids[i]).name] = std::move((*outputs)[i]);
    }
  }
  return values;
}

}  // namespace oneflow
