#ifndef COMPILER_PASSES_BUCKET_CAP_H_
#define COMPILER_PASSES_BUCKET_CAP_H_

#include <cstdint>
#include <string>

#include "oneflow_core/placement.h"
#include "sbp/boxing_plan.h"
#include "sbp/link_model.h"

namespace oneflow {

// The bucket limit of one communicator group of the gradient bucketing pass, and why.
//
// DDP's 25 MiB suits the 10-100 Gbit/s links it was chosen for: there a bucket's
// all-reduce takes tens of milliseconds. On a slower link the same bytes take ten times
// longer, so a node-crossing group's last buckets start only at the end of backward and
// their whole transfer is exposed (measured on 3 hosts at 1 Gbit/s, gpt h512 L4: the
// default left a 24 MiB bucket to the end of backward, 48% of the transfer hidden;
// 4 MiB buckets hid 80%). So unless the user gave --bucket_mb, a group whose collective
// crosses nodes is capped at the largest bucket the cost model prices
// (PriceDenseCollective, the route the runtime takes, with the cluster's calibrated or
// declared latency and bandwidth) at most kNodeCrossingBucketSeconds, and never below
// kFirstBucketBytes (DDP's first bucket, which stays as it is). In-node groups, and every
// group when the user gave the limit, use the limit as given.
inline constexpr double kNodeCrossingBucketSeconds = 0.040;

// On a link fast enough that a --bucket_mb bucket crosses within the 40 ms, buckets are
// few and large, and the last one (the gradients backward produces last, which start
// crossing only when backward ends) is exposed whole: dp3_h512 at 10 Gbit/s made two 24
// MiB buckets and hid 31-55% of its transfer behind compute 3.5x as long. So there, given
// the group's bytes, the target is also at most 1/kNodeCrossingBucketsPerGroup of the
// whole group's price, which leaves the last bucket
// about that share of the transfer to expose (issue 24's bar: 80% hidden where backward
// is longer than the reductions), but not below kNodeCrossingBucketMinSeconds, where the
// per-call latency (0.5 ms a round by default, 2 rounds) would weigh 20% of a bucket. A
// gradient larger than the cap is a bucket of one: it runs on its own, right after it is
// produced (gradient_bucketing_pass.h, kAloneEarly). Where the 40 ms cap binds (a slow
// link) the transfer was longer than backward in every case measured, the link busy from
// the first bucket on: there smaller buckets only add calls (gpt_dp3tp2 at 1 Gbit/s with
// the eighth: 21 cross-node calls a step instead of 8, the link busy 0.73 of the transfer
// time instead of 0.80, the step not faster), so for all-reduces the eighth applies only
// where it does not. A reduce-scatter group (ZeRO-2 and 3) whose whole price exceeds the 40
// ms takes it on a slow link too: it moves half an all-reduce's bytes in backward, and
// there the early start paid (gpt_dp3tp2 at 1 Gbit/s, dense, ZeRO-3 keeping its gathered
// copies: 7.14 MiB buckets under the 40 ms cap started the first large one 130 ms into
// backward, a 732 ms step; with the eighth 1-1.6 MiB buckets, 621-651 ms, as fast as
// --bucket_mb=1; ZeRO-2 728 -> 645-675 ms). A group within one 40 ms bucket stays one
// bucket: split at the 5 ms floor, the 2 x 1 hosts bench's small gpt (a 1.4 MB group)
// measured ZeRO-2 40.1 ms against 37.1-38.6 in four runs before.
inline constexpr double kNodeCrossingBucketsPerGroup = 8;
inline constexpr double kNodeCrossingBucketMinSeconds = 0.005;

// What the gradient bucketing pass knows of a group's candidates, in the bytes of the
// step priced: the whole group's data (the sum of the members' bytes in a bucket
// register). Zero: not known (the cap is the 40 ms one alone).
struct BucketGroupBytes {
  int64_t total = 0;
};

struct BucketCap {
  int64_t bytes = 0;
  // How the cap was chosen, for the plan and `oneflow inspect`, e.g.
  // "link rate: priced 39.9 ms <= 40 ms (flat across 3 nodes, 2 rounds) < --bucket_mb limit"
  // or "--bucket_mb (given)".
  std::string reason;
};

// The cap for a `kind` (kAllReduce or kReduceScatter) bucket over the groups of hierarchy
// axis `axis` of `placement`, with `limit` the bytes of --bucket_mb (> 0) and `given`
// whether the user wrote it; with `group`, also bounded by the group's bytes (above). Preconditions: CheckLinkModel(links) is OK,
// 0 <= axis < hierarchy rank.
BucketCap BucketCapFor(const LinkModel& links, const Placement& placement, int64_t axis, BoxingKind kind,
                       int64_t limit, bool given, BucketGroupBytes group = {});

// The modelled seconds of a dense bucket's one collective over the groups of `axis` of
// `placement`, as the runtime runs it on its register of `size_bytes`: a reduce-scatter
// (ZeRO-2 and 3) moves one round of the group's chunks, an all-reduce two. For the
// predicted step time (tools/cli/predicted_step_time.h) and the reduction tail's timeline
// (reduction_tail_order.h). Preconditions as BucketCapFor's.
double DenseBucketSeconds(const LinkModel& links, const Placement& placement, int64_t axis, bool reduce_scatter,
                          int64_t size_bytes);

}  // namespace oneflow

#endif  // COMPILER_PASSES_BUCKET_CAP_H_
