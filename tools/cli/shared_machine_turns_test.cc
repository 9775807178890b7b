#include "tools/cli/shared_machine_turns.h"

#include "gtest/gtest.h"

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

}  // namespace
}  // namespace oneflow::cli
