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
//
// A spin that ends early still pays only where a core is free for it. Where the processes
// of this host keep at least as many compute threads busy as the host has cores (the
// demo's 2 nodes x 2 devices as 2 processes on 2 cores), every microsecond a communication
// thread spins is taken from a compute thread (it runs 10 nice levels above them), and the
// short waits that keep the learned spin going are a ring's steps, during which the peer's
// communication thread needs a core too. There a communicator never spins (WaitsMaySpin
// below): its waits block on the worker's event fd at once. A perf profile of the demo
// launched on the 2-core machine put about 300 of the communication threads' 2200 samples
// in the spin's clock reads and worker progress (docs/benchmarks.md, "Session 42"). Where
// the compute threads are unknown (0: a benchmark of the transport alone, a group created
// outside a training run) the policy learns as above.
#ifndef ONEFLOW_CORE_COMM_UCX_SPIN_POLICY_H_
#define ONEFLOW_CORE_COMM_UCX_SPIN_POLICY_H_

#include <cstdint>

#include "absl/time/time.h"

namespace oneflow {
namespace ucx_backend {

// How long a wait spins, at most, before it blocks on the worker's event fd.
constexpr absl::Duration kSpinWait = absl::Microseconds(200);

// Whether a communicator's waits may spin at all: when `compute_threads_per_process` (the
// threads each process of the job keeps busy computing; 0: unknown) times
// `processes_on_host` (this one and its peers whose processes run on this host) leaves at
// least one of the host's `cores` free, or when the compute threads are unknown.
inline bool WaitsMaySpin(int64_t compute_threads_per_process, int64_t processes_on_host,
                         int64_t cores) {
  if (compute_threads_per_process <= 0) return true;
  return compute_threads_per_process * processes_on_host < cores;
}

class SpinPolicy {
 public:
  // `may_spin` false: no wait spins, not even a probe (WaitsMaySpin).
  explicit SpinPolicy(bool may_spin = true) : may_spin_(may_spin) {}

  bool may_spin() const { return may_spin_; }

  // How long the next wait spins: kSpinWait or zero. Counts the waits that do not spin,
  // for the probes.
  absl::Duration NextSpin() {
    if (!may_spin_) return absl::ZeroDuration();
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
  bool may_spin_ = true;
  double short_share_ = 1.0;  // a new communicator spins
  int waits_without_spin_ = 0;
};

}  // namespace ucx_backend
}  // namespace oneflow

#endif  // ONEFLOW_CORE_COMM_UCX_SPIN_POLICY_H_
