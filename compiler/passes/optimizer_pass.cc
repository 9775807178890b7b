#include "compiler/passes/optimizer_pass.h"

#include <algorithm>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "oneflow_core/dsl/graph.h"
#include "oneflow_core/dsl/ops.h"
#include "oneflow_core/status.h"

namespace oneflow {
namespace {

absl::Status CheckSchedule(const proto::LearningRateSchedule& schedule) {
  if (!(schedule.base_lr() > 0)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "optimizer learning rate is ", schedule.base_lr(), "; it must be > 0"));
  }
  if (schedule.kind() == proto::LearningRateSchedule::WARMUP_COSINE &&
      (schedule.warmup_steps() < 0 || schedule.total_steps() <= schedule.warmup_steps() ||
       schedule.min_lr() < 0 || schedule.min_lr() > schedule.base_lr())) {
    return absl::InvalidArgumentError(absl::StrCat(
        "warmup-cosine schedule warmup_steps=", schedule.warmup_steps(), " total_steps=",
        schedule.total_steps(), " min_lr=", schedule.min_lr(), " base_lr=", schedule.base_lr(),
        " is invalid; need 0 <= warmup_steps < total_steps and 0 <= min_lr <= base_lr"));
  }
  return absl::OkStatus();
}

// A zero-initialized state variable laid out exactly like `param`.
Tensor StateLike(Graph& graph, Tensor param, const std::string& suffix) {
  // A copy: adding the variable may reallocate the graph's tensor records.
  const Graph::TensorRecord record = graph.tensor(param.id());
  Tensor state = graph.Variable(absl::StrCat(param.name(), "/", suffix), param.shape(),
                                Initializer::Zeros(), param.dtype(), /*trainable=*/false,
                                record.location);
  if (!state.valid()) return state;
  if (record.sbp_hint) state.WithSbp(*record.sbp_hint);
  if (record.placement) state.WithPlacement(*record.placement);
  return state;
}

absl::Status CheckZero(const proto::OptimizerDef& optimizer) {
  if (optimizer.zero_stage() < 0 || optimizer.zero_stage() > 3) {
    return absl::InvalidArgumentError(absl::StrCat(
        "optimizer zero_stage=", optimizer.zero_stage(), " is invalid; valid: 0 (off), 1, 2, 3"));
  }
  if (optimizer.zero_axis() < 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "optimizer zero_axis=", optimizer.zero_axis(), " is invalid; it must be a hierarchy axis >= 0"));
  }
  return absl::OkStatus();
}

absl::Status CheckAdamW(const proto::OptimizerDef& optimizer) {
  if (!optimizer.has_adamw() || optimizer.adamw().variance_frozen_from() >= 0) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(
      "AdamW variance_frozen_from=", optimizer.adamw().variance_frozen_from(),
      " is invalid; valid: 0 (the variance never frozen) or a step >= 1 from which it is frozen "
      "(set by --adamw_freeze_variance_from on the examples, variance_frozen_from= on a graph text's "
      "optimizer line, or Optimizer::WithFrozenVariance in the DSL)"));
}

// How one variable is split under ZeRO over one hierarchy axis.
struct Sharding {
  Placement placement;  // The variable's.
  NdSbp layout;         // The variable's SBP without ZeRO (its hint, or all B).
  NdSbp shard;          // `layout` with the data-parallel axis B -> S(k).
};

// The sharding of `variable` under ZeRO over hierarchy axis `axis`: its SBP with that
// axis, B today, turned into S(k), k the first tensor axis that no other hierarchy axis
// splits (so the shards of one device group are contiguous and the gathers plain) and
// that has a row for every device of the axis (no empty shard). None when there is
// nothing to shard: the axis has one device, the variable is already split or partial
// over it, or no tensor axis qualifies (a scalar, or dims too small).
absl::StatusOr<std::optional<Sharding>> ShardingOf(const LogicalGraph& graph, const std::string& name,
                                                   int64_t axis) {
  const auto index = graph.tensor_index.find(name);
  if (index == graph.tensor_index.end()) {
    return absl::InternalError(absl::StrCat("variable '", name, "' is not in the logical graph"));
  }
  const LogicalTensor& variable = graph.tensors[index->second];
  const Placement& placement = graph.placements[variable.placement];
  const Shape& hierarchy = placement.hierarchy();
  if (axis >= hierarchy.rank()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "optimizer zero_axis=", axis, " is not a hierarchy axis of placement ", placement.ToString(),
        " of variable '", variable.name, "' (", hierarchy.rank(), " axes)"));
  }
  const int64_t devices = hierarchy.dim(axis);
  const NdSbp layout = variable.hint ? *variable.hint
                                     : NdSbp(std::vector<Sbp>(hierarchy.rank(), Sbp::Broadcast()));
  if (devices == 1 || !layout.at(axis).is_broadcast()) return std::optional<Sharding>();
  const Shape& shape = variable.type.shape;
  for (int64_t k = 0; k < shape.rank(); ++k) {
    bool split_elsewhere = false;
    for (int64_t a = 0; a < layout.size(); ++a) {
      if (layout.at(a).is_split() && layout.at(a).axis() == k) split_elsewhere = true;
    }
    if (split_elsewhere || shape.dim(k) < devices) continue;
    std::vector<Sbp> axes = layout.sbps();
    axes[axis] = Sbp::Split(k);
    return std::optional<Sharding>(Sharding{placement, layout, NdSbp(std::move(axes))});
  }
  return std::optional<Sharding>();
}

// ZeRO stage 3, on the job before the updates exist: each sharded variable gets the
// split hint, and every op that read it reads instead "<variable>/gathered", an
// identity hinted with the variable's old layout (To), added in front of all ops. So
// boxing_insertion puts one all-gather (S(k) -> B over the data-parallel axis) of each
// parameter before its first reader, and every other op sees the layout it had without
// ZeRO (same signatures, same plan). The gathered copy is an ordinary activation
// register, alive until its last reader.
//
// With `regather` (CompileOptions::zero3_regather), the readers after the loss's
// producer (backward: the job is in topological order and autograd appended backward
// after the loss) read "<variable>/regathered" instead: an identity of
// "<variable>/shard_copy" (an identity of the variable keeping its split, a copy of the
// shard) hinted with the old layout, so it is a distinct tensor with its own all-gather
// (boxing_insertion shares one boxing per tensor and layout; a second reader of the
// variable itself would share the forward gather and keep it alive). Both identities
// sit just before the backward op that reads a variable first before this one's first
// backward reader (the first backward op for the earliest): the gather is prefetched one
// parameter-reading op ahead, so it runs while that op computes, and the forward copy
// dies with the last forward reader (ZeRO-3's 1.5x parameter traffic for Psi/N + the
// gathered parameters of about two layers at a time).
absl::Status GatherBeforeUse(const std::vector<std::pair<std::string, Sharding>>& sharded, bool regather,
                             proto::Job* job) {
  if (sharded.empty()) return absl::OkStatus();
  absl::flat_hash_map<std::string, std::string> gathered;
  absl::flat_hash_map<std::string, std::string> regathered;
  absl::flat_hash_map<std::string, proto::TensorDef*> defs;
  for (proto::TensorDef& def : *job->mutable_tensors()) defs[def.name()] = &def;
  // The loss's producer: the ops after it are backward's.
  int loss_op = job->ops_size();
  for (int o = 0; o < job->ops_size() && regather; ++o) {
    for (const auto& [argument, tensor] : job->ops(o).outputs()) {
      if (tensor == job->loss()) loss_op = o;
    }
  }
  // Per variable: whether forward reads it, and its first backward reader.
  absl::flat_hash_map<std::string, bool> read_forward;
  absl::flat_hash_map<std::string, int> first_backward;
  for (int o = 0; o < job->ops_size(); ++o) {
    for (const auto& [argument, tensor] : job->ops(o).inputs()) {
      if (o <= loss_op) {
        read_forward[tensor] = true;
      } else if (!first_backward.contains(tensor)) {
        first_backward[tensor] = o;
      }
    }
  }
  google::protobuf::RepeatedPtrField<proto::OpDef> ops;
  std::vector<proto::TensorDef> added;
  // The identities to put before backward op o (index into job->ops()).
  std::map<int, std::vector<proto::OpDef>> before_op;
  std::vector<int> backward_starts;  // First backward readers of re-gathered variables.
  for (const auto& [variable, sharding] : sharded) {
    const bool twice = regather && read_forward.contains(variable) && first_backward.contains(variable);
    if (twice) backward_starts.push_back(first_backward.at(variable));
  }
  std::sort(backward_starts.begin(), backward_starts.end());
  backward_starts.erase(std::unique(backward_starts.begin(), backward_starts.end()), backward_starts.end());
  for (const auto& [variable, sharding] : sharded) {
    const std::vector<std::string> names = {absl::StrCat(variable, "/gathered"), absl::StrCat(variable, "/regathered"),
                                            absl::StrCat(variable, "/shard_copy")};
    for (const std::string& copy : names) {
      if (defs.contains(copy)) {
        return absl::InvalidArgumentError(absl::StrCat(
            "ZeRO stage 3 names a copy of variable '", variable, "' '", copy,
            "', but the job already has a tensor of that name; rename it"));
      }
    }
    proto::TensorDef* def = defs.at(variable);
    auto identity = [&](const std::string& name, const std::string& input, const NdSbp& layout) {
      proto::TensorDef copy_def = *def;
      copy_def.set_name(name);
      *copy_def.mutable_sbp_hint() = layout.ToProto();
      *copy_def.mutable_placement() = sharding.placement.ToProto();
      copy_def.set_compression(proto::TensorDef::COMPRESSION_UNSET);
      added.push_back(std::move(copy_def));
      proto::OpDef op;
      op.set_name(name);
      op.set_type("identity");
      (*op.mutable_inputs())["x"] = input;
      (*op.mutable_outputs())["out"] = name;
      *op.mutable_location() = def->location();
      return op;
    };
    *ops.Add() = identity(names[0], variable, sharding.layout);
    gathered[variable] = names[0];
    if (regather && read_forward.contains(variable) && first_backward.contains(variable)) {
      // Prefetch: before the previous first backward reader (or the first backward op).
      const auto at = std::lower_bound(backward_starts.begin(), backward_starts.end(), first_backward.at(variable));
      const int place = at == backward_starts.begin() ? loss_op + 1 : *(at - 1);
      before_op[place].push_back(identity(names[2], variable, sharding.shard));
      before_op[place].push_back(identity(names[1], names[2], sharding.layout));
      regathered[variable] = names[1];
    }
    *def->mutable_sbp_hint() = sharding.shard.ToProto();
  }
  for (int o = 0; o < job->ops_size(); ++o) {
    proto::OpDef& op = *job->mutable_ops(o);
    for (auto& [argument, tensor] : *op.mutable_inputs()) {
      const auto again = regathered.find(tensor);
      if (o > loss_op && again != regathered.end()) {
        tensor = again->second;
        continue;
      }
      const auto it = gathered.find(tensor);
      if (it != gathered.end()) tensor = it->second;
    }
  }
  for (proto::TensorDef& def : added) *job->add_tensors() = std::move(def);
  for (int o = 0; o < job->ops_size(); ++o) {
    if (const auto it = before_op.find(o); it != before_op.end()) {
      for (proto::OpDef& op : it->second) *ops.Add() = std::move(op);
    }
    *ops.Add() = std::move(*job->mutable_ops(o));
  }
  job->mutable_ops()->Swap(&ops);
  return absl::OkStatus();
}

// ZeRO stages 1 and 2 on one parameter: the update runs out of place on the shard and
// two assigns write it back. The parameter stays as it was (replicated over the axis);
// its shard reaches sgd_step / adamw_step by a local slice, the gradient by an all-reduce
// then a local slice (stage 1: through an identity hinted like the parameter, To) or a
// reduce-scatter (stage 2), and the new shard goes back to the parameter through the
// all-gather boxing_insertion puts before assign. The new values are never compressed:
// a lossy gather would make the replicas drift from the shard that holds the truth.
// Returns the new shard; the caller assigns it to the parameter after every sharded step.
absl::StatusOr<Tensor> ShardedStep(Graph& graph, const proto::OptimizerDef& optimizer, Tensor param,
                                   Tensor grad, const Sharding& sharding, const SourceLocation& location) {
  const NdSbp& shard = sharding.shard;
  if (optimizer.zero_stage() == 1) grad = To(grad, sharding.placement, sharding.layout, location);
  std::vector<Tensor> state;
  std::vector<Tensor> outputs;
  if (optimizer.has_adamw()) {
    state = {StateLike(graph, param, "adam_m"), StateLike(graph, param, "adam_v")};
    for (Tensor& tensor : state) tensor.WithSbp(shard);
    outputs = AdamWStep(param, grad, state[0], state[1], optimizer.adamw(), optimizer.schedule(), location);
  } else {
    state = {StateLike(graph, param, "momentum")};
    state[0].WithSbp(shard);
    outputs = SgdStep(param, grad, state[0], optimizer.sgd(), optimizer.schedule(), location);
  }
  OF_RETURN_IF_ERROR(graph.status());
  for (Tensor& output : outputs) output.WithSbp(shard).WithCompression(Compression::kNone);
  for (size_t k = 0; k < state.size(); ++k) Assign(state[k], outputs[k + 1], location);
  OF_RETURN_IF_ERROR(graph.status());
  return outputs[0];
}

// A parameter's update from its new shard, emitted after every sharded step of the
// iteration: the shard gathered (an identity hinted with the parameter's layout, so
// boxing_insertion puts the all-gather before it), then assigned.
struct DeferredAssign {
  std::string variable;
  Tensor param;
  Tensor new_param;
  const Sharding* sharding = nullptr;
  SourceLocation location;
};

}  // namespace

absl::StatusOr<bool> OptimizerPass::Run(Compilation* compilation) {
  const proto::Job& job = compilation->job;
  if (!job.has_optimizer() || compilation->gradients.empty()) return false;
  const proto::OptimizerDef& optimizer = job.optimizer();
  OF_RETURN_IF_ERROR(CheckSchedule(optimizer.schedule()));
  OF_RETURN_IF_ERROR(CheckZero(optimizer));
  OF_RETURN_IF_ERROR(CheckAdamW(optimizer));
  // Checked here, where the stage is the job's (a graph text's optimizer line may set it
  // without --zero), not in the flags.
  if (!compilation->options.zero3_regather && optimizer.zero_stage() != 3) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--zero3_regather=false (CompileOptions::zero3_regather) keeps ZeRO-3's gathered parameters for backward; it "
        "needs --zero=3 (the optimizer's zero_stage is ",
        optimizer.zero_stage(), ")"));
  }
  // ZeRO: the variables split over the data-parallel axis, by name.
  absl::flat_hash_map<std::string, Sharding> shards;
  std::vector<std::pair<std::string, Sharding>> in_order;  // Deterministic plans.
  if (optimizer.zero_stage() > 0) {
    for (const auto& [variable, gradient] : compilation->gradients) {
      OF_ASSIGN_OR_RETURN(std::optional<Sharding> sharding,
                          ShardingOf(compilation->graph, variable, optimizer.zero_axis()));
      if (!sharding) continue;
      shards.emplace(variable, *sharding);
      in_order.emplace_back(variable, *sharding);
    }
  }
  proto::Job extended = job;
  if (optimizer.zero_stage() == 3) {
    OF_RETURN_IF_ERROR(GatherBeforeUse(in_order, compilation->options.zero3_regather, &extended));
  }
  OF_ASSIGN_OR_RETURN(std::unique_ptr<Graph> graph, Graph::FromJob(extended));
  // ZeRO 1 and 2: every sharded step first, then every gathered copy, then the
  // parameters' assigns. Assigned right after its own step, each variable's update
  // waited for the gather before it: on 3 emulated hosts at 1 Gbit/s (zero = 1, traced)
  // the next step ran only after the previous assign, so the 64 gathers took turns with
  // the compute thread, 55 ms with the communication thread idle 23 ms of it, each gather
  // starting 0.03 ms after its step (docs/auto_parallel_measurements.md, "ZeRO across
  // three hosts, traced (session 45)"). Now the steps run back to back, the gathers queue
  // on the communication thread as their shards exist, and every gathered copy stays
  // live until the assigns, so no gather reuses (and waits for) another's memory.
  std::vector<DeferredAssign> deferred;
  for (const auto& [variable, gradient] : compilation->gradients) {
    Tensor param = graph->FindTensor(variable);
    Tensor grad = graph->FindTensor(gradient);
    const SourceLocation location = graph->tensor(param.id()).location;
    Graph::NameScope scope(*graph, absl::StrCat(variable, "_update"));
    const auto sharded = shards.find(variable);
    if (sharded != shards.end() && optimizer.zero_stage() < 3) {
      OF_ASSIGN_OR_RETURN(Tensor new_param, ShardedStep(*graph, optimizer, param, grad, sharded->second, location));
      deferred.push_back({variable, param, new_param, &sharded->second, location});
      continue;
    }
    // Otherwise the update runs in place on the variable as it is laid out: replicated,
    // or (stage 3) split, with the state following it (StateLike).
    if (optimizer.has_adamw()) {
      Tensor m = StateLike(*graph, param, "adam_m");
      Tensor v = StateLike(*graph, param, "adam_v");
      AdamWUpdate(param, grad, m, v, optimizer.adamw(), optimizer.schedule(), location);
    } else {
      Tensor momentum = StateLike(*graph, param, "momentum");
      SgdUpdate(param, grad, momentum, optimizer.sgd(), optimizer.schedule(), location);
    }
    OF_RETURN_IF_ERROR(graph->status());
  }
  std::vector<Tensor> gathered;
  for (const DeferredAssign& update : deferred) {
    Graph::NameScope scope(*graph, absl::StrCat(update.variable, "_update"));
    gathered.push_back(To(update.new_param, update.sharding->placement, update.sharding->layout, update.location));
  }
  for (size_t k = 0; k < deferred.size(); ++k) {
    Graph::NameScope scope(*graph, absl::StrCat(deferred[k].variable, "_update"));
    Assign(deferred[k].param, gathered[k], deferred[k].location);
  }
  OF_RETURN_IF_ERROR(graph->status());
  OF_ASSIGN_OR_RETURN(compilation->job, graph->Build());
  OF_RETURN_IF_ERROR(IndexLogicalGraph(compilation));
  return true;
}

}  // namespace oneflow
