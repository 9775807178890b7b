#include "sbp/boxing/axis_step.h"

#include <algorithm>
#include <vector>

#include "absl/strings/str_cat.h"
#include "oneflow_core/tensor_slice.h"
#include "sbp/boxing/conversion_list.h"
#include "sbp/boxing/step_compression.h"
#include "sbp/collective_cost.h"

namespace oneflow {
namespace boxing {
namespace {

// The bytes per rank that choose a dense collective's algorithm. A gradient all-reduce
// that rides in a bucket runs in the bucket's collective, whose algorithm is that of the
// bucket's size: across processes a bucket larger than kFlatOneRoundAllReduceBytes runs
// two rounds (reduce-scatter, all-gather), and a member adds 2(n-1)/n of its bytes to
// them, not the (n-1) x its bytes of the one round it would run alone. Priced as one
// round, a 12-64 KiB gradient over 3 hosts looked dearer as an all-reduce than as a
// bucketed reduce-scatter followed by its own all-gather, a call per tensor that no
// bucket shares (docs/gradient_buckets.md, "The all-gathers after a reduce-scatter").
int64_t AlgorithmBytes(const BoxingOptions& options, const Placement& placement, int64_t axis, BoxingKind kind,
                       int64_t group_bytes) {
  const bool bucketed_all_reduce = options.dense_in_bucket && kind == BoxingKind::kAllReduce;
  if (!bucketed_all_reduce || RouteOf(placement, axis, kind) != CollectiveRoute::kFlat) return group_bytes;
  // A limit of at most one round's bytes keeps every bucket to one round, where each
  // member adds (n-1) x its own bytes, as alone. Above it the bucket is taken to fill past
  // one round (the default limit is 25 MiB, the first bucket 1 MiB); a group whose
  // gradients all together stay under it is priced two rounds it does not run.
  if (options.bucket_bytes_limit <= kFlatOneRoundAllReduceBytes) return group_bytes;
  return std::max(group_bytes, options.bucket_bytes_limit);
}

}  // namespace

bool IsAxisStepValid(const NdSbp& from, int64_t axis, const Sbp& to, const Shape& hierarchy) {
  if (hierarchy.dim(axis) == 1) return true;  // One part of a split is the whole range.
  const Sbp& before = from.at(axis);
  for (int64_t inner = axis + 1; inner < from.size(); ++inner) {
    const Sbp& nested = from.at(inner);
    if (!nested.is_split() || hierarchy.dim(inner) == 1) continue;
    if ((before.is_split() && before.axis() == nested.axis()) ||
        (to.is_split() && to.axis() == nested.axis())) {
      return false;
    }
  }
  return true;
}

Shape GroupTensorShape(const Shape& logical, const NdSbp& from, int64_t axis,
                       const Shape& hierarchy) {
  std::vector<Sbp> others = from.sbps();
  others[axis] = Sbp::Broadcast();
  const std::vector<int64_t> first_group(hierarchy.rank(), 0);
  return DeviceSlice(logical, NdSbp(std::move(others)), hierarchy, first_group)->shape();
}

std::optional<BoxingStep> MakeAxisStep(const BoxingContext& context, const Placement& placement,
                                       const NdSbp& from, int64_t axis, const Sbp& to) {
  const Shape& hierarchy = placement.hierarchy();
  if (!IsAxisStepValid(from, axis, to, hierarchy)) return std::nullopt;
  std::vector<Sbp> after = from.sbps();
  after[axis] = to;

  BoxingStep step;
  step.hierarchy_axis = axis;
  step.src = from;
  step.dst = NdSbp(std::move(after));
  const Sbp& before = from.at(axis);
  if (hierarchy.dim(axis) == 1) {
    step.kind = BoxingKind::kIdentity;
    step.reason = absl::StrCat("hierarchy axis ", axis, " has one device, so ", before.ToString(),
                               " and ", to.ToString(), " hold the same data: relabel only");
    return step;
  }
  // P(max)/P(min) cannot be made (their identity is not the zeros local_partial and
  // split_to_partial write), only reduced or kept.
  if (to.is_partial() && to.reduce_op() != ReduceOp::kSum && before != to) return std::nullopt;
  // Nor is a partial sum made beside one: the order of the two reductions would be lost.
  if (to.is_partial() && !before.is_partial()) {
    for (const Sbp& other : from.sbps()) {
      if (other.is_partial() && other.reduce_op() != ReduceOp::kSum) return std::nullopt;
    }
  }
  const AxisConversion* conversion = FindAxisConversion(before, to);
  if (conversion == nullptr) return std::nullopt;

  const AxisGroup group{GroupTensorShape(context.logical, from, axis, hierarchy),
                        hierarchy.dim(axis)};
  const int64_t elements = conversion->WireElements(group, before, to);
  const bool crosses_nodes = AxisCrossesNodes(placement, axis);
  step.kind = conversion->kind();
  step.dense_bytes_per_device = elements * SizeOf(context.dtype);
  const int64_t group_bytes = group.tensor.NumElements() * SizeOf(context.dtype);
  const CollectiveCost dense =
      PriceDenseCollective(context.links, placement, axis, step.kind,
                           AlgorithmBytes(context.options, placement, axis, step.kind, group_bytes),
                           step.dense_bytes_per_device);
  step.dense_seconds = dense.seconds();
  step.bytes_per_device = step.dense_bytes_per_device;
  step.seconds = step.dense_seconds;
  step.reason = absl::StrCat(before.ToString(), " -> ", to.ToString(), " on hierarchy axis ", axis,
                             " (groups of ", group.size, " devices ",
                             crosses_nodes ? "across nodes" : "within a node", ", group tensor ",
                             group.tensor.ToString(), "): ", conversion->Algorithm());
  // Codecs reduce by summing: a maximum or minimum travels dense.
  if (before.is_partial() && before.reduce_op() != ReduceOp::kSum) return step;
  // The more compact codec auto did not use for this step's slot, if any (sbp/codec_accuracy.h).
  const bool reduces = step.kind == BoxingKind::kAllReduce || step.kind == BoxingKind::kReduceScatter;
  const BoxingOptions::AccuracyRefusal* refusal =
      step.kind == BoxingKind::kAllGather ? &context.options.gather_refused
      : !reduces                          ? nullptr
      : crosses_nodes                     ? &context.options.reduce_cross_node_refused
                                          : &context.options.reduce_in_node_refused;
  if (refusal != nullptr && !refusal->codec.compressed()) refusal = nullptr;
  const std::optional<PricedCompression> compressed =
      PriceCompression(context, placement, axis, step.kind, elements);
  // A reduction of a bucketed gradient shares its bucket's calls, dense or compressed
  // (the bucket's collective makes one call per phase and level for all its members,
  // kernels/compression/bucket_reduce_scatter.h, bucket_two_level.h): what the step adds
  // is its wire time (and codec passes), not its calls' latency.
  const bool in_bucket = context.options.dense_in_bucket && reduces;
  // Dense in a bucket, the step's calls are the bucket's: the boxing search charges it its
  // wire only (sbp_search.cc), as the runtime runs it. Charged its latency too, a bucketed
  // all-reduce priced as the bucket's two rounds (AlgorithmBytes) looked dearer than a
  // reduce-scatter (bucketed, one round) followed by an all-gather of its own, which no
  // bucket shares: the demo's 2 x 2 plan then gathered 11 gradients across nodes one by one.
  if (in_bucket) step.bucket_shared_latency_seconds = dense.latency_seconds;
  const double dense_marginal = in_bucket ? dense.wire_seconds : dense.seconds();
  const auto marginal_of = [in_bucket](const PricedCompression& priced) {
    return in_bucket ? priced.seconds() - priced.latency_seconds : priced.seconds();
  };
  // Automatic: compressed only where modelled at least kAutoMargin faster than dense;
  // otherwise always. The margin: a codec's rounding costs accuracy (activations leave
  // the one-device loss curve), so a saving within the model's own error (a 4-rank
  // activation reduce-scatter over 2 nodes priced 0.501 ms compressed vs 0.51 ms dense)
  // is not worth it; the bar for auto is "never slower than off beyond 3% noise".
  constexpr double kAutoMargin = 0.9;
  // The refusal is worth saying where the refused codec would have compressed the step.
  std::string accuracy_note;
  if (refusal != nullptr) {
    BoxingContext refused_context = context;
    BoxingOptions& refused_options = refused_context.options;
    if (step.kind == BoxingKind::kAllGather) {
      refused_options.gather = refusal->codec;
    } else if (crosses_nodes) {
      refused_options.reduce_cross_node = refusal->codec;
    } else {
      refused_options.reduce_in_node = refusal->codec;
    }
    const std::optional<PricedCompression> refused =
        PriceCompression(refused_context, placement, axis, step.kind, elements);
    if (refused.has_value() &&
        (!context.options.automatic || marginal_of(*refused) < kAutoMargin * dense_marginal)) {
      accuracy_note = refusal->note;
    }
  }
  if (!compressed.has_value()) {
    if (!accuracy_note.empty()) {
      step.compression_reason = accuracy_note;
      absl::StrAppend(&step.reason, "; ", step.compression_reason);
    }
    return step;
  }
  const double compressed_marginal = marginal_of(*compressed);
  const std::string dense_text =
      absl::StrCat("dense ", FormatMilliseconds(dense_marginal), " (", dense.text,
                   in_bucket ? absl::StrCat("; in a gradient bucket, its ", FormatMilliseconds(dense.latency_seconds),
                                            " of latency shared")
                             : std::string(),
                   ")");
  const std::string comparison =
      absl::StrCat(compressed->text,
                   in_bucket ? absl::StrCat("; in a gradient bucket ", FormatMilliseconds(compressed_marginal),
                                            ", its latency shared")
                             : std::string(),
                   " vs ", dense_text);
  const bool pays = compressed_marginal < kAutoMargin * dense_marginal;
  if (context.options.automatic && !pays) {
    step.compression_reason = absl::StrCat(comparison, ": dense");
  } else {
    step.compression = compressed->codec;
    step.cross_node_compression = compressed->cross_node;
    // Only auto's own choices: forced codecs and dense steps keep the chains they had,
    // so that their bucketed and unbucketed plans reduce the same steps (and train bit
    // for bit alike: tests:compressed_buckets_test).
    step.bucket_shared_latency_seconds =
        in_bucket && context.options.automatic ? compressed->latency_seconds : 0;
    step.bytes_per_device = compressed->wire_bytes;
    step.seconds = compressed->seconds();
    step.compression_reason =
        absl::StrCat(comparison, context.options.automatic ? ": compressed" : ": compressed as asked", ", saves ",
                     FormatMilliseconds(dense_marginal - compressed_marginal));
  }
  if (!accuracy_note.empty()) absl::StrAppend(&step.compression_reason, "; ", accuracy_note);
  absl::StrAppend(&step.reason, "; ", step.compression_reason);
  return step;
}

}  // namespace boxing
}  // namespace oneflow
