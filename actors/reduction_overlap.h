// How much of a run's gradient reduction time was hidden behind compute, from recorded
// acts (EngineOptions.record_acts, or a trace read back with ReadChromeTrace). Gradient
// buckets (docs/gradient_buckets.md) exist so that a reduction runs on the communication
// thread while the compute thread goes on with backward; this measures whether it did.
//
//   OF_ASSIGN_OR_RETURN(std::vector<ActRecord> acts, ReadChromeTrace("t.json", plan));
//   OF_ASSIGN_OR_RETURN(ReductionOverlap overlap, MeasureReductionOverlap(plan, acts));
//   overlap.hidden_fraction  // 0.85: 85% of the reduction time the compute thread acted
//
// Per device, the reduction time is the union of its gradient reductions' acts (two
// reductions in flight at once, on two communication streams, count once), and the
// hidden time the part of that union during which the device's compute thread acted
// (any compute act, of any iteration: the next iteration's forward hides a reduction as
// well as this one's backward). Sums over devices; hidden_fraction = hidden / reduction.
#ifndef ACTORS_REDUCTION_OVERLAP_H_
#define ACTORS_REDUCTION_OVERLAP_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "actors/engine.h"
#include "proto/plan.pb.h"

namespace oneflow::actors {

// True for an actor that reduces gradients: a gradient bucket's actor (ActorDef.bucket_id),
// or a boxing actor whose step is an all_reduce or reduce_scatter (dense, compressed or
// row-sparse) of a gradient. A tensor is a gradient when an optimizer op (sgd_update,
// adamw_update, sgd_step, adamw_step) reads it as `grad`, directly or through the identity
// (ZeRO-1's re-layout) and accumulate (micro-batches) ops the compiler puts in between.
// The tensor-parallel reductions of activations' gradients inside backward are not: they
// sit on backward's own path and no schedule can hide them.
class GradientReductions {
 public:
  explicit GradientReductions(const proto::Plan& plan);
  bool Contains(const proto::ActorDef& actor) const;

 private:
  const proto::Plan& plan_;
  std::vector<bool> boxing_reduces_gradient_;  // By Plan.boxings index.
};

struct ReductionOverlap {
  // The measured iterations: the trace's, less the first `warmup_iterations`.
  int64_t first_iteration = 0;
  int64_t last_iteration = 0;
  int64_t iterations = 0;
  // Gradient reduction acts of the measured iterations, every device.
  int64_t reduction_acts = 0;
  // Summed over devices: the union of each device's reduction acts, and the part of it
  // during which that device's compute thread acted.
  int64_t reduction_ns = 0;
  int64_t hidden_ns = 0;
  // hidden_ns / reduction_ns; 0 when the plan reduces no gradient.
  double hidden_fraction = 0;
  // Summed over devices: the union of each device's compute-thread acts of the measured
  // iterations (to tell whether compute was long enough to hide the reductions).
  int64_t compute_ns = 0;
  // The same from the moment the call's last member arrived (the latest start of an act of
  // the same collective, ActorDef.collective_id, in the same iteration on any device of the
  // trace) to the act's end: the transfer itself. A reduction act's own start is when its
  // device reached the call; across processes the members arrive at different times (a
  // slower host, or one whose compute thread still works), and the time spent waiting for
  // them is not reduction time: counted as such it inflates both the reduction time and the
  // part hidden behind this device's compute, which goes on meanwhile. A collective over
  // several groups (dp over each tp rank) has acts that are no peers of this one: only
  // starts no later than this act's end count (a peer cannot arrive after the call ended),
  // so another group's member that arrived earlier still counts (transfer undercounted).
  int64_t transfer_ns = 0;
  int64_t transfer_hidden_ns = 0;
  // transfer_hidden_ns / transfer_ns; 0 when there is none.
  double transfer_hidden_fraction = 0;
  // The part of the transfer during which the compute thread of any member of the device's
  // reductions acted (the devices with an act of the same call; itself included). A member
  // that ended backward early (a slower host, or threads sharing too few cores) waits for
  // the others, and its transfer is exposed by the measure above while a slower member's
  // backward still runs beside it: the step, which ends with its slowest member, pays none
  // of that transfer. This one counts what the step pays: transfer after every member's
  // compute stopped. Members are the union over all of the device's reduction calls (a 2-D
  // layout's device reduces over its dp group; another group's compute can count).
  int64_t transfer_hidden_by_members_ns = 0;
  double transfer_hidden_by_members_fraction = 0;
};

// Errors: FAILED_PRECONDITION when no act belongs to a measured iteration, INVALID_ARGUMENT
// when an act names an actor the plan does not have on that device.
absl::StatusOr<ReductionOverlap> MeasureReductionOverlap(const proto::Plan& plan,
                                                         const std::vector<ActRecord>& acts,
                                                         int64_t warmup_iterations = 1);

}  // namespace oneflow::actors

#endif  // ACTORS_REDUCTION_OVERLAP_H_
