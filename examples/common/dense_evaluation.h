// The loss of trained weights without the codecs that trained them.
//
// A compressed run's training loss is measured through its own compressed forward pass:
// with int4 on the tensor-parallel reductions of activations, every loss it reports
// carries that codec's noise (on the gpt of bench/compression:error_feedback_bench the
// noise alone adds 1-2% at a loss near 0.0013). To compare what two runs *learnt*, each
// run's weights are evaluated by one dense plan on the same batches: the checkpoint each
// run took after training, resumed into the dense plan at a learning rate too small to
// change an f32 weight. docs/sbp_and_boxing.md, "Forced int4: the noise of the measuring
// forward pass", has the figures.
#ifndef EXAMPLES_COMMON_DENSE_EVALUATION_H_
#define EXAMPLES_COMMON_DENSE_EVALUATION_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "proto/job.pb.h"
#include "proto/plan.pb.h"

namespace oneflow::examples {

// `job` compiled for `cluster` with no codec and no gradient buckets, its learning-rate
// schedule replaced by a constant 1e-30 (the compiler refuses 0): an update of
// lr * m / sqrt(v) and AdamW's decay factor 1 - lr * weight_decay both round to no change
// of an f32 weight, so each iteration is a forward and backward of the weights it resumed
// with. The plan's variables are the job's, so it resumes from any plan of the same job.
absl::StatusOr<proto::Plan> DenseEvaluationPlan(proto::Job job, const proto::Cluster& cluster);

// Resumes `evaluation` (from DenseEvaluationPlan) from the checkpoint in `checkpoint_dir`,
// which must have been taken after `trained_iterations`, and runs `batches` iterations
// with every node in this process: the losses of the checkpoint's weights on the batches
// of iterations trained_iterations .. trained_iterations + batches - 1. FAILED_PRECONDITION
// naming the directory when the checkpoint is of another iteration; the runtime's error
// when it cannot resume (another model, a damaged checkpoint).
absl::StatusOr<std::vector<double>> EvaluateCheckpoint(const proto::Plan& evaluation, const std::string& checkpoint_dir,
                                                       int64_t trained_iterations, int64_t batches);

}  // namespace oneflow::examples

#endif  // EXAMPLES_COMMON_DENSE_EVALUATION_H_
