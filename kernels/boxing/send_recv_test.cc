// RunSendRecv between placements (disjoint, overlapping, the same devices under another
// hierarchy, other nodes), each device of the union group on its own thread, against
// sbp/boxing_simulator; and the bytes that travel: a destination receives its slice minus
// what it holds itself.
#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "kernels/boxing/boxing_step.h"
#include "oneflow_core/comm/in_process/communicator.h"
#include "oneflow_core/comm/in_process/rank_threads.h"
#include "oneflow_core/tensor_slice.h"
#include "sbp/boxing_simulator.h"

namespace oneflow {
namespace {

// Forwards to an in-process communicator and records the bytes its rank receives.
class CountingCommunicator final : public Communicator {
 public:
  explicit CountingCommunicator(Communicator* inner) : inner_(inner) {}
  int64_t size() const override { return inner_->size(); }
  int64_t rank() const override { return inner_->rank(); }
  std::string Name() const override { return inner_->Name(); }
  absl::Status AllReduce(const float* i, float* o, int64_t c, const CollectiveOptions& x) override {
    return inner_->AllReduce(i, o, c, x);
  }
  absl::Status ReduceScatter(const float* i, float* o, absl::Span<const int64_t> c,
                             const CollectiveOptions& x) override {
    return inner_->ReduceScatter(i, o, c, x);
  }
  absl::Status AllGather(const void* i, void* o, absl::Span<const int64_t> c,
                         const CollectiveOptions& x) override {
    return inner_->AllGather(i, o, c, x);
  }
  absl::Status AllToAll(const void* i, void* o, absl::Span<const int64_t> c,
                        const CollectiveOptions& x) override {
    for (int64_t source = 0; source < size(); ++source) {
      if (source != rank()) received += c[source * size() + rank()];
    }
    return inner_->AllToAll(i, o, c, x);
  }
  absl::Status Broadcast(void* b, int64_t n, int64_t r, const CollectiveOptions& x) override {
    return inner_->Broadcast(b, n, r, x);
  }
  absl::Status Send(const void* d, int64_t n, int64_t p, const CollectiveOptions& x) override {
    return inner_->Send(d, n, p, x);
  }
  absl::Status Recv(void* d, int64_t n, int64_t p, const CollectiveOptions& x) override {
    return inner_->Recv(d, n, p, x);
  }
  void Abort(const absl::Status& cause) override { inner_->Abort(cause); }

  int64_t received = 0;

 private:
  Communicator* inner_;
};

struct Case {
  std::string shape, src, src_placement, dst, dst_placement;
};

// Runs the case; returns the bytes each destination rank received from other devices.
std::vector<int64_t> RunCase(const Case& test, DType dtype) {
  const std::string name = absl::StrCat(test.src, " on ", test.src_placement, " -> ", test.dst,
                                        " on ", test.dst_placement, " ", DTypeName(dtype));
  const Shape shape = *Shape::Parse(test.shape);
  const Placement from = *Placement::Parse(test.src_placement);
  const Placement to = *Placement::Parse(test.dst_placement);
  const NdSbp src = *NdSbp::Parse(test.src);
  const NdSbp dst = *NdSbp::Parse(test.dst);
  std::vector<float> values(shape.NumElements());
  for (size_t i = 0; i < values.size(); ++i) values[i] = static_cast<float>((i * 29) % 53) - 26.0f;
  const SimulatedTensor before = *Distribute(shape, values, src, from, 3);
  SimulatedTensor expected = before;
  BoxingStep step;
  step.kind = BoxingKind::kSendRecv;
  step.src = src;
  step.dst = dst;
  const absl::Status simulated = SimulateStep(shape, step, from, to, &expected);
  EXPECT_TRUE(simulated.ok()) << name << ": " << simulated;

  std::vector<DeviceId> members = from.devices();
  for (const DeviceId& device : to.devices()) {
    if (from.RankOf(device) < 0) members.push_back(device);
  }
  const int64_t n = static_cast<int64_t>(members.size());
  std::unique_ptr<InProcessGroup> group = std::move(InProcessGroup::Create(n, "union")).value();
  std::vector<std::unique_ptr<CountingCommunicator>> counting;
  for (int64_t u = 0; u < n; ++u)
    counting.push_back(std::make_unique<CountingCommunicator>(&group->communicator(u)));
  const int64_t element_size = SizeOf(dtype);
  std::vector<std::vector<char>> outputs(to.num_devices());
  RunOnRankThreads(n, [&](int64_t u) {
    SendRecvArgs args;
    args.logical = shape;
    args.dtype = dtype;
    args.src = src;
    args.src_placement = &from;
    args.dst = dst;
    args.dst_placement = &to;
    args.device = members[u];
    args.communicator = counting[u].get();
    args.options.timeout = absl::Seconds(20);
    std::vector<char> input;
    const int64_t s = from.RankOf(members[u]);
    if (s >= 0) {
      input.resize(before.buffers[s].size() * element_size);
      for (size_t i = 0; i < before.buffers[s].size(); ++i) {
        if (dtype == DType::kF32) {
          reinterpret_cast<float*>(input.data())[i] = before.buffers[s][i];
        } else {
          reinterpret_cast<int32_t*>(input.data())[i] = static_cast<int32_t>(before.buffers[s][i]);
        }
      }
      args.input = input.data();
      args.input_bytes = static_cast<int64_t>(input.size());
    }
    const int64_t t = to.RankOf(members[u]);
    if (t >= 0) {
      outputs[t].assign(DeviceSlice(shape, dst, to, t)->NumElements() * element_size, char{0x55});
      args.output = outputs[t].data();
      args.output_bytes = static_cast<int64_t>(outputs[t].size());
    }
    const absl::Status status = RunSendRecv(args);
    EXPECT_TRUE(status.ok()) << name << " device " << members[u].ToString() << ": " << status;
  });
  std::vector<int64_t> received(to.num_devices());
  SimulatedTensor produced{dst, {}};
  for (int64_t t = 0; t < to.num_devices(); ++t) {
    std::vector<float> got(outputs[t].size() / element_size);
    for (size_t i = 0; i < got.size(); ++i) {
      got[i] = dtype == DType::kF32
                   ? reinterpret_cast<const float*>(outputs[t].data())[i]
                   : static_cast<float>(reinterpret_cast<const int32_t*>(outputs[t].data())[i]);
    }
    EXPECT_EQ(got, expected.buffers[t]) << name << " destination rank " << t;
    produced.buffers.push_back(std::move(got));
    const int64_t u = std::find(members.begin(), members.end(), to.device(t)) - members.begin();
    received[t] = counting[u]->received;
  }
  const absl::Status holds = CheckHoldsLogical(shape, values, produced, to, 0.0f);
  EXPECT_TRUE(holds.ok()) << name << ": " << holds;
  return received;
}

TEST(SendRecvTest, MatchesTheSimulatorAcrossPlacements) {
  const std::vector<Case> cases = {
      {"[5, 7]", "S(0)", "cpu{0:0-1}", "S(0)", "cpu{0:2-4}"},
      {"[5, 7]", "B", "cpu{0:0-3}", "S(1)", "cpu{1:0-3}"},
      {"[5, 7]", "S(0)", "cpu{0:0-3}", "[S(0), S(1)]", "cpu{0:0-3}[2, 2]"},
      {"[5, 7]", "S(1)", "cpu{0:0-2}", "[S(0), S(0)]", "cpu{0:1-4}[2, 2]"},
      {"[5, 7]", "[S(0), B]", "cpu{0:0-3}[2, 2]", "[P, S(1)]", "cpu{0:2-5}[2, 2]"},
      {"[5, 7]", "B", "cpu{0:0-1}", "P", "cpu{0:0-2}"},
      {"[3, 5, 4]", "[S(1), S(0)]", "cpu{0:0-3}[2, 2]", "S(2)", "cpu{0:3-5}"},
      {"[2, 9]", "S(0)", "cpu{0:0-3}", "[S(1), S(0)]", "cpu{0:0-2, 1:0-2}[2, 3]"},
      {"[]", "B", "cpu{0:0-1}", "B", "cpu{0:1-3}"},
  };
  for (const Case& test : cases) {
    RunCase(test, DType::kF32);
    RunCase(test, DType::kI32);
  }
}

// A destination receives its slice minus what it holds itself.
TEST(SendRecvTest, OnlyWhatADeviceLacksTravels) {
  // Same devices, same slices under another hierarchy: nothing moves.
  EXPECT_THAT(
      RunCase({"[5, 7]", "S(0)", "cpu{0:0-3}", "[S(0), S(0)]", "cpu{0:0-3}[2, 2]"}, DType::kF32),
      ::testing::ElementsAre(0, 0, 0, 0));
  // S(0) over 2 devices -> S(0) over 3 disjoint ones: each receives its whole slice
  // (rows 2, 2, 1 of 7 f32).
  EXPECT_THAT(RunCase({"[5, 7]", "S(0)", "cpu{0:0-1}", "S(0)", "cpu{0:2-4}"}, DType::kF32),
              ::testing::ElementsAre(56, 56, 28));
  // B on devices 0-1 -> B on devices 1-3: device 1 holds it already.
  EXPECT_THAT(RunCase({"[5, 7]", "B", "cpu{0:0-1}", "B", "cpu{0:1-3}"}, DType::kF32),
              ::testing::ElementsAre(0, 140, 140));
}

TEST(SendRecvTest, Errors) {
  const Placement from = *Placement::Parse("cpu{0:0-1}");
  const Placement to = *Placement::Parse("cpu{0:2-3}");
  std::unique_ptr<InProcessGroup> group = std::move(InProcessGroup::Create(4, "union")).value();
  std::vector<float> buffer(35);
  SendRecvArgs args{Shape{5, 7},
                    DType::kF32,
                    *NdSbp::Parse("P"),
                    &from,
                    *NdSbp::Parse("B"),
                    &to,
                    DeviceId{0, 0},
                    &group->communicator(0),
                    buffer.data(),
                    140,
                    nullptr,
                    0,
                    {}};
  EXPECT_EQ(RunSendRecv(args).message(),
            "send_recv of f32 [5, 7]: P on cpu{0:0-1} -> B on cpu{0:2-3}, device 0:0: a partial "
            "value does not travel; reduce it on the source placement first");
  args.src = *NdSbp::Parse("B");
  args.device = DeviceId{1, 0};
  EXPECT_THAT(std::string(RunSendRecv(args).message()),
              ::testing::HasSubstr("the device is in neither placement"));
  args.device = DeviceId{0, 0};
  args.communicator = &group->communicator(1);
  EXPECT_THAT(std::string(RunSendRecv(args).message()),
              ::testing::HasSubstr("needs the communicator of the union group (4 devices, this one "
                                   "number 0), got in-process group 'union' rank 1 of 4"));
}

}  // namespace
}  // namespace oneflow
