// Whether a UCX wait spins before it blocks (exchange.h: UcxExchange::WaitFor), learned
// from the communicator's own recent waits.
//
// A spinning wait sees a message within a microsecond of its arrival, where a blocked one
// waits for the kernel to wake it: that is what puts a 4 KiB all-reduce between two
// processes at OpenMPI's latency (docs/collectives.md). But a spin only pays when the
// message comes while the thread spins. When the peer is milliseconds away (it is still
// computing) the spin burns kSpinWait of a core each time, and a communication thread
// runs 10 nice levels above the compute threads (actors/thread_priority.h), so on a host
// with fewer cores than busy threads it takes that core from the very compute its peer
// waits for; where both ranks share one core, it keeps the peer from running until it
// gives up (our reading of a run in which a 4 KiB all-reduce took 225 us per call: about
// the spin, then a wake-up). The demo's
// 2-node plan launched on the 2-core machine at load 14 took 20.8-51.4 ms per step with
// a 200 us spin and 19.2-22.1 ms without one, five runs each; with the policy below its
// gradient transfers took half the time (docs/benchmarks.md, "Session 41").
//
// So each communicator keeps the share of its recent spinning waits that ended within
// kSpinWait (an exponential average over about 8 waits) and spins only while that share
// is at least one half. Only waits that spun and found their transfer unfinished count: a
// wait that did not spin ends when the kernel wakes it, which says nothing about whether a
// spin would have paid (counting those kept a 4 KiB all-reduce at 206 us per call, at load
// 16, after its first calls had stopped the spin: the wake-ups were as slow). While
// it does not spin, every kProbeEvery-th wait spins anyway, so a communicator whose peers
// become prompt again goes back to spinning within a few dozen waits. Waits that fail or
// expire are not counted.
#ifndef ONEFLOW_CORE_COMM_UCX_SPIN_POLICY_H_
#define ONEFLOW_CORE_COMM_UCX_SPIN_POLICY_H_

#include "absl/time/time.h"

namespace oneflow {
namespace ucx_backend {

// How long a wait spins, at most, before it blocks on the worker's event fd.
constexpr absl::Duration kSpinWait = absl::Microseconds(200);

class SpinPolicy {
 public:
  // How long the next wait spins: kSpinWait or zero; zero while the process runs compute
  // acts (`compute_acts_running` > 0: the wait is overlapped, and a spin would take a core
  // from that compute; compute_activity.h), which then neither counts for the probes.
  // Counts the other waits that do not spin, for the probes.
  absl::Duration NextSpin(int compute_acts_running = 0) {
    if (compute_acts_running > 0) return absl::ZeroDuration();
    if (short_share_ >= kSpinWhenShortShare || ++waits_without_spin_ % kProbeEvery == 0) {
      return kSpinWait;
    }
    return absl::ZeroDuration();
  }
  // A wait that spun and found its transfer unfinished ended after `waited`.
  void Record(absl::Duration waited) {
    const double short_wait = waited <= kSpinWait ? 1.0 : 0.0;
    short_share_ += (short_wait - short_share_) * kWeight;
  }

  static constexpr int kProbeEvery = 8;

 private:
  static constexpr double kWeight = 1.0 / 8;
  static constexpr double kSpinWhenShortShare = 0.5;
  double short_share_ = 1.0;  // a new communicator spins
  int waits_without_spin_ = 0;
};

}  // namespace ucx_backend
}  // namespace oneflow

#endif  // ONEFLOW_CORE_COMM_UCX_SPIN_POLICY_H_
