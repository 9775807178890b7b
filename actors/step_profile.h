// Where the step went, from recorded acts (EngineOptions.record_acts, or a trace read back
// with ReadChromeTrace): per op type, per actor and per device thread, over the
// iterations after the warm-up. `oneflow profile` prints it (tools/cli/profile_report.h,
// docs/profile.md).
//
//   OF_ASSIGN_OR_RETURN(std::vector<ActRecord> acts, ReadChromeTrace("t.json", plan));
//   OF_ASSIGN_OR_RETURN(StepProfile profile, ProfileStep(plan, acts));
//   profile.step_ns                 // 316700: wall time per iteration
//   profile.op_types[0].share       // 0.21: the busiest op type took 21% of its threads
//
// The window. Iterations overlap (a data source runs ahead by its register count), so
// the window is not "first act to last act" but from the end of the last warm-up
// iteration to the end of the last iteration: an iteration ends when its last act
// (every device, every thread) ends. The step is the window over the iterations in it,
// what a trainer's step time measures. Times are the acts' time inside the window: an
// act of iteration 1 that ran during iteration 0 counts only its part after it. So on
// one thread the op types' times plus the idle time are the step, exactly (transfer
// actors have threads of their own, one track per device: there the union counts).
#ifndef ACTORS_STEP_PROFILE_H_
#define ACTORS_STEP_PROFILE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "actors/engine.h"
#include "proto/plan.pb.h"

namespace oneflow::actors {

// One op type on one thread kind, or one actor.
struct ProfileRow {
  // The op type: the actor's kernel (KernelDef.name: "matmul", "adamw_update",
  // "all_reduce", "bucket_all_reduce", "send_recv"), or its kind ("data_source",
  // "variable") when it has none. For an actor row `name` is the actor's.
  std::string op_type;
  std::string name;
  // Actor rows: the actor, its plan.devices index; op type rows: -1.
  int64_t actor_id = -1;
  int device_index = -1;
  proto::ThreadKind thread = proto::THREAD_COMPUTE;
  // Per iteration, and for an op type per device: its time inside the window over the
  // iterations, divided by the profile's device count for an op type.
  double ns_per_iteration = 0;
  // ns_per_iteration / step_ns: the share of its thread's (for an op type: of that
  // thread kind on every device's) wall time.
  double share = 0;
  // Acts of the measured iterations, per iteration (and per device for an op type).
  double calls_per_iteration = 0;
  // Collectives and transfers (actors with a collective): CollectiveDef.bytes_per_device
  // per call times calls per iteration; bytes / time as achieved bandwidth (the act's
  // time includes waiting for the group's last member). 0 for the others.
  double bytes_per_iteration = 0;
  double bytes_per_second = 0;
  // Op type rows: ns_per_iteration of each plan.devices index (0 where it did not run).
  std::vector<double> ns_per_device;
};

// One device thread: its busy time split by what it did, and its idle time, per
// iteration. compute_ns + communication_ns + idle_ns = step_ns.
struct ThreadTime {
  int device_index = 0;
  proto::ThreadKind thread = proto::THREAD_COMPUTE;
  // Acts of actors without a collective (kernels, data, variables, local boxing steps).
  double compute_ns = 0;
  // Acts of actors with a collective (boxing steps, gradient buckets, transfers).
  double communication_ns = 0;
  double idle_ns = 0;
};

struct StepProfile {
  // The measured iterations: the trace's, less the first `warmup_iterations`.
  int64_t first_iteration = 0;
  int64_t last_iteration = 0;
  int64_t iterations = 0;
  // From the end of iteration first_iteration - 1 to the end of last_iteration.
  int64_t window_start_ns = 0;
  int64_t window_end_ns = 0;
  double step_ns = 0;
  // End of each iteration 0..last_iteration (the latest act end of it, never earlier
  // than the previous iteration's).
  std::vector<int64_t> iteration_end_ns;
  // Devices (plan.devices indexes) with acts in the trace: every device for `oneflow
  // run`, one node's for a launched run. Op types are per device of these.
  std::vector<int> devices;
  // Sorted by time, longest first (ties: by name).
  std::vector<ProfileRow> op_types;
  std::vector<ProfileRow> actors;
  // By device, then thread kind; only threads with acts.
  std::vector<ThreadTime> threads;
};

// An act's iteration: its act index over its actor's acts per iteration (Job.micro_batches
// for a per-micro-batch actor, 1 for ActorDef.per_iteration).
int64_t IterationOfAct(const proto::ActorDef& actor, int64_t act_index, int64_t micro_batches);

// Errors: those of MeasureBubble (FAILED_PRECONDITION when the trace has warm-up
// iterations only, INVALID_ARGUMENT for an act of an actor the plan does not have there).
absl::StatusOr<StepProfile> ProfileStep(const proto::Plan& plan, const std::vector<ActRecord>& acts,
                                        int64_t warmup_iterations = 1);

}  // namespace oneflow::actors

#endif  // ACTORS_STEP_PROFILE_H_
