// Megatron's split given to a model built without hints that split, for a layout with
// tensor parallelism: what `oneflow compile` does to a graph text without hints
// (tools/cli/graph_text_job.h), for a C++ model's JobBuilder too (auto_parallel_driver.h):
//
//   JobBuilder build = [&](const ParallelLayout& layout) -> absl::StatusOr<proto::Job> {
//     OF_ASSIGN_OR_RETURN(proto::Job job, BuildMyModel(layout));  // no WithSbp calls
//     OF_RETURN_IF_ERROR(HintTensorParallelism(layout, &job).status());
//     return job;
//   };
#ifndef EXAMPLES_COMMON_TENSOR_PARALLEL_HINTING_H_
#define EXAMPLES_COMMON_TENSOR_PARALLEL_HINTING_H_

#include <string>

#include "absl/status/statusor.h"
#include "examples/common/parallel_layout.h"
#include "proto/job.pb.h"

namespace oneflow::examples {

// When `layout` has tp > 1 (and cp = 1) and no tensor of `job` carries a hint that splits
// (none, or only all-B hints, as a one-device --print_graph writes; those are dropped):
// Megatron's split of its variables (compiler/tensor_parallel_hints.h) as hints over the
// tp axis (replicated over dp), every other variable replicated, and its data-source
// tensors split by rows over dp and replicated over tp: the hints the gpt example writes
// by hand. Without them the compiler would run the tp axis as more data parallelism. A job
// with a hint that splits keeps its own (its author's constraints) and is left as it is.
// Returns a line saying what it split ("tensor parallelism: ... split over --tp=2 as
// Megatron would: w1 S(1), w2 S(0); every other variable replicated"), or that nothing
// could be split; "" when it did nothing. Errors: InferTensorParallelSplits', a hint that
// is not an SBP.
absl::StatusOr<std::string> HintTensorParallelism(const ParallelLayout& layout, proto::Job* job);

// Takes every sbp hint off `job`'s tensors: a model as written without hints (what
// HintTensorParallelism infers them for, and what a plan's recipe records of such a model).
void ClearSbpHints(proto::Job* job);

}  // namespace oneflow::examples

#endif  // EXAMPLES_COMMON_TENSOR_PARALLEL_HINTING_H_
