// How often a waiting UCX rank reads its group's failure key (peer_check.h): in proportion
// to what a read costs, so a slow store (the rendezvous daemon over gRPC on a loaded
// machine) does not take the communication thread's time, while a fast one still tells a
// peer's failure within milliseconds; and only in a wait that lasts.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "oneflow_core/comm/key_value_store.h"
#include "oneflow_core/comm/ucx/communicator.h"
#include "oneflow_core/comm/ucx/peer_check.h"

namespace oneflow {
namespace ucx_backend {
namespace {

// One rank's view of a shared store whose reads take `read_delay`; counts this rank's reads
// of the group's failure key ("<group>/failed").
class TimedStore final : public KeyValueStore {
 public:
  TimedStore(KeyValueStore* shared, absl::Duration read_delay)
      : shared_(shared), read_delay_(read_delay) {}
  absl::Status Set(const std::string& key, const std::string& value) override {
    return shared_->Set(key, value);
  }
  absl::StatusOr<std::string> Get(const std::string& key) override {
    if (absl::EndsWith(key, "/failed")) {
      failure_key_reads_.fetch_add(1);
      absl::SleepFor(read_delay_);
    }
    return shared_->Get(key);
  }
  absl::Status Wait(const std::vector<std::string>& keys, absl::Duration timeout) override {
    return shared_->Wait(keys, timeout);
  }
  absl::StatusOr<int64_t> Add(const std::string& key, int64_t delta) override {
    return shared_->Add(key, delta);
  }
  int64_t failure_key_reads() const { return failure_key_reads_.load(); }

 private:
  KeyValueStore* const shared_;
  const absl::Duration read_delay_;
  std::atomic<int64_t> failure_key_reads_{0};
};

CollectiveOptions Options() {
  CollectiveOptions options;
  options.timeout = absl::Seconds(30);
  options.description = "peer_check_test";
  return options;
}

// Rank 0 of two makes `calls` all-reduces of `count` floats, before each of which rank 1
// sleeps `wait` (after a first call that connects the group); returns how often rank 0
// read the failure key during them.
int64_t FailureKeyReads(absl::Duration read_delay, absl::Duration wait, int64_t count, int calls) {
  std::unique_ptr<KeyValueStore> shared = NewInMemoryKeyValueStore();
  std::vector<std::unique_ptr<TimedStore>> stores;
  std::vector<std::unique_ptr<Communicator>> ranks;
  for (int64_t rank = 0; rank < 2; ++rank) {
    stores.push_back(std::make_unique<TimedStore>(shared.get(), read_delay));
    UcxGroupOptions options;
    options.group_name = "peer_check";
    options.rank = rank;
    options.size = 2;
    options.store = stores.back().get();
    absl::StatusOr<std::unique_ptr<Communicator>> communicator = NewUcxCommunicator(options);
    EXPECT_TRUE(communicator.ok()) << communicator.status();
    if (!communicator.ok()) return -1;
    ranks.push_back(std::move(communicator).value());
  }
  int64_t reads_before = 0;
  std::vector<std::thread> threads;
  for (int64_t rank = 0; rank < 2; ++rank) {
    threads.emplace_back([&, rank] {
      std::vector<float> data(count, static_cast<float>(rank + 1));
      ASSERT_TRUE(ranks[rank]->AllReduce(data.data(), data.data(), count, Options()).ok());
      if (rank == 0) reads_before = stores[0]->failure_key_reads();
      for (int call = 0; call < calls; ++call) {
        if (rank == 1) absl::SleepFor(wait);
        std::fill(data.begin(), data.end(), static_cast<float>(rank + 1));
        const absl::Status status = ranks[rank]->AllReduce(data.data(), data.data(), count, Options());
        ASSERT_TRUE(status.ok()) << status;
        EXPECT_EQ(data[count - 1], 3.0f);
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  return stores[0]->failure_key_reads() - reads_before;
}

// Rank 0 of two waits `wait` in one 4 KiB all-reduce for rank 1.
int64_t FailureKeyReadsWhileWaiting(absl::Duration read_delay, absl::Duration wait) {
  return FailureKeyReads(read_delay, wait, 1024, 1);
}

TEST(PeerCheckInterval, FollowsTheCostOfACheckWithinItsBounds) {
  EXPECT_EQ(PeerCheckInterval(absl::Microseconds(20)), absl::Milliseconds(5));
  EXPECT_EQ(PeerCheckInterval(absl::Microseconds(1300)), absl::Milliseconds(65));
  EXPECT_EQ(PeerCheckInterval(absl::Seconds(1)), absl::Milliseconds(100));
}

// A read of 4 ms: at most one check per 100 ms, where a fixed 5 ms interval read the key
// in every turn of the wait (~60 times in 400 ms).
TEST(PeerCheck, ASlowStoreIsReadInProportionToItsCost) {
  const int64_t reads = FailureKeyReadsWhileWaiting(absl::Milliseconds(4), absl::Milliseconds(400));
  EXPECT_GE(reads, 1);
  EXPECT_LE(reads, 12) << "rank 0 read the failure key " << reads << " times in 400 ms";
}

// A fast store is still read every few milliseconds while a rank waits, so a peer's failure
// record is seen promptly: ~80 reads in 400 ms at 5 ms; at least 10 leaves room for a
// loaded machine and is still twice what a fixed 100 ms interval would give.
TEST(PeerCheck, AFastStoreIsReadEveryFewMilliseconds) {
  const int64_t reads = FailureKeyReadsWhileWaiting(absl::ZeroDuration(), absl::Milliseconds(400));
  EXPECT_GE(reads, 10) << "rank 0 read the failure key " << reads << " times in 400 ms";
}

// Short waits do not read the store: 50 all-reduces of 128 KiB (past the small all-reduce,
// whose end looks too: arrival.cc) in which rank 0 waits about 1 ms for rank 1 each time.
// Checking in every wait read the key about every 5 ms of them (10-15 times); now only a
// wait of kCheckAfterWaiting does, which a 1 ms sleep reaches only when the machine
// deschedules rank 1 for longer.
TEST(PeerCheck, ShortWaitsDoNotReadTheStore) {
  const int64_t reads = FailureKeyReads(absl::ZeroDuration(), absl::Milliseconds(1), 32768, 50);
  EXPECT_LE(reads, 3) << "rank 0 read the failure key " << reads << " times in 50 waits of about 1 ms";
}

}  // namespace
}  // namespace ucx_backend
}  // namespace oneflow
