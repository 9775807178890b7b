#include "compiler/auto_parallel/stage_collectives.h"

#include <algorithm>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "compiler/passes/gradient_bucketing_pass.h"
#include "oneflow_core/status.h"
#include "sbp/boxing.h"

namespace oneflow::auto_parallel {
namespace {

// A plan's time, its steps dense, its codecs and the planner's comparisons.
PricedEdge Summarize(const BoxingPlan& plan) {
  PricedEdge edge;
  edge.seconds = plan.seconds;
  edge.steps = static_cast<int64_t>(plan.steps.size());
  std::vector<std::string> codecs, decisions;
  for (const BoxingStep& step : plan.steps) {
    edge.dense_seconds += step.dense_seconds;
    if (step.compression.compressed()) codecs.push_back(CompressionChoiceText(step.compression));
    if (!step.compression_reason.empty()) decisions.push_back(step.compression_reason);
  }
  edge.codec = absl::StrJoin(codecs, " + ");
  edge.decision = absl::StrJoin(decisions, "; ");
  return edge;
}

}  // namespace

StageCollectives::StageCollectives(const PriceOptions& options, const proto::AutoParallelLayout& layout,
                                   EdgePriceCache* cache)
    : options_(options), layout_(layout), links_(LinkModelOf(options.cluster)), cache_(cache) {}

std::vector<proto::AutoParallelEdge> StageCollectives::TakeEdges() { return std::move(edges_); }

// Stage 0's placement as ParallelLayout builds it; the stages are copies of it shifted
// by dp x tp devices, and the collectives' routes depend on the first one only when
// the stage size divides the node or the node divides the stage (checked per stage).
absl::Status StageCollectives::BuildStages() {
  OF_ASSIGN_OR_RETURN(const Placement all, Placement::Grid(DeviceType::kCpu, options_.cluster.num_nodes(),
                                                           options_.cluster.devices_per_node()));
  const int64_t per_stage = layout_.dp() * layout_.tp();
  Shape hierarchy = layout_.dp() > 1 && layout_.tp() > 1 ? Shape{layout_.dp(), layout_.tp()} : Shape{per_stage};
  for (int64_t s = 0; s < layout_.pp(); ++s) {
    std::vector<DeviceId> devices(all.devices().begin() + s * per_stage, all.devices().begin() + (s + 1) * per_stage);
    OF_ASSIGN_OR_RETURN(Placement placement, Placement::Create(DeviceType::kCpu, std::move(devices), hierarchy));
    stage_placements_.push_back(std::move(placement));
  }
  return absl::OkStatus();
}

// Whether stage `stage`'s data-parallel groups span nodes (their collectives are calls
// between processes over the inter-node link): the devices of one dp group, tp apart in
// the stage's placement (tp innermost), are not all on one node.
bool StageCollectives::DpCrossesNodes(int64_t stage) const {
  if (DpAxis() < 0) return false;
  const auto& devices = stage_placements_[stage].devices();
  for (int64_t d = layout_.tp(); d < static_cast<int64_t>(devices.size()); d += layout_.tp()) {
    if (devices[d].node != devices[0].node) return true;
  }
  return false;
}
bool StageCollectives::TpCrossesNodes(int64_t stage) const {
  if (TpAxis() < 0) return false;
  const auto& devices = stage_placements_[stage].devices();
  for (int64_t d = 1; d < layout_.tp() && d < static_cast<int64_t>(devices.size()); ++d) {
    if (devices[d].node != devices[0].node) return true;
  }
  return false;
}
// Whether device i of stage a and device i of stage b are on different nodes for some i.
bool StageCollectives::StagesCrossNodes(int64_t a, int64_t b) const {
  const auto& first = stage_placements_[a].devices();
  const auto& second = stage_placements_[b].devices();
  for (size_t i = 0; i < first.size() && i < second.size(); ++i) {
    if (first[i].node != second[i].node) return true;
  }
  return false;
}

bool StageCollectives::CutCrossesNodes(int64_t stage) const {
  const DeviceId& before = stage_placements_[stage - 1].devices().back();
  const DeviceId& after = stage_placements_[stage].devices().front();
  return before.node != after.node;
}

// `calls` collectives moving `group_bytes` in all: the bytes priced once, the latency of
// every call (the runtime issues one per variable or bucket).
double StageCollectives::Calls(const CollectiveCost& cost, int64_t calls) const {
  return cost.seconds() + static_cast<double>(std::max<int64_t>(0, calls - 1)) * cost.latency_seconds +
         static_cast<double>(std::max<int64_t>(1, calls)) * options_.collective_call_seconds;
}

double StageCollectives::AllReduceSeconds(int64_t stage, int64_t axis, int64_t members, double group_bytes,
                                          int64_t calls) const {
  if (axis < 0 || group_bytes <= 0) return 0;
  const int64_t bytes = static_cast<int64_t>(group_bytes);
  const int64_t wire = static_cast<int64_t>(2.0 * (members - 1) / members * group_bytes);
  return Calls(PriceDenseCollective(links_, stage_placements_[stage], axis, BoxingKind::kAllReduce, bytes, wire),
               calls);
}

double StageCollectives::HalfSeconds(int64_t stage, BoxingKind kind, double group_bytes, int64_t calls) const {
  if (DpAxis() < 0 || group_bytes <= 0) return 0;
  const int64_t bytes = static_cast<int64_t>(group_bytes);
  const int64_t wire = static_cast<int64_t>(static_cast<double>(layout_.dp() - 1) / layout_.dp() * group_bytes);
  return Calls(PriceDenseCollective(links_, stage_placements_[stage], DpAxis(), kind, bytes, wire), calls);
}

// One tensor-parallel all-reduce of `group_bytes` (one micro-batch of one dp group):
// dense without compression; else as PlanBoxing plans P -> B over the tp axis of the
// stage's placement under the activation codecs of the policy, which compresses only
// where the codec's time and the link model say it pays. Recorded when asked.
absl::StatusOr<double> StageCollectives::TpAllReduceSeconds(int64_t stage, double group_bytes, const std::string& unit,
                                                            const std::string& tensor) {
  return TpCollectiveSeconds(stage, BoxingKind::kAllReduce, TensorRole::kActivation, group_bytes, unit, tensor);
}

// One tensor-parallel collective of `kind` (all-reduce, reduce-scatter, all-gather or
// all-to-all) of a tensor with `role`, `group_bytes` per member: dense without
// compression; else as PlanBoxing plans it over the tp axis of the stage's placement
// under the codecs the policy gives the role. Recorded when asked.
absl::StatusOr<double> StageCollectives::TpCollectiveSeconds(int64_t stage, BoxingKind kind, TensorRole role,
                                                             double group_bytes, const std::string& unit,
                                                             const std::string& tensor) {
  if (TpAxis() < 0 || group_bytes <= 0) return 0.0;
  const double members = static_cast<double>(layout_.tp());
  if (options_.compression.mode == CompressionMode::kOff || kind == BoxingKind::kAllToAll) {
    if (kind == BoxingKind::kAllReduce) return AllReduceSeconds(stage, TpAxis(), layout_.tp(), group_bytes);
    // What the busiest member receives (sbp/collective_cost.h): (n-1)/n T for a gather
    // or a reduce-scatter, (n-1)/n^2 T for an all-to-all.
    const double share =
        kind == BoxingKind::kAllToAll ? (members - 1) / (members * members) : (members - 1) / members;
    return Calls(PriceDenseCollective(links_, stage_placements_[stage], TpAxis(), kind,
                                      static_cast<int64_t>(group_bytes), static_cast<int64_t>(share * group_bytes)),
                 1);
  }
  const Placement& placement = stage_placements_[stage];
  // The group's tensor as f32 elements (other axes broadcast: the dp group's rows).
  const int64_t elements = std::max<int64_t>(1, static_cast<int64_t>(group_bytes / SizeOf(DType::kF32)));
  std::string key;
  const PricedEdge* priced = nullptr;
  PricedEdge planned;
  if (cache_ != nullptr) {
    key = EdgePriceCache::Key(placement.ToString(), TpAxis(), elements);
    if (kind != BoxingKind::kAllReduce || role != TensorRole::kActivation) {
      absl::StrAppend(&key, "|", BoxingKindName(kind), "|", TensorRoleName(role));
    }
    priced = cache_->Find(key);
  }
  if (priced == nullptr) {
    OF_ASSIGN_OR_RETURN(planned, PlanTpCollective(placement, kind, role, elements));
    priced = &planned;
    if (cache_ != nullptr) priced = &cache_->Insert(std::move(key), std::move(planned));
  }
  const double calls = static_cast<double>(priced->steps) * options_.collective_call_seconds;
  if (options_.record_edges) {
    proto::AutoParallelEdge edge;
    edge.set_unit(unit);
    edge.set_tensor(tensor);
    edge.set_dense_seconds(priced->dense_seconds + calls);
    edge.set_seconds(priced->seconds + calls);
    edge.set_codec(priced->codec);
    edge.set_decision(priced->decision);
    edges_.push_back(std::move(edge));
  }
  return priced->seconds + calls;
}

// P -> B (all-reduce), P -> S(0) (reduce-scatter) or S(0) -> B (all-gather) over the
// tp axis of `placement` as PlanBoxing plans it under the codecs the policy gives
// `role`.
absl::StatusOr<PricedEdge> StageCollectives::PlanTpCollective(const Placement& placement, BoxingKind kind,
                                                              TensorRole role, int64_t elements) const {
  std::vector<Sbp> before(placement.hierarchy().rank(), Sbp::Broadcast());
  std::vector<Sbp> after(placement.hierarchy().rank(), Sbp::Broadcast());
  before[TpAxis()] = kind == BoxingKind::kAllGather ? Sbp::Split(0) : Sbp::Partial();
  if (kind == BoxingKind::kReduceScatter) after[TpAxis()] = Sbp::Split(0);
  BoxingOptions boxing = BoxingOptionsFor(options_.compression, role, std::nullopt, options_.training);
  // A tp reduction of the kGradient role is a replicated variable's gradient.
  ApplyEncoderSettings(options_.encoders, role == TensorRole::kGradient, &boxing);
  OF_ASSIGN_OR_RETURN(const BoxingPlan plan,
                      PlanBoxing(Shape{elements}, DType::kF32, NdSbp(std::move(before)), placement,
                                 NdSbp(std::move(after)), placement, links_, boxing));
  return Summarize(plan);
}

// One data-parallel collective of stage `stage`'s `tensors` variables (`bytes` of them
// on one device), run `repeats` times per iteration in `calls` collective calls each
// (buckets: fewer calls than variables), `dense` its dense price. With --compression
// other than off: PlanBoxing plans it for one variable of the mean size on the dp axis
// of the stage's placement, with the codecs BoxingOptionsFor gives the role (a gradient's
// reduction, P -> B or P -> S(0), dense_in_bucket when gradients are bucketed as
// compilation.cc sets it; a weight's gather, S(0) -> B) and the comparison the compiled
// plan makes. Where it compresses, the collective costs every variable's compressed
// collective, less the latency of the calls buckets share, plus the call cost of each
// call; where it stays dense, `dense`. Recorded (per iteration) when asked.
absl::StatusOr<double> StageCollectives::DataParallelCollective(int64_t stage, BoxingKind kind, double bytes,
                                                                int64_t tensors, int64_t calls, int64_t repeats,
                                                                double dense) {
  if (options_.compression.mode == CompressionMode::kOff || DpAxis() < 0 || bytes <= 0 || tensors < 1) {
    return dense;
  }
  const Placement& placement = stage_placements_[stage];
  // One variable of the mean size, as f32 elements, whole rows for each member of a split.
  int64_t elements = std::max<int64_t>(1, static_cast<int64_t>(bytes / static_cast<double>(tensors) /
                                                               static_cast<double>(SizeOf(DType::kF32))));
  if (kind != BoxingKind::kAllReduce) elements = (elements + layout_.dp() - 1) / layout_.dp() * layout_.dp();
  const std::string role = kind == BoxingKind::kAllGather ? "weight" : "gradient";
  std::string key;
  const PricedEdge* priced = nullptr;
  PricedEdge planned;
  if (cache_ != nullptr) {
    key = EdgePriceCache::Key(absl::StrCat(role, " ", BoxingKindName(kind), " ", placement.ToString()), DpAxis(),
                              elements);
    priced = cache_->Find(key);
  }
  if (priced == nullptr) {
    OF_ASSIGN_OR_RETURN(planned, PlanDataParallel(placement, kind, elements));
    priced = &planned;
    if (cache_ != nullptr) priced = &cache_->Insert(std::move(key), std::move(planned));
  }
  double seconds = dense;
  if (!priced->codec.empty()) {
    // A bucketed variable saves the latency of its own calls: the bucket's compressed
    // collective makes one call per phase for all its members
    // (kernels/compression/compressed_collectives.h, CompressedBucketAllReduce), so each
    // member adds its codec passes and wire time only. That latency is the compressed
    // plan's (a compressed all-reduce: a reduce-scatter's call and an all-gather's), not
    // the dense collective's: the dense all-reduce of one mean-sized variable is one
    // round (every rank sends to every peer), and subtracting that instead charged every
    // member of a bucket one round more than the runtime makes (3 emulated hosts at 1
    // Gbit/s, the bench's gpt: 64 gradients in 2 buckets priced 13.6 ms where the buckets'
    // calls ran 9.5 ms from their last arrival, traced; docs/auto_parallel_measurements.md,
    // "Three hosts on two cores, re-priced (session 46)"). Never more than a call's whole
    // price: every call still costs at least one variable's.
    const double shared_latency = std::min(priced->seconds, priced->bucket_latency_seconds);
    seconds = static_cast<double>(repeats) *
              (static_cast<double>(tensors) * priced->seconds -
               static_cast<double>(std::max<int64_t>(0, tensors - calls)) * shared_latency +
               static_cast<double>(calls) * options_.collective_call_seconds);
  }
  if (options_.record_edges) {
    proto::AutoParallelEdge edge;
    edge.set_unit(absl::StrCat("stage ", stage));
    edge.set_tensor(absl::StrCat(repeats > 1 ? absl::StrCat(repeats, " x ") : std::string(), tensors,
                                 role == "weight" ? " weights (data-parallel " : " gradients (data-parallel ",
                                 BoxingKindName(kind), " in ", calls, " calls, ", elements,
                                 " elements a variable on average)"));
    edge.set_dense_seconds(dense);
    edge.set_seconds(seconds);
    edge.set_codec(priced->codec);
    edge.set_decision(priced->decision);
    edge.set_per_iteration(true);
    edges_.push_back(std::move(edge));
  }
  return seconds;
}

// `kind` over the dp axis of `placement` for a variable of `elements` f32 as PlanBoxing
// plans it under the policy's codecs for its role.
absl::StatusOr<PricedEdge> StageCollectives::PlanDataParallel(const Placement& placement, BoxingKind kind,
                                                              int64_t elements) const {
  const int64_t rank = placement.hierarchy().rank();
  std::vector<Sbp> before(rank, Sbp::Broadcast());
  std::vector<Sbp> after(rank, Sbp::Broadcast());
  TensorRole role = TensorRole::kGradient;
  if (kind == BoxingKind::kAllGather) {
    before[DpAxis()] = Sbp::Split(0);
    role = TensorRole::kWeight;
  } else {
    before[DpAxis()] = Sbp::Partial();
    if (kind == BoxingKind::kReduceScatter) after[DpAxis()] = Sbp::Split(0);
  }
  BoxingOptions boxing = BoxingOptionsFor(options_.compression, role, std::nullopt, options_.training);
  ApplyEncoderSettings(options_.encoders, role == TensorRole::kGradient, &boxing);
  // compilation.cc BoxingOptionsOf: a dense gradient all-reduce would ride in a bucket.
  boxing.dense_in_bucket = role == TensorRole::kGradient && options_.bucket_mb > 0;
  boxing.bucket_bytes_limit = boxing.dense_in_bucket ? BucketBytesLimit(options_.bucket_mb) : 0;
  OF_ASSIGN_OR_RETURN(const BoxingPlan plan, PlanBoxing(Shape{elements}, DType::kF32, NdSbp(std::move(before)),
                                                        placement, NdSbp(std::move(after)), placement, links_, boxing));
  PricedEdge edge = Summarize(plan);
  // The calls of the plan's reduction steps, which ride the gradient bucket: a compressed
  // reduction makes one call per phase (reduce-scatter; all-reduce: reduce-scatter, then
  // all-gather of the reduced shards), each a dense call's latency on the group; a dense
  // one its own collective's. A gathering step after them (a reduce-scatter + all-gather
  // chain) is a call per variable.
  const int64_t group_bytes = elements * SizeOf(DType::kF32);
  const auto latency_of = [&](int64_t axis, BoxingKind phase) {
    return PriceDenseCollective(links_, placement, axis, phase, group_bytes, group_bytes).latency_seconds;
  };
  for (const BoxingStep& step : plan.steps) {
    if (step.kind != BoxingKind::kAllReduce && step.kind != BoxingKind::kReduceScatter) continue;
    if (!step.compression.compressed()) {
      edge.bucket_latency_seconds += latency_of(step.hierarchy_axis, step.kind);
      continue;
    }
    edge.bucket_latency_seconds += latency_of(step.hierarchy_axis, BoxingKind::kReduceScatter);
    if (step.kind == BoxingKind::kAllReduce) {
      edge.bucket_latency_seconds += latency_of(step.hierarchy_axis, BoxingKind::kAllGather);
    }
  }
  return edge;
}

}  // namespace oneflow::auto_parallel
