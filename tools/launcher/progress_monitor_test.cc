// The launch's hang and slow-rank detection on hand-made heartbeats of a 2-node plan
// with one all-reduce per iteration (the live runs are tests/cluster/diagnosis_launch_test).
#include "tools/launcher/progress_monitor.h"

#include <random>
#include <utility>
#include <vector>

#include "tools/launcher/worker_status_file.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace oneflow::launcher {
namespace {

using ::testing::HasSubstr;

proto::Plan TwoNodePlan() {
  proto::Plan plan;
  for (int node = 0; node < 2; ++node) {
    proto::DevicePlan* device = plan.add_devices();
    device->mutable_device()->set_node(node);
    device->mutable_device()->set_device(0);
    device->add_collective_order(0);
  }
  proto::CollectiveDef* collective = plan.add_collectives();
  collective->set_id(0);
  collective->set_kind(proto::ALL_REDUCE);
  collective->set_bytes_per_device(4096);
  for (int node = 0; node < 2; ++node) {
    proto::DeviceId* member = collective->add_group();
    member->set_node(node);
    member->set_device(0);
  }
  return plan;
}

proto::JobEvent::Heartbeat Beat(int64_t device, int64_t completed, int64_t entered, int64_t collective_ns,
                                absl::Time now, int64_t silent_ms = 0, bool stopped = false) {
  proto::JobEvent::Heartbeat beat;
  proto::DeviceProgress* progress = beat.add_progress();
  progress->set_device(device);
  progress->set_completed_collectives(completed);
  progress->set_entered_collectives(entered);
  progress->set_collective(0);
  progress->set_collective_ns(collective_ns);
  beat.set_sampled_unix_ms(absl::ToUnixMillis(now));
  beat.set_worker_silent_ms(silent_ms);
  beat.set_worker_stopped(stopped);
  return beat;
}

// Both nodes of TwoNodePlan progress for 2 s from `now` (10 collectives a heartbeat):
// no hang. Returns the time after.
absl::Time ProgressTwoSeconds(ProgressMonitor& monitor, absl::Time now) {
  for (int step = 0; step < 4; ++step, now += absl::Milliseconds(500)) {
    monitor.Observe(0, Beat(0, 10 * step, 10 * step + 1, 0, now), now);
    monitor.Observe(1, Beat(1, 10 * step, 10 * step, 0, now), now);
    EXPECT_FALSE(monitor.CheckHang(now).has_value());
  }
  return now;
}

TEST(ProgressMonitorTest, StoppedRankIsNamedWithTheCollectiveAndWhoArrived) {
  const proto::Plan plan = TwoNodePlan();
  ProgressMonitor monitor(plan, MonitorOptions{});
  // Both progress for 2 s, then node 1 stops before collective 40; node 0 waits in it.
  absl::Time now = ProgressTwoSeconds(monitor, absl::FromUnixSeconds(1000));
  const absl::Time stop = now;
  for (; now < stop + absl::Seconds(7); now += absl::Milliseconds(500)) {
    const int64_t silent = absl::ToInt64Milliseconds(now - stop);
    monitor.Observe(0, Beat(0, 40, 41, 0, now), now);
    monitor.Observe(1, Beat(1, 40, 40, 0, now, silent, true), now);
    const std::optional<HangFinding> hang = monitor.CheckHang(now);
    if (now - stop < absl::Seconds(5)) {
      EXPECT_FALSE(hang.has_value()) << absl::FormatDuration(now - stop) << ": " << hang->text;
    } else {
      ASSERT_TRUE(hang.has_value()) << absl::FormatDuration(now - stop);
      EXPECT_EQ(hang->sequence, 40);
      EXPECT_EQ(hang->suspects, std::vector<int64_t>{1});
      EXPECT_EQ(hang->arrived, std::vector<int64_t>{0});
      EXPECT_THAT(hang->text, HasSubstr("collective 0 (ALL_REDUCE, 4096 B) sequence 40"));
      EXPECT_THAT(hang->text, HasSubstr("node 1 device 1:0 (rank 1 of the group) has not entered it"));
      EXPECT_THAT(hang->text, HasSubstr("stopped"));
      EXPECT_THAT(hang->text, HasSubstr("Arrived and waiting: 0:0"));
    }
  }
}

TEST(ProgressMonitorTest, ARankStillProgressingIsNoHang) {
  const proto::Plan plan = TwoNodePlan();
  ProgressMonitor monitor(plan, MonitorOptions{});
  absl::Time now = absl::FromUnixSeconds(1000);
  // Node 0 waits in collective 5 for 8 s while node 1 computes towards it (its
  // completed count still moves, slowly): slow perhaps, no hang.
  for (int step = 0; step < 16; ++step, now += absl::Milliseconds(500)) {
    monitor.Observe(0, Beat(0, 5, 6, 0, now), now);
    monitor.Observe(1, Beat(1, step / 4, step / 4, 0, now), now);
    EXPECT_FALSE(monitor.CheckHang(now).has_value());
  }
}

// dp=2 x tp=2 on 2 nodes with two communication streams: the tp all-reduces (groups 0:
// [0:0, 0:1], 1: [1:0, 1:1]) and the dp all-gathers (group 2: [0:0, 1:0], 3: [0:1, 1:1]).
proto::Plan TwoStreamPlan() {
  proto::Plan plan;
  for (const auto& [node, device] : {std::pair{0, 0}, std::pair{0, 1}, std::pair{1, 0}, std::pair{1, 1}}) {
    proto::DevicePlan* d = plan.add_devices();
    d->mutable_device()->set_node(node);
    d->mutable_device()->set_device(device);
  }
  auto add = [&](proto::CollectiveKind kind, int64_t stream, std::vector<int> members) {
    proto::CollectiveDef* collective = plan.add_collectives();
    collective->set_id(plan.collectives_size() - 1);
    collective->set_kind(kind);
    collective->set_bytes_per_device(2560);
    collective->set_stream(stream);
    for (const int m : members) *collective->add_group() = plan.devices(m).device();
  };
  add(proto::ALL_REDUCE, 0, {0, 1});
  add(proto::ALL_REDUCE, 0, {2, 3});
  add(proto::ALL_GATHER, 1, {0, 2});
  add(proto::ALL_GATHER, 1, {1, 3});
  return plan;
}

// One device's progress: device-wide counts and, per group, {group, entered, completed,
// collective}.
proto::DeviceProgress GroupedProgress(int64_t device, int64_t completed, int64_t entered, int64_t collective,
                                      const std::vector<std::vector<int64_t>>& groups) {
  proto::DeviceProgress progress;
  progress.set_device(device);
  progress.set_completed_collectives(completed);
  progress.set_entered_collectives(entered);
  progress.set_collective(collective);
  for (const std::vector<int64_t>& g : groups) {
    proto::GroupProgress* group = progress.add_groups();
    group->set_group(g[0]);
    group->set_entered(g[1]);
    group->set_completed(g[2]);
    group->set_collective(g[3]);
  }
  return progress;
}

// 1:0 waits in dp all-gather call 5 (its 12th collective); 0:0 stopped before that call,
// but its tp stream ran ahead: 13 collectives of the device completed. Six seconds of
// heartbeats, with or without the group counts; the monitor's finding at the end.
std::optional<HangFinding> TwoStreamHang(bool with_groups) {
  const proto::Plan plan = TwoStreamPlan();
  ProgressMonitor monitor(plan, MonitorOptions{});
  auto groups = [&](std::vector<std::vector<int64_t>> g) {
    return with_groups ? g : std::vector<std::vector<int64_t>>{};
  };
  absl::Time now = absl::FromUnixSeconds(1000);
  for (const absl::Time end = now + absl::Seconds(6); now < end; now += absl::Milliseconds(500)) {
    proto::JobEvent::Heartbeat node0, node1;
    *node0.add_progress() = GroupedProgress(0, 13, 13, 0, groups({{0, 8, 8, 0}, {2, 5, 5, 2}}));
    *node0.add_progress() = GroupedProgress(1, 13, 13, 0, groups({{0, 8, 8, 0}, {3, 5, 5, 3}}));
    *node1.add_progress() = GroupedProgress(2, 11, 12, 2, groups({{1, 6, 6, 1}, {2, 6, 5, 2}}));
    *node1.add_progress() = GroupedProgress(3, 11, 11, 1, groups({{1, 6, 6, 1}, {3, 5, 5, 3}}));
    for (auto* beat : {&node0, &node1}) beat->set_sampled_unix_ms(absl::ToUnixMillis(now));
    monitor.Observe(0, node0, now);
    monitor.Observe(1, node1, now);
  }
  return monitor.CheckHang(now);
}

TEST(ProgressMonitorTest, MembersAreComparedByTheirCountsInTheWaitedGroup) {
  const std::optional<HangFinding> hang = TwoStreamHang(/*with_groups=*/true);
  ASSERT_TRUE(hang.has_value());
  EXPECT_TRUE(hang->in_group);
  EXPECT_EQ(hang->sequence, 5);
  EXPECT_EQ(hang->collective, 2);
  EXPECT_EQ(hang->suspects, std::vector<int64_t>{0});
  EXPECT_EQ(hang->arrived, std::vector<int64_t>{2});
  EXPECT_THAT(hang->text, HasSubstr("hang: collective 2 (ALL_GATHER, 2560 B) sequence 5 of group devices [0:0, 1:0]: "
                                    "node 0 device 0:0 (rank 0 of the group) has not entered it, made no progress for "));
  EXPECT_THAT(hang->text, HasSubstr("last completed in the group: sequence 4; its worker runs"));
  // By device-wide counts (heartbeats of an older worker) 0:0 went past the call (13 > 11)
  // and nobody is named.
  EXPECT_FALSE(TwoStreamHang(/*with_groups=*/false).has_value());
}

// Node 1's training waits for a checkpoint write (worker_checkpoint_wait_ms) while node 0
// waits for it in collective 40: no hang for a minute, then one naming the wait.
TEST(ProgressMonitorTest, ARankHeldByACheckpointIsNamedOnlyAfterAMinute) {
  const proto::Plan plan = TwoNodePlan();
  ProgressMonitor monitor(plan, MonitorOptions{});
  absl::Time now = ProgressTwoSeconds(monitor, absl::FromUnixSeconds(1000));
  const absl::Time held = now;
  for (; now < held + absl::Seconds(62); now += absl::Milliseconds(500)) {
    proto::JobEvent::Heartbeat waiting = Beat(1, 40, 40, 0, now);
    waiting.set_worker_checkpoint_wait_ms(absl::ToInt64Milliseconds(now - held));
    monitor.Observe(0, Beat(0, 40, 41, 0, now), now);
    monitor.Observe(1, waiting, now);
    const std::optional<HangFinding> hang = monitor.CheckHang(now);
    if (now - held < absl::Seconds(60)) {
      EXPECT_FALSE(hang.has_value()) << absl::FormatDuration(now - held) << ": " << hang->text;
    } else {
      ASSERT_TRUE(hang.has_value()) << absl::FormatDuration(now - held);
      EXPECT_EQ(hang->suspects, std::vector<int64_t>{1});
      EXPECT_THAT(hang->text, HasSubstr("its training waits for a checkpoint"));
    }
  }
}

// Collective time per second of each device: the slow one is named after the window
// and the confirmations; a ±20% jittered clean run is not.
// `beats_per_collective`: heartbeats (500 ms apart) per collective completed; 1 means 20
// collectives per heartbeat.
std::vector<std::string> RunSlow(double fraction0, double fraction1, double jitter, absl::Duration length,
                                 int beats_per_collective = 1) {
  const proto::Plan plan = TwoNodePlan();
  ProgressMonitor monitor(plan, MonitorOptions{});
  std::mt19937 random(7);
  std::uniform_real_distribution<double> noise(1 - jitter, 1 + jitter);
  absl::Time now = absl::FromUnixSeconds(1000);
  double ns0 = 0, ns1 = 0;
  int64_t completed = 0;
  std::vector<std::string> warnings;
  int64_t beat = 0;
  for (absl::Time end = now + length; now < end; now += absl::Milliseconds(500), ++beat) {
    ns0 += 0.5e9 * std::min(1.0, fraction0 * noise(random));
    ns1 += 0.5e9 * std::min(1.0, fraction1 * noise(random));
    if (beats_per_collective == 1) {
      completed += 20;
    } else if (beat % beats_per_collective == 0) {
      ++completed;
    }
    monitor.Observe(0, Beat(0, completed, completed, static_cast<int64_t>(ns0), now), now);
    monitor.Observe(1, Beat(1, completed, completed, static_cast<int64_t>(ns1), now), now);
    for (const std::string& warning : monitor.CheckSlow(now)) warnings.push_back(warning);
  }
  return warnings;
}

TEST(ProgressMonitorTest, SlowRankIsNamedOnce) {
  const std::vector<std::string> warnings = RunSlow(0.9, 0.05, 0.1, absl::Seconds(20));
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_THAT(warnings[0], HasSubstr("slow rank: node 1 device 1:0 is about"));
  EXPECT_THAT(warnings[0], HasSubstr("than 0:0 of its group"));
}

// One collective per 1.5 s: a 5 s window holds 4 of them (judged) or 3 (too few to judge)
// -- one evaluation in three is judged. The windows that cannot be judged must not
// restart the confirmations (they did, and a 10x slow rank on a loaded CI machine was
// named after 23 s instead of 7, or never).
TEST(ProgressMonitorTest, WindowsTooShortToJudgeDoNotRestartTheConfirmations) {
  const std::vector<std::string> warnings = RunSlow(0.9, 0.05, 0.1, absl::Seconds(30), /*beats_per_collective=*/3);
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_THAT(warnings[0], HasSubstr("slow rank: node 1 device 1:0 is about"));
  EXPECT_TRUE(RunSlow(0.4, 0.4, 0.2, absl::Seconds(30), /*beats_per_collective=*/3).empty());
}

TEST(ProgressMonitorTest, JitteredCleanRunRaisesNothing) {
  EXPECT_TRUE(RunSlow(0.4, 0.4, 0.2, absl::Seconds(30)).empty());
  EXPECT_TRUE(RunSlow(0.1, 0.1, 0.2, absl::Seconds(30)).empty());
  EXPECT_TRUE(RunSlow(0.9, 0.85, 0.2, absl::Seconds(30)).empty());
}

proto::DeviceProgress Progress(int64_t device, int64_t completed, int64_t entered, int64_t collective_ns) {
  proto::DeviceProgress progress;
  progress.set_device(device);
  progress.set_completed_collectives(completed);
  progress.set_entered_collectives(entered);
  progress.set_collective_ns(collective_ns);
  return progress;
}

TEST(StoppedTimeAccountTest, TimeStoppedInsideAnActIsSubtractedOnceTheActCompleted) {
  StoppedTimeAccount account;
  // Stopped while computing (entered == completed): nothing to subtract.
  account.ChargeStopped({Progress(3, 5, 5, 1000)}, 20);
  // Stopped twice inside act 5.
  account.ChargeStopped({Progress(3, 5, 6, 1000)}, 20);
  account.ChargeStopped({Progress(3, 5, 6, 1000)}, 30);
  EXPECT_EQ(account.stopped_ns(), 70);
  std::vector<proto::DeviceProgress> progress = {Progress(3, 5, 6, 1000)};
  account.Correct(&progress);
  EXPECT_EQ(progress[0].collective_ns(), 1000) << "act 5 has not completed: its time is not in collective_ns yet";
  progress = {Progress(3, 6, 6, 1080)};
  account.Correct(&progress);
  EXPECT_EQ(progress[0].collective_ns(), 1030);
  // A later act's charge adds up; another device is left alone.
  account.ChargeStopped({Progress(3, 8, 9, 1200), Progress(4, 8, 8, 500)}, 100);
  progress = {Progress(3, 9, 9, 1400), Progress(4, 9, 9, 600)};
  account.Correct(&progress);
  EXPECT_EQ(progress[0].collective_ns(), 1250);
  EXPECT_EQ(progress[1].collective_ns(), 600);
}

// A worker SIGSTOPped 90 ms of every 100 ms, simulated on a 1 ms clock: while it runs,
// its device computes 1 ms and spends 2 ms in the all-reduce; the peer waits in the
// all-reduce 97% of the time. Stopped mostly inside the all-reduce, its raw collective
// time looks like the peer's; the daemon's account (sampled every 10-30 ms) turns the
// stopped time into time outside collectives, and the monitor names it.
// `phase_ms` shifts the cycle against the heartbeats (every 500 ms, a multiple of the
// 100 ms cycle, so each lands at the same point of it): 95 puts every heartbeat in the
// running 10 ms. `since_last_beat` reports the stop sampler's finding between heartbeats
// (Heartbeat.worker_stopped_since_last_beat), as the daemon does.
std::vector<std::string> RunStopCycled(bool account_for_stops, int64_t phase_ms = 0, bool since_last_beat = true) {
  const proto::Plan plan = TwoNodePlan();
  ProgressMonitor monitor(plan, MonitorOptions{});
  StoppedTimeAccount account;
  std::mt19937 random(11);
  std::uniform_int_distribution<int> interval(10, 30);
  const absl::Time start = absl::FromUnixSeconds(1000);
  int64_t completed = 0, entered = 0, raw_ns = 0, entered_at_ms = 0, running_ms = 0;
  int64_t next_sample = interval(random), last_sample = 0, stopped_ns_at_last_beat = 0;
  double peer_ns = 0;
  std::vector<std::string> warnings;
  for (int64_t ms = 1; ms <= 20000; ++ms) {
    const bool stopped = (ms + phase_ms) % 100 < 90;
    if (!stopped) {
      const int64_t phase = running_ms++ % 3;
      if (phase == 0 && entered > completed) {  // the act ends: 2 running ms inside it
        ++completed;
        raw_ns += (ms - entered_at_ms) * 1000000;
      }
      if (phase == 1) {
        ++entered;
        entered_at_ms = ms;
      }
    }
    if (ms == next_sample) {
      if (stopped) account.ChargeStopped({Progress(1, completed, entered, raw_ns)}, (ms - last_sample) * 1000000);
      last_sample = ms;
      next_sample = ms + interval(random);
    }
    if (ms % 500 == 0) {
      const absl::Time now = start + absl::Milliseconds(ms);
      std::vector<proto::DeviceProgress> progress = {Progress(1, completed, entered, raw_ns)};
      if (account_for_stops) account.Correct(&progress);
      peer_ns += 0.5e9 * 0.97;
      proto::JobEvent::Heartbeat beat = Beat(1, completed, entered, progress[0].collective_ns(), now, 0, stopped);
      beat.set_worker_stopped_since_last_beat(since_last_beat &&
                                              (stopped || account.stopped_ns() > stopped_ns_at_last_beat));
      stopped_ns_at_last_beat = account.stopped_ns();
      monitor.Observe(0, Beat(0, completed, completed, static_cast<int64_t>(peer_ns), now), now);
      monitor.Observe(1, beat, now);
      EXPECT_FALSE(monitor.CheckHang(now).has_value());
      for (const std::string& warning : monitor.CheckSlow(now)) warnings.push_back(warning);
    }
  }
  return warnings;
}

TEST(ProgressMonitorTest, StopCycledRankIsNamedSlowOnceStoppedTimeIsAccounted) {
  EXPECT_TRUE(RunStopCycled(false).empty()) << "the case the account is for";
  const std::vector<std::string> warnings = RunStopCycled(true);
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_THAT(warnings[0], HasSubstr("slow rank: node 1 device 1:0 is about"));
  EXPECT_THAT(warnings[0], HasSubstr("its worker was stopped (SIGSTOP?) at "));
}

// Every heartbeat lands in the running 10 ms of the cycle (phase-locked, as the
// 90-of-100 ms stop cycle of tests/cluster:slow_rank_stop_cycle_test can be): the
// heartbeat's own look at the process never finds it stopped, the stop sampler's random
// samples between heartbeats do, and the warning says the worker was stopped.
TEST(ProgressMonitorTest, AStopCycleInPhaseWithTheHeartbeatsIsStillSeenStopped) {
  const std::vector<std::string> instant_only = RunStopCycled(true, 95, /*since_last_beat=*/false);
  ASSERT_EQ(instant_only.size(), 1u);
  EXPECT_THAT(instant_only[0], HasSubstr("(computing)")) << "the case the sampler's flag is for";
  const std::vector<std::string> warnings = RunStopCycled(true, 95);
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_THAT(warnings[0], HasSubstr("its worker was stopped (SIGSTOP?) at "));
}

}  // namespace
}  // namespace oneflow::launcher
