// What the project knows about one op type: its arguments, how to infer output types,
// and which SBP signatures it accepts. The registry (registry.h) lists every definition
// explicitly; there is no static-initializer registration.
#ifndef ONEFLOW_CORE_OPS_OP_DEFINITION_H_
#define ONEFLOW_CORE_OPS_OP_DEFINITION_H_

#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "oneflow_core/ops/attr.h"
#include "oneflow_core/dtype.h"
#include "oneflow_core/sbp.h"
#include "oneflow_core/shape.h"

namespace oneflow {

// The static type of a tensor: "f32[64, 32]".
struct TensorType {
  Shape shape;
  DType dtype = DType::kF32;

  std::string ToString() const;
  friend bool operator==(const TensorType& a, const TensorType& b) {
    return a.shape == b.shape && a.dtype == b.dtype;
  }
};

// One way an op can run over one placement axis: the SBP of every input and output, in
// the order of OpDefinition::inputs / outputs. Matmul's data-parallel signature is
// inputs {S(0), B}, outputs {S(0)}. N-D signatures pick one of these per hierarchy axis.
struct SbpSignature {
  std::vector<Sbp> inputs;
  std::vector<Sbp> outputs;
  // 0: valid on any number of devices. Otherwise valid only when the number of devices
  // splitting the tensor axis (the product of the hierarchy axes using this signature,
  // for N-D) divides this number. Balanced splits of different sizes only line up when
  // they are even: reshape [b, s, h] S(2) -> [b, s, nh, hd] S(2) gives each device whole
  // heads only when the devices divide nh.
  int64_t devices_must_divide = 0;

  // Whether the signature may run on `devices` devices along one hierarchy axis.
  bool ValidFor(int64_t devices) const {
    return devices_must_divide == 0 || devices_must_divide % devices == 0;
  }

  // "S(0), B -> S(0)"; with a divisibility condition "S(2) -> S(2) if devices divide 4";
  // without outputs (updates) "S(0), S(0) -> ()".
  std::string ToString() const;
  friend bool operator==(const SbpSignature& a, const SbpSignature& b) {
    return a.inputs == b.inputs && a.outputs == b.outputs &&
           a.devices_must_divide == b.devices_must_divide;
  }
};

// Output types from input types and attributes, in declaration order. Errors say what
// is wrong with the inputs (shapes, dtypes, attributes) and what would be valid; the
// graph adds the op's name, type and source line in front.
using InferFn = std::function<absl::StatusOr<std::vector<TensorType>>(
    const std::vector<TensorType>& inputs, const AttrMap& attrs)>;

// Every 1-D signature the op accepts for these (valid) input types. The physical op run
// on each device's slices must give that device's slice of the logical result.
using SignaturesFn = std::function<std::vector<SbpSignature>(
    const std::vector<TensorType>& inputs, const AttrMap& attrs)>;

// Bytes of scratch one act of the op's kernel needs besides its inputs and outputs, for
// the inputs it gets on a device (physical shapes: the device's slices). The compiler
// reserves them in the plan (memory planning's workspace block, KernelDef.workspace_bytes)
// and the runtime hands them to the kernel (KernelContext::workspace), so the planned
// peak is what the process uses.
using WorkspaceFn = std::function<int64_t(const std::vector<TensorType>& local_inputs, const AttrMap& attrs)>;

struct OpDefinition {
  std::string type;  // "matmul"
  std::vector<std::string> inputs;   // Argument names: {"a", "b"}.
  std::vector<std::string> outputs;  // {"out"}.
  InferFn infer;
  SignaturesFn signatures;
  std::string kernel;  // The kernel that computes it on a device: "matmul".
  // Inputs the kernel updates in place (an optimizer update's parameter and state). The
  // compiler never boxes them: the op must run on exactly the variable's own slices.
  // Such ops have no outputs; their signatures give SBPs for the inputs only.
  std::vector<std::string> updated_inputs;
  // Outputs nonzero only in the rows (dim-0 slices) whose ids an integer input lists on
  // the device, as (output, input) pairs: embedding_grad's dtable by its ids. The
  // compiler makes their reductions (P -> B, P -> S(0)) row-sparse
  // (compiler/sparse_boxing.h).
  std::vector<std::pair<std::string, std::string>> sparse_row_outputs;
  // Set for ops whose signatures depend on the shapes (reshape): besides the combinations
  // of signatures judged on the whole tensor, the compiler judges each inner hierarchy
  // axis on the slice the outer axes leave (OneFlow's N-D reshape), calling `signatures`
  // with the local input types and the attributes this function gives for the local
  // output types. A flatten of [dp, s, b, h] split S(0) over dp and S(1) over cp into
  // rows is S(0) nested in S(0) only on the local shape [1, s, b, h].
  std::function<AttrMap(const AttrMap& attrs, const std::vector<TensorType>& local_outputs)> attrs_for_local_shapes;
  // Set for kernels that need scratch memory (ring attention's tiles); unset: none.
  WorkspaceFn workspace_bytes;
};

}  // namespace oneflow

#endif  // ONEFLOW_CORE_OPS_OP_DEFINITION_H_
