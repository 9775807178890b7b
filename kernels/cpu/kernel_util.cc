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

const char* KindName(ArgKind kind) {
  switch (kind) {
    case ArgKind::kFloat:
      return "f32";
    case ArgKind::kIndex:
      return "i32 or i64 indices";
    case ArgKind::kAny:
      return "f32, i32 or i64";
  }
  return "";
}

// `any_dtype`: the dtype every kAny argument must share (the first one's).
absl::Status CheckArgument(absl::string_view kernel, absl::string_view role, const ArgSpec& spec,
                           const KernelArgument& argument, const DType* any_dtype) {
  const bool index = argument.dtype == DType::kI32 || argument.dtype == DType::kI64;
  const bool ok = spec.kind == ArgKind::kFloat   ? argument.dtype == DType::kF32
                  : spec.kind == ArgKind::kIndex ? index
                                                 : index || argument.dtype == DType::kF32;
  if (!ok) {
    return KernelError(kernel, role, " '", spec.name, "' must be ", KindName(spec.kind), ", got ",
                       DTypeName(argument.dtype), argument.shape.ToString());
  }
  if (spec.kind == ArgKind::kAny && any_dtype != nullptr && argument.dtype != *any_dtype) {
    return KernelError(kernel, role, " '", spec.name, "' is ", DTypeName(argument.dtype),
                       argument.shape.ToString(),
                       " but must have the dtype of the other arguments, ", DTypeName(*any_dtype));
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
  const DType* any_dtype = nullptr;
  size_t i = 0;
  for (const ArgSpec& spec : inputs) {
    const KernelArgument& argument = context.inputs[i++];
    absl::Status status = CheckArgument(kernel, "input", spec, argument, any_dtype);
    if (!status.ok()) return status;
    if (spec.kind == ArgKind::kAny && any_dtype == nullptr) any_dtype = &argument.dtype;
  }
  i = 0;
  for (const ArgSpec& spec : outputs) {
    const KernelArgument& argument = context.outputs[i++];
    absl::Status status = CheckArgument(kernel, "output", spec, argument, any_dtype);
    if (!status.ok()) return status;
    if (spec.kind == ArgKind::kAny && any_dtype == nullptr) any_dtype = &argument.dtype;
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
