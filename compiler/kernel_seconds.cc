#include "compiler/kernel_seconds.h"

namespace oneflow {
namespace {

int64_t Elements(const proto::RegisterDef& reg) {
  int64_t elements = 1;
  for (int64_t dim : reg.shape()) elements *= dim;
  return elements;
}

}  // namespace

RegistersById RegistersOf(const proto::DevicePlan& device) {
  RegistersById registers;
  for (const proto::RegisterDef& reg : device.registers()) registers[reg.id()] = &reg;
  return registers;
}

KernelSeconds ActorKernelSeconds(const proto::ActorDef& actor, const RegistersById& registers,
                                 const ComputeRates& rates) {
  auto bytes_of = [&](int64_t id) -> double {
    auto it = registers.find(id);
    return it == registers.end() ? 0.0 : static_cast<double>(it->second->size_bytes());
  };
  KernelSeconds time;
  for (const proto::KernelDef& kernel : actor.kernels()) {
    auto a = kernel.inputs().find("a");
    auto out = kernel.outputs().find("out");
    if (IsGemmKernel(kernel.name()) && a != kernel.inputs().end() && out != kernel.outputs().end() &&
        registers.contains(a->second) && registers.contains(out->second) &&
        registers.at(out->second)->shape_size() > 0) {
      const proto::RegisterDef& output = *registers.at(out->second);
      time.gemm_seconds += GemmSeconds(rates, GemmFlops(Elements(*registers.at(a->second)),
                                                        output.shape(output.shape_size() - 1)));
      continue;
    }
    double bytes = 0;
    for (const auto& [name, id] : kernel.inputs()) bytes += bytes_of(id);
    for (const auto& [name, id] : kernel.outputs()) bytes += bytes_of(id);
    time.memory_bound_seconds += MemoryBoundSeconds(rates, bytes);
  }
  return time;
}

}  // namespace oneflow
