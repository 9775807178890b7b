// Chrome / Perfetto trace of a run (chrome://tracing, ui.perfetto.dev): one track per
// device thread (compute, communication — one per communication stream: "communication
// stream 1" at tid 11, ... — and transfer), one slice per act (actor name, kind,
// iteration), and flow arrows joining the acts of one collective on every device of its
// group. Read back, an act's ActRecord.thread is that track id.
//
// The file is also read back (ReadChromeTrace: `oneflow inspect PLAN --trace=FILE`
// measures the pipeline bubble from it, actors/bubble.h; `oneflow profile TRACE` and
// `oneflow report --trace` tabulate it), so it says which plan it is of and carries it:
// the top-level "otherData" holds the job name, the plan's checksum, its micro-batches
// and the plan itself ("plan": the serialized proto::Plan in base64, which trace viewers
// ignore; it makes a trace readable without the plan file, e.g. of an example's `--run`,
// which writes none), and every slice's args hold the actor id and its act index
// ("iteration": micro-batches for a per-micro-batch actor). Times are microseconds from
// the first act with nanosecond digits.
#ifndef ACTORS_TRACE_H_
#define ACTORS_TRACE_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "actors/engine.h"
#include "proto/plan.pb.h"

namespace oneflow::actors {

// The trace as JSON (the Trace Event Format's object form).
std::string ChromeTraceJson(const proto::Plan& plan, const std::vector<ActRecord>& acts);

// Writes it atomically (temporary file + rename); errors name the file.
absl::Status WriteChromeTrace(const std::string& path, const proto::Plan& plan,
                              const std::vector<ActRecord>& acts);

// The acts of a trace written by WriteChromeTrace for `plan`, times relative to its first
// act. Errors name the file: NOT_FOUND / PERMISSION_DENIED when it cannot be read,
// INVALID_ARGUMENT when it is not such a trace, or is one of another plan (its
// "otherData" checksum differs from plan.checksum(), or a slice names an actor that the
// plan does not have on that device, or under another name):
//   trace file 't.json': written for plan 'gpt' (checksum 0x1b2f77a0), not for this
//   plan 'gpt' (checksum 0x5e8c01d2)
absl::StatusOr<std::vector<ActRecord>> ReadChromeTrace(const std::string& path, const proto::Plan& plan);

// ActRecord.thread of an act read back by ReadChromeTrace is its track: the actor's
// ThreadKind (compute 0, communication 1, transfer 2), or kStreamTrackBase + s for a
// communication actor on stream s > 0. TrackName names one ("compute", "communication",
// "transfer", "communication stream 1").
inline constexpr int kStreamTrackBase = 10;
std::string TrackName(int track);

// The plan a trace written by WriteChromeTrace carries (otherData.plan). INVALID_ARGUMENT
// naming the file when it holds none (written before traces carried their plan) or a
// damaged one (not base64 of a plan, or not of the checksum the trace names); the
// ReadChromeTrace errors when it cannot be read or is not a trace.
absl::StatusOr<proto::Plan> ReadPlanOfChromeTrace(const std::string& path);

// How gradient buckets' collectives (Plan.buckets) overlapped compute in a run: the
// point of buckets is that a bucket's all-reduce runs on the communication thread while
// the compute thread of the same device goes on with backward.
struct BucketOverlap {
  int64_t bucket_acts = 0;
  // Bucket acts during which a compute actor placed after the bucket in its device's
  // program (a later backward op, or an update) started or ran on the same device, in the
  // same iteration.
  int64_t acts_overlapping_later_compute = 0;
  // Total wall time of the bucket acts, and the part of it during which the device's
  // compute thread was acting (any act).
  double bucket_ms = 0;
  double overlapped_ms = 0;
};

// Measured from recorded acts (EngineOptions.record_acts); zero when the plan has no
// buckets.
BucketOverlap MeasureBucketOverlap(const proto::Plan& plan, const std::vector<ActRecord>& acts);

}  // namespace oneflow::actors

#endif  // ACTORS_TRACE_H_
