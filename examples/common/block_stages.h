// Pipeline stages for a model written without them: its blocks (OpDef.block, a graph
// text's `block=` marks) on the layout's stages as the C++ builders put them
// (ParallelLayout::StageOf, --stage_blocks, --virtual_stages), for a graph text compiled
// with --pp (tools/cli/graph_text_job.h) and the --auto_parallel search's pipelines.
//
// What the gpt builder does by hand, done to the Job: an op of a block runs on its
// block's stage; an op outside the blocks on the stage of the input that comes from the
// latest block (the embedding before the blocks on the first stage, the final norm and
// the loss after them on the last, though the loss also reads the targets); a variable on the stage of its first reader (a tied
// embedding's table with the embedding); data-source tensors on the first stage. An
// activation that enters a block on another stage than its producer's passes through one
// identity op placed on the new stage with rows split over dp, replicated over tp (the
// builders' `To(x, StagePlacement(stage), layout.Sbp(S(0), B))`), which every reader of it
// on that stage shares.
#ifndef EXAMPLES_COMMON_BLOCK_STAGES_H_
#define EXAMPLES_COMMON_BLOCK_STAGES_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "examples/common/parallel_layout.h"
#include "proto/job.pb.h"

namespace oneflow::examples {

// The job's blocks in the order their first ops appear.
std::vector<std::string> BlocksInOrder(const proto::Job& job);

// Places `job`'s ops on `layout`'s pipeline stages by their blocks (above); nothing for
// pp = 1. The job must have no placement of its own on any tensor (the caller gives
// stage 0's as the default). Errors (INVALID_ARGUMENT): fewer blocks than --pp, a
// --stage_blocks that does not sum to the blocks (ParallelLayout::CheckStages), --cp > 1,
// a tensor with its own placement, names the identities would take already in use.
absl::Status PlaceBlocksOnStages(const ParallelLayout& layout, proto::Job* job);

}  // namespace oneflow::examples

#endif  // EXAMPLES_COMMON_BLOCK_STAGES_H_
