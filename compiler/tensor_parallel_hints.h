// Megatron's tensor-parallel split, inferred for a model written without SBP hints.
//
// A model with hints on its tensor-parallel axis (the gpt example's column- and
// row-parallel weights, a graph text's `sbp=[B, S(1)]`) says how tp splits it. Without
// them the compiler's SBP choice treats a tp axis as more data parallelism: every weight
// replicated, the batch split over it too. This pass gives such a model the split a user of
// Megatron would write by hand: each weight that opens a chain of ops which can all run on
// a split of their feature (or head, or vocabulary) dimension is split so (column-parallel),
// and the weights that close the chain are split the other way (row-parallel), their
// products partial sums the compiler then reduces. The chain is found with the ops' own
// SBP signatures (oneflow_core/ops), so any op that can run split continues it:
//
//   * A seed is a floating-point variable of 2 or more dimensions read by a matmul (as
//     either operand) or an embedding (as the table), not yet decided. It is tried split
//     on each of its dimensions in order, S(0) first; the first split whose whole group
//     (below) closes is kept, else the variable stays replicated.
//   * The group grows forward from the seed over the tp axis alone: every op reading a
//     tensor of the group must have a signature (valid for the tp devices) in which the
//     group's tensors keep their SBP and every other input is replicated, or, failing
//     that, in which a variable input not in the group is split (it joins the group: the
//     row-parallel weight, a column-parallel bias) or an activation input not in the group
//     is split where it is made by a chain of single-input ops from a matmul of an
//     undecided variable (the key and value projections meeting the query's in attention:
//     that variable joins the group). Split outputs join the group; partial outputs close
//     it (the compiler reduces them where they are read); an op with no such signature
//     fails the group (a layer norm over split features, a residual add of a split and a
//     replicated tensor), and nothing of it is kept.
//
//   * The loss's own ops (after the last op that reads a variable) may read a tensor of
//     the group gathered: the logits of a vocabulary-split output layer.
//
// On the gpt example this gives exactly its hand-written hints: w_q, w_k, w_v and w_fc
// split by columns (S(1)), w_o and w_proj by rows (S(0)), the tied embedding wte by
// vocabulary rows (S(0): the embedding's output partial, the logits gathered for the loss),
// the layer norms and wpe replicated; over devices that do not divide the heads, the
// attention weights stay replicated (tests/tensor_parallel_hints_test.cc). The graph text
// path applies it (tools/cli/graph_text_job.h, docs/graph_text.md).
#ifndef COMPILER_TENSOR_PARALLEL_HINTS_H_
#define COMPILER_TENSOR_PARALLEL_HINTS_H_

#include <cstdint>
#include <map>
#include <string>

#include "absl/status/statusor.h"
#include "oneflow_core/sbp.h"
#include "proto/job.pb.h"

namespace oneflow {

// The split over the tensor-parallel axis of every variable of `job` (a forward job, as
// the DSL or the graph text builds it) that the rule above splits, by variable tensor
// name; variables it leaves replicated are absent. `tp_devices` >= 2: the devices of the
// tp axis (signatures must be valid for them: whole heads per device). Errors: an op type
// the registry does not know, a tensor an op names that the job does not define.
absl::StatusOr<std::map<std::string, Sbp>> InferTensorParallelSplits(const proto::Job& job, int64_t tp_devices);

}  // namespace oneflow

#endif  // COMPILER_TENSOR_PARALLEL_HINTS_H_
