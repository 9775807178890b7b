// What compression does to a plan's traffic, for the inspect renderers. Private to
// //tools/cli:inspect.
//
// A compressed step records its codecs, its wire bytes, what it would move dense, the
// modelled seconds it saves and the compiler's decision (BoxingStepDef.compression,
// .bytes_per_device, .dense_bytes_per_device, .seconds_saved, .reason). A device's dense
// totals add, to what it sends and receives,
// what compression saved on every compressed step of a placement it belongs to (each
// member of a collective's group sends and receives the step's bytes, as plan emission
// counts them).
#ifndef TOOLS_CLI_INSPECT_COMPRESSION_H_
#define TOOLS_CLI_INSPECT_COMPRESSION_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "proto/plan.pb.h"
#include "plan/plan_index.h"

namespace oneflow::cli {

class CompressionFigures {
 public:
  CompressionFigures(const proto::Plan& plan, const PlanIndex& index);

  // Dense bytes per device of step `step` of plan.boxings(boxing): the step's own bytes
  // when it is dense, its dense_bytes_per_device when compressed. (Optional so that
  // renderers keep one code path for "unknown"; a plan this build wrote always knows.)
  std::optional<int64_t> DenseStepBytes(int boxing, int step) const;

  // Dense bytes per iteration of plan.boxings(boxing): its bytes_per_iter plus what
  // compression saved on each compressed step, on every device of the step's placement.
  int64_t DenseBoxingBytes(int boxing) const;
  int64_t DenseBoxingBytesInAll() const;

  // Dense bytes device plan.devices(device) sends and receives per iteration.
  int64_t DenseBytesSent(int device) const { return dense_sent_[device]; }
  int64_t DenseBytesReceived(int device) const { return dense_received_[device]; }

 private:
  std::vector<std::vector<std::optional<int64_t>>> dense_steps_;
  std::vector<int64_t> dense_boxings_;
  std::vector<int64_t> dense_sent_;
  std::vector<int64_t> dense_received_;
};

// The codec names of kernels/compression/codec.h and of the compiler's decisions
// ("fp8e4m3", "int8", "bf16"), not the proto enum's spelling, so inspect and the
// decision text agree; "unknown(N)" for a number this build does not know.
std::string CodecText(proto::Compression::Kind kind);

// True when the step is compressed; two-level when its cross-node codec is set too.
bool IsCompressed(const proto::BoxingStepDef& step);
bool IsTwoLevel(const proto::BoxingStepDef& step);

// "nearest", "stochastic" (Compression.rounding), "unknown(N)" otherwise.
std::string RoundingText(proto::Compression::Rounding rounding);

// "fp8e4m3 (group 128, hadamard)", "int4 (group 128)", or for a two-level step
// "two-level: int8 (group 512, hadamard) in-node + int4 (group 128, hadamard) cross-node";
// a step with stochastic rounding ends in ", stochastic rounding" (nearest, the default,
// adds nothing).
std::string StepCodecText(const proto::BoxingStepDef& step);

// The modelled seconds compression saves on the step per iteration
// (BoxingStepDef.seconds_saved); nullopt for a dense step.
std::optional<double> SecondsSaved(const proto::BoxingStepDef& step);

}  // namespace oneflow::cli

#endif  // TOOLS_CLI_INSPECT_COMPRESSION_H_
