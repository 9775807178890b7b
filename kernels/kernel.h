// The kernel interface: what the runtime hands a kernel for one act of one physical op.
//
// A kernel computes one device's part of a logical op: its inputs and outputs are this
// device's slices (TensorLayout says where each sits in its logical tensor; B and P
// tensors hold the whole shape). Kernels whose values depend on logical positions use
// the layouts: dropout's mask is a function of (seed, step, logical index), a
// vocabulary-parallel embedding offsets ids by its slice's first row, reduce_mean
// divides by the logical count, causal_mask compares logical rows and columns.
// The semantics are exactly those of the reference (oneflow_core/ops/reference), which
// the kernels' conformance tests compare against.
//
// Optimizer updates have no outputs: they update their `updated_inputs` (param and
// state) in place.
#ifndef KERNELS_KERNEL_H_
#define KERNELS_KERNEL_H_

#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "oneflow_core/ops/attr.h"
#include "oneflow_core/dtype.h"
#include "oneflow_core/tensor_slice.h"
#include "oneflow_core/shape.h"

namespace oneflow {

// A device's kernel threads: defined by the backend that creates them (the CPU's in
// kernels/cpu/thread_pool.h); the runtime only passes the pointer along.
class KernelThreadPool;

struct KernelArgument {
  // f32 for floating tensors, int32 for ids and labels (the dtype says which).
  void* data = nullptr;
  DType dtype = DType::kF32;
  // Physical shape (== layout.slice.shape()).
  Shape shape;
  TensorLayout layout;

  template <typename T>
  T* As() const { return static_cast<T*>(data); }
  int64_t NumElements() const { return shape.NumElements(); }
};

struct KernelContext {
  const AttrMap* attrs = nullptr;
  // In OpDefinition::inputs / outputs order. Output buffers are not cleared beforehand:
  // a kernel writes every output element. Kernels assume no output overlaps an input
  // (the memory planner gives registers live at the same time disjoint bytes).
  std::vector<KernelArgument> inputs;
  std::vector<KernelArgument> outputs;
  // The 0-based iteration (dropout's stream, learning-rate schedule, Adam's t = step + 1).
  int64_t step = 0;
  // The helper threads of the device the kernel runs for (DeviceBackend::CreateThreadPool,
  // --threads_per_device), or nullptr: the kernel runs on the calling thread only.
  KernelThreadPool* thread_pool = nullptr;
  // Scratch for kernels whose op declares a workspace (OpDefinition::workspace_bytes):
  // the device's workspace block, which memory planning sized for the largest act on the
  // device (KernelDef.workspace_bytes), or a buffer a test provides. Null and 0 for other
  // kernels. Its contents are undefined when the act starts.
  void* workspace = nullptr;
  int64_t workspace_bytes = 0;
};

// Runs the kernel. Errors (an id out of range, a NaN-producing configuration the kernel
// checks) name the kernel and what was wrong; the runtime adds the actor and device.
using KernelFunction = absl::Status (*)(const KernelContext& context);

}  // namespace oneflow

#endif  // KERNELS_KERNEL_H_
