// Which codecs a boxing may use: from the user's mode (--compression), what the tensor is
// (its role in training), and a per-tensor hint (Tensor::WithCompression).
//
//   mode     role / hint              codecs (CompressionChoiceText)              decided
//   off      anything                 dense
//   auto     activation               fp8e4m3 G=128 hadamard on every             by cost
//                                     compressible step (TACO's codec)
//   auto     gradient                 reductions: two-level int8 G=512 hadamard   by cost
//                                     in-node + int4 G=128 hadamard cross-node
//                                     when the group is nodes x equal members;
//                                     else int4 G=128 hadamard across nodes,
//                                     int8 G=512 hadamard inside one; across
//                                     nodes int8 G=128 where int4 is refused;
//                                     gathers: int8 G=128
//   auto     weight (a variable)      int8 G=128 (its all-gathers, ZeRO++'s qwZ)   by cost
//   forced   any role but kNever      fp8e4m3 / int8 G=128, int4 G=32, every step  always
//   any      hint kNone               dense
//   auto,    hint fp8 / int8 / int4   that codec (G as forced) on every step        always
//   forced
//   any      kNever                   dense (unless hinted)
//   any      gradient, gradient_wire  bf16 on every reduction and gather, inside   always
//            bf16                     nodes too (no hint on the tensor)
//   any      gradient, gradient_wire  bf16 where modelled faster than dense        by cost
//            auto                     (no hint on the tensor)
// Roles follow the literature (REFERENCES.md): TACO for tensor-parallel activations (its
// FP8 with the rotation; its adaptive pre-scale cancels against the group's scale,
// kernels/compression/taco_equivalence_test.cc),
// SDP4Bit's TLq-HS / ZeRO++'s qgZ for data-parallel gradient reductions, ZeRO++'s qwZ for
// weight gathers. kNever covers what must stay exact: the loss and what flows into the
// loss sink, data-source inputs (labels, token ids, features as fed), integer tensors,
// and floating tensors other than f32 (the compressed collectives decode into f32).
#ifndef SBP_COMPRESSION_POLICY_H_
#define SBP_COMPRESSION_POLICY_H_

#include <cstdint>
#include <optional>
#include <vector>

#include "absl/strings/string_view.h"
#include "sbp/boxing_options.h"
#include "sbp/codec_accuracy.h"

namespace oneflow {

enum class CompressionMode { kOff, kAuto, kForced };

// How variables' gradients travel in their reductions (--gradient_wire): f32 (the default,
// then `mode` decides as for any tensor), bf16 on every step, or bf16 where the cost model
// says it pays. bf16 is only the wire: the compressed collectives decode every
// contribution to f32 and add in f32, in rank order (kernels/compression/
// compressed_collectives.h), as Megatron's grad_reduce_in_fp32 adds.
enum class GradientWire { kFp32, kBf16, kAuto };

struct CompressionPolicy {
  CompressionMode mode = CompressionMode::kOff;
  // kForced: the codec every eligible boxing uses (kFp8E4M3, kInt8 or kInt4).
  CompressionKind forced = CompressionKind::kNone;
  // The group size of forced and hinted codecs other than int4.
  int64_t group_size = 128;
  // The group size of forced and hinted int4. 32, not 128: on the gpt of
  // bench/compression:error_feedback_bench (2 nodes x 2 devices, AdamW, 200 iterations,
  // every eligible step int4) groups of 32 end 1.0% above dense's final loss where groups
  // of 128 end 5.5% above (mean of 4 seeds; docs/sbp_and_boxing.md, "int4 that trains
  // like dense"), for 0.625 instead of 0.53 wire bytes per element
  // (tests:int4_training_test shows both sides).
  int64_t int4_group_size = 32;
  // kForced: whether the forced codec also compresses the steps whose group lies inside
  // one node (true, what --compression=fp8|int8|int4 does) or only the hops that cross
  // nodes (BoxingOptions::compress_intra_node).
  bool forced_intra_node = true;
  CodecThroughput codec_throughput = CodecThroughput::Defaults();
  // Wins over `mode` for gradients (the table above); a tensor's hint wins over it.
  GradientWire gradient_wire = GradientWire::kFp32;
  // `auto` only: the largest measured final-loss gap a role's codec may have
  // (sbp/codec_accuracy.h). A codec of the table above whose measured gap for the role,
  // the job's optimizer and error feedback exceeds it gives way to the role's next
  // candidate (AutomaticCandidates), or to dense when none is left; the step's decision
  // says which and why. Forced codecs and hints are not held to it.
  AccuracyBound accuracy_bound;
};

enum class TensorRole {
  kActivation,  // any f32 tensor computed by an op that is not a gradient of a variable
  kGradient,    // a variable's gradient (Compilation::gradients) while it is reduced
  kWeight,      // a variable
  kNever,       // see the top of this file
};

// "activation", "gradient", "weight", "never".
absl::string_view TensorRoleName(TensorRole role);

// The options one boxing of a tensor with `role` is planned with (the table above);
// `hint` is the tensor's Tensor::WithCompression, if any (kNone: dense). `setup` (the
// job's optimizer, error feedback) selects the measured rows `auto`'s accuracy bound
// reads (CompressionPolicy::accuracy_bound).
BoxingOptions BoxingOptionsFor(const CompressionPolicy& policy, TensorRole role,
                               std::optional<CompressionKind> hint, const TrainingSetup& setup = TrainingSetup());

// `auto`'s codecs for one slot of a role, most compact first: the first within the
// accuracy bound is used. Activations: fp8e4m3 G=128 hadamard, then int8 G=128. Gradient
// reductions across nodes: int4 G=128 hadamard, then int8 G=128 (no rotation: a quarter of
// the encode's CPU, compression_policy.cc); inside a node: int8 G=512 hadamard; gathers and
// weights: int8 G=128.
enum class CodecSlot { kReduceInNode, kReduceCrossNode, kGather };
std::vector<CompressionChoice> AutomaticCandidates(TensorRole role, CodecSlot slot);

// Every codec configuration BoxingOptionsFor can put on a step, in a fixed order:
// what `oneflow calibrate` measures and CodecThroughput::Defaults() covers.
std::vector<CompressionChoice> PickableCodecs();

}  // namespace oneflow

#endif  // SBP_COMPRESSION_POLICY_H_
