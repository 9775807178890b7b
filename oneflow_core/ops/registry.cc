#include "oneflow_core/ops/registry.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "oneflow_core/ops/definitions.h"

namespace oneflow {

const OpRegistry& OpRegistry::Get() {
  static const OpRegistry* registry = new OpRegistry({
      MatMulDefinition(),
      FusedMatMulBiasDefinition(),
      AddDefinition(),
      SubDefinition(),
      MulDefinition(),
      DivDefinition(),
      BiasAddDefinition(),
      ReluDefinition(),
      GeluDefinition(),
      ScalarMulDefinition(),
      ScalarAddDefinition(),
      DropoutDefinition(),
      SoftmaxDefinition(),
      LogSoftmaxDefinition(),
      LayerNormDefinition(),
      SparseSoftmaxCrossEntropyDefinition(),
      ReshapeDefinition(),
      TransposeDefinition(),
      ReduceSumDefinition(),
      ReduceMeanDefinition(),
      EmbeddingDefinition(),
      SliceDefinition(),
      ConcatDefinition(),
      IdentityDefinition(),
      AccumulateDefinition(),
      OnesLikeDefinition(),
      CausalMaskDefinition(),
      MoeRouteDefinition(),
      MoeDispatchDefinition(),
      ExpertMatMulDefinition(),
      MoeCombineDefinition(),
      MoeAuxLossDefinition(),
      RmsNormDefinition(),
      RotaryEmbeddingDefinition(),
      SiluDefinition(),
      ReduceMaxDefinition(),
      LogDefinition(),
      VocabCrossEntropyDefinition(),
      CastDefinition(),
      RingShiftDefinition(),
      RingCausalMaskDefinition(),
      RingAttentionDefinition(),
      RingAttentionGradDefinition(),
      RingAttentionMergeDefinition(),
      RingAttentionResultDefinition(),
      // Backward ops.
      ReluGradDefinition(),
      GeluGradDefinition(),
      DropoutGradDefinition(),
      SoftmaxGradDefinition(),
      LogSoftmaxGradDefinition(),
      LayerNormGradDefinition(),
      SparseSoftmaxCrossEntropyGradDefinition(),
      EmbeddingGradDefinition(),
      SliceGradDefinition(),
      ReduceSumLikeDefinition(),
      BroadcastLikeDefinition(),
      MoeDispatchGradDefinition(),
      ExpertMatMulGradDataDefinition(),
      ExpertMatMulGradWeightDefinition(),
      MoeCombineGradBufDefinition(),
      MoeCombineGradProbsDefinition(),
      MoeAuxLossGradDefinition(),
      RmsNormGradDefinition(),
      SiluGradDefinition(),
      VocabCrossEntropyGradDefinition(),
      // Optimizer updates.
      SgdUpdateDefinition(),
      AdamWUpdateDefinition(),
      SgdStepDefinition(),
      AdamWStepDefinition(),
      AssignDefinition(),
  });
  return *registry;
}

absl::StatusOr<const OpDefinition*> OpRegistry::Find(absl::string_view type) const {
  for (const OpDefinition& definition : definitions_) {
    if (definition.type == type) return &definition;
  }
  return absl::NotFoundError(absl::StrCat(
      "unknown op type '", type, "'; known: ",
      absl::StrJoin(definitions_, ", ", [](std::string* out, const OpDefinition& d) {
        absl::StrAppend(out, d.type);
      })));
}

}  // namespace oneflow
