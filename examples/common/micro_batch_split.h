// A model written for its whole batch made into the graph of one micro-batch: what a C++
// builder does by building with `layout.MicroBatchRows(batch)` rows, done to a Job whose
// inputs hold the whole batch (a graph text, `oneflow compile --micro_batches` and the
// `--auto_parallel` search's micro-batched layouts: tools/cli/graph_text_job.h).
//
// The rewrite is sound only where running the graph on each micro-batch and taking the mean
// of the results (Job.micro_batches: gradients and the reported loss are the micro-batches'
// mean) gives what the graph gives on the whole batch. The op definitions decide it, as they
// decide data parallelism: rows split by S(0) over M devices are M micro-batches of rows.
// Every op that reads the batch's rows must have a signature taking them S(0) (the other
// inputs B) to outputs S(0), valid on M devices: its result on a micro-batch is the
// micro-batch's rows of its result on the batch. The rows may end in a mean over them
// (reduce_mean over axis 0), and the mean may reach the loss only through ops that keep
// a mean of means the mean (add, sub, scalar_mul, scalar_add, identity, reshape). Anything
// else (a sum over the rows, a transpose that moves them off axis 0, a product of two
// means) is refused naming the op: the micro-batches would not add up to the batch.
#ifndef EXAMPLES_COMMON_MICRO_BATCH_SPLIT_H_
#define EXAMPLES_COMMON_MICRO_BATCH_SPLIT_H_

#include <cstdint>

#include "absl/status/statusor.h"
#include "proto/job.pb.h"

namespace oneflow::examples {

// The rows of `job`'s batch as its data-source tensors hold them: Job.batch_size when set,
// else the first data-source tensor's dim 0. 0 for a job without data-source tensors.
int64_t BatchRows(const proto::Job& job);

// Whether the data-source tensors hold the whole batch (dim 0 = Job.batch_size), rather
// than one micro-batch of it (what Graph::ToText prints for a graph built with
// micro-batches). False without a batch_size.
bool HoldsWholeBatch(const proto::Job& job);

// How many micro-batches of Job.batch_size the data-source tensors hold one of: 1 when
// they hold the whole batch (HoldsWholeBatch), batch_size / their rows when they all hold
// that divisor of it (what Graph::ToText prints for a graph built with micro-batches: the
// `batch` line and one micro-batch's inputs, not the count), else 0 (no batch size, no
// data-source tensor, unequal rows or rows that do not divide it).
int64_t MicroBatchesOfInputs(const proto::Job& job);

// `whole` (data-source tensors of the whole batch, as HoldsWholeBatch; micro_batches unset
// or 1) as one micro-batch's graph with Job.micro_batches = `micro_batches`: the batch's
// tensors with dim 0 / micro_batches rows, each op's attributes for its new output shapes
// (OpDefinition::attrs_for_local_shapes: a reshape's target), every op's types checked by
// its inference. Errors (INVALID_ARGUMENT) name what refuses it: the batch not divisible,
// a data-source tensor of other rows, the op whose signatures do not keep the rows split
// (with its source location), a loss that is not a mean over the batch.
absl::StatusOr<proto::Job> SplitIntoMicroBatches(const proto::Job& whole, int64_t micro_batches);

// `job`, one micro-batch's graph of Job.micro_batches (1 when unset) micro-batches of its
// Job.batch_size, as one of `micro_batches` micro-batches of the same batch: grown back to
// the whole batch, then cut by SplitIntoMicroBatches (its soundness and errors). What a
// re-plan on fewer devices does to a recorded micro-batch (tools/cli/launch_shrink.h).
// Errors also: a job without a batch_size its micro-batches divide.
absl::StatusOr<proto::Job> ResizeMicroBatches(const proto::Job& job, int64_t micro_batches);

}  // namespace oneflow::examples

#endif  // EXAMPLES_COMMON_MICRO_BATCH_SPLIT_H_
