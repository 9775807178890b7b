// What a codec costs in training accuracy, as measured, and the bound `auto` holds each
// role to (issue 24: "auto picks int4 only where its measured error bound holds").
//
// A codec's round-trip error (rel_l2) does not say how far training moves: int4 G=32's
// rel_l2 is about 10% on activations and on gradients alike, yet under AdamW its gradient
// reductions end +1.7% above dense's final loss and under SGD with error feedback -0.03%
// (docs/sbp_and_boxing.md, "int4 that trains like dense"). So the rule reads a table of
// *training* gaps measured with bench/compression:error_feedback_bench: the gpt of that
// bench (2 nodes x 2 devices, dp=2 x tp=2, 200 iterations, 8 seeds), each row the codec
// `auto` would put on that role (the bench's `auto+ROLE` modes, every step slowed until
// it pays), the optimizer and whether error feedback is on; the gap is the mean over
// seeds of (final loss - dense's) / dense's, final loss = mean of the last 20 iterations.
//
// The rule (CodecWithinBound): a codec passes for a role when no row measures it under
// that optimizer and error feedback setting (nothing to hold it to; the reason says
// "unmeasured"), or when the measured mean gap is within the role's bound on either side
// of dense (a codec whose bias lowers this run's loss is not training like dense). The bound is
// on the mean, not on the mean plus its error: one run's final loss spreads about +-2%
// around it, and a bound on the upper end would refuse every 4-bit codec on 8 seeds.
#ifndef SBP_CODEC_ACCURACY_H_
#define SBP_CODEC_ACCURACY_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "sbp/compression.h"

namespace oneflow {

// Which measured rows apply: the optimizer's kind (an adaptive one scales every element
// by its own running magnitude, so a compressed gradient's per-step error matters; a
// linear one applies the sum of the gradients, which error feedback keeps exact).
enum class OptimizerKind { kAdaptive, kLinear };

// "adaptive (AdamW)", "linear (SGD)".
absl::string_view OptimizerKindName(OptimizerKind kind);

// The run a boxing's codecs serve: what selects the measured row.
struct TrainingSetup {
  OptimizerKind optimizer = OptimizerKind::kAdaptive;
  bool error_feedback = false;  // CompileOptions::error_feedback (gradient reductions only)
  // CompileOptions::compression_warmup_iterations: the first iterations every compressed
  // step runs dense. A row measured with a warm-up of W applies to setups of at least W
  // (the rows with the largest such W are read, and of them the largest gap: the same
  // warm-up is measured at several learning rates).
  int64_t dense_warmup_iterations = 0;
};

// The roles the table distinguishes (sbp/compression_policy.h's TensorRole, without the
// ones that never compress).
enum class AccuracyRole { kActivation, kGradient, kWeight };

// "activation", "gradient", "weight".
absl::string_view AccuracyRoleName(AccuracyRole role);

struct MeasuredTrainingGap {
  CompressionChoice codec;
  AccuracyRole role = AccuracyRole::kGradient;
  OptimizerKind optimizer = OptimizerKind::kAdaptive;
  bool error_feedback = false;
  double final_loss_gap = 0;  // mean over the seeds, relative: 0.0168 is +1.68%
  double standard_error = 0;  // of that mean
  int seeds = 0;
  // Where it was measured, e.g. "error_feedback_bench auto+grad, seeds 1-8".
  absl::string_view source;
  // The dense warm-up it was measured with (iterations of the 200; 0: none).
  int64_t dense_warmup_iterations = 0;
};

// Every measured row, in a fixed order (docs/sbp_and_boxing.md has the table).
const std::vector<MeasuredTrainingGap>& MeasuredTrainingGaps();

// The row of `codec` on `role` under `setup`, if one was measured: of the rows measured
// with a dense warm-up no longer than the setup's, those of the longest, and of them the
// one with the largest |gap| (a warm-up enough at one learning rate may not be at another).
// Error feedback only
// applies to gradient reductions: for activations and weights the setting is ignored.
std::optional<MeasuredTrainingGap> FindMeasuredGap(const CompressionChoice& codec, AccuracyRole role,
                                                   const TrainingSetup& setup);

// The largest final-loss gap `auto` accepts per role (relative; issue 24's bar, 0.5% of
// dense's final loss, for each). Negative turns the rule off for that role (every codec
// passes, as before the rule).
struct AccuracyBound {
  double activation = 0.005;
  double gradient = 0.005;
  double weight = 0.005;

  double For(AccuracyRole role) const;
};

struct AccuracyVerdict {
  bool within_bound = true;
  // "int4 G=128 hadamard on gradients under adaptive (AdamW) without error feedback:
  // measured final-loss gap +1.73% +- 0.52 (error_feedback_bench auto+grad, seeds 1-8)
  // > bound 0.50% either side", or "... unmeasured".
  std::string text;
};

// Whether `codec` may carry `role` under `setup` (the rule at the top of this file). A
// refused codec's text also names AdmittingWarmup's warm-up where there is one, e.g.
// "..., within it after a dense warm-up of 50 iterations (--compression_warmup=50: +0.05%
// +- 0.02)": what the user may change to get the codec, not only why it was refused.
AccuracyVerdict CodecWithinBound(const CompressionChoice& codec, AccuracyRole role, const TrainingSetup& setup,
                                 const AccuracyBound& bound);

// The shortest dense warm-up, longer than setup's, under which `codec` passes for `role`
// (the rows measured with warm-ups; the rule reads a setup of exactly that warm-up), or
// nullopt: none measured that passes, or the role's bound is off. Under AdamW, int4 G=128
// hadamard gradients: 50 (after 20 the rows read +0.86% at lr 3e-3).
std::optional<int64_t> AdmittingWarmup(const CompressionChoice& codec, AccuracyRole role, const TrainingSetup& setup,
                                       const AccuracyBound& bound);

}  // namespace oneflow

#endif  // SBP_CODEC_ACCURACY_H_
