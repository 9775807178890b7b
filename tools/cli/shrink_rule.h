// The layout `oneflow launch --elastic=shrink` re-plans a job for when nodes are lost and
// no spare is left (docs/elastic.md, "The shrink rule"), as a pure function of the old
// layout and the number of survivors, and the rewrite of a recorded graph text to another
// micro-batch size. launch_shrink.cc applies both.
//
// The rule, for a global batch B over dp D replicas in M micro-batches (each device's
// micro-batch: B / (D x M) rows):
//   1. the global batch stays B (the loss curve is the uninterrupted run's);
//   2. dp becomes the most replicas of tp x cp x pp the survivors hold as whole nodes;
//   3. the micro-batches rise to the fewest m >= M for which B splits evenly into dp x m
//      parts of at most B / (D x M) rows each (a device's micro-batch is no larger than
//      before: the activations that fitted still fit); when the recorded text's shapes
//      cannot be re-cut (micro_batches_fixed), m stays M and only the even split counts;
//   4. when no m works for that dp (B does not divide by it), the largest smaller dp for
//      which one does is taken (its whole nodes; the other survivors stay idle) and the
//      choice says so; with none (only dp 1 is left and the model's hints need the dp
//      axis, or ZeRO needs dp > 1), the re-plan is refused naming the batch, the
//      survivors and the dp counts that would have divided it.
#ifndef TOOLS_CLI_SHRINK_RULE_H_
#define TOOLS_CLI_SHRINK_RULE_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace oneflow::cli {

struct ShrinkInputs {
  int64_t batch = 1;          // the global batch (the graph's `batch` line)
  int64_t dp = 1;             // before the loss
  int64_t micro_batches = 1;  // before the loss
  int64_t tp = 1;
  int64_t cp = 1;
  int64_t pp = 1;
  int64_t zero = 0;
  int64_t devices_per_node = 1;
  int64_t survivors = 1;
  // True when the micro-batch size cannot change (the recorded text's shapes could not be
  // re-cut): only m = M is tried.
  bool micro_batches_fixed = false;
};

struct ShrinkChoice {
  int64_t dp = 1;
  int64_t nodes = 1;  // whole nodes the new layout uses (<= survivors)
  int64_t micro_batches = 1;
  // Empty when dp is the most the survivors hold; else why a smaller dp was taken:
  // "the batch of 50 does not split evenly over dp 3; dp 2 is the largest that does (1 of the 3 surviving nodes idle)".
  std::string note;
};

// The rule above. FAILED_PRECONDITION naming the batch, the survivors and what would be
// valid when no layout keeps the batch:
//   "the global batch of 7 cannot be kept on the 2 surviving nodes x 1 device: ..."
absl::StatusOr<ShrinkChoice> ChooseShrinkLayout(const ShrinkInputs& inputs);

// "dp 3 -> 2, micro-batches 1 -> 2: global batch 48, 12 rows per device's micro-batch (was 16)".
std::string ShrinkChoiceText(const ShrinkInputs& inputs, const ShrinkChoice& choice);

// The recorded graph text (Graph::ToText) of one of `old_micro_batches` micro-batches of
// the global `batch` as one of `new_micro_batches`: parsed, its rows re-cut by
// examples::ResizeMicroBatches (every tensor that carries them, and the attributes that
// hold them: a reshape's target), and printed again (with loc= fields when the text has
// them). Errors: the parser's, and ResizeMicroBatches' naming the op whose micro-batches
// would not make the batch (INVALID_ARGUMENT).
absl::StatusOr<std::string> RecutMicroBatches(absl::string_view text, int64_t batch, int64_t old_micro_batches,
                                              int64_t new_micro_batches);

}  // namespace oneflow::cli

#endif  // TOOLS_CLI_SHRINK_RULE_H_
