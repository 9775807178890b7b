#include "compiler/passes/lowering_pass.h"

#include "absl/strings/str_cat.h"
#include "compiler/passes/gradient_bucketing_pass.h"
#include "oneflow_core/status.h"
#include "oneflow_core/tensor_slice.h"

namespace oneflow {
namespace {

class Lowering {
 public:
  explicit Lowering(Compilation* compilation)
      : compilation_(*compilation), graph_(compilation->graph) {
    const Placement& cluster = compilation_.cluster_placement;
    compilation_.devices.clear();
    for (const DeviceId& device : cluster.devices()) {
      compilation_.devices.push_back(DeviceProgram{device, {}});
    }
    for (const Placement& placement : graph_.placements) {
      std::vector<int64_t> ranks;
      for (const DeviceId& device : placement.devices()) ranks.push_back(cluster.RankOf(device));
      cluster_ranks_.push_back(std::move(ranks));
    }
  }

  absl::Status Run() {
    const proto::Job& job = compilation_.job;
    for (int s = 0; s < job.data_sources_size(); ++s) {
      std::vector<int64_t> outputs;
      for (const std::string& name : job.data_sources(s).outputs()) {
        outputs.push_back(graph_.tensor_index.at(name));
      }
      if (outputs.empty()) continue;
      const int64_t placement = graph_.tensors[outputs[0]].placement;
      for (int64_t t : outputs) {
        if (graph_.tensors[t].placement != placement) {
          return absl::InvalidArgumentError(absl::StrCat(
              "data source '", job.data_sources(s).name(), "' feeds '", graph_.tensors[outputs[0]].name,
              "' on ", graph_.placements[placement].ToString(), " and '", graph_.tensors[t].name,
              "' on ", graph_.placements[graph_.tensors[t].placement].ToString(),
              "; all tensors of one data source must share a placement"));
        }
      }
      OF_RETURN_IF_ERROR(Emit(PhysicalNode::Kind::kDataSource, s, 0, placement, outputs));
    }
    for (size_t t = 0; t < graph_.tensors.size(); ++t) {
      const LogicalTensor& tensor = graph_.tensors[t];
      if (tensor.kind != LogicalTensor::Kind::kVariable) continue;
      OF_RETURN_IF_ERROR(Emit(PhysicalNode::Kind::kVariable, static_cast<int64_t>(t), 0,
                              tensor.placement, {static_cast<int64_t>(t)}));
    }
    size_t next_boxing = 0;
    size_t next_bucket = 0;
    early_after_op_ = EarlyBoxingsAfterOps(compilation_);
    OF_RETURN_IF_ERROR(EmitEarlyAfter(-1));
    OF_RETURN_IF_ERROR(EmitBucketsAfter(-1, &next_bucket));
    for (size_t o = 0; o < graph_.ops.size(); ++o) {
      const LogicalOp& op = graph_.ops[o];
      // Boxings were created in the order of their first consumers: emit each just
      // before the op that first needs it.
      for (int64_t b : op.input_boxings) {
        while (b >= 0 && static_cast<int64_t>(next_boxing) <= b) {
          OF_RETURN_IF_ERROR(EmitBoxing(compilation_.boxings[next_boxing++]));
        }
      }
      OF_RETURN_IF_ERROR(
          Emit(PhysicalNode::Kind::kCompute, static_cast<int64_t>(o), 0, op.placement, op.outputs));
      OF_RETURN_IF_ERROR(EmitEarlyAfter(static_cast<int64_t>(o)));
      OF_RETURN_IF_ERROR(EmitBucketsAfter(static_cast<int64_t>(o), &next_bucket));
    }
    while (next_boxing < compilation_.boxings.size()) {
      OF_RETURN_IF_ERROR(EmitBoxing(compilation_.boxings[next_boxing++]));
    }
    if (graph_.loss >= 0) {
      OF_RETURN_IF_ERROR(
          Emit(PhysicalNode::Kind::kSink, graph_.loss, 0, graph_.tensors[graph_.loss].placement, {}));
    }
    return absl::OkStatus();
  }

 private:
  // One node on every device of `placement`, producing the slices of `tensors`.
  absl::Status Emit(PhysicalNode::Kind kind, int64_t index, int64_t step, int64_t placement,
                    const std::vector<int64_t>& tensors) {
    const Placement& where = graph_.placements[placement];
    for (int64_t rank = 0; rank < where.num_devices(); ++rank) {
      PhysicalNode node{kind, index, step, {}};
      for (int64_t t : tensors) {
        const LogicalTensor& tensor = graph_.tensors[t];
        OF_ASSIGN_OR_RETURN(TensorSlice slice, DeviceSlice(tensor.type.shape, tensor.sbp, where, rank));
        node.output_shapes.push_back(slice.shape());
      }
      compilation_.devices[cluster_ranks_[placement][rank]].nodes.push_back(std::move(node));
    }
    return absl::OkStatus();
  }

  // The gradient buckets whose last member's input op `op` produces, right after it
  // (gradient_bucketing_pass.h): one node per device of the bucket's placement, with
  // each member's slice on that device.
  absl::Status EmitBucketsAfter(int64_t op, size_t* next_bucket) {
    while (*next_bucket < compilation_.buckets.size() && compilation_.buckets[*next_bucket].after_op <= op) {
      const GradientBucket& bucket = compilation_.buckets[(*next_bucket)++];
      const Placement& where = graph_.placements[bucket.placement];
      for (int64_t rank = 0; rank < where.num_devices(); ++rank) {
        PhysicalNode node{PhysicalNode::Kind::kBucket, bucket.id, 0, {}};
        for (const auto& [b, s] : bucket.members) {
          const Boxing& boxing = compilation_.boxings[b];
          OF_ASSIGN_OR_RETURN(TensorSlice slice, DeviceSlice(graph_.tensors[boxing.tensor].type.shape,
                                                             boxing.plan.steps[s].dst, where, rank));
          node.output_shapes.push_back(slice.shape());
        }
        compilation_.devices[cluster_ranks_[bucket.placement][rank]].nodes.push_back(std::move(node));
      }
      // The members' early steps after the bucketed one run right after the bucket.
      for (const auto& [b, s] : bucket.members) {
        OF_RETURN_IF_ERROR(EmitSteps(compilation_.boxings[b], s + 1, EarlyStepsEnd(compilation_, b, s + 1)));
      }
    }
    return absl::OkStatus();
  }

  // The early steps (gradient_bucketing_pass.h) of the boxings whose tensor op `op`
  // produces (-1: a variable or data source), right after it.
  absl::Status EmitEarlyAfter(int64_t op) {
    for (int64_t b : early_after_op_[op + 1]) {
      OF_RETURN_IF_ERROR(EmitSteps(compilation_.boxings[b], 0, EarlyStepsEnd(compilation_, b, 0)));
    }
    return absl::OkStatus();
  }

  // Steps [from, to) of a boxing that is not a transfer (the only early steps are
  // reductions): one node per device of the tensor's placement.
  absl::Status EmitSteps(const Boxing& boxing, int64_t from, int64_t to) {
    const LogicalTensor& tensor = graph_.tensors[boxing.tensor];
    const Placement& where = graph_.placements[tensor.placement];
    for (int64_t s = from; s < to; ++s) {
      const BoxingStep& step = boxing.plan.steps[s];
      for (int64_t rank = 0; rank < where.num_devices(); ++rank) {
        OF_ASSIGN_OR_RETURN(TensorSlice slice, DeviceSlice(tensor.type.shape, step.dst, where, rank));
        compilation_.devices[cluster_ranks_[tensor.placement][rank]].nodes.push_back(
            PhysicalNode{PhysicalNode::Kind::kBoxingStep, boxing.id, s, {slice.shape()}});
      }
    }
    return absl::OkStatus();
  }

  // Steps before a send/recv run on the source placement, steps after it on the
  // destination; the send/recv itself on both (senders produce nothing).
  absl::Status EmitBoxing(const Boxing& boxing) {
    const LogicalTensor& tensor = graph_.tensors[boxing.tensor];
    int64_t placement = tensor.placement;
    for (size_t s = 0; s < boxing.plan.steps.size(); ++s) {
      const BoxingStep& step = boxing.plan.steps[s];
      if (step.kind == BoxingKind::kSendRecv) {
        const Placement& src = graph_.placements[tensor.placement];
        const Placement& dst = graph_.placements[boxing.dst_placement];
        std::vector<bool> done(compilation_.devices.size(), false);
        for (int64_t rank = 0; rank < dst.num_devices(); ++rank) {
          OF_ASSIGN_OR_RETURN(TensorSlice slice, DeviceSlice(tensor.type.shape, step.dst, dst, rank));
          const int64_t device = cluster_ranks_[boxing.dst_placement][rank];
          compilation_.devices[device].nodes.push_back(
              PhysicalNode{PhysicalNode::Kind::kBoxingStep, boxing.id, static_cast<int64_t>(s),
                           {slice.shape()}});
          done[device] = true;
        }
        for (int64_t rank = 0; rank < src.num_devices(); ++rank) {
          const int64_t device = cluster_ranks_[tensor.placement][rank];
          if (done[device]) continue;
          compilation_.devices[device].nodes.push_back(PhysicalNode{
              PhysicalNode::Kind::kBoxingStep, boxing.id, static_cast<int64_t>(s), {}});
        }
        placement = boxing.dst_placement;
        continue;
      }
      // A bucketed step runs in its bucket's node, an early one where EmitSteps put it.
      if (BucketOf(compilation_, boxing.id, static_cast<int64_t>(s)) >= 0 ||
          IsEarlyStep(compilation_, boxing.id, static_cast<int64_t>(s))) {
        continue;
      }
      const Placement& where = graph_.placements[placement];
      for (int64_t rank = 0; rank < where.num_devices(); ++rank) {
        OF_ASSIGN_OR_RETURN(TensorSlice slice, DeviceSlice(tensor.type.shape, step.dst, where, rank));
        compilation_.devices[cluster_ranks_[placement][rank]].nodes.push_back(PhysicalNode{
            PhysicalNode::Kind::kBoxingStep, boxing.id, static_cast<int64_t>(s), {slice.shape()}});
      }
    }
    return absl::OkStatus();
  }

  Compilation& compilation_;
  const LogicalGraph& graph_;
  // EarlyBoxingsAfterOps: the boxings whose early steps follow each op.
  std::vector<std::vector<int64_t>> early_after_op_;
  // Cluster rank of every rank of every placement.
  std::vector<std::vector<int64_t>> cluster_ranks_;
};

}  // namespace

absl::StatusOr<bool> LoweringPass::Run(Compilation* compilation) {
  OF_RETURN_IF_ERROR(Lowering(compilation).Run());
  return true;
}

}  // namespace oneflow
