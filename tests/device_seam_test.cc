// The actors at a plan's edges reach device memory only through the backend's copies
// (kernels/device_backend.h, docs/runtime.md): data sources, variable initializers and the
// loss sink are bound here with a backend whose device bytes are not the host's (every
// byte XORed with 0x5a on the way in and back on the way out, as a device with its own
// memory would hold them in its own place). A behavior that wrote or read register memory
// directly would leave or see scrambled bytes; through the copies, every value comes out
// as the CPU backend gives it.
#include <cstdint>
#include <cstring>
#include <map>
#include <memory>
#include <vector>

#include "actors/behaviors/leaf_behaviors.h"
#include "gtest/gtest.h"
#include "kernels/backends.h"
#include "kernels/device_backend.h"
#include "plan/plan_index.h"
#include "tests/mlp_plan.h"

namespace oneflow {
namespace {

constexpr uint8_t kScramble = 0x5a;

// The CPU backend, except that bytes crossing to and from the device are XORed.
class ScramblingBackend : public DeviceBackend {
 public:
  explicit ScramblingBackend(DeviceBackend* cpu) : cpu_(cpu) {}
  DeviceType type() const override { return cpu_->type(); }
  absl::StatusOr<void*> Allocate(int64_t bytes) override { return cpu_->Allocate(bytes); }
  void Free(void* memory) override { cpu_->Free(memory); }
  absl::StatusOr<KernelFunction> FindKernel(absl::string_view kernel_name) const override {
    return cpu_->FindKernel(kernel_name);
  }
  std::shared_ptr<KernelThreadPool> CreateThreadPool(int64_t threads) const override {
    return cpu_->CreateThreadPool(threads);
  }
  void CopyToHost(void* host, const void* device, int64_t bytes) const override {
    Scrambled(static_cast<const uint8_t*>(device), bytes, static_cast<uint8_t*>(host));
    copies_to_host += bytes;
  }
  void CopyFromHost(void* device, const void* host, int64_t bytes) const override {
    Scrambled(static_cast<const uint8_t*>(host), bytes, static_cast<uint8_t*>(device));
    copies_from_host += bytes;
  }

  mutable int64_t copies_to_host = 0;
  mutable int64_t copies_from_host = 0;

 private:
  static void Scrambled(const uint8_t* from, int64_t bytes, uint8_t* to) {
    for (int64_t i = 0; i < bytes; ++i) to[i] = from[i] ^ kScramble;
  }
  DeviceBackend* cpu_;
};

// One slot per register of one device, as the engine would give them (iteration ignored:
// each test acts once).
class Slots : public actors::ActContext {
 public:
  explicit Slots(const proto::DevicePlan& device) {
    for (const proto::RegisterDef& reg : device.registers()) bytes_[reg.id()].resize(reg.size_bytes());
  }
  void* RegisterSlot(int64_t register_id, int64_t) const override { return bytes_.at(register_id).data(); }
  std::vector<uint8_t>& Bytes(int64_t register_id) { return bytes_.at(register_id); }

 private:
  mutable std::map<int64_t, std::vector<uint8_t>> bytes_;
};

std::vector<uint8_t> Unscrambled(std::vector<uint8_t> bytes) {
  for (uint8_t& byte : bytes) byte ^= kScramble;
  return bytes;
}

class DeviceSeamTest : public ::testing::Test {
 protected:
  void SetUp() override {
    testing::MlpPlanSpec spec;
    spec.layout = testing::OnOneNode(/*dp=*/2);
    absl::StatusOr<proto::Plan> compiled = testing::CompileMlpPlan(spec);
    ASSERT_TRUE(compiled.ok()) << compiled.status();
    plan_ = *std::move(compiled);
    index_ = std::make_unique<PlanIndex>(plan_);
    absl::StatusOr<DeviceBackend*> cpu = BackendFor(DeviceType::kCpu);
    ASSERT_TRUE(cpu.ok()) << cpu.status();
    cpu_ = *cpu;
  }

  // The actors of `kind` on device 1 (the second data-parallel rank: its own data slice).
  std::vector<actors::ActorBinding> Actors(proto::ActorKind kind) const {
    std::vector<actors::ActorBinding> found;
    for (const proto::ActorDef& actor : plan_.devices(1).actors()) {
      if (actor.kind() == kind) found.push_back(actors::ActorBinding{&plan_, 1, &actor});
    }
    return found;
  }

  proto::Plan plan_;
  std::unique_ptr<PlanIndex> index_;
  DeviceBackend* cpu_ = nullptr;
};

TEST_F(DeviceSeamTest, DataSourcesWriteTheirRegistersThroughTheBackend) {
  const std::vector<actors::ActorBinding> sources = Actors(proto::ACTOR_DATA_SOURCE);
  ASSERT_FALSE(sources.empty());
  for (const actors::ActorBinding& binding : sources) {
    ScramblingBackend device(cpu_);
    absl::StatusOr<actors::ActFunction> scrambled = actors::BindDataSource(*index_, binding, device);
    absl::StatusOr<actors::ActFunction> plain = actors::BindDataSource(*index_, binding, *cpu_);
    ASSERT_TRUE(scrambled.ok()) << scrambled.status();
    ASSERT_TRUE(plain.ok()) << plain.status();
    Slots on_device(plan_.devices(1)), on_host(plan_.devices(1));
    const int64_t iteration = 3;
    ASSERT_TRUE((*scrambled)(iteration, on_device).ok());
    ASSERT_TRUE((*plain)(iteration, on_host).ok());
    int64_t output_bytes = 0;
    for (const auto& [name, register_id] : binding.actor->kernels(0).outputs()) {
      const std::vector<uint8_t>& expected = on_host.Bytes(register_id);
      // Real data, not a register left as it was.
      EXPECT_NE(expected, std::vector<uint8_t>(expected.size(), 0)) << name;
      EXPECT_EQ(Unscrambled(on_device.Bytes(register_id)), expected) << name;
      output_bytes += static_cast<int64_t>(expected.size());
    }
    EXPECT_EQ(device.copies_from_host, output_bytes);
    EXPECT_EQ(device.copies_to_host, 0);
  }
}

TEST_F(DeviceSeamTest, VariablesInitializeThroughTheBackend) {
  const std::vector<actors::ActorBinding> variables = Actors(proto::ACTOR_VARIABLE);
  ASSERT_FALSE(variables.empty());
  for (const actors::ActorBinding& binding : variables) {
    ScramblingBackend device(cpu_);
    absl::StatusOr<actors::ActFunction> scrambled = actors::BindVariable(*index_, binding, device);
    absl::StatusOr<actors::ActFunction> plain = actors::BindVariable(*index_, binding, *cpu_);
    ASSERT_TRUE(scrambled.ok()) << scrambled.status();
    ASSERT_TRUE(plain.ok()) << plain.status();
    Slots on_device(plan_.devices(1)), on_host(plan_.devices(1));
    ASSERT_TRUE((*scrambled)(0, on_device).ok());
    ASSERT_TRUE((*plain)(0, on_host).ok());
    const int64_t register_id = binding.actor->kernels(0).outputs().at("out");
    EXPECT_EQ(Unscrambled(on_device.Bytes(register_id)), on_host.Bytes(register_id))
        << binding.actor->kernels(0).op_name();
    EXPECT_EQ(device.copies_from_host, static_cast<int64_t>(on_host.Bytes(register_id).size()));
    // Later acts leave the slice to the optimizer: nothing crosses again.
    ASSERT_TRUE((*scrambled)(1, on_device).ok());
    EXPECT_EQ(device.copies_from_host, static_cast<int64_t>(on_host.Bytes(register_id).size()));
  }
}

TEST_F(DeviceSeamTest, TheLossSinkReadsTheLossThroughTheBackend) {
  const std::vector<actors::ActorBinding> sinks = Actors(proto::ACTOR_SINK);
  ASSERT_EQ(sinks.size(), 1u);
  ScramblingBackend device(cpu_);
  std::vector<std::pair<int64_t, float>> reported;
  absl::StatusOr<actors::ActFunction> sink = actors::BindLossSink(
      sinks[0], device, [&reported](int64_t iteration, float loss) { reported.push_back({iteration, loss}); });
  ASSERT_TRUE(sink.ok()) << sink.status();
  Slots slots(plan_.devices(1));
  const int64_t register_id = sinks[0].actor->kernels(0).inputs().at("loss");
  const float loss = 1.2345f;
  device.CopyFromHost(slots.Bytes(register_id).data(), &loss, sizeof(loss));  // as a kernel on the device left it
  ASSERT_TRUE((*sink)(7, slots).ok());
  ASSERT_EQ(reported.size(), 1u);
  EXPECT_EQ(reported[0].first, 7);
  EXPECT_EQ(reported[0].second, loss);
  EXPECT_EQ(device.copies_to_host, static_cast<int64_t>(sizeof(float)));
}

}  // namespace
}  // namespace oneflow
