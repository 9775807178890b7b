#include "compiler/passes/gradient_bucketing_pass.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <string>
#include <tuple>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "compiler/passes/bucket_cap.h"
#include "oneflow_core/status.h"
#include "oneflow_core/tensor_slice.h"

namespace oneflow {
namespace {

// An all_reduce or reduce_scatter step that may join a bucket.
struct Candidate {
  int64_t boxing = 0;
  int64_t tensor = 0;
  BoxingKind kind = BoxingKind::kAllReduce;
  // The op producing its input (-1: a variable or data source, ready before every op),
  // and the op before which lowering emits the rest of its boxing: the bucket must lie
  // between them.
  int64_t ready_op = -1;
  int64_t deadline_op = 0;
  // The op producing the gradient itself: among candidates ready after the same op (the
  // members of one bucket of the level before), the order backward produced them.
  int64_t produced_op = -1;
  // All-reduce: the member's slice on each rank of its placement. Reduce-scatter: its
  // largest part (destination slice) on any rank, for every rank: each rank's chunk of
  // the bucket reserves that much for the member, so all chunks share one layout.
  std::vector<int64_t> bytes_per_rank;
};

// A bucket being filled.
struct OpenBucket {
  // Chunks of the register: 1 for an all-reduce; the group size for a reduce-scatter,
  // whose register holds one chunk per rank, each laid out alike.
  int64_t chunks = 1;
  std::vector<const Candidate*> members;
  std::vector<int64_t> end_per_rank;  // Bytes packed so far, per rank (in one chunk).
  int64_t deadline_op = INT64_MAX;
  absl::flat_hash_set<int64_t> tensors;

  explicit OpenBucket(int64_t chunks) : chunks(chunks) {}

  bool Fits(const Candidate& candidate, int64_t limit) const {
    if (members.empty()) return true;
    if (candidate.ready_op >= deadline_op || tensors.contains(candidate.tensor)) return false;
    for (size_t r = 0; r < end_per_rank.size(); ++r) {
      if (chunks * ChunkBytes(BucketMemberOffset(end_per_rank[r]) + candidate.bytes_per_rank[r]) > limit) {
        return false;
      }
    }
    return true;
  }
  // The register's bytes so far, on the rank where it is largest.
  int64_t Bytes() const {
    return end_per_rank.empty() ? 0 : chunks * ChunkBytes(*std::max_element(end_per_rank.begin(), end_per_rank.end()));
  }
  // A reduce-scatter's chunks start at 64-byte aligned offsets, as its members do.
  int64_t ChunkBytes(int64_t end) const { return chunks == 1 ? end : BucketMemberOffset(end); }
  void Add(const Candidate& candidate) {
    if (members.empty()) end_per_rank.assign(candidate.bytes_per_rank.size(), 0);
    members.push_back(&candidate);
    for (size_t r = 0; r < end_per_rank.size(); ++r) {
      end_per_rank[r] = BucketMemberOffset(end_per_rank[r]) + candidate.bytes_per_rank[r];
    }
    deadline_op = std::min(deadline_op, candidate.deadline_op);
    tensors.insert(candidate.tensor);
  }
};

// Steps with the same key can share one collective: the same groups, the same kind of
// collective and the same format on the wire (every candidate is f32; a compressed one
// also needs the same codec and the same error-feedback marking, which plan emission
// gives the reductions of variables' gradients only).
std::string GroupKey(const Boxing& boxing, int64_t placement, size_t step, bool error_feedback) {
  const BoxingStep& this_step = boxing.plan.steps[step];
  std::string key = absl::StrCat(placement, "/", this_step.hierarchy_axis, "/", BoxingKindName(this_step.kind));
  if (this_step.compression.compressed()) {
    absl::StrAppend(&key, "/", CompressionChoiceText(this_step.compression), error_feedback ? "/ef" : "");
  }
  if (this_step.cross_node_compression.compressed()) {
    absl::StrAppend(&key, "/two-level/", CompressionChoiceText(this_step.cross_node_compression));
  }
  return key;
}

}  // namespace

int64_t FirstBucketBytesLimit(int64_t limit) { return std::min(limit, kFirstBucketBytes); }

int64_t BucketBytesLimit(double bucket_mb) {
  return bucket_mb > 0 ? static_cast<int64_t>(std::llround(bucket_mb * 1024.0 * 1024.0)) : 0;
}

int64_t LastBucketedStep(const Compilation& compilation, int64_t boxing) {
  if (boxing < 0 || boxing >= static_cast<int64_t>(compilation.boxing_step_bucket.size())) return -1;
  const std::vector<int64_t>& steps = compilation.boxing_step_bucket[boxing];
  for (int64_t s = static_cast<int64_t>(steps.size()) - 1; s >= 0; --s) {
    if (steps[s] >= 0) return s;
  }
  return -1;
}

bool IsEarlyStep(const Compilation& compilation, int64_t boxing, int64_t step) {
  const int64_t bucket = BucketOf(compilation, boxing, step);
  return bucket == kAloneEarly || (bucket < 0 && step < LastBucketedStep(compilation, boxing));
}

std::vector<std::vector<int64_t>> EarlyBoxingsAfterOps(const Compilation& compilation) {
  std::vector<std::vector<int64_t>> after(compilation.graph.ops.size() + 1);
  for (const Boxing& boxing : compilation.boxings) {
    if (!IsEarlyStep(compilation, boxing.id, 0)) continue;
    const LogicalTensor& tensor = compilation.graph.tensors[boxing.tensor];
    const int64_t producer = tensor.kind == LogicalTensor::Kind::kOpOutput ? tensor.producer : -1;
    after[producer + 1].push_back(boxing.id);
  }
  return after;
}

int64_t EarlyStepsEnd(const Compilation& compilation, int64_t boxing, int64_t from) {
  int64_t s = from;
  while (IsEarlyStep(compilation, boxing, s)) ++s;
  return s;
}

absl::StatusOr<bool> GradientBucketingPass::Run(Compilation* compilation) {
  const LogicalGraph& graph = compilation->graph;
  compilation->buckets.clear();
  compilation->boxing_step_bucket.assign(compilation->boxings.size(), {});
  size_t most_steps = 0;
  for (const Boxing& boxing : compilation->boxings) {
    compilation->boxing_step_bucket[boxing.id].assign(boxing.plan.steps.size(), -1);
    most_steps = std::max(most_steps, boxing.plan.steps.size());
  }
  const int64_t limit = BucketBytesLimit(compilation->options.bucket_mb);
  if (limit <= 0) return false;
  const std::vector<int64_t> emitted_before = BoxingEmissionOps(*compilation);

  // Which boxings reduce a gradient (or the loss for the sink) and may have steps in
  // buckets, and the op after which each one's next step may run: its producer, then,
  // level by level, the bucket that ran its previous step (a step running on its own
  // before a bucketed one runs right after its predecessor, so it keeps the point).
  bool alone_early = false;
  std::vector<bool> reduces(compilation->boxings.size(), false);
  std::vector<int64_t> ready_after(compilation->boxings.size(), -1);
  for (const Boxing& boxing : compilation->boxings) {
    if (boxing.plan.steps.empty()) continue;
    const LogicalTensor& tensor = graph.tensors[boxing.tensor];
    // The loss's reduction for the sink may wait for the gradients: nothing else reads
    // it, and one collective fewer per iteration is what buckets are for. Not with
    // micro-batches: the loss is then reduced once per micro-batch, the accumulated
    // gradients once per iteration.
    const bool loss_for_sink = boxing.tensor == graph.loss && boxing.first_consumer < 0 &&
                               compilation->job.micro_batches() <= 1;
    // With micro-batches that per-micro-batch reduction runs early, right after the loss
    // exists (kAloneEarly): in its consumer's place (none: the program's end) it ran after
    // the micro-batch's backward, and the iteration's gradient buckets, behind it in the
    // collective order, waited for the end of backward with it.
    if (boxing.tensor == graph.loss && boxing.first_consumer < 0 && compilation->job.micro_batches() > 1) {
      compilation->boxing_step_bucket[boxing.id].assign(boxing.plan.steps.size(), kAloneEarly);
      alone_early = true;
      continue;
    }
    if (!(tensor.is_gradient && boxing.first_consumer >= 0) && !loss_for_sink) continue;
    if (tensor.type.dtype != DType::kF32) continue;
    if (boxing.sparse.has_value()) continue;  // Its own row-sparse collective.
    reduces[boxing.id] = true;
    ready_after[boxing.id] = tensor.kind == LogicalTensor::Kind::kOpOutput ? tensor.producer : -1;
  }

  std::vector<Candidate> candidates;
  std::vector<GradientBucket> buckets;
  BucketCap cap;  // The open group's.
  auto close = [&](OpenBucket& open, int64_t step) {
    if (open.members.size() == 1) {
      // No bucket, but the step still runs where the bucket would have: as soon as its
      // input exists, in backward order with the buckets of its group.
      compilation->boxing_step_bucket[open.members.front()->boxing][step] = kAloneEarly;
      alone_early = true;
    }
    if (open.members.size() >= 2) {
      GradientBucket bucket;
      bucket.limit_bytes = cap.bytes;
      bucket.limit_reason = cap.reason;
      const Candidate& first = *open.members.front();
      const Boxing& boxing = compilation->boxings[first.boxing];
      bucket.placement = graph.tensors[boxing.tensor].placement;
      bucket.hierarchy_axis = boxing.plan.steps[step].hierarchy_axis;
      bucket.level = step;
      bucket.kind = first.kind;
      int64_t end = 0;
      for (const Candidate* member : open.members) {
        bucket.members.push_back({member->boxing, step});
        bucket.member_bytes.push_back(
            *std::max_element(member->bytes_per_rank.begin(), member->bytes_per_rank.end()));
        bucket.after_op = std::max(bucket.after_op, member->ready_op);
        if (bucket.kind == BoxingKind::kReduceScatter) {
          bucket.part_offsets.push_back(BucketMemberOffset(end));
          end = bucket.part_offsets.back() + bucket.member_bytes.back();
        }
      }
      const int64_t largest = *std::max_element(open.end_per_rank.begin(), open.end_per_rank.end());
      if (bucket.kind == BoxingKind::kReduceScatter) {
        bucket.chunk_bytes = open.ChunkBytes(largest);
        bucket.size_bytes = open.chunks * bucket.chunk_bytes;
      } else {
        bucket.size_bytes = largest;
      }
      buckets.push_back(std::move(bucket));
    }
    open = OpenBucket(open.chunks);
  };
  // Level by level: step `step` of each reducing boxing whose earlier steps all reduced
  // (so its input is a partial sum the bucket may add up).
  for (size_t step = 0; step < most_steps; ++step) {
    candidates.clear();
    candidates.reserve(compilation->boxings.size());
    // Candidates, grouped by what must be common to share a collective (an ordered map:
    // the same job gives the same plan).
    std::map<std::string, std::vector<size_t>> groups;
    for (const Boxing& boxing : compilation->boxings) {
      if (!reduces[boxing.id] || step >= boxing.plan.steps.size()) continue;
      const BoxingStep& this_step = boxing.plan.steps[step];
      if (this_step.kind != BoxingKind::kAllReduce && this_step.kind != BoxingKind::kReduceScatter) {
        reduces[boxing.id] = false;  // The chain of reductions ends here.
        continue;
      }
      // A compressed reduction joins a bucket of its codecs (both levels' for a two-level
      // step): the bucket's collective (CompressedBucketAllReduce,
      // CompressedBucketReduceScatter, their two-level forms in bucket_two_level.h)
      // encodes each member's chunks by themselves, so no codec group spans two members
      // and each gets the bits of its own step.
      const LogicalTensor& tensor = graph.tensors[boxing.tensor];
      Candidate candidate;
      candidate.boxing = boxing.id;
      candidate.tensor = boxing.tensor;
      candidate.kind = this_step.kind;
      candidate.ready_op = ready_after[boxing.id];
      candidate.deadline_op = emitted_before[boxing.id];
      candidate.produced_op = tensor.kind == LogicalTensor::Kind::kOpOutput ? tensor.producer : -1;
      const Placement& where = graph.placements[tensor.placement];
      for (int64_t rank = 0; rank < where.num_devices(); ++rank) {
        OF_ASSIGN_OR_RETURN(TensorSlice slice, DeviceSlice(tensor.type.shape, this_step.dst, where, rank));
        candidate.bytes_per_rank.push_back(slice.NumElements() * SizeOf(tensor.type.dtype));
      }
      if (candidate.kind == BoxingKind::kReduceScatter) {
        // Every chunk reserves the largest part (an uneven split's first ranks hold more).
        const int64_t part = *std::max_element(candidate.bytes_per_rank.begin(), candidate.bytes_per_rank.end());
        std::fill(candidate.bytes_per_rank.begin(), candidate.bytes_per_rank.end(), part);
      }
      groups[GroupKey(boxing, tensor.placement, step, compilation->options.error_feedback && tensor.is_gradient)]
          .push_back(candidates.size());
      candidates.push_back(std::move(candidate));
    }
    const size_t first_new = buckets.size();
    for (auto& [key, members] : groups) {
      std::stable_sort(members.begin(), members.end(), [&](size_t a, size_t b) {
        return std::tie(candidates[a].ready_op, candidates[a].produced_op, candidates[a].boxing) <
               std::tie(candidates[b].ready_op, candidates[b].produced_op, candidates[b].boxing);
      });
      const Candidate& first = candidates[members.front()];
      const Boxing& first_boxing = compilation->boxings[first.boxing];
      const int64_t axis = first_boxing.plan.steps[step].hierarchy_axis;
      const Placement& where = graph.placements[graph.tensors[first_boxing.tensor].placement];
      // A member's bytes in a bucket register: its per-device slice, or for a reduce-scatter
      // one part per rank.
      const int64_t chunks = first.kind == BoxingKind::kReduceScatter ? where.hierarchy().dim(axis) : 1;
      auto register_bytes = [&](size_t c) {
        const std::vector<int64_t>& per_rank = candidates[c].bytes_per_rank;
        return chunks * *std::max_element(per_rank.begin(), per_rank.end());
      };
      BucketGroupBytes group;
      for (size_t c : members) group.total += register_bytes(c);
      // A group that crosses nodes is capped by its link rate and its own bytes unless the
      // user gave the limit (bucket_cap.h): its buckets then start early in backward, and
      // the last one, exposed after backward, is small.
      cap = BucketCapFor(compilation->links, where, axis, first.kind, limit, compilation->options.bucket_mb_given,
                         group);
      // An in-node step of a 2-D chain whose next step crosses nodes: its buckets feed that
      // step's, which may start only when one has run, so they take the next step's cap
      // (in this level's bytes: a reduce-scatter's register is group size x what it
      // hands on), and the first cross-node bucket starts early in backward too.
      if (!compilation->options.bucket_mb_given && !AxisCrossesNodes(where, axis)) {
        const int64_t hands_on = chunks;
        // The next step's group: what these members hand on to a node-crossing reduction.
        auto node_crossing_next = [&](size_t c) -> const BoxingStep* {
          const BoxingPlan& chain = compilation->boxings[candidates[c].boxing].plan;
          if (step + 1 >= chain.steps.size()) return nullptr;
          const BoxingStep& next = chain.steps[step + 1];
          if (next.kind != BoxingKind::kAllReduce && next.kind != BoxingKind::kReduceScatter) return nullptr;
          return AxisCrossesNodes(where, next.hierarchy_axis) ? &next : nullptr;
        };
        BucketGroupBytes handed_on;
        for (size_t c : members) {
          if (node_crossing_next(c) == nullptr) continue;
          handed_on.total += register_bytes(c) / hands_on;
        }
        for (size_t c : members) {
          const BoxingStep* next_step = node_crossing_next(c);
          if (next_step == nullptr) continue;
          const BoxingStep& next = *next_step;
          const BucketCap next_cap = BucketCapFor(compilation->links, where, next.hierarchy_axis, next.kind, limit,
                                                  /*given=*/false, handed_on);
          if (next_cap.bytes * hands_on < cap.bytes) {
            cap = {next_cap.bytes * hands_on,
                   absl::StrCat("the node-crossing step after it (axis ", next.hierarchy_axis, ") ",
                                next_cap.reason, hands_on > 1 ? absl::StrCat("; x ", hands_on, " ranks") : "")};
          }
        }
      }
      // The group's first bucket (the first gradients backward produces) is smaller, as in
      // DDP: it launches early, while most of backward is still to run.
      int64_t bucket_limit = FirstBucketBytesLimit(cap.bytes);
      OpenBucket open(chunks);
      for (size_t c : members) {
        // A later level's members are ready in groups (each bucket of the level before
        // hands on its members at once). One ready later than the open bucket's members
        // would hold them back until its own group is ready: an in-node bucket of small
        // gradients that spans all of backward (gpt_dp3tp2's layer norms) kept ten block
        // gradients, ready mid-backward, off the link until backward ended. So an open
        // bucket already half full closes instead (a smaller one takes the later group:
        // a call saved is not worth the wait).
        const bool waits_for_later_input = step > 0 && !open.members.empty() &&
                                           candidates[c].ready_op > open.members.back()->ready_op &&
                                           2 * open.Bytes() >= bucket_limit;
        if (waits_for_later_input || !open.Fits(candidates[c], bucket_limit)) {
          close(open, static_cast<int64_t>(step));
          bucket_limit = cap.bytes;
        }
        open.Add(candidates[c]);
      }
      close(open, static_cast<int64_t>(step));
    }
    // The members' next steps may run once this level's buckets have.
    for (size_t k = first_new; k < buckets.size(); ++k) {
      for (const auto& [b, s] : buckets[k].members) {
        ready_after[b] = buckets[k].after_op;
        compilation->boxing_step_bucket[b][s] = static_cast<int64_t>(k);  // Renumbered below.
      }
    }
  }
  // Ids in emission order: lowering and collective_ordering walk them by id. Of two
  // buckets after the same op, the lower level first: its views are the next one's inputs.
  std::vector<size_t> order(buckets.size());
  for (size_t k = 0; k < order.size(); ++k) order[k] = k;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return std::tie(buckets[a].after_op, buckets[a].level, buckets[a].members.front().first) <
           std::tie(buckets[b].after_op, buckets[b].level, buckets[b].members.front().first);
  });
  std::vector<GradientBucket> sorted;
  sorted.reserve(buckets.size());
  for (size_t k : order) sorted.push_back(std::move(buckets[k]));
  for (size_t k = 0; k < sorted.size(); ++k) {
    sorted[k].id = static_cast<int64_t>(k);
    for (const auto& [b, s] : sorted[k].members) compilation->boxing_step_bucket[b][s] = sorted[k].id;
  }
  compilation->buckets = std::move(sorted);
  return !compilation->buckets.empty() || alone_early;
}

}  // namespace oneflow
