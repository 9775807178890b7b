// The examples' compression flags as a CompressionPolicy for the compiler:
//   --compression=off|auto|fp8|int8|int4   (default auto)
//   --codec_bytes_per_second=B             every codec at B dense bytes/s (0: the table)
//   --codec_calibration=FILE               measured throughputs (`oneflow calibrate`); its
//                                          link and compute lines go into the cluster
//                                          (ApplyCalibrationToCluster)
//   --codec_rounding=nearest|stochastic    how int4 / int8 encoders round (default nearest;
//                                          CodecRoundingFromFlags)
//   --gradient_wire=fp32|bf16|auto         how gradient reductions travel (default fp32;
//                                          CompressionPolicy::gradient_wire)
//   --compression_warmup=N                 the first N iterations every compressed step
//                                          runs dense (default 0; CompressionWarmupFromFlags)
//   --compress_in_node (default true)      with a forced codec (fp8, int8, int4), also compress
//                                          the steps whose group lies inside one node;
//                                          --nocompress_in_node: the hops that cross nodes
//                                          only (CompressionPolicy::forced_intra_node)
//   --int4_gradient_scale=max|fitted       how the int4 steps of variables' gradients scale
//                                          each group: max|x| / 7 (default) or the scale
//                                          with the least error (Int4GradientScaleFromFlags)
//   --error_feedback                       carry each compressed gradient reduction's
//                                          encoding error to the next iteration
//                                          (CompileOptions::error_feedback; ErrorFeedbackFromFlags)
//   --codec_accuracy_bound=F|off           the largest measured final-loss gap auto accepts
//                                          for a codec, as a fraction of dense's final loss,
//                                          on every role (default 0.005; off: no bound;
//                                          CompressionPolicy::accuracy_bound)
// Kept apart from example_main.cc, which reads the flags, so tests can check every value
// without touching process-global flags.
#ifndef EXAMPLES_COMMON_COMPRESSION_FLAGS_H_
#define EXAMPLES_COMMON_COMPRESSION_FLAGS_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "proto/plan.pb.h"
#include "sbp/compression_policy.h"

namespace oneflow::examples {

struct CompressionFlags {
  std::string compression = "auto";
  double codec_bytes_per_second = 0;
  std::string codec_calibration;
  std::string codec_rounding = "nearest";
  std::string gradient_wire = "fp32";
  // --compression_warmup: the first iterations every compressed step runs dense
  // (CompileOptions::compression_warmup_iterations; CompressionWarmupFromFlags).
  int64_t compression_warmup = 0;
  std::string codec_accuracy_bound = "0.005";
  // --error_feedback (CompileOptions::error_feedback; ErrorFeedbackFromFlags).
  bool error_feedback = false;
  // --compress_in_node (CompressionPolicy::forced_intra_node).
  bool compress_in_node = true;
  // --int4_gradient_scale (CompileOptions::fit_int4_gradient_scale; Int4GradientScaleFromFlags).
  std::string int4_gradient_scale = "max";
};

// off: dense. auto: each tensor's role picks its codecs and the cost model decides per
// step. fp8, int8, int4: that codec (groups of 128) on every eligible boxing. The codec
// throughputs: CodecThroughput::Defaults(), or --codec_calibration's file over them, or
// --codec_bytes_per_second for all. INVALID_ARGUMENT naming the flag:
//   --compression=fp9 is not a choice; valid: off, auto, fp8, int8, int4
//   --gradient_wire=fp16 is not a choice; valid: fp32, bf16, auto
//   --codec_bytes_per_second=-1 must be a finite number > 0 (or 0: the per-codec table)
//   --codec_bytes_per_second and --codec_calibration both give codec throughputs; use one
//   --codec_accuracy_bound=-1 is not a choice; valid: a final-loss gap >= 0 as a fraction
//   of dense's (0.005 is 0.5%, the default), or off
//   --codec_calibration: codec calibration file 'c.jsonl' line 2: ...
//   --nocompress_in_node acts on a forced codec, and --compression=auto decides each
//   in-node step by the cost model; use --compression=fp8, int8 or int4 with it
//   (likewise for off)
absl::StatusOr<CompressionPolicy> CompressionPolicyFromFlags(const CompressionFlags& flags);

// --codec_rounding as CompileOptions::codec_rounding: nearest (round to nearest even) or
// stochastic (int4 and int8 encoders round up with probability equal to the fraction;
// docs/sbp_and_boxing.md, "Stochastic rounding"). INVALID_ARGUMENT naming the flag:
//   --codec_rounding=up is not a choice; valid: nearest, stochastic
absl::StatusOr<proto::Compression::Rounding> CodecRoundingFromFlags(const CompressionFlags& flags);

// --compression_warmup as CompileOptions::compression_warmup_iterations: the iterations
// every compressed step runs dense before its codecs take over (docs/sbp_and_boxing.md,
// "int4 that trains like dense"). INVALID_ARGUMENT naming the flag:
//   --compression_warmup=-1 must be >= 0 (0: compressed from the first iteration)
absl::StatusOr<int64_t> CompressionWarmupFromFlags(const CompressionFlags& flags);

// --error_feedback as CompileOptions::error_feedback: every compressed reduction of a
// variable's gradient keeps, per device, what its codec dropped and adds it to the next
// iteration's gradient before encoding (docs/sbp_and_boxing.md, "Error feedback"); the
// residuals are checkpointed with the optimizer state. INVALID_ARGUMENT where nothing
// would carry it:
//   --error_feedback acts on compressed gradient reductions, and --compression=off
//   compresses none; use --compression=auto, fp8, int8 or int4 with it
absl::StatusOr<bool> ErrorFeedbackFromFlags(const CompressionFlags& flags);

// --int4_gradient_scale as CompileOptions::fit_int4_gradient_scale: max (each int4 group of a
// gradient scaled by its largest magnitude over 7, the default) or fitted (the scale of
// max|x| / 7 ... / 10 with the least squared error; docs/sbp_and_boxing.md, "The int4 scale
// chosen by error"). INVALID_ARGUMENT naming the flag:
//   --int4_gradient_scale=min is not a choice; valid: max, fitted
//   --int4_gradient_scale=fitted acts on int4 gradient steps, and --compression=int8 puts
//   none; use --compression=int4 or auto with it
//   --int4_gradient_scale=fitted and --codec_rounding=stochastic: stochastic rounding keeps
//   max|x| / 7 (clipping would bias it); use one
absl::StatusOr<bool> Int4GradientScaleFromFlags(const CompressionFlags& flags);

// The link flags of the cost model, and which of them the command line set to other than
// their defaults. The defaults are those of the examples' and `oneflow compile`'s flags
// of the same names.
struct LinkFlags {
  double intra_node_bandwidth = 100e9;
  double inter_node_bandwidth = 12.5e9;
  double intra_node_latency = 1e-5;
  double inter_node_latency = 5e-4;
  bool intra_node_bandwidth_given = false;
  bool inter_node_bandwidth_given = false;
  bool intra_node_latency_given = false;
  bool inter_node_latency_given = false;
};

// The four link flags' values, with `*_given` true where the flag's value differs from its
// default (absl's IsSpecifiedOnCommandLine is not public in Debian's absl); the flags are
// defined by the program: examples/common/example_main.cc, `oneflow compile`.
LinkFlags LinkFlagsFromCommandLine(double intra_node_bandwidth, double inter_node_bandwidth,
                                   double intra_node_latency, double inter_node_latency);

// Sets the cluster's link bandwidths and latencies from `links`, except where
// --codec_calibration's file (`calibration`, empty: none) measured a level and the flag
// keeps its default (a flag set to another value wins: a link shaped to 1 Gbit/s is not
// the loopback `oneflow calibrate` measured), its compute rates from the file's
// compute lines and the inter-node transfer latency from its transfer line (no flag
// sets that one). INVALID_ARGUMENT naming the flag:
//   --inter_node_latency=-1 must be a finite number of seconds >= 0
//   --codec_calibration: calibration file 'c.jsonl' line 7: ...
absl::Status ApplyCalibrationToCluster(const std::string& calibration, const LinkFlags& links,
                                       proto::Cluster* cluster);

}  // namespace oneflow::examples

#endif  // EXAMPLES_COMMON_COMPRESSION_FLAGS_H_
