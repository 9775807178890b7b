#include "tools/cli/link_calibration.h"

#include <signal.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "kernels/cpu/sgemm.h"
#include "oneflow_core/comm/transport.h"
#include "oneflow_core/comm/gloo/file_key_value_store.h"
#include "oneflow_core/comm/in_process/communicator.h"

namespace oneflow::cli {
namespace {

double Median(std::vector<double> values) {
  std::nth_element(values.begin(), values.begin() + values.size() / 2, values.end());
  return std::max(values[values.size() / 2], 1e-9);
}

// Median seconds of `repetitions` calls of `call` after one warm-up; the first error stops.
absl::StatusOr<double> TimeCalls(int64_t repetitions, const std::function<absl::Status()>& call) {
  if (absl::Status status = call(); !status.ok()) return status;
  std::vector<double> seconds;
  for (int64_t r = 0; r < repetitions; ++r) {
    const auto start = std::chrono::steady_clock::now();
    if (absl::Status status = call(); !status.ok()) return status;
    seconds.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  return Median(std::move(seconds));
}

// Times all-reduces of both sizes on `communicator`, one of `ranks` ranks: what this rank
// saw, with the bytes the busiest rank receives per call (link_calibration.h).
absl::StatusOr<LinkTimings> TimeAllReduces(Communicator& communicator, int64_t ranks, bool cross_process,
                                           int64_t repetitions) {
  LinkTimings timings = AllReduceWireBytes(ranks, cross_process);
  std::vector<float> buffer(kCalibrationLargeBytes / sizeof(float), 1.0f);
  CollectiveOptions options;
  options.description = "oneflow calibrate";
  auto all_reduce = [&](int64_t bytes) {
    return [&, count = bytes / static_cast<int64_t>(sizeof(float))] {
      return communicator.AllReduce(buffer.data(), buffer.data(), count, options);
    };
  };
  // The small call (alpha) over windows apart (kLatencyWindows); every rank runs the same
  // windows, each window's first call meeting its peers again after the gap.
  absl::StatusOr<double> small =
      MedianOfWindows(kLatencyWindows, kLatencyWindowGap, repetitions, all_reduce(kCalibrationSmallBytes));
  if (!small.ok()) return small.status();
  timings.small_seconds = *small;
  absl::StatusOr<double> large = TimeCalls(repetitions, all_reduce(kCalibrationLargeBytes));
  if (!large.ok()) return large.status();
  timings.large_seconds = *large;
  return timings;
}

// Median seconds of a transfer's round trip between ranks 0 and 1 of a 2-rank group
// (link_calibration.h): each way one all-to-all with one nonzero entry, as send_recv.
absl::StatusOr<double> TimeTransferRoundTrips(Communicator& communicator, int64_t repetitions) {
  if (communicator.size() != 2) {
    return absl::InvalidArgumentError(
        absl::StrCat("a transfer is measured between 2 ranks; the group has ", communicator.size()));
  }
  std::vector<char> sent(kTransferBytes, 1), received(kTransferBytes, 0);
  const std::vector<int64_t> to_rank_1 = {0, kTransferBytes, 0, 0};
  const std::vector<int64_t> to_rank_0 = {0, 0, kTransferBytes, 0};
  CollectiveOptions options;
  options.description = "oneflow calibrate transfer";
  return TimeCalls(repetitions, [&]() -> absl::Status {
    if (absl::Status status = communicator.AllToAll(sent.data(), received.data(), to_rank_1, options); !status.ok()) {
      return status;
    }
    return communicator.AllToAll(sent.data(), received.data(), to_rank_0, options);
  });
}

}  // namespace

absl::StatusOr<double> MedianOfWindows(int64_t windows, absl::Duration gap, int64_t repetitions,
                                       const std::function<absl::Status()>& call) {
  std::vector<double> medians;
  for (int64_t window = 0; window < windows; ++window) {
    if (window > 0) absl::SleepFor(gap);
    absl::StatusOr<double> median = TimeCalls(repetitions, call);
    if (!median.ok()) return median.status();
    medians.push_back(*median);
  }
  return Median(std::move(medians));
}

TransferMeasurement FitTransfer(double round_trip_seconds, int64_t bytes, double bytes_per_second) {
  TransferMeasurement fit;
  fit.round_trip_seconds = round_trip_seconds;
  fit.bytes = bytes;
  fit.latency_seconds = std::max(0.0, round_trip_seconds / 2 - static_cast<double>(bytes) / bytes_per_second);
  return fit;
}

absl::StatusOr<TransferMeasurement> MeasureCrossProcessTransfer(Transport transport,
                                                                const CrossProcessGroupOptions& options,
                                                                int64_t repetitions, double bytes_per_second,
                                                                std::string method) {
  absl::StatusOr<std::unique_ptr<Communicator>> communicator = NewCrossProcessCommunicator(transport, options);
  if (!communicator.ok()) return communicator.status();
  absl::StatusOr<double> round_trip = TimeTransferRoundTrips(**communicator, repetitions);
  if (!round_trip.ok()) return round_trip.status();
  TransferMeasurement fit = FitTransfer(*round_trip, kTransferBytes, bytes_per_second);
  fit.method = std::move(method);
  return fit;
}

LinkTimings AllReduceWireBytes(int64_t ranks, bool cross_process) {
  const double others = static_cast<double>(ranks - 1);
  LinkTimings timings;
  // Across processes a small input goes whole to every peer in one round.
  timings.small_bytes = cross_process ? others * kCalibrationSmallBytes : 2 * others / ranks * kCalibrationSmallBytes;
  timings.large_bytes = 2 * others / ranks * kCalibrationLargeBytes;
  return timings;
}

LinkLevelMeasurement FitLink(const LinkTimings& t, int rounds_large) {
  // t_small = a + W_s / b;  t_large = rounds a + W_l / b  =>  b = (W_l - rounds W_s) / (t_l - rounds t_s).
  LinkLevelMeasurement fit;
  const double bytes = t.large_bytes - rounds_large * t.small_bytes;
  const double seconds = t.large_seconds - rounds_large * t.small_seconds;
  if (bytes > 0 && seconds > 0) {
    fit.bytes_per_second = bytes / seconds;
    fit.latency_seconds = t.small_seconds - t.small_bytes / fit.bytes_per_second;
  }
  if (!(fit.bytes_per_second > 0) || fit.latency_seconds < 0) {
    fit.latency_seconds = 0;
    fit.bytes_per_second = t.large_bytes / t.large_seconds;
  }
  return fit;
}

absl::StatusOr<MeasuredLink> MeasureInProcessLink(int64_t repetitions) {
  absl::StatusOr<std::unique_ptr<InProcessGroup>> group = InProcessGroup::Create(2, "calibrate");
  if (!group.ok()) return group.status();
  absl::Status peer_status;
  std::thread peer([&] { peer_status = TimeAllReduces((*group)->communicator(1), 2, false, repetitions).status(); });
  absl::StatusOr<LinkTimings> timings = TimeAllReduces((*group)->communicator(0), 2, false, repetitions);
  peer.join();
  if (!timings.ok()) return timings.status();
  if (!peer_status.ok()) return peer_status;
  MeasuredLink measured{FitLink(*timings, 1), *timings};
  measured.fit.method = absl::StrCat("in-process all_reduce, 2 ranks, ", kCalibrationSizesText);
  return measured;
}

absl::StatusOr<MeasuredLink> MeasureCrossProcessGroup(Transport transport, const CrossProcessGroupOptions& options,
                                                      int64_t repetitions, std::string method) {
  absl::StatusOr<std::unique_ptr<Communicator>> communicator = NewCrossProcessCommunicator(transport, options);
  if (!communicator.ok()) return communicator.status();
  absl::StatusOr<LinkTimings> timings = TimeAllReduces(**communicator, options.size, true, repetitions);
  if (!timings.ok()) return timings.status();
  MeasuredLink measured{FitLink(*timings, 2), *timings};
  measured.fit.method = std::move(method);
  return measured;
}

std::string KeepProcessesOnTcp(absl::string_view what) {
  // Processes of one host would talk through shared memory, which no link between nodes
  // is: restrict UCX to TCP (over 127.0.0.1), as bench/lib/netns_hosts.sh does for
  // emulated hosts, unless the user chose its transports (UCX reads this when it first
  // initializes, in each process started after this). An earlier call's setting is ours,
  // not the user's choice.
  static bool set_here = false;
  const char* chosen = std::getenv("UCX_TLS");
  if (kDefaultTransport == Transport::kUcx && chosen == nullptr) {
    setenv("UCX_TLS", "tcp,self", 1);
    set_here = true;
  }
  const bool users = chosen != nullptr && !set_here;
  return absl::StrCat(TransportName(kDefaultTransport), " ", what, ", ",
                      kDefaultTransport == Transport::kUcx
                          ? (users ? absl::StrCat("UCX_TLS=", chosen) : "over TCP on 127.0.0.1")
                          : "127.0.0.1");
}

absl::StatusOr<std::unique_ptr<MeetingDirectory>> MeetingDirectory::Create(absl::string_view prefix) {
  std::string name = absl::StrCat("/tmp/", prefix, ".XXXXXX");
  if (mkdtemp(name.data()) == nullptr) {
    return absl::InternalError(absl::StrCat("cannot create a directory in /tmp: ", std::strerror(errno)));
  }
  return std::unique_ptr<MeetingDirectory>(new MeetingDirectory(std::move(name)));
}

MeetingDirectory::~MeetingDirectory() {
  std::error_code ignored;
  std::filesystem::remove_all(path_, ignored);
}

absl::StatusOr<CrossProcessMeasurement> MeasureCrossProcessLink(int64_t repetitions) {
  absl::StatusOr<std::unique_ptr<MeetingDirectory>> meeting = MeetingDirectory::Create("oneflow_calibrate");
  if (!meeting.ok()) return meeting.status();
  // The fork below leaves with _exit: only this process removes it.
  const std::string& directory = (*meeting)->path();
  const std::string method =
      absl::StrCat(KeepProcessesOnTcp("all_reduce, 2 processes"), ", ", kCalibrationSizesText);
  const std::string transfer_method =
      absl::StrCat(KeepProcessesOnTcp("send_recv round trips, 2 processes"), ", ", kTransferSizeText);
  const pid_t parent = getpid();
  const pid_t child = fork();
  if (child < 0) {
    return absl::InternalError(absl::StrCat("cannot fork the second process: ", std::strerror(errno)));
  }
  auto run_rank = [&](int64_t rank) -> absl::StatusOr<CrossProcessMeasurement> {
    FileKeyValueStore store(directory);
    CrossProcessGroupOptions options;
    options.group_name = "calibrate";
    options.rank = rank;
    options.size = 2;
    options.store = &store;
    options.connect_timeout = absl::Seconds(30);
    absl::StatusOr<MeasuredLink> link = MeasureCrossProcessGroup(kDefaultTransport, options, repetitions, method);
    if (!link.ok()) return link.status();
    options.group_name = "calibrate transfer";
    absl::StatusOr<TransferMeasurement> transfer = MeasureCrossProcessTransfer(
        kDefaultTransport, options, repetitions, link->fit.bytes_per_second, transfer_method);
    if (!transfer.ok()) return transfer.status();
    return CrossProcessMeasurement{*std::move(link), *std::move(transfer)};
  };
  if (child == 0) {
    // The peer: dies with its parent, reports only through its exit status.
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(3);
    _exit(run_rank(1).ok() ? 0 : 1);
  }
  absl::StatusOr<CrossProcessMeasurement> measured = run_rank(0);
  if (!measured.ok()) kill(child, SIGKILL);
  int wait_status = 0;
  while (waitpid(child, &wait_status, 0) < 0 && errno == EINTR) {
  }
  if (!measured.ok()) return measured.status();
  if (!WIFEXITED(wait_status) || WEXITSTATUS(wait_status) != 0) {
    return absl::InternalError(
        "the second calibration process failed; its all-reduces or transfers did not complete");
  }
  return measured;
}

double MeasureGemmFlopsPerSecond(int64_t repetitions) {
  constexpr int64_t kSize = 512;
  std::vector<float> a(kSize * kSize, 0.5f), b(kSize * kSize, 0.25f), c(kSize * kSize);
  const absl::StatusOr<double> seconds = TimeCalls(repetitions, [&] {
    cpu::Sgemm(false, false, kSize, kSize, kSize, a.data(), kSize, b.data(), kSize, c.data(), kSize);
    return absl::OkStatus();
  });
  return 2.0 * kSize * kSize * kSize / *seconds;
}

std::vector<GemmTiming> MeasureGemmShapes(int64_t repetitions) {
  std::vector<GemmTiming> timings;
  for (const GemmShape& shape : kGemmCalibrationShapes) {
    const int64_t batch = static_cast<int64_t>(shape.batch);
    const int64_t m = static_cast<int64_t>(shape.m);
    const int64_t n = static_cast<int64_t>(shape.n);
    const int64_t k = static_cast<int64_t>(shape.k);
    std::vector<float> a(batch * m * k, 0.5f), b(batch * k * n, 0.25f), c(batch * m * n);
    // As the runtime's matmul kernel calls them: one product, or one batched call.
    auto call = [&] {
      if (batch == 1) {
        cpu::Sgemm(false, false, m, n, k, a.data(), k, b.data(), n, c.data(), n);
      } else {
        cpu::SgemmBatched(false, false, batch, m, n, k, a.data(), k, m * k, b.data(), n, k * n, c.data(), n, m * n);
      }
    };
    call();  // warm-up (and the backend's first-call setup)
    // Samples of at least 1 ms each: a product of microseconds is below the clock's and
    // the scheduler's noise alone.
    const auto first = std::chrono::steady_clock::now();
    call();
    const double once = std::max(1e-8, std::chrono::duration<double>(std::chrono::steady_clock::now() - first).count());
    const int64_t calls = std::max<int64_t>(1, static_cast<int64_t>(std::ceil(1e-3 / once)));
    std::vector<double> seconds;
    for (int64_t r = 0; r < repetitions; ++r) {
      const auto start = std::chrono::steady_clock::now();
      for (int64_t i = 0; i < calls; ++i) call();
      seconds.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() /
                        static_cast<double>(calls));
    }
    timings.push_back({shape, Median(std::move(seconds))});
  }
  return timings;
}

double MeasureMemoryBytesPerSecond(int64_t repetitions) {
  constexpr size_t kBytes = size_t{64} << 20;
  std::vector<char> from(kBytes, 1), to(kBytes, 0);
  // The memory of a shared (virtual) machine moves with its neighbours' traffic from one
  // second to the next (session 47: 3.5-7.5e9 B/s between windows of five copies), and
  // the steps the rate prices run for seconds: the median of kMemoryWindows windows
  // kMemoryWindowGap apart, each the median of `repetitions` copies, rather than one
  // window of back-to-back copies, which caught a slow moment (4.4e9 B/s). (The median
  // of the windows' times is that of their rates: an odd count of windows.)
  const absl::StatusOr<double> seconds = MedianOfWindows(kMemoryWindows, kMemoryWindowGap, repetitions, [&] {
    std::memcpy(to.data(), from.data(), kBytes);
    return absl::OkStatus();
  });
  return 2.0 * kBytes / *seconds;
}

int64_t CoreCacheBytes() {
  int64_t largest = 0;
  for (int index = 0; index < 16; ++index) {
    const std::string directory = absl::StrCat("/sys/devices/system/cpu/cpu0/cache/index", index, "/");
    std::ifstream level_file(directory + "level");
    std::ifstream type_file(directory + "type");
    std::ifstream size_file(directory + "size");
    int level = 0;
    std::string type, size;
    if (!(level_file >> level) || !(type_file >> type) || !(size_file >> size)) continue;
    if (level > 2 || type == "Instruction") continue;
    // "2048K": the kernel writes the size in KiB with a unit letter.
    int64_t number = 0;
    const char unit = size.empty() ? '\0' : size.back();
    const int64_t scale = unit == 'K' ? 1024 : unit == 'M' ? 1024 * 1024 : 1;
    if (scale != 1) size.pop_back();
    if (!absl::SimpleAtoi(size, &number) || number <= 0) continue;
    largest = std::max(largest, number * scale);
  }
  return largest;
}

double MeasureCachedMemoryBytesPerSecond(int64_t repetitions, int64_t cache_bytes) {
  const size_t bytes = static_cast<size_t>(cache_bytes / 2);
  std::vector<char> from(bytes, 1), to(bytes, 0);
  std::memcpy(to.data(), from.data(), bytes);  // both in the cache before the first timed call
  const absl::StatusOr<double> seconds = TimeCalls(repetitions, [&] {
    std::memcpy(to.data(), from.data(), bytes);
    return absl::OkStatus();
  });
  return 2.0 * static_cast<double>(bytes) / *seconds;
}

}  // namespace oneflow::cli
