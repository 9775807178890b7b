// The order of a node-crossing stream's last gradient buckets: the ones the next
// iteration's forward needs first go first (P3, Jayarajan et al. MLSys'19; ByteScheduler,
// Peng et al. SOSP'19), where the link is still busy with earlier buckets when backward
// ends.
//
// Buckets are issued in the order backward produces their members, so the gradients of
// the first layers, produced last, reduce last, their updates run last, and the next
// iteration's forward, which reads those parameters first, waits for every reduction of
// the step. On a slow link the node-crossing stream is still busy with earlier buckets
// when backward ends (gpt_dp3tp2 at 1 Gbit/s: ~290 ms of reductions after the last
// backward act, the embedding and block 0 in the last bucket); among the buckets waiting
// then, any order keeps the link busy, and issuing them in the order forward reads their
// members' variables lets the first layers' updates, and the next forward, start while
// the later layers' buckets still cross.
//
// Which buckets wait is decided from the cost model, on the first device of the group
// class (every member of a group runs the same program): its compute actors in program
// order priced by compiler/kernel_seconds.h at the cluster's compute rates (`oneflow
// calibrate`'s compute lines; session 47 tried the defaults, 5e10 FLOP/s, and backward ran
// 2.4-4.5x longer than priced, so the order held back buckets the link could have sent),
// slowed by SharedCoresSlowdown where the cluster's devices share fewer cores, each
// node-crossing collective of the class ready when the compute before it has run and
// priced as the runtime runs it, its groups sharing each node's link
// (bucket_cap.h, PriceBucketCollectiveOnSharedLink; a step on its own at its modelled
// seconds), issued first come first served. The buckets that have not
// started when the last of them is ready are the ones reordered: all of them are ready by
// then, and the collective running then ends no earlier, so the model's link never idles
// for the new order. The order is static (CollectiveOrderingPass numbers them so): every
// member of a group issues the same sequence, and each stream's order stays a subsequence
// of one topological order of the collectives (they move later, to the place of the last
// of them, never before their inputs).
//
// Only dense buckets of a hierarchy axis that crosses nodes are moved; a class with a
// compressed bucket keeps backward order (its buckets' prices need the codec passes, and
// `auto`'s buckets are where issue 24's other bar is met). Without buckets, or where the
// model finds no backlog (fast links: the examples' default 12.5 GB/s), nothing moves.
#ifndef COMPILER_PASSES_REDUCTION_PRIORITY_H_
#define COMPILER_PASSES_REDUCTION_PRIORITY_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "compiler/compilation.h"
#include "proto/plan.pb.h"

namespace oneflow {

// What the collective order can move: a gradient bucket, or a boxing whose first steps run
// on their own right after the gradient exists (gradient_bucketing_pass.h, IsEarlyStep:
// the run from step 0, e.g. a gradient too large to share a bucket, or the last one
// alone).
struct ReductionUnit {
  int64_t bucket = -1;  // Compilation::buckets index, or -1
  int64_t boxing = -1;  // else the boxing whose early run from step 0 it is

  bool operator==(const ReductionUnit& other) const { return bucket == other.bucket && boxing == other.boxing; }
};

// Per group class with a backlog of two or more units: the units to issue together, in
// this order, at the place of the last of them. Needs the actor graph (Compilation::plan
// devices' actors, boxing_step_actors). INTERNAL when a bucket's placement has no device
// in the plan.
absl::StatusOr<std::vector<std::vector<ReductionUnit>>> FirstNeededOrders(const Compilation& compilation);

// How much longer a device's compute takes than at the cluster's one-thread rates when its
// devices share a machine's cores: devices / cores (num_nodes x devices_per_node over
// `shared_machine_cores`, CompileOptions' from the calibration file's machine line: the
// cores' worth of CPU time the devices obtained taking turns, as calibrate measured it,
// else the cores) when the devices outnumber them, else 1 (and 1 for 0: no machine line).
// gpt_dp3tp2's 6 devices on 2 cores: 3; on the calibration of its session-48 bench (3
// processes obtained 1.295 cores' worth at load 20): 4.63.
double SharedCoresSlowdown(const proto::Cluster& cluster, double shared_machine_cores);

// The op that first reads the variable of any gradient the unit reduces (the forward op,
// in op order, that needs its update); INT64_MAX for one of no variable's gradient (the
// loss's reduction alone).
int64_t FirstReaderOf(const Compilation& compilation, const ReductionUnit& unit);

}  // namespace oneflow

#endif  // COMPILER_PASSES_REDUCTION_PRIORITY_H_
