#include "compiler/auto_parallel/unit_memory.h"

#include <algorithm>
#include <cstdint>

namespace oneflow::auto_parallel {

const ModelProfile& MemoryProfileOf(const ModelProfile& profile, const proto::AutoParallelLayout& layout) {
  return ProfileForTp(profile, layout.tp(), std::max<int64_t>(1, layout.dp() * layout.micro_batches()));
}

UnitMemory UnitMemoryOf(const ProfileUnit& unit, const ProfileUnit& memory_unit, const ModelProfile& memory_profile,
                        const proto::AutoParallelLayout& layout, bool in_block) {
  const double tp = static_cast<double>(layout.tp());
  const double rows = 1.0 / static_cast<double>(layout.dp() * layout.micro_batches());
  UnitMemory memory;
  memory.parameter_bytes = static_cast<double>(unit.parameter_bytes - unit.tp_parameter_bytes) +
                           static_cast<double>(unit.tp_parameter_bytes) / tp;
  memory.gradient_bytes = memory.parameter_bytes;
  if (memory_profile.tp_boxings_counted && layout.tp() > 1) {
    for (const TpBoxing& boxing : memory_unit.tp_boxings) {
      const double bytes = static_cast<double>(boxing.bytes);
      if (boxing.per_iteration && boxing.kind == proto::STEP_REDUCE_SCATTER) {
        memory.gradient_bytes += bytes - bytes / tp;
      } else if (!boxing.per_iteration && !boxing.scales_with_rows && !boxing.backward &&
                 boxing.kind == proto::STEP_ALL_GATHER) {
        memory.gathered_bytes += bytes;
      }
    }
  }
  const bool planned = memory_profile.planned_kept_tp == layout.tp() && memory_profile.planned_kept_row_parts > 0;
  // A probe device's micro-batch is 1 / row_parts of the batch: times them, the batch's
  // bytes on one device of the tp group, which `rows` scales as the logical bytes.
  const double planned_scale = static_cast<double>(memory_profile.planned_kept_row_parts);
  const double activations =
      planned ? static_cast<double>(memory_unit.planned_kept_bytes) * planned_scale
              : static_cast<double>(unit.kept_activation_bytes - unit.kept_tp_activation_bytes) +
                    static_cast<double>(unit.kept_tp_activation_bytes) / tp;
  const double core = planned ? static_cast<double>(memory_unit.planned_kept_attention_core_bytes) * planned_scale
                              : static_cast<double>(unit.kept_attention_core_activation_bytes) / tp;
  memory.kept_bytes = activations * rows;
  if (in_block && layout.recompute() == proto::RECOMPUTE_SELECTIVE) {
    memory.kept_bytes = (activations - core) * rows;
  } else if (in_block && layout.recompute() == proto::RECOMPUTE_FULL) {
    memory.recomputed_bytes = memory.kept_bytes;
    memory.kept_bytes = static_cast<double>(unit.input_bytes) * rows;
  }
  return memory;
}

double GradientBucketBytes(const proto::AutoParallelLayout& layout, double bucket_mb) {
  if (layout.dp() <= 1 || layout.tp() > 1 || layout.micro_batches() > 1 || layout.zero() >= 2) return 0;
  return bucket_mb * 1024.0 * 1024.0;
}

}  // namespace oneflow::auto_parallel
