// The gradient function of every differentiable op, one per op type, grouped by op
// family into files. gradient_registry.cc lists them; everything else uses FindGradient.
#ifndef ONEFLOW_CORE_DSL_GRADIENTS_GRADIENT_FUNCTIONS_H_
#define ONEFLOW_CORE_DSL_GRADIENTS_GRADIENT_FUNCTIONS_H_

#include <vector>

#include "oneflow_core/dsl/gradients/gradient.h"

namespace oneflow {
namespace gradients {

// matmul_gradient.cc
std::vector<Tensor> MatMulGradient(const GradientContext& ctx);
// elementwise_gradient.cc
std::vector<Tensor> AddGradient(const GradientContext& ctx);
std::vector<Tensor> SubGradient(const GradientContext& ctx);
std::vector<Tensor> MulGradient(const GradientContext& ctx);
std::vector<Tensor> DivGradient(const GradientContext& ctx);
std::vector<Tensor> BiasAddGradient(const GradientContext& ctx);
std::vector<Tensor> ReluGradient(const GradientContext& ctx);
std::vector<Tensor> GeluGradient(const GradientContext& ctx);
std::vector<Tensor> ScalarMulGradient(const GradientContext& ctx);
std::vector<Tensor> ScalarAddGradient(const GradientContext& ctx);
std::vector<Tensor> DropoutGradient(const GradientContext& ctx);
std::vector<Tensor> IdentityGradient(const GradientContext& ctx);
std::vector<Tensor> CausalMaskGradient(const GradientContext& ctx);
// normalization_gradient.cc
std::vector<Tensor> SoftmaxGradient(const GradientContext& ctx);
std::vector<Tensor> LogSoftmaxGradient(const GradientContext& ctx);
std::vector<Tensor> LayerNormGradient(const GradientContext& ctx);
std::vector<Tensor> SparseSoftmaxCrossEntropyGradient(const GradientContext& ctx);
// shape_gradient.cc
std::vector<Tensor> ReshapeGradient(const GradientContext& ctx);
std::vector<Tensor> TransposeGradient(const GradientContext& ctx);
std::vector<Tensor> ReduceSumGradient(const GradientContext& ctx);
std::vector<Tensor> ReduceMeanGradient(const GradientContext& ctx);
std::vector<Tensor> SliceGradient(const GradientContext& ctx);
std::vector<Tensor> ConcatGradient(const GradientContext& ctx);
std::vector<Tensor> EmbeddingGradient(const GradientContext& ctx);
// llama_gradient.cc (and ring attention's ring_shift, ring_causal_mask)
std::vector<Tensor> RmsNormGradient(const GradientContext& ctx);
std::vector<Tensor> RotaryEmbeddingGradient(const GradientContext& ctx);
std::vector<Tensor> SiluGradient(const GradientContext& ctx);
std::vector<Tensor> LogGradient(const GradientContext& ctx);
std::vector<Tensor> VocabCrossEntropyGradient(const GradientContext& ctx);
std::vector<Tensor> RingShiftGradient(const GradientContext& ctx);
std::vector<Tensor> RingCausalMaskGradient(const GradientContext& ctx);
std::vector<Tensor> RingAttentionResultGradient(const GradientContext& ctx);
std::vector<Tensor> RingAttentionGradient(const GradientContext& ctx);
// moe_gradient.cc
std::vector<Tensor> MoeRouteGradient(const GradientContext& ctx);
std::vector<Tensor> MoeDispatchGradient(const GradientContext& ctx);
std::vector<Tensor> ExpertMatMulGradient(const GradientContext& ctx);
std::vector<Tensor> MoeCombineGradient(const GradientContext& ctx);
std::vector<Tensor> MoeAuxLossGradient(const GradientContext& ctx);

}  // namespace gradients
}  // namespace oneflow

#endif  // ONEFLOW_CORE_DSL_GRADIENTS_GRADIENT_FUNCTIONS_H_
