// FindGradient: the explicit list of gradient functions, as the op registry lists op
// definitions. Ops absent here have no gradient: optimizer updates, backward ops (no
// second derivatives yet) and ones_like (the autograd seed).
#include <map>
#include <string>

#include "oneflow_core/dsl/gradients/gradient.h"
#include "oneflow_core/dsl/gradients/gradient_functions.h"

namespace oneflow {

const GradientFn* FindGradient(absl::string_view type) {
  namespace g = gradients;
  static const auto* functions = new std::map<std::string, GradientFn, std::less<>>{
      {"matmul", g::MatMulGradient},
      {"add", g::AddGradient},
      {"sub", g::SubGradient},
      {"mul", g::MulGradient},
      {"div", g::DivGradient},
      {"bias_add", g::BiasAddGradient},
      {"relu", g::ReluGradient},
      {"gelu", g::GeluGradient},
      {"scalar_mul", g::ScalarMulGradient},
      {"scalar_add", g::ScalarAddGradient},
      {"dropout", g::DropoutGradient},
      {"identity", g::IdentityGradient},
      {"causal_mask", g::CausalMaskGradient},
      {"softmax", g::SoftmaxGradient},
      {"log_softmax", g::LogSoftmaxGradient},
      {"layer_norm", g::LayerNormGradient},
      {"sparse_softmax_cross_entropy", g::SparseSoftmaxCrossEntropyGradient},
      {"reshape", g::ReshapeGradient},
      {"transpose", g::TransposeGradient},
      {"reduce_sum", g::ReduceSumGradient},
      {"reduce_mean", g::ReduceMeanGradient},
      {"slice", g::SliceGradient},
      {"concat", g::ConcatGradient},
      {"embedding", g::EmbeddingGradient},
      {"rms_norm", g::RmsNormGradient},
      {"rotary_embedding", g::RotaryEmbeddingGradient},
      {"ring_shift", g::RingShiftGradient},
      {"ring_causal_mask", g::RingCausalMaskGradient},
      {"ring_attention", g::RingAttentionGradient},
      {"ring_attention_result", g::RingAttentionResultGradient},
      {"silu", g::SiluGradient},
      {"log", g::LogGradient},
      {"vocab_cross_entropy", g::VocabCrossEntropyGradient},
      // No gradient into probs (piecewise constant), listed so `dropped` may reach a loss.
      {"moe_route", g::MoeRouteGradient},
      {"moe_dispatch", g::MoeDispatchGradient},
      {"expert_matmul", g::ExpertMatMulGradient},
      {"moe_combine", g::MoeCombineGradient},
      {"moe_aux_loss", g::MoeAuxLossGradient},
  };
  auto it = functions->find(type);
  return it == functions->end() ? nullptr : &it->second;
}

}  // namespace oneflow
