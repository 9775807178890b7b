#include "tools/cli/shared_machine_turns.h"

#include "compiler/auto_parallel/host_terms.h"
#include "gtest/gtest.h"
#include "sbp/calibration.h"
#include "tools/cli/host_calibration.h"

namespace oneflow::cli {
namespace {

SharedMachineMeasurement Machine(int64_t nodes, int64_t cores) { return {nodes, cores, "one boot id", std::nullopt}; }

TEST(SharedMachineTurnsTest, MoreNodesThanCoresOnCalibratesOwnMachineAreMeasured) {
  EXPECT_EQ(DecideTurns(Machine(3, 2), "boot-a", MachineIdentity{"boot-a", 2}), TurnsDecision::kMeasure);
}

TEST(SharedMachineTurnsTest, ACorePerNodeNeedsNoTurns) {
  // 2 emulated hosts on 2 cores: each process has a core; 2 of 4 likewise.
  EXPECT_EQ(DecideTurns(Machine(2, 2), "boot-a", MachineIdentity{"boot-a", 2}), TurnsDecision::kCorePerNode);
  EXPECT_EQ(DecideTurns(Machine(2, 4), "boot-a", MachineIdentity{"boot-a", 4}), TurnsDecision::kCorePerNode);
}

TEST(SharedMachineTurnsTest, CalibrateOnAnotherMachineCannotMeasureThem) {
  EXPECT_EQ(DecideTurns(Machine(3, 2), "boot-a", MachineIdentity{"boot-b", 8}), TurnsDecision::kOtherMachine);
  // A boot id calibrate could not read says nothing about where it runs.
  EXPECT_EQ(DecideTurns(Machine(3, 2), "", MachineIdentity{"", 2}), TurnsDecision::kOtherMachine);
}

TEST(SharedMachineTurnsTest, ElsewhereTheLineSaysWhyNothingWasMeasured) {
  SharedMachineMeasurement machine = Machine(2, 1);
  const MachineIdentity here = ThisMachine();
  EXPECT_EQ(DecideTurns(machine, here.boot_id + "-elsewhere", here), TurnsDecision::kOtherMachine);
  ASSERT_TRUE(AddSharedMachineTurns(here.boot_id + "-elsewhere", &machine).ok());
  EXPECT_FALSE(machine.turns.has_value());
  EXPECT_NE(machine.method.find("turns not measured: calibrate ran on another machine"), std::string::npos)
      << machine.method;
}

// The machine line's turns take the act costs and the core share from the probe across
// one process per node (as the launched job runs), the collective call from one process's
// threads; written, read back and turned into the search's host terms, the processes'
// share is what prices a cluster of the line's nodes, and the method names both shares.
TEST(SharedMachineTurnsTest, TheProcessesShareIsWhatPricesTheSharedMachinesNodes) {
  HostRuntime threads;
  threads.measurement = HostMeasurement{3, 1.25e-06, 5e-05, 2, "threads' probe", 1.5, std::nullopt};
  SharedHostProbe processes;
  processes.terms.act_seconds = 2e-06;
  processes.terms.host_core_share = 1.875;
  processes.method = "processes' probe";
  SharedMachineMeasurement machine = Machine(3, 2);
  SetMeasuredTurns(threads, processes, &machine);

  absl::StatusOr<Calibration> calibration = ParseCalibration(SharedMachineLine(machine), "c.jsonl");
  ASSERT_TRUE(calibration.ok()) << calibration.status();
  ASSERT_TRUE(calibration->shared_machine.has_value());
  EXPECT_EQ(calibration->shared_machine->processes, 3);
  const std::optional<proto::AutoParallelHostTerms> terms =
      auto_parallel::HostTermsFor(*calibration, /*nodes=*/3, /*devices=*/3, "c.jsonl");
  ASSERT_TRUE(terms.has_value());
  auto_parallel::PriceOptions options;
  auto_parallel::ApplyHostTerms(*terms, &options);
  EXPECT_EQ(options.host_core_share, 1.875);
  EXPECT_EQ(options.act_seconds, 2e-06);
  EXPECT_EQ(options.collective_call_seconds, 5e-05);
  EXPECT_EQ(options.host_cores, 2);
  EXPECT_NE(machine.method.find("act and core share (1.88) with one process per node: processes' probe"),
            std::string::npos)
      << machine.method;
  EXPECT_NE(machine.method.find("as threads of one process (core share 1.5, act 1.25 us): threads' probe"),
            std::string::npos)
      << machine.method;
}

// With a core per node the line carries an act's cost on its own core (no turns): written,
// read back and turned into host terms it prices every act of a cluster of the line's
// nodes at that cost, collective calls free (the links' measurement has them), a core per
// device; a cluster of more devices than cores (2 devices per node) is not priced with it.
TEST(SharedMachineTurnsTest, ACorePerNodePricesEachActAtItsOwnCoresCost) {
  SharedMachineMeasurement machine = Machine(2, 2);
  SetOwnCoreActSeconds(1.5e-06, "processes' probe", &machine);
  EXPECT_NE(machine.method.find("act on its own core: 1.5 us, the slope of the step over each device's acts in the "
                                "dp runs, with one process per node: processes' probe"),
            std::string::npos)
      << machine.method;
  absl::StatusOr<Calibration> calibration = ParseCalibration(SharedMachineLine(machine), "c.jsonl");
  ASSERT_TRUE(calibration.ok()) << calibration.status();
  const std::optional<proto::AutoParallelHostTerms> terms =
      auto_parallel::HostTermsFor(*calibration, /*nodes=*/2, /*devices=*/2, "c.jsonl");
  ASSERT_TRUE(terms.has_value());
  auto_parallel::PriceOptions options;
  auto_parallel::ApplyHostTerms(*terms, &options);
  EXPECT_EQ(options.act_seconds, 1.5e-06);
  EXPECT_EQ(options.collective_call_seconds, 0);
  EXPECT_EQ(options.host_cores, 2);
  EXPECT_EQ(options.host_core_share, 2);
  proto::AutoParallelDecision decision;
  *decision.mutable_host_terms() = *terms;
  EXPECT_EQ(auto_parallel::HostTermsText(decision),
            "2 nodes on one machine of 2 cores, a core each: act 1.5 us of wall time (measured across 2 processes, "
            "c.jsonl)");
  // 4 devices on the 2 cores take turns: not the line's own-core cost (acts free, as
  // without turns measured).
  const std::optional<proto::AutoParallelHostTerms> shared =
      auto_parallel::HostTermsFor(*calibration, /*nodes=*/2, /*devices=*/4, "c.jsonl");
  ASSERT_TRUE(shared.has_value());
  EXPECT_EQ(shared->act_seconds(), 0);
  EXPECT_EQ(shared->host_core_share(), 0);
}

}  // namespace
}  // namespace oneflow::cli
