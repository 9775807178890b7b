#include "compiler/auto_parallel/tp_boxings.h"

#include <algorithm>

#include <string>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "compiler/auto_parallel/act_count.h"
#include "oneflow_core/dtype.h"
#include "oneflow_core/status.h"

namespace oneflow::auto_parallel {
namespace {

bool IsCollective(proto::BoxingStepKind kind) {
  return kind == proto::STEP_ALL_REDUCE || kind == proto::STEP_REDUCE_SCATTER || kind == proto::STEP_ALL_GATHER ||
         kind == proto::STEP_ALL_TO_ALL;
}

}  // namespace

absl::Status CountTpBoxings(const proto::Plan& probe_plan, ModelProfile* profile) {
  if (!profile->tp_hinted) {
    return absl::InvalidArgumentError(
        absl::StrCat("'", profile->job_name, "' has no tensor-parallel hints: there are no tp boxings to count"));
  }
  if (probe_plan.devices_size() < 2) {
    return absl::InvalidArgumentError(absl::StrCat("the tp probe plan of '", profile->job_name, "' has ",
                                                   probe_plan.devices_size(), " device(s); tp = 2 needs two"));
  }
  absl::flat_hash_map<std::string, size_t> unit_of_op;
  for (size_t u = 0; u < profile->units.size(); ++u) {
    for (const std::string& op : profile->units[u].op_names) unit_of_op.emplace(op, u);
  }
  absl::flat_hash_map<std::string, int64_t> tensor_bytes;
  for (const proto::TensorDef& tensor : probe_plan.job().tensors()) {
    OF_ASSIGN_OR_RETURN(const DType dtype, FromProto(tensor.dtype()));
    int64_t elements = 1;
    for (int64_t dim : tensor.shape()) elements *= dim;
    tensor_bytes[tensor.name()] = elements * SizeOf(dtype);
  }
  for (ProfileUnit& unit : profile->units) unit.tp_boxings.clear();
  const int64_t micro_batches = std::max<int64_t>(1, probe_plan.job().micro_batches());
  for (const proto::BoxingDef& boxing : probe_plan.boxings()) {
    proto::BoxingStepKind kind = proto::STEP_INVALID;
    for (const proto::BoxingStepDef& step : boxing.steps()) {
      if (IsCollective(step.kind())) kind = step.kind();
    }
    if (kind == proto::STEP_INVALID) continue;
    auto bytes = tensor_bytes.find(boxing.tensor());
    if (bytes == tensor_bytes.end()) {
      return absl::InvalidArgumentError(absl::StrCat("boxing ", boxing.id(), " of the tp probe plan moves tensor '",
                                                     boxing.tensor(), "', which the plan's job does not define"));
    }
    TpBoxing entry;
    entry.tensor = boxing.tensor();
    entry.kind = kind;
    entry.bytes = bytes->second;  // one micro-batch's rows of an activation: scaled below
    entry.backward = absl::StrContains(boxing.producer_op(), "_grad/");
    entry.per_iteration = absl::StrContains(boxing.consumer_op(), "_update/");
    size_t unit = 0;
    auto producer = unit_of_op.find(ForwardOpOf(boxing.producer_op()));
    if (producer != unit_of_op.end()) {
      unit = producer->second;
      // An op's output or its gradient: the rows' share of the batch. A variable's
      // gradient (read by its update) is the variable's size whatever the rows. A probe
      // of micro-batches holds one micro-batch's rows: the bytes are the whole batch's.
      entry.scales_with_rows = !entry.per_iteration;
      if (entry.scales_with_rows) entry.bytes *= micro_batches;
    } else {
      // A variable's value: its reader's unit, the same bytes at every row count.
      auto consumer = unit_of_op.find(ForwardOpOf(boxing.consumer_op()));
      if (consumer != unit_of_op.end()) unit = consumer->second;
    }
    if (unit < profile->units.size()) profile->units[unit].tp_boxings.push_back(std::move(entry));
  }
  // The work tp divides, as the plan splits it: an op that reads or writes a tensor split
  // over the tp axis computes its share of it (Megatron's sharded GEMMs, and the row
  // splits the compiler may choose for everything else); one on whole or partial tensors
  // only (a residual add of P values) computes all of it on every device.
  absl::flat_hash_map<std::string, bool> op_split;
  for (const proto::LogicalOpSbp& op : probe_plan.op_sbps()) {
    bool split = false;
    for (const auto* ports : {&op.signature().inputs(), &op.signature().outputs()}) {
      for (const auto& [port, nd_sbp] : *ports) {
        for (const proto::SbpParallel& sbp : nd_sbp.sbp()) split = split || sbp.has_split();
      }
    }
    op_split[op.op_name()] = split;
  }
  for (ProfileUnit& unit : profile->units) {
    double tp_gemm_flops = 0;
    double tp_memory_bytes = 0;
    for (size_t o = 0; o < unit.op_names.size() && o < unit.op_work.size(); ++o) {
      auto split = op_split.find(unit.op_names[o]);
      if (split == op_split.end()) continue;  // not in the plan: keep the hints' division
      OpWork& work = unit.op_work[o];
      work.tp_gemm_flops = split->second ? work.gemm_flops : 0;
      work.tp_memory_bytes = split->second ? work.memory_bytes : 0;
    }
    for (const OpWork& work : unit.op_work) {
      tp_gemm_flops += work.tp_gemm_flops;
      tp_memory_bytes += work.tp_memory_bytes;
    }
    unit.tp_gemm_flops = tp_gemm_flops;
    unit.tp_memory_bytes = tp_memory_bytes;
  }
  profile->tp_boxings_counted = true;
  return absl::OkStatus();
}

}  // namespace oneflow::auto_parallel
