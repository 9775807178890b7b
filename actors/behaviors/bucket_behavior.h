// Behavior of a gradient bucket's actor (ActorDef.bucket_id, Plan.buckets;
// compiler/passes/gradient_bucketing_pass.h): each act packs the members' inputs into
// the bucket register, at the offsets of the members' views, zeroes the padding between
// them, and all-reduces the whole register in place (one dense f32 call) through the
// communicator of this device's group. The members' consumers then read their views.
// An input that memory planning placed at its member's view (gradients as bucket views,
// memory_planning_pass.cc) is not copied: its producer already wrote it there.
// A bucket with a codec (GradientBucketDef.compression: int8, fp8, int4, bf16; one-level
// buckets) reduces the members in place with CompressedBucketAllReduce
// (kernels/compression/compressed_collectives.h) or, for a reduce-scatter bucket,
// CompressedBucketReduceScatter (bucket_reduce_scatter.h): each member encoded by itself with its
// own step's stochastic-rounding seed and, with error feedback, its own residual, so its
// view holds the bits its own compressed step would have produced. The residuals are
// checkpointed under each member's own step's key (ResidualKey), so a checkpoint of a
// plan without buckets resumes into one with them and the converse; the compression
// meter records each member's traffic (bytes and error) under its own step's edge.
#ifndef ACTORS_BEHAVIORS_BUCKET_BEHAVIOR_H_
#define ACTORS_BEHAVIORS_BUCKET_BEHAVIOR_H_

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "actors/behaviors/boxing_behavior.h"
#include "actors/behaviors/communicator_pool.h"
#include "actors/compression_meter.h"
#include "actors/engine.h"
#include "plan/plan_index.h"

namespace oneflow::actors {

// As BindBoxing (boxing_behavior.h): the collective waits at most `collective_timeout`,
// and its errors start with "actor 'NAME' collective C sequence S iteration I".
// `meter` (may be null) and `residuals` serve compressed buckets as they serve
// compressed boxing steps.
absl::StatusOr<ActFunction> BindBucket(const PlanIndex& index, const ActorBinding& binding,
                                       CommunicatorPool* communicators, absl::Duration collective_timeout,
                                       CompressionMeter* meter = nullptr,
                                       const ResidualCheckpointing& residuals = {});

}  // namespace oneflow::actors

#endif  // ACTORS_BEHAVIORS_BUCKET_BEHAVIOR_H_
