// The in-process backend: the ranks of a group are threads of one process (the devices
// of one node), and collectives go through shared memory. Each rank publishes pointers to
// its buffers and its peers read them directly, so a byte crosses the memory system once
// per copy, as a DMA would move it; there is no staging buffer. The protocol and its
// safety argument are in group_state.h, the algorithms and their bytes in collectives.h.
//
//   absl::StatusOr<std::unique_ptr<InProcessGroup>> group = InProcessGroup::Create(4, "tp0");
//   // thread of device r:
//   Communicator& comm = (*group)->communicator(r);
//   absl::Status status = comm.AllReduce(gradient, gradient, count, options);
//
// Threading: each communicator is driven by one thread (the device's communication
// thread) that issues its calls in the plan's order; the communicators of one group are
// driven concurrently. A second thread calling into a communicator while a call is in
// progress gets FAILED_PRECONDITION (and the group is aborted).
#ifndef ONEFLOW_CORE_COMM_IN_PROCESS_COMMUNICATOR_H_
#define ONEFLOW_CORE_COMM_IN_PROCESS_COMMUNICATOR_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "oneflow_core/comm/communicator.h"

namespace oneflow {
namespace in_process {
class GroupState;
}  // namespace in_process

class InProcessGroup {
 public:
  // A group of `size` ranks (>= 1). `name` identifies it in error messages (e.g. the
  // hierarchy axis and coordinates it spans). INVALID_ARGUMENT for size < 1.
  static absl::StatusOr<std::unique_ptr<InProcessGroup>> Create(int64_t size,
                                                                std::string name = "");

  // Precondition: no call on any of its communicators is in progress.
  ~InProcessGroup();
  InProcessGroup(const InProcessGroup&) = delete;
  InProcessGroup& operator=(const InProcessGroup&) = delete;

  int64_t size() const { return static_cast<int64_t>(communicators_.size()); }

  // The communicator of `rank`, valid while the group lives. Precondition (a programmer
  // error otherwise): 0 <= rank < size().
  Communicator& communicator(int64_t rank);

 private:
  explicit InProcessGroup(std::unique_ptr<in_process::GroupState> state);

  std::unique_ptr<in_process::GroupState> state_;
  std::vector<std::unique_ptr<Communicator>> communicators_;
};

}  // namespace oneflow

#endif  // ONEFLOW_CORE_COMM_IN_PROCESS_COMMUNICATOR_H_
