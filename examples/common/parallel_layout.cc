#include "examples/common/parallel_layout.h"

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "oneflow_core/status.h"

namespace oneflow::examples {

absl::StatusOr<std::vector<int64_t>> ParseStageBlocks(const std::string& text) {
  std::vector<int64_t> blocks;
  if (text.empty() || text == "auto") return blocks;  // auto: the example's driver chooses them
  for (absl::string_view part : absl::StrSplit(text, ',')) {
    int64_t count = 0;
    if (!absl::SimpleAtoi(part, &count)) {
      return absl::InvalidArgumentError(absl::StrCat("--stage_blocks=", text, ": '", part,
                                                     "' is not a block count; give comma-separated counts, one per "
                                                     "--pp stage, e.g. --stage_blocks=3,5"));
    }
    blocks.push_back(count);
  }
  return blocks;
}

absl::StatusOr<ParallelLayout> ParallelLayout::Create(const ParallelFlags& flags) {
  for (const auto& [name, value] : {std::pair<const char*, int64_t>{"nodes", flags.nodes},
                                    {"devices_per_node", flags.devices_per_node},
                                    {"dp", flags.dp},
                                    {"tp", flags.tp},
                                    {"cp", flags.cp},
                                    {"pp", flags.pp},
                                    {"micro_batches", flags.micro_batches},
                                    {"virtual_stages", flags.virtual_stages}}) {
    if (value < 1) {
      return absl::InvalidArgumentError(absl::StrCat("--", name, "=", value, " must be >= 1"));
    }
  }
  const int64_t devices = flags.nodes * flags.devices_per_node;
  const int64_t per_stage = flags.dp * flags.tp * flags.cp;
  if (flags.pp * per_stage != devices) {
    return absl::InvalidArgumentError(absl::StrCat(
        flags.pp > 1 ? absl::StrCat("--pp=", flags.pp, " x ") : "", "--dp=", flags.dp, " x --tp=", flags.tp,
        flags.cp > 1 ? absl::StrCat(" x --cp=", flags.cp) : "", " is ", flags.pp * per_stage,
        " devices, but --nodes=", flags.nodes,
        " x --devices_per_node=", flags.devices_per_node, " is ", devices, "; they must match"));
  }
  if (flags.zero < 0 || flags.zero > 3) {
    return absl::InvalidArgumentError(
        absl::StrCat("--zero=", flags.zero, " is not a ZeRO stage; valid: 0 (off), 1, 2, 3"));
  }
  if (flags.zero > 0 && flags.dp == 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--zero=", flags.zero, " shards over the data-parallel axis, but --dp=1 has none; use --dp > 1 or --zero=0"));
  }
  if (flags.virtual_stages > 1 && flags.pp == 1) {
    return absl::InvalidArgumentError(absl::StrCat("--virtual_stages=", flags.virtual_stages,
                                                   " interleaves chunks over pipeline stages, but --pp=1 has none; "
                                                   "use --pp > 1 or --virtual_stages=1"));
  }
  if (!flags.stage_blocks.empty()) {
    const std::string given = absl::StrCat("--stage_blocks=", absl::StrJoin(flags.stage_blocks, ","));
    if (static_cast<int64_t>(flags.stage_blocks.size()) != flags.pp) {
      return absl::InvalidArgumentError(absl::StrCat(given, " gives ", flags.stage_blocks.size(),
                                                     " stages, but --pp=", flags.pp,
                                                     " has ", flags.pp, "; give one block count per stage"));
    }
    if (flags.virtual_stages > 1) {
      return absl::InvalidArgumentError(absl::StrCat(given, " cuts consecutive blocks, but --virtual_stages=",
                                                     flags.virtual_stages,
                                                     " interleaves chunks of equal blocks; drop one of them"));
    }
    for (int64_t blocks : flags.stage_blocks) {
      if (blocks < 1) {
        return absl::InvalidArgumentError(
            absl::StrCat(given, ": every pipeline stage needs at least one block (got ", blocks, ")"));
      }
    }
  }
  CpAttention cp_attention;
  if (flags.cp_attention == "ulysses") {
    cp_attention = CpAttention::kUlysses;
  } else if (flags.cp_attention == "ring") {
    cp_attention = CpAttention::kRing;
  } else if (flags.cp_attention == "auto") {
    cp_attention = CpAttention::kAuto;
  } else {
    return absl::InvalidArgumentError(
        absl::StrCat("--cp_attention=", flags.cp_attention, " is not one of: ulysses, ring, auto"));
  }
  if (flags.cp_ring_split != "zigzag" && flags.cp_ring_split != "contiguous") {
    return absl::InvalidArgumentError(
        absl::StrCat("--cp_ring_split=", flags.cp_ring_split, " is not one of: zigzag, contiguous"));
  }
  ParallelLayout layout;
  layout.cp_ = flags.cp;
  layout.cp_attention_ = cp_attention;
  layout.cp_ring_zigzag_ = flags.cp_ring_split == "zigzag";
  layout.virtual_stages_ = flags.virtual_stages;
  layout.stage_blocks_ = flags.stage_blocks;
  layout.zero_ = flags.zero;
  layout.micro_batches_ = flags.micro_batches;
  layout.dp_ = flags.dp;
  layout.tp_ = flags.tp;
  std::vector<int64_t> kept;
  for (int64_t size : {flags.dp, flags.tp, flags.cp}) {
    if (size > 1) kept.push_back(size);
  }
  if (kept.empty()) kept.push_back(1);
  const Shape hierarchy(kept);
  OF_ASSIGN_OR_RETURN(const Placement all,
                      Placement::Grid(DeviceType::kCpu, flags.nodes, flags.devices_per_node));
  for (int64_t s = 0; s < flags.pp; ++s) {
    std::vector<DeviceId> stage(all.devices().begin() + s * per_stage, all.devices().begin() + (s + 1) * per_stage);
    OF_ASSIGN_OR_RETURN(Placement placement, Placement::Create(DeviceType::kCpu, std::move(stage), hierarchy));
    layout.stages_.push_back(std::move(placement));
  }
  layout.cluster_.set_num_nodes(flags.nodes);
  layout.cluster_.set_devices_per_node(flags.devices_per_node);
  layout.cluster_.set_device_type(proto::DEVICE_CPU);
  layout.cluster_.set_intra_node_bandwidth(flags.intra_node_bandwidth);
  layout.cluster_.set_inter_node_bandwidth(flags.inter_node_bandwidth);
  return layout;
}

absl::StatusOr<int64_t> ParallelLayout::MicroBatchRows(int64_t batch) const {
  if (batch % micro_batches_ != 0) {
    return absl::InvalidArgumentError(absl::StrCat("--batch=", batch, " is not divisible by --micro_batches=",
                                                   micro_batches_, "; micro-batches must be of equal size"));
  }
  return batch / micro_batches_;
}

absl::Status ParallelLayout::CheckEvenDataParallelBatch(int64_t batch, const char* escape_flag) const {
  const int64_t rows_per_split = dp_ * micro_batches_;
  if (dp_ <= 1 || batch % rows_per_split == 0) return absl::OkStatus();
  const int64_t rows = batch / micro_batches_;  // MicroBatchRows refuses a remainder first
  // What each data-parallel device would hold: the balanced split, the first ranks one row more.
  std::vector<std::string> per_device;
  for (int64_t d = 0; d < dp_; ++d) per_device.push_back(absl::StrCat(rows / dp_ + (d < rows % dp_ ? 1 : 0)));
  const int64_t below = batch / rows_per_split * rows_per_split;
  const int64_t above = below + rows_per_split;
  const std::string valid = below > 0 ? absl::StrCat(below, " or ", above) : absl::StrCat(above);
  const std::string micro =
      micro_batches_ > 1 ? absl::StrCat(" (", rows, " per micro-batch of --micro_batches=", micro_batches_, ")") : "";
  return absl::InvalidArgumentError(absl::StrCat(
      "--batch=", batch, micro, " does not split evenly over --dp=", dp_, ": the data-parallel devices would hold ",
      absl::StrJoin(per_device, ", "),
      " sequences", micro_batches_ > 1 ? " of each micro-batch" : "", ", and the model's reshapes of an uneven batch split need activation boxing (S(0) -> P and back: "
      "dozens of collectives per step instead of a few gradient reductions); use a --batch divisible by ",
      rows_per_split, " (e.g. ", valid, "), or --", escape_flag, " to compile the uneven split anyway"));
}

int64_t ParallelLayout::StageOf(int64_t block, int64_t blocks) const {
  if (!stage_blocks_.empty()) {
    int64_t end = 0;
    for (int64_t s = 0; s < pp(); ++s) {
      end += stage_blocks_[s];
      if (block < end) return s;
    }
    return pp() - 1;  // CheckStages refuses counts that do not sum to the blocks
  }
  return ((block + 1) * pp() * virtual_stages_ - 1) / blocks % pp();
}

absl::Status ParallelLayout::CheckStages(int64_t blocks, const char* blocks_flag) const {
  if (blocks < pp()) {
    return absl::InvalidArgumentError(absl::StrCat("--pp=", pp(), " is more than --", blocks_flag, "=", blocks,
                                                   "; every pipeline stage needs at least one block"));
  }
  if (!stage_blocks_.empty()) {
    int64_t sum = 0;
    for (int64_t count : stage_blocks_) sum += count;
    if (sum != blocks) {
      return absl::InvalidArgumentError(absl::StrCat("--stage_blocks=", absl::StrJoin(stage_blocks_, ","),
                                                     " sums to ", sum, " blocks, but --", blocks_flag, "=", blocks,
                                                     "; give ", pp(), " counts summing to ", blocks));
    }
  }
  if (virtual_stages_ > 1 && blocks % (pp() * virtual_stages_) != 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--", blocks_flag, "=", blocks, " is not divisible by --pp=", pp(), " x --virtual_stages=", virtual_stages_,
        "; interleaved stages need chunks of equal blocks"));
  }
  return absl::OkStatus();
}

const char* CpAttentionName(CpAttention attention) {
  switch (attention) {
    case CpAttention::kUlysses:
      return "ulysses";
    case CpAttention::kRing:
      return "ring";
    case CpAttention::kAuto:
      return "auto";
  }
  return "auto";
}

NdSbp ParallelLayout::Sbp(const oneflow::Sbp& data_axis, const oneflow::Sbp& model_axis) const {
  return Sbp(data_axis, model_axis, oneflow::Sbp::Broadcast());
}

NdSbp ParallelLayout::Sbp(const oneflow::Sbp& data_axis, const oneflow::Sbp& model_axis,
                          const oneflow::Sbp& context_axis) const {
  std::vector<oneflow::Sbp> axes;
  if (dp_ > 1) axes.push_back(data_axis);
  if (tp_ > 1) axes.push_back(model_axis);
  if (cp_ > 1) axes.push_back(context_axis);
  if (axes.empty()) axes.push_back(oneflow::Sbp::Broadcast());
  return NdSbp(std::move(axes));
}

}  // namespace oneflow::examples
