#include "compiler/auto_parallel/layout_check.h"

#include <algorithm>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "compiler/auto_parallel/candidate.h"

namespace oneflow::auto_parallel {

absl::Status CheckLayout(const ModelProfile& profile, const PriceOptions& options,
                         const proto::AutoParallelLayout& layout) {
  const int64_t devices = options.cluster.num_nodes() * options.cluster.devices_per_node();
  const std::string name = LayoutName(layout);
  if (layout.dp() < 1 || layout.tp() < 1 || layout.pp() < 1 || layout.micro_batches() < 1) {
    return absl::InvalidArgumentError(absl::StrCat(name, ": every degree must be >= 1"));
  }
  if (layout.dp() * layout.tp() * layout.pp() != devices) {
    return absl::InvalidArgumentError(
        absl::StrCat(name, " is ", layout.dp() * layout.tp() * layout.pp(), " devices; the cluster has ", devices));
  }
  if (layout.pp() > std::max<int64_t>(1, profile.stageable_units)) {
    return absl::InvalidArgumentError(absl::StrCat(name, ": pp=", layout.pp(), " is more than the ",
                                                   profile.stageable_units, " blocks or layers of '", profile.job_name,
                                                   "'"));
  }
  if (profile.batch_rows % (layout.dp() * layout.micro_batches()) != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(name, ": the batch of ", profile.batch_rows,
                     " rows does not divide into dp x micro_batches = ", layout.dp() * layout.micro_batches()));
  }
  if (layout.zero() < 0 || layout.zero() > 3 || (layout.zero() > 0 && layout.dp() == 1)) {
    return absl::InvalidArgumentError(absl::StrCat(name, ": ZeRO stages 1-3 need dp > 1"));
  }
  if (layout.zero3_kept() && layout.zero() != 3) {
    return absl::InvalidArgumentError(
        absl::StrCat(name, ": zero3_regather=false keeps ZeRO-3's gathered parameters for backward; it needs zero=3"));
  }
  if (!layout.stage_blocks().empty()) {
    int64_t sum = 0;
    bool positive = true;
    for (int64_t count : layout.stage_blocks()) {
      sum += count;
      positive = positive && count >= 1;
    }
    if (layout.stage_blocks_size() != layout.pp() || !positive || sum != profile.stageable_units) {
      return absl::InvalidArgumentError(
          absl::StrCat(name, ": stage_blocks=", absl::StrJoin(layout.stage_blocks(), ","), " must give each of the ",
                       layout.pp(), " stages at least one block, summing to the ", profile.stageable_units,
                       " blocks or layers of '", profile.job_name, "'"));
    }
  }
  if (layout.tp() > 1 && !profile.tp_hinted) {
    return absl::InvalidArgumentError(
        absl::StrCat(name, ": '", profile.job_name, "' has no tensor-parallel hints, so tp must be 1"));
  }
  return absl::OkStatus();
}

}  // namespace oneflow::auto_parallel
