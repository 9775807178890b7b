// Argument checks and small helpers shared by the CPU kernels. Every check returns
// INVALID_ARGUMENT whose message starts with the kernel's name ("kernel 'matmul': ...")
// and names the argument and what would be valid; the runtime adds actor and device.
// Kernels check what they index by before touching memory, so a bad plan or a bad id
// fails with a message instead of reading out of bounds.
#ifndef KERNELS_CPU_KERNEL_UTIL_H_
#define KERNELS_CPU_KERNEL_UTIL_H_

#include <cstdint>
#include <initializer_list>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "kernels/kernel.h"

namespace oneflow {
namespace cpu {

// What an argument must hold: f32 values; i32/i64 indices (ids, labels); or any of the
// three, for kernels that only move elements (reshape, transpose, slice, concat, ...).
enum class ArgKind { kFloat, kIndex, kAny };

struct ArgSpec {
  const char* name;  // As in OpDefinition::inputs / outputs.
  ArgKind kind = ArgKind::kFloat;
};

// INVALID_ARGUMENT "kernel '<kernel>': <pieces...>".
template <typename... Pieces>
absl::Status KernelError(absl::string_view kernel, const Pieces&... pieces) {
  return absl::InvalidArgumentError(absl::StrCat("kernel '", kernel, "': ", pieces...));
}

// The numbers of inputs and outputs, each argument's dtype, and a non-null buffer for
// every non-empty argument. kAny arguments must all have the dtype of the first one.
absl::Status CheckArguments(absl::string_view kernel, const KernelContext& context,
                            std::initializer_list<ArgSpec> inputs,
                            std::initializer_list<ArgSpec> outputs);

// "kernel 'bias_add': input 'bias' has shape [5] but must be [7] (...why)".
absl::Status CheckShape(absl::string_view kernel, absl::string_view arg, const Shape& actual,
                        const Shape& expected, absl::string_view why = "");

// For kernels that read the layout (positions in the logical tensor): the slice has the
// argument's physical shape and lies inside the logical shape.
absl::Status CheckLayout(absl::string_view kernel, absl::string_view arg,
                         const KernelArgument& argument);

// The op's attributes, or an empty map when the context carries none.
const AttrMap& AttrsOf(const KernelContext& context);

// Calls fn(pointer) with the elements of an index argument as const int32_t* or
// const int64_t*, whichever its dtype is (CheckArguments has ruled out others).
template <typename Fn>
auto WithIndices(const KernelArgument& indices, Fn&& fn) {
  if (indices.dtype == DType::kI64) return fn(indices.As<const int64_t>());
  return fn(indices.As<const int32_t>());
}

// The size of the last axis (1 for a scalar), and the number of rows of that length.
inline int64_t LastDim(const Shape& shape) {
  return shape.rank() == 0 ? 1 : shape.dim(shape.rank() - 1);
}
inline int64_t Rows(const Shape& shape) {
  const int64_t width = LastDim(shape);
  return width == 0 ? 0 : shape.NumElements() / width;
}

}  // namespace cpu
}  // namespace oneflow

#endif  // KERNELS_CPU_KERNEL_UTIL_H_
