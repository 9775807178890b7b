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
// waits for. The demo's 2-node plan launched on the 2-core machine (load 14): launched
// steps of 20.8-51.4 ms with a 200 us spin, 19.2-22.1 ms without one, five runs each
// (docs/benchmarks.md, "Session 41").
//
// So each communicator keeps the share of its recent waits that ended within kSpinWait
// (an exponential average over about 8 waits) and spins only while that share is at least
// one half. Only waits that found their transfer unfinished count; a wait that did not spin
// still ends "short" when its wake-up comes within kSpinWait, so a communicator whose peers
// become prompt again goes back to spinning. Waits that fail or expire are not counted.
#ifndef ONEFLOW_CORE_COMM_UCX_SPIN_POLICY_H_
#define ONEFLOW_CORE_COMM_UCX_SPIN_POLICY_H_

#include "absl/time/time.h"

namespace oneflow {
namespace ucx_backend {

// How long a wait spins, at most, before it blocks on the worker's event fd.
constexpr absl::Duration kSpinWait = absl::Microseconds(200);

class SpinPolicy {
 public:
  // How long the next wait spins: kSpinWait or zero.
  absl::Duration Spin() const {
    return short_share_ >= kSpinWhenShortShare ? kSpinWait : absl::ZeroDuration();
  }
  // A wait that found its transfer unfinished ended after `waited`.
  void Record(absl::Duration waited) {
    const double short_wait = waited <= kSpinWait ? 1.0 : 0.0;
    short_share_ += (short_wait - short_share_) * kWeight;
  }
  double short_share() const { return short_share_; }

 private:
  static constexpr double kWeight = 1.0 / 8;
  static constexpr double kSpinWhenShortShare = 0.5;
  double short_share_ = 1.0;  // a new communicator spins
};

}  // namespace ucx_backend
}  // namespace oneflow

#endif  // ONEFLOW_CORE_COMM_UCX_SPIN_POLICY_H_
