// The blocks of a logical graph that are copies of one another (a transformer's layers),
// for a pass that decides once per block and applies the decision to every copy
// (sbp_search_pass.h: "identical blocks searched once and composed").
#ifndef COMPILER_PASSES_IDENTICAL_BLOCKS_H_
#define COMPILER_PASSES_IDENTICAL_BLOCKS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "compiler/compilation.h"

namespace oneflow {

// The block of each op ("" for none):
// - a forward op (ForwardOps): its OpDef.block (Graph::BlockScope);
// - a backward op: the block of what it differentiates. Autograd names the ops it adds
//   "<forward op>_grad/..." or, for a gradient summed over several readers,
//   "<tensor>_grad/..." (AddBackward's name scopes, oneflow_core/dsl/gradients/backward.cc):
//   the longest prefix before a "_grad/" that names an op or a tensor gives that op's (the
//   tensor's producer's) block;
// - any other op (an optimizer update, a gradient accumulation, what a pass adds): the
//   block of the non-forward ops producing its inputs, when they name one and agree.
std::vector<std::string> OpBlocks(const LogicalGraph& graph);

// Classes of blocks whose ops correspond one to one, position by position in op order:
// the same type, placement and input and output types, each input read from the op at the
// same position of its own block (and the same output of it), or else from outside the
// block with the same kind, type and placement, and for a variable or an input (whose SBP
// no search changes) the same SBP. Attributes are not compared (a dropout's seed differs
// per layer and changes no SBP); a caller that needs more checks its own (sbp_search
// compares the candidates).
struct IdenticalBlockClasses {
  // Each class: its blocks in op order, each block its ops in op order; op i of one
  // block corresponds to op i of every other block of the class. Classes in the order of
  // their first op; a block identical to no other is in none.
  std::vector<std::vector<std::vector<int64_t>>> classes;
};

IdenticalBlockClasses FindIdenticalBlocks(const LogicalGraph& graph);

}  // namespace oneflow

#endif  // COMPILER_PASSES_IDENTICAL_BLOCKS_H_
