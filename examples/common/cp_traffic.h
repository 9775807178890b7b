// What context-parallel attention moves per layer, read back from a compiled plan: the
// boxings next to the ops a model tagged with kCpAttentionAttr (UlyssesAttention's
// transposes, RingAttention's ring_shift ops: context_parallel.h), grouped by block. `oneflow inspect` prints them and
// bench/context_parallel compares them with the formulas. Depends on the plan proto only.
#ifndef EXAMPLES_COMMON_CP_TRAFFIC_H_
#define EXAMPLES_COMMON_CP_TRAFFIC_H_

#include <cstdint>
#include <string>
#include <vector>

#include "proto/plan.pb.h"

namespace oneflow::examples {

// The op attribute naming the attention scheme ("ulysses" or "ring") on the ops whose input or
// output a context-parallel attention's collective boxes.
inline constexpr char kCpAttentionAttr[] = "cp_attention";

struct CpLayerTraffic {
  std::string block;      // OpDef.block, e.g. "block0", "layers1".
  std::string attention;  // The tag's value: "ulysses" or "ring".
  int64_t collectives = 0;  // Boxing steps that move bytes (all-to-alls for Ulysses, send/recvs for ring).
  // Sum of the steps' BoxingStepDef.bytes_per_device (the busiest device's received
  // bytes, as the plan states them) per micro-batch's forward pass.
  int64_t bytes_per_device = 0;
  // Ring attention's work (ring_attention ops, oneflow_core/ops/ring_blocks.h): per cp
  // rank, the (query chunk, key chunk) tiles its steps compute over one micro-batch's
  // forward pass, of `ring_tiles_per_rank_total` (every step's every tile); the causal
  // mask's fully hidden tiles are skipped. Empty for Ulysses.
  std::vector<int64_t> ring_tiles_per_rank;
  int64_t ring_tiles_per_rank_total = 0;
  bool ring_zigzag = false;
};

// One entry per block with tagged ops, in the order of their first op; empty for a plan
// without context-parallel attention.
std::vector<CpLayerTraffic> CpAttentionTraffic(const proto::Plan& plan);

}  // namespace oneflow::examples

#endif  // EXAMPLES_COMMON_CP_TRAFFIC_H_
