#include "plan/bucket_placement.h"

namespace oneflow {

std::vector<InputInBucket> InputsInBuckets(const proto::DevicePlan& device) {
  const int64_t registers = device.registers_size();
  auto valid = [&](int64_t id) { return id >= 0 && id < registers; };
  std::vector<InputInBucket> found;
  for (const proto::ActorDef& actor : device.actors()) {
    if (!actor.has_bucket_id() || actor.kernels_size() != 1) continue;
    const proto::KernelDef& kernel = actor.kernels(0);
    const auto whole_it = kernel.outputs().find("bucket");
    if (whole_it == kernel.outputs().end() || !valid(whole_it->second)) continue;
    const proto::RegisterDef& whole = device.registers(static_cast<int>(whole_it->second));
    for (const auto& [name, id] : kernel.inputs()) {
      if (!valid(id) || name.rfind("in_", 0) != 0) continue;
      const proto::RegisterDef& input = device.registers(static_cast<int>(id));
      if (input.has_alias_of() || input.memory_block() != whole.memory_block() ||
          input.offset() >= whole.offset() + whole.size_bytes() || input.offset() + input.size_bytes() <= whole.offset()) {
        continue;
      }
      found.push_back({&actor, name, id, whole_it->second});
    }
  }
  return found;
}

}  // namespace oneflow
