#include "actors/behaviors/compute_behavior.h"

#include "absl/strings/str_cat.h"
#include "kernels/kernel.h"
#include "oneflow_core/ops/registry.h"
#include "oneflow_core/status.h"

namespace oneflow::actors {
namespace {

struct BoundArgument {
  int64_t register_id;
  KernelArgument argument;  // Everything but `data`, which changes per iteration.
};

absl::StatusOr<BoundArgument> Bind(const PlanIndex& index, const ActorBinding& binding,
                                   const std::string& op, const std::string& argument, int64_t register_id,
                                   bool input) {
  const proto::RegisterDef& reg = index.plan().devices(binding.device_index).registers(static_cast<int>(register_id));
  BoundArgument bound;
  bound.register_id = register_id;
  OF_ASSIGN_OR_RETURN(bound.argument.dtype, FromProto(reg.dtype()));
  bound.argument.shape = Shape(std::vector<int64_t>(reg.shape().begin(), reg.shape().end()));
  OF_ASSIGN_OR_RETURN(bound.argument.layout, index.OpArgumentLayout(op, argument, input, binding.device_index));
  if (bound.argument.layout.slice.shape() != bound.argument.shape) {
    return absl::FailedPreconditionError(absl::StrCat(
        "op '", op, "' argument '", argument, "': register ", register_id, " has shape ",
        bound.argument.shape.ToString(), " but the op's SBP gives this device ",
        bound.argument.layout.slice.shape().ToString()));
  }
  return bound;
}

const proto::RegisterDef& DeviceRegister(const PlanIndex& index, const ActorBinding& binding, int64_t id) {
  return index.plan().devices(binding.device_index).registers(static_cast<int>(id));
}

// The output is a view of the input (RegisterDef.alias_of): the compiler found the two
// slices to be the same bytes, so the act has nothing to move. It only confirms that the
// slots coincide, which the plan verifier's placement checks guarantee.
absl::StatusOr<ActFunction> BindView(const PlanIndex& index, const ActorBinding& binding, const std::string& op,
                                     const std::vector<BoundArgument>& inputs, const BoundArgument& output) {
  const int64_t source = DeviceRegister(index, binding, output.register_id).alias_of();
  if (inputs.size() != 1 || inputs[0].register_id != source) {
    return absl::FailedPreconditionError(absl::StrCat("op '", op, "': register ", output.register_id,
                                                      " is a view of register ", source,
                                                      ", which is not the op's only input"));
  }
  const int64_t in = inputs[0].register_id, out = output.register_id;
  return ActFunction([op, in, out](int64_t iteration, const ActContext& context) {
    if (context.RegisterSlot(in, iteration) != context.RegisterSlot(out, iteration)) {
      return absl::InternalError(absl::StrCat("op '", op, "': view register ", out, " and its source register ",
                                              in, " are at different addresses"));
    }
    return absl::OkStatus();
  });
}

}  // namespace

absl::StatusOr<ActFunction> BindCompute(const PlanIndex& index, const ActorBinding& binding,
                                        KernelThreadPool* pool, const DeviceBackend& backend) {
  const proto::KernelDef& kernel_def = binding.actor->kernels(0);
  const std::string& op = kernel_def.op_name();
  OF_ASSIGN_OR_RETURN(KernelFunction kernel, backend.FindKernel(kernel_def.name()));
  OF_ASSIGN_OR_RETURN(const proto::OpDef* op_def, index.Op(op));
  OF_ASSIGN_OR_RETURN(const OpDefinition* definition, OpRegistry::Get().Find(op_def->type()));
  OF_ASSIGN_OR_RETURN(const AttrMap* attrs, index.Attrs(op));
  std::vector<BoundArgument> inputs, outputs;
  for (const std::string& argument : definition->inputs) {
    auto it = kernel_def.inputs().find(argument);
    if (it == kernel_def.inputs().end()) {
      return absl::FailedPreconditionError(absl::StrCat("kernel of op '", op, "' has no input '", argument, "'"));
    }
    OF_ASSIGN_OR_RETURN(BoundArgument bound, Bind(index, binding, op, argument, it->second, true));
    inputs.push_back(std::move(bound));
  }
  for (const std::string& argument : definition->outputs) {
    auto it = kernel_def.outputs().find(argument);
    if (it == kernel_def.outputs().end()) {
      return absl::FailedPreconditionError(absl::StrCat("kernel of op '", op, "' has no output '", argument, "'"));
    }
    OF_ASSIGN_OR_RETURN(BoundArgument bound, Bind(index, binding, op, argument, it->second, false));
    outputs.push_back(std::move(bound));
  }
  if (outputs.size() == 1 && DeviceRegister(index, binding, outputs[0].register_id).has_alias_of()) {
    return BindView(index, binding, op, inputs, outputs[0]);
  }
  // The context is built once; an act only points its arguments at this iteration's
  // slots (an actor acts on one thread at a time, so the mutable copy is not shared).
  KernelContext call;
  call.attrs = attrs;
  call.thread_pool = pool;
  if (kernel_def.workspace_bytes() > 0) {
    // The planned scratch: the device's workspace block (the verifier checked that it
    // holds this kernel's declaration; checked again for a plan run unverified).
    if (binding.workspace == nullptr || binding.workspace_bytes < kernel_def.workspace_bytes()) {
      return absl::FailedPreconditionError(absl::StrCat(
          "kernel of op '", op, "' declares ", kernel_def.workspace_bytes(), " bytes of workspace, but the device's ",
          binding.workspace == nullptr ? "plan has no workspace block"
                                       : absl::StrCat("workspace block holds ", binding.workspace_bytes)));
    }
    call.workspace = binding.workspace;
    call.workspace_bytes = kernel_def.workspace_bytes();
  }
  for (const BoundArgument& bound : inputs) call.inputs.push_back(bound.argument);
  for (const BoundArgument& bound : outputs) call.outputs.push_back(bound.argument);
  std::vector<int64_t> input_registers, output_registers;
  for (const BoundArgument& bound : inputs) input_registers.push_back(bound.register_id);
  for (const BoundArgument& bound : outputs) output_registers.push_back(bound.register_id);
  return ActFunction([kernel, call, input_registers, output_registers](
                         int64_t iteration, const ActContext& context) mutable {
    call.step = iteration;
    for (size_t k = 0; k < input_registers.size(); ++k) {
      call.inputs[k].data = context.RegisterSlot(input_registers[k], iteration);
    }
    for (size_t k = 0; k < output_registers.size(); ++k) {
      call.outputs[k].data = context.RegisterSlot(output_registers[k], iteration);
    }
    // Kernel errors already name the kernel; the engine adds the device, actor and
    // iteration.
    return kernel(call);
  });
}

}  // namespace oneflow::actors
