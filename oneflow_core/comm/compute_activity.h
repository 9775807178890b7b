// How many compute acts this process runs right now: the actor engine's compute threads
// count themselves in and out of each act (actors/engine.cc), and a communication wait
// reads the count to decide whether to spin (ucx/spin_policy.h).
//
// Why a wait cares: a wait while the process computes is overlapped (the device makes
// progress meanwhile, so a wake-up's latency costs nothing on its path), and a spin then
// takes a core from that compute wherever the process has no core to spare. A wait while
// nothing computes is the device's critical path: there a spin is what brings a small
// message at OpenMPI's latency (docs/collectives.md). Traced on 2 emulated hosts with a
// core each (pp = 2 with 8 micro-batches), each stage's receives for the next
// micro-batch spun beside its compute on the one core; with every wait blocking the
// pipelines of 6 and 8 micro-batches ran 8-9% faster, while data and tensor parallelism,
// whose collectives the devices wait on together, ran 10-15% slower (session 62).
#ifndef ONEFLOW_CORE_COMM_COMPUTE_ACTIVITY_H_
#define ONEFLOW_CORE_COMM_COMPUTE_ACTIVITY_H_

namespace oneflow {

// Compute acts running in this process now (0 when every compute thread waits).
int ComputeActsRunning();

// Counts one compute act in for its lifetime; a scope made with `counted` false counts
// nothing (the engine makes one for every act, counted on compute threads only).
class ComputeActScope {
 public:
  explicit ComputeActScope(bool counted = true);
  ~ComputeActScope();
  ComputeActScope(const ComputeActScope&) = delete;
  ComputeActScope& operator=(const ComputeActScope&) = delete;

 private:
  const bool counted_;
};

}  // namespace oneflow

#endif  // ONEFLOW_CORE_COMM_COMPUTE_ACTIVITY_H_
