// Actor-engine overhead: no-op actors on one device's compute thread, so every
// nanosecond is the engine's (messages, readiness checks, queue locks).
//   chain  N actors, actor k reads register k-1 and writes register k (count 2)
//   fan    one producer whose register N consumers read
// One JSON line per shape: {"bench":"actor_overhead","shape":"chain","actors":..,
// "iterations":..,"acts":..,"seconds":..,"ns_per_act":..,"messages_per_s":..,
// "goal_ns_per_act":500,"ratio_to_goal":..}. Messages per act: one per consumer of each
// produced register, one per consumed register (returned), plus end-of-data.
#include <chrono>
#include <cstdio>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "actors/engine.h"
#include "kernels/cpu/blas_core.h"

ABSL_FLAG(int64_t, actors, 1000, "Actors per shape.");
ABSL_FLAG(int64_t, iterations, 200, "Iterations.");

namespace oneflow::actors {
namespace {

proto::Plan Shape(bool chain, int64_t n) {
  proto::Plan plan;
  plan.set_register_count(2);
  proto::DevicePlan* device = plan.add_devices();
  proto::MemoryBlock* block = device->add_memory_blocks();
  block->set_id(0);
  block->set_size_bytes(64);
  block->set_slot_stride_bytes(64);
  auto add_register = [&](int64_t producer) {
    proto::RegisterDef* reg = device->add_registers();
    reg->set_id(device->registers_size() - 1);
    reg->set_producer_actor(producer);
    reg->set_count(2);
    reg->set_size_bytes(4);
    return reg;
  };
  for (int64_t a = 0; a < n; ++a) {
    proto::ActorDef* actor = device->add_actors();
    actor->set_id(a);
    actor->set_name("noop");
    actor->set_kind(proto::ACTOR_COMPUTE);
    actor->set_collective_id(-1);
    if (chain || a == 0) {
      actor->add_produced_registers(add_register(a)->id());
    }
    const int64_t input = chain ? a - 1 : (a == 0 ? -1 : 0);
    if (input >= 0) {
      actor->add_consumed_registers(input);
      device->mutable_registers(static_cast<int>(input))->add_consumer_actors(a);
    }
  }
  return plan;
}

int Run() {
  const int64_t n = absl::GetFlag(FLAGS_actors);
  const int64_t iterations = absl::GetFlag(FLAGS_iterations);
  BindFunction bind = [](const ActorBinding&) -> absl::StatusOr<ActFunction> {
    return ActFunction([](int64_t, const ActContext&) { return absl::OkStatus(); });
  };
  for (bool chain : {true, false}) {
    const proto::Plan plan = Shape(chain, n);
    EngineOptions options;
    options.iterations = iterations;
    const auto start = std::chrono::steady_clock::now();
    absl::StatusOr<EngineResult> result = RunEngine(plan, bind, options);
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (!result.ok()) {
      std::fprintf(stderr, "actor_bench: %s\n", std::string(result.status().message()).c_str());
      return 1;
    }
    const double acts = static_cast<double>(n * iterations);
    // chain: each act sends 1 readable + 1 returned; fan: the producer sends n-1
    // readables, each consumer 1 returned.
    const double messages = chain ? 2.0 * acts : 2.0 * (n - 1) * iterations;
    const double ns = seconds * 1e9 / acts;
    std::printf("{\"bench\":\"actor_overhead\",\"shape\":\"%s\",\"actors\":%lld,\"iterations\":%lld,"
                "\"acts\":%.0f,\"seconds\":%.4f,\"ns_per_act\":%.1f,\"messages_per_s\":%.0f,"
                "\"goal_ns_per_act\":500,\"ratio_to_goal\":%.3f}\n",
                chain ? "chain" : "fan", static_cast<long long>(n), static_cast<long long>(iterations), acts,
                seconds, ns, messages / seconds, ns / 500.0);
  }
  return 0;
}

}  // namespace
}  // namespace oneflow::actors

int main(int argc, char** argv) {
  oneflow::cpu::UseBestBlasCore();  // First: it may restart the program.
  absl::ParseCommandLine(argc, argv);
  return oneflow::actors::Run();
}
