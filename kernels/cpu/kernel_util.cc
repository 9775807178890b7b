#include "kernels/cpu/kernel_util.h"

#include <vector>

#include "absl/strings/str_join.h"

namespace oneflow {
namespace cpu {
namespace {

std::string Names(std::initializer_list<ArgSpec> specs) {
  return absl::StrJoin(
      specs, ", ", [](std::string* out, const ArgSpec& spec) { absl::StrAppend(out, spec.name); });
}

absl::Status CheckArgument(absl::string_view kernel, absl::string_view role, const ArgSpec& spec,
                           const KernelArgument& argument) {
  const bool ok = spec.kind == ArgKind::kFloat
                      ? argument.dtype == DType::kF32
                      : argument.dtype == DType::kI32 || argument.dtype == DType::kI64;
  if (!ok) {
    return KernelError(kernel, role, " '", spec.name, "' must be ",
                       spec.kind == ArgKind::kFloat ? "f32" : "i32 or i64 indices", ", got ",
                       DTypeName(argument.dtype), argument.shape.ToString());
  }
  if (argument.data == nullptr && argument.NumElements() > 0) {
    return KernelError(kernel, role, " '", spec.name, "' ", argument.shape.ToString(),
                       " has no buffer");
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status CheckArguments(absl::string_view kernel, const KernelContext& context,
                            std::initializer_list<ArgSpec> inputs,
                            std::initializer_list<ArgSpec> outputs) {
  if (context.inputs.size() != inputs.size() || context.outputs.size() != outputs.size()) {
    return KernelError(kernel, "takes inputs (", Names(inputs), ") and outputs (", Names(outputs),
                       "), got ", context.inputs.size(), " inputs and ", context.outputs.size(),
                       " outputs");
  }
  size_t i = 0;
  for (const ArgSpec& spec : inputs) {
    absl::Status status = CheckArgument(kernel, "input", spec, context.inputs[i++]);
    if (!status.ok()) return status;
  }
  i = 0;
  for (const ArgSpec& spec : outputs) {
    absl::Status status = CheckArgument(kernel, "output", spec, context.outputs[i++]);
    if (!status.ok()) return status;
  }
  return absl::OkStatus();
}

absl::Status CheckShape(absl::string_view kernel, absl::string_view arg, const Shape& actual,
                        const Shape& expected, absl::string_view why) {
  if (actual == expected) return absl::OkStatus();
  return KernelError(kernel, "'", arg, "' has shape ", actual.ToString(), " but must be ",
                     expected.ToString(), why.empty() ? "" : " (", why, why.empty() ? "" : ")");
}

absl::Status CheckLayout(absl::string_view kernel, absl::string_view arg,
                         const KernelArgument& argument) {
  const TensorLayout& layout = argument.layout;
  bool inside = layout.slice.rank() == layout.logical.rank();
  for (int64_t axis = 0; inside && axis < layout.slice.rank(); ++axis) {
    const Range& range = layout.slice.range(axis);
    inside = range.begin >= 0 && range.begin <= range.end && range.end <= layout.logical.dim(axis);
  }
  if (inside && layout.slice.shape() == argument.shape) return absl::OkStatus();
  return KernelError(kernel, "'", arg, "' of shape ", argument.shape.ToString(),
                     " has layout slice ", layout.slice.ToString(), " of logical shape ",
                     layout.logical.ToString(),
                     "; the slice must lie inside the logical shape and have the argument's shape");
}

const AttrMap& AttrsOf(const KernelContext& context) {
  static const AttrMap* const kEmpty = new AttrMap();
  return context.attrs != nullptr ? *context.attrs : *kEmpty;
}

}  // namespace cpu
}  // namespace oneflow
