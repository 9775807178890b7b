// Every op definition of the project, one function each. registry.cc lists them all.
#ifndef ONEFLOW_CORE_OPS_DEFINITIONS_H_
#define ONEFLOW_CORE_OPS_DEFINITIONS_H_

#include "oneflow_core/ops/op_definition.h"

namespace oneflow {

// matmul.cc
OpDefinition MatMulDefinition();
OpDefinition FusedMatMulBiasDefinition();
// elementwise.cc
OpDefinition ReluDefinition();
OpDefinition GeluDefinition();
OpDefinition ScalarMulDefinition();
OpDefinition ScalarAddDefinition();
OpDefinition DropoutDefinition();
OpDefinition AddDefinition();
OpDefinition SubDefinition();
OpDefinition MulDefinition();
OpDefinition DivDefinition();
OpDefinition BiasAddDefinition();
OpDefinition IdentityDefinition();
OpDefinition AccumulateDefinition();
OpDefinition OnesLikeDefinition();
// causal_mask.cc
OpDefinition CausalMaskDefinition();
// normalization.cc
OpDefinition SoftmaxDefinition();
OpDefinition LogSoftmaxDefinition();
OpDefinition LayerNormDefinition();
OpDefinition SparseSoftmaxCrossEntropyDefinition();
// shape_ops.cc
OpDefinition ReshapeDefinition();
OpDefinition TransposeDefinition();
OpDefinition ReduceSumDefinition();
OpDefinition ReduceMeanDefinition();
// slicing.cc
OpDefinition SliceDefinition();
OpDefinition SliceGradDefinition();
OpDefinition ConcatDefinition();
// embedding.cc
OpDefinition EmbeddingDefinition();
OpDefinition EmbeddingGradDefinition();
// moe.cc: mixture-of-experts routing, dispatch, expert products, combine, aux loss.
OpDefinition MoeRouteDefinition();
OpDefinition MoeDispatchDefinition();
OpDefinition ExpertMatMulDefinition();
OpDefinition MoeCombineDefinition();
OpDefinition MoeAuxLossDefinition();
OpDefinition MoeDispatchGradDefinition();
OpDefinition ExpertMatMulGradDataDefinition();
OpDefinition ExpertMatMulGradWeightDefinition();
OpDefinition MoeCombineGradBufDefinition();
OpDefinition MoeCombineGradProbsDefinition();
OpDefinition MoeAuxLossGradDefinition();

// Llama's ops (docs/llama.md): rms_norm.cc, rotary_embedding.cc, silu.cc.
OpDefinition RmsNormDefinition();
OpDefinition RotaryEmbeddingDefinition();
OpDefinition SiluDefinition();
// vocab_cross_entropy.cc
OpDefinition ReduceMaxDefinition();
OpDefinition LogDefinition();
OpDefinition VocabCrossEntropyDefinition();

// cast.cc: f32 <-> f16/bf16 storage (the activation_storage pass inserts it).
OpDefinition CastDefinition();
// The dtype cast's attribute names (f32, f16 or bf16); an error names what was written.
absl::StatusOr<DType> CastTargetDType(const AttrMap& attrs);

// Ring attention's ops (docs/context_parallelism.md): ring_attention.cc.
OpDefinition RingShiftDefinition();
OpDefinition RingCausalMaskDefinition();
OpDefinition RingAttentionDefinition();
OpDefinition RingAttentionGradDefinition();
OpDefinition RingAttentionMergeDefinition();
OpDefinition RingAttentionResultDefinition();

// Backward ops, added by gradient functions (oneflow_core/dsl/gradients/).
// elementwise_grad.cc
OpDefinition ReluGradDefinition();
OpDefinition GeluGradDefinition();
OpDefinition DropoutGradDefinition();
// normalization_grad.cc
OpDefinition SoftmaxGradDefinition();
OpDefinition LogSoftmaxGradDefinition();
OpDefinition LayerNormGradDefinition();
OpDefinition SparseSoftmaxCrossEntropyGradDefinition();
// rms_norm.cc, silu.cc (rotary_embedding's gradient is rotary_embedding, inverse)
OpDefinition RmsNormGradDefinition();
OpDefinition SiluGradDefinition();
OpDefinition VocabCrossEntropyGradDefinition();
// broadcast.cc
OpDefinition ReduceSumLikeDefinition();
OpDefinition BroadcastLikeDefinition();

// Optimizer updates (no outputs; update their inputs in place). optimizer.cc
OpDefinition SgdUpdateDefinition();
OpDefinition AdamWUpdateDefinition();
// Out-of-place optimizer steps and the in-place copy into a variable. optimizer.cc
OpDefinition SgdStepDefinition();
OpDefinition AdamWStepDefinition();
OpDefinition AssignDefinition();

}  // namespace oneflow

#endif  // ONEFLOW_CORE_OPS_DEFINITIONS_H_
