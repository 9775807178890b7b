#include "compiler/actor_compute_seconds.h"

#include <algorithm>

namespace oneflow {
namespace {

int64_t Elements(const proto::RegisterDef& reg) {
  int64_t elements = 1;
  for (int64_t dim : reg.shape()) elements *= dim;
  return elements;
}

// The shape of a GEMM kernel as it runs (sbp/gemm_shape_model.h): `batch` products of
// the output's last two dims when both operands are batched, else one product of every
// row of `a`; k from a's elements.
GemmShape KernelGemmShape(int64_t a_elements, const proto::RegisterDef& output, bool batched) {
  GemmShape shape;
  const int64_t rank = output.shape_size();
  double elements = 1;
  for (int64_t d : output.shape()) elements *= static_cast<double>(d);
  shape.n = static_cast<double>(output.shape(rank - 1));
  shape.m = batched ? static_cast<double>(output.shape(rank - 2)) : elements / std::max(1.0, shape.n);
  shape.batch = batched ? elements / std::max(1.0, shape.m * shape.n) : 1;
  shape.k = static_cast<double>(a_elements) / std::max(1.0, shape.batch * shape.m);
  return shape;
}

}  // namespace

RegistersById RegistersOf(const proto::DevicePlan& device) {
  RegistersById registers;
  for (const proto::RegisterDef& reg : device.registers()) registers[reg.id()] = &reg;
  return registers;
}

ActorComputeSeconds PriceActorKernels(const proto::ActorDef& actor, const RegistersById& registers,
                                      const ComputeRates& rates) {
  auto bytes_of = [&](int64_t id) -> double {
    auto it = registers.find(id);
    return it == registers.end() ? 0.0 : static_cast<double>(it->second->size_bytes());
  };
  ActorComputeSeconds time;
  for (const proto::KernelDef& kernel : actor.kernels()) {
    auto a = kernel.inputs().find("a");
    auto out = kernel.outputs().find("out");
    if (IsGemmKernel(kernel.name()) && a != kernel.inputs().end() && out != kernel.outputs().end() &&
        registers.contains(a->second) && registers.contains(out->second) &&
        registers.at(out->second)->shape_size() > 0) {
      const proto::RegisterDef& input = *registers.at(a->second);
      const proto::RegisterDef& output = *registers.at(out->second);
      if (!rates.gemm_shape.measured()) {
        time.gemm_seconds += GemmSeconds(rates, GemmFlops(Elements(input), output.shape(output.shape_size() - 1)));
        continue;
      }
      auto b = kernel.inputs().find("b");
      const bool batched = b != kernel.inputs().end() && registers.contains(b->second) &&
                           registers.at(b->second)->shape_size() > 2 && output.shape_size() > 2;
      time.gemm_seconds += GemmShapeSeconds(rates, KernelGemmShape(Elements(input), output, batched));
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
