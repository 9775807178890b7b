// Cost of the flight recorder per collective act (Begin + NoteCollectiveStart + End:
// three steady-clock reads and a handful of relaxed atomic stores), and of a dump of full
// rings. One JSON line per figure:
//   bazel run -c opt //bench/actors:flight_recorder_bench
#include <chrono>
#include <cstdio>

#include "actors/flight_recorder.h"
#include "kernels/cpu/blas_core.h"

int main() {
  oneflow::cpu::UseBestBlasCore();  // First: it may restart the program.
  oneflow::proto::Plan plan;
  oneflow::proto::CollectiveDef* collective = plan.add_collectives();
  collective->set_id(0);
  collective->set_kind(oneflow::proto::ALL_REDUCE);
  for (int d = 0; d < 2; ++d) {
    oneflow::proto::DeviceId* member = collective->add_group();
    member->set_device(d);
    oneflow::proto::DevicePlan* device = plan.add_devices();
    *device->mutable_device() = *member;
    device->add_collective_order(0);
  }
  oneflow::actors::FlightRecorder recorder(plan, 0);
  constexpr int64_t kActs = 10000000;
  const auto start = std::chrono::steady_clock::now();
  for (int64_t i = 0; i < kActs; ++i) {
    recorder.Begin(0, 0, i);
    oneflow::actors::FlightRecorder::NoteCollectiveStart();
    recorder.End(0, true);
  }
  const double ns = std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - start).count();
  std::printf("{\"figure\": \"record_ns_per_act\", \"value\": %.1f}\n", ns / kActs);
  const auto dump_start = std::chrono::steady_clock::now();
  const std::string json = recorder.DumpJson("bench");
  const double dump_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - dump_start).count();
  std::printf("{\"figure\": \"dump_ms\", \"value\": %.3f, \"bytes\": %zu}\n", dump_ms, json.size());
  return 0;
}
