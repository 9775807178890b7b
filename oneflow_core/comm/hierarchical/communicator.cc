#include "oneflow_core/comm/hierarchical/communicator.h"

#include <atomic>
#include <cstring>
#include <mutex>
#include <optional>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/strings/str_cat.h"
#include "oneflow_core/balanced_splitter.h"
#include "oneflow_core/comm/call_guard.h"
#include "oneflow_core/comm/collective_arguments.h"
#include "oneflow_core/status.h"

namespace oneflow {
namespace {

class HierarchicalCommunicator final : public Communicator {
 public:
  explicit HierarchicalCommunicator(HierarchyOptions options)
      : name_(std::move(options.name)),
        nodes_(options.nodes),
        local_size_(options.local_size),
        in_node_(options.in_node),
        cross_node_(std::move(options.cross_node)),
        flat_(std::move(options.flat)) {}

  int64_t size() const override { return flat_->size(); }
  int64_t rank() const override { return flat_->rank(); }
  std::string Name() const override {
    return absl::StrCat("hierarchical group ", name_.empty() ? "" : absl::StrCat("'", name_, "' "),
                        "rank ", rank(), " of ", size(), " (", nodes_, " nodes x ", local_size_,
                        ")");
  }

  absl::Status AllReduce(const float* input, float* output, int64_t count,
                         const CollectiveOptions& options) override {
    absl::Status arguments =
        count < 0
            ? absl::InvalidArgumentError(absl::StrCat("count is ", count, "; it must be >= 0"))
            : CheckBuffer("input", input, count);
    if (arguments.ok()) arguments = CheckBuffer("output", output, count);
    return Run(options, "all_reduce", arguments, [&](const Steps& steps) {
      // This device reduces (and owns across nodes) shard local() of a balanced split.
      std::vector<int64_t> counts(local_size_);
      std::vector<int64_t> bytes(local_size_);
      for (int64_t l = 0; l < local_size_; ++l) {
        counts[l] = BalancedPart(count, local_size_, l).size();
        bytes[l] = counts[l] * static_cast<int64_t>(sizeof(float));
      }
      float* shard = output + ExclusiveOffsets(counts)[local()];
      OF_RETURN_IF_ERROR(
          steps.Run("in-node reduce-scatter (step 1 of 3)", [&](const CollectiveOptions& o) {
            return in_node_->ReduceScatter(input, shard, counts, o);
          }));
      OF_RETURN_IF_ERROR(
          steps.Run("cross-node all-reduce (step 2 of 3)", [&](const CollectiveOptions& o) {
            return cross_node_->AllReduce(shard, shard, counts[local()], o);
          }));
      return steps.Run("in-node all-gather (step 3 of 3)", [&](const CollectiveOptions& o) {
        return in_node_->AllGather(shard, output, bytes, o);  // in place: shard sits in output
      });
    });
  }

  absl::Status ReduceScatter(const float* input, float* output, absl::Span<const int64_t> counts,
                             const CollectiveOptions& options) override {
    absl::Status arguments = CheckCounts("counts", counts, size());
    if (arguments.ok()) arguments = CheckBuffer("input", input, SumOf(counts));
    if (arguments.ok()) arguments = CheckBuffer("output", output, counts[rank()]);
    return Run(options, "reduce_scatter", arguments, [&](const Steps& steps) {
      // Regroup the chunks by local index, [l][node], so the in-node reduce-scatter gives
      // local rank l the node's partial sums of every chunk (node, l).
      const std::vector<int64_t> offsets = ExclusiveOffsets(counts);
      std::vector<int64_t> in_node_counts(local_size_, 0);
      float* regrouped = Floats(floats_a_, SumOf(counts));
      int64_t at = 0;
      for (int64_t l = 0; l < local_size_; ++l) {
        for (int64_t node = 0; node < nodes_; ++node) {
          const int64_t chunk = node * local_size_ + l;
          if (counts[chunk] > 0)
            std::memcpy(regrouped + at, input + offsets[chunk], counts[chunk] * sizeof(float));
          at += counts[chunk];
          in_node_counts[l] += counts[chunk];
        }
      }
      float* partial = Floats(floats_b_, in_node_counts[local()]);
      OF_RETURN_IF_ERROR(
          steps.Run("in-node reduce-scatter (step 1 of 2)", [&](const CollectiveOptions& o) {
            return in_node_->ReduceScatter(regrouped, partial, in_node_counts, o);
          }));
      std::vector<int64_t> cross_counts(nodes_);
      for (int64_t node = 0; node < nodes_; ++node)
        cross_counts[node] = counts[node * local_size_ + local()];
      return steps.Run("cross-node reduce-scatter (step 2 of 2)", [&](const CollectiveOptions& o) {
        return cross_node_->ReduceScatter(partial, output, cross_counts, o);
      });
    });
  }

  absl::Status AllGather(const void* input, void* output, absl::Span<const int64_t> byte_counts,
                         const CollectiveOptions& options) override {
    absl::Status arguments = CheckCounts("byte_counts", byte_counts, size());
    if (arguments.ok()) arguments = CheckBuffer("input", input, byte_counts[rank()]);
    if (arguments.ok()) arguments = CheckBuffer("output", output, SumOf(byte_counts));
    return Run(options, "all_gather", arguments, [&](const Steps& steps) {
      // Across nodes first, among the devices with this local index: what crosses the
      // network is this device's share only. Then the node's blocks, [l][node], in node.
      std::vector<int64_t> cross_counts(nodes_);
      std::vector<int64_t> in_node_counts(local_size_, 0);
      for (int64_t node = 0; node < nodes_; ++node) {
        cross_counts[node] = byte_counts[node * local_size_ + local()];
        for (int64_t l = 0; l < local_size_; ++l)
          in_node_counts[l] += byte_counts[node * local_size_ + l];
      }
      char* column = Bytes(bytes_a_, SumOf(cross_counts));
      OF_RETURN_IF_ERROR(
          steps.Run("cross-node all-gather (step 1 of 2)", [&](const CollectiveOptions& o) {
            return cross_node_->AllGather(input, column, cross_counts, o);
          }));
      char* blocks = Bytes(bytes_b_, SumOf(byte_counts));
      OF_RETURN_IF_ERROR(
          steps.Run("in-node all-gather (step 2 of 2)", [&](const CollectiveOptions& o) {
            return in_node_->AllGather(column, blocks, in_node_counts, o);
          }));
      const std::vector<int64_t> offsets = ExclusiveOffsets(byte_counts);
      int64_t at = 0;
      for (int64_t l = 0; l < local_size_; ++l) {
        for (int64_t node = 0; node < nodes_; ++node) {
          const int64_t chunk = node * local_size_ + l;
          if (byte_counts[chunk] > 0) {
            std::memcpy(static_cast<char*>(output) + offsets[chunk], blocks + at,
                        byte_counts[chunk]);
          }
          at += byte_counts[chunk];
        }
      }
      return absl::OkStatus();
    });
  }

  absl::Status AllToAll(const void* input, void* output, absl::Span<const int64_t> byte_counts,
                        const CollectiveOptions& options) override {
    return Run(options, "all_to_all", absl::OkStatus(), [&](const Steps& steps) {
      return steps.Run("flat", [&](const CollectiveOptions& o) {
        return flat_->AllToAll(input, output, byte_counts, o);
      });
    });
  }

  absl::Status Broadcast(void* buffer, int64_t bytes, int64_t root,
                         const CollectiveOptions& options) override {
    return Run(options, "broadcast", absl::OkStatus(), [&](const Steps& steps) {
      return steps.Run("flat", [&](const CollectiveOptions& o) {
        return flat_->Broadcast(buffer, bytes, root, o);
      });
    });
  }

  absl::Status Send(const void* data, int64_t bytes, int64_t peer,
                    const CollectiveOptions& options) override {
    return Run(options, absl::StrCat("send to rank ", peer), absl::OkStatus(),
               [&](const Steps& steps) {
                 return steps.Run("flat", [&](const CollectiveOptions& o) {
                   return flat_->Send(data, bytes, peer, o);
                 });
               });
  }

  absl::Status Recv(void* data, int64_t bytes, int64_t peer,
                    const CollectiveOptions& options) override {
    return Run(options, absl::StrCat("receive from rank ", peer), absl::OkStatus(),
               [&](const Steps& steps) {
                 return steps.Run("flat", [&](const CollectiveOptions& o) {
                   return flat_->Recv(data, bytes, peer, o);
                 });
               });
  }

  void Abort(const absl::Status& cause) override {
    Fail(cause.ok() ? absl::CancelledError("aborted with an OK status") : cause);
  }

 private:
  // The steps of one call: each runs one call of a member communicator with the time
  // left, and a description that starts with this call's; a failed step fails the group.
  class Steps {
   public:
    Steps(HierarchicalCommunicator* owner, std::string prefix, const CollectiveOptions& options)
        : owner_(owner),
          prefix_(std::move(prefix)),
          options_(options),
          deadline_(DeadlineAfter(absl::Now(), options.timeout)) {}

    absl::Status Run(absl::string_view what,
                     absl::FunctionRef<absl::Status(const CollectiveOptions&)> step) const {
      CollectiveOptions options = options_;
      options.description = absl::StrCat(prefix_, ", ", what);
      options.timeout = deadline_ == absl::InfiniteFuture()
                            ? absl::InfiniteDuration()
                            : std::max(deadline_ - absl::Now(), absl::ZeroDuration());
      const absl::Status status = step(options);
      if (!status.ok()) owner_->Fail(status);
      return status;
    }

   private:
    HierarchicalCommunicator* owner_;
    const std::string prefix_;
    const CollectiveOptions& options_;
    const absl::Time deadline_;
  };

  int64_t local() const { return in_node_->rank(); }

  // "<description>: hierarchical group 'dp' rank 3 of 4 (2 nodes x 2), all_reduce call 7".
  std::string Prefix(const CollectiveOptions& options, absl::string_view what) const {
    return absl::StrCat(options.description, options.description.empty() ? "" : ": ", Name(), ", ",
                        what);
  }

  absl::Status Run(const CollectiveOptions& options, absl::string_view kind,
                   const absl::Status& arguments,
                   absl::FunctionRef<absl::Status(const Steps&)> body) {
    Busy busy(&busy_);
    if (!busy.entered()) {
      const absl::Status refused = WithContext(SecondThreadError(), Prefix(options, kind));
      Fail(refused);
      return refused;
    }
    const std::string prefix = Prefix(options, absl::StrCat(kind, " call ", ++calls_));
    if (!arguments.ok()) {
      const absl::Status failed = WithContext(arguments, prefix);
      Fail(failed);
      return failed;
    }
    const std::optional<absl::Status> earlier = failure();
    if (earlier.has_value()) {
      return absl::FailedPreconditionError(
          absl::StrCat(prefix, ": the group was aborted earlier: ", earlier->message()));
    }
    return body(Steps(this, prefix, options));
  }

  std::optional<absl::Status> failure() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return failure_;
  }

  // The first failure wins; it aborts the three member communicators, so the devices of
  // this node and the peers on other nodes stop too.
  void Fail(const absl::Status& status) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (failure_.has_value()) return;
      failure_ = status;
    }
    in_node_->Abort(status);
    cross_node_->Abort(status);
    flat_->Abort(status);
  }

  static float* Floats(std::vector<float>& scratch, int64_t count) {
    if (static_cast<int64_t>(scratch.size()) < count) scratch.resize(count);
    return scratch.data();
  }
  static char* Bytes(std::vector<char>& scratch, int64_t count) {
    if (static_cast<int64_t>(scratch.size()) < count) scratch.resize(count);
    return scratch.data();
  }

  const std::string name_;
  const int64_t nodes_;
  const int64_t local_size_;
  Communicator* const in_node_;
  const std::unique_ptr<Communicator> cross_node_;
  const std::unique_ptr<Communicator> flat_;

  std::atomic<bool> busy_{false};
  // Owned by the thread inside a call (see Busy).
  int64_t calls_ = 0;
  std::vector<float> floats_a_, floats_b_;
  std::vector<char> bytes_a_, bytes_b_;

  // std::mutex, which ThreadSanitizer sees (Debian's absl::Mutex is not annotated).
  mutable std::mutex mutex_;
  std::optional<absl::Status> failure_;  // guarded by mutex_
};

}  // namespace

absl::StatusOr<std::unique_ptr<Communicator>> NewHierarchicalCommunicator(
    HierarchyOptions options) {
  const std::string what = absl::StrCat("hierarchical group '", options.name, "' of ",
                                        options.nodes, " nodes x ", options.local_size);
  if (options.nodes < 1 || options.local_size < 1) {
    return absl::InvalidArgumentError(absl::StrCat(what, ": nodes and local_size must be >= 1"));
  }
  if (options.in_node == nullptr || options.cross_node == nullptr || options.flat == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, ": in_node, cross_node and flat must all be set"));
  }
  auto check_size = [&](const char* member, const Communicator& communicator, int64_t size) {
    if (communicator.size() == size) return absl::OkStatus();
    return absl::InvalidArgumentError(absl::StrCat(what, ": ", member, " (", communicator.Name(),
                                                   ") has ", communicator.size(),
                                                   " ranks; the shape needs ", size));
  };
  OF_RETURN_IF_ERROR(check_size("in_node", *options.in_node, options.local_size));
  OF_RETURN_IF_ERROR(check_size("cross_node", *options.cross_node, options.nodes));
  OF_RETURN_IF_ERROR(check_size("flat", *options.flat, options.nodes * options.local_size));
  const int64_t expected =
      options.cross_node->rank() * options.local_size + options.in_node->rank();
  if (options.flat->rank() != expected) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, ": flat rank ", options.flat->rank(), " is not node ",
                     options.cross_node->rank(), " * local_size ", options.local_size, " + local ",
                     options.in_node->rank(), " = ", expected));
  }
  return std::unique_ptr<Communicator>(new HierarchicalCommunicator(std::move(options)));
}

}  // namespace oneflow
