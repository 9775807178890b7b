#include "oneflow_core/ops/reference/reference.h"

#include <map>

#include "absl/strings/str_cat.h"
#include "oneflow_core/ops/reference/kernels.h"
#include "oneflow_core/ops/registry.h"
#include "oneflow_core/status.h"

namespace oneflow {
namespace {

// Every registered op type, explicitly (reference_test checks none is missing).
const std::map<std::string, reference::Kernel>& Kernels() {
  namespace r = reference;
  static const auto* kernels = new std::map<std::string, reference::Kernel>{
      {"matmul", r::MatMul},
      {"fused_matmul_bias", r::FusedMatMulBias},
      {"add", r::Add},
      {"sub", r::Sub},
      {"mul", r::Mul},
      {"div", r::Div},
      {"bias_add", r::BiasAdd},
      {"relu", r::Relu},
      {"gelu", r::Gelu},
      {"scalar_mul", r::ScalarMul},
      {"scalar_add", r::ScalarAdd},
      {"dropout", r::Dropout},
      {"softmax", r::Softmax},
      {"log_softmax", r::LogSoftmax},
      {"layer_norm", r::LayerNorm},
      {"sparse_softmax_cross_entropy", r::SparseSoftmaxCrossEntropy},
      {"reshape", r::Reshape},
      {"transpose", r::Transpose},
      {"reduce_sum", r::ReduceSum},
      {"reduce_mean", r::ReduceMean},
      {"embedding", r::Embedding},
      {"slice", r::Slice},
      {"concat", r::Concat},
      {"identity", r::Identity},
      // One call as if every micro-batch carried x: their mean is x.
      {"accumulate", r::Identity},
      {"ones_like", r::OnesLike},
      {"causal_mask", r::CausalMask},
      {"moe_route", r::MoeRoute},
      {"moe_dispatch", r::MoeDispatch},
      {"expert_matmul", r::ExpertMatMul},
      {"moe_combine", r::MoeCombine},
      {"moe_aux_loss", r::MoeAuxLoss},
      {"rms_norm", r::RmsNorm},
      {"rotary_embedding", r::RotaryEmbedding},
      {"ring_shift", r::RingShift},
      {"ring_causal_mask", r::RingCausalMask},
      {"ring_attention", r::RingAttention},
      {"ring_attention_grad", r::RingAttentionGrad},
      {"ring_attention_merge", r::RingAttentionMerge},
      {"ring_attention_result", r::RingAttentionResult},
      {"silu", r::Silu},
      {"reduce_max", r::ReduceMax},
      {"log", r::Log},
      {"vocab_cross_entropy", r::VocabCrossEntropy},
      {"cast", r::Cast},
      {"relu_grad", r::ReluGrad},
      {"gelu_grad", r::GeluGrad},
      {"dropout_grad", r::DropoutGrad},
      {"softmax_grad", r::SoftmaxGrad},
      {"log_softmax_grad", r::LogSoftmaxGrad},
      {"layer_norm_grad", r::LayerNormGrad},
      {"sparse_softmax_cross_entropy_grad", r::SparseSoftmaxCrossEntropyGrad},
      {"embedding_grad", r::EmbeddingGrad},
      {"slice_grad", r::SliceGrad},
      {"reduce_sum_like", r::ReduceSumLike},
      {"broadcast_like", r::BroadcastLike},
      {"moe_dispatch_grad", r::MoeDispatchGrad},
      {"expert_matmul_grad_data", r::ExpertMatMulGradData},
      {"expert_matmul_grad_weight", r::ExpertMatMulGradWeight},
      {"moe_combine_grad_buf", r::MoeCombineGradBuf},
      {"moe_combine_grad_probs", r::MoeCombineGradProbs},
      {"moe_aux_loss_grad", r::MoeAuxLossGrad},
      {"rms_norm_grad", r::RmsNormGrad},
      {"silu_grad", r::SiluGrad},
      {"vocab_cross_entropy_grad", r::VocabCrossEntropyGrad},
      {"sgd_update", r::SgdUpdate},
      {"adamw_update", r::AdamWUpdate},
      {"sgd_step", r::SgdUpdate},
      {"adamw_step", r::AdamWUpdate},
      {"assign", r::Assign},
  };
  return *kernels;
}

}  // namespace

absl::StatusOr<std::vector<Dense>> EvaluateReference(const std::string& type,
                                                     const std::vector<Dense>& inputs,
                                                     const AttrMap& attrs) {
  return EvaluateReference(type, inputs, attrs, ReferenceContext{});
}

absl::StatusOr<std::vector<Dense>> EvaluateReference(const std::string& type,
                                                     const std::vector<Dense>& inputs,
                                                     const AttrMap& attrs,
                                                     const ReferenceContext& context) {
  OF_ASSIGN_OR_RETURN(const OpDefinition* definition, OpRegistry::Get().Find(type));
  auto kernel = Kernels().find(type);
  if (kernel == Kernels().end()) {
    return absl::UnimplementedError(absl::StrCat("op type '", type, "' has no reference kernel"));
  }
  const std::string where = absl::StrCat("reference of '", type, "'");
  if (inputs.size() != definition->inputs.size() ||
      (!context.inputs.empty() && context.inputs.size() != inputs.size())) {
    return absl::InvalidArgumentError(absl::StrCat(where, ": takes ", definition->inputs.size(),
                                                   " inputs, got ", inputs.size(), " (and ",
                                                   context.inputs.size(), " layouts)"));
  }
  std::vector<TensorType> logical_types;
  std::vector<TensorLayout> input_layouts;
  for (size_t i = 0; i < inputs.size(); ++i) {
    TensorLayout layout = context.inputs.empty()
                              ? TensorLayout{inputs[i].shape, TensorSlice::Whole(inputs[i].shape)}
                              : context.inputs[i];
    if (layout.slice.shape() != inputs[i].shape) {
      return absl::InvalidArgumentError(absl::StrCat(
          where, ": input '", definition->inputs[i], "' has shape ", inputs[i].shape.ToString(),
          " but its layout slice ", layout.slice.ToString(), " of ", layout.logical.ToString(),
          " has shape ", layout.slice.shape().ToString()));
    }
    logical_types.push_back({layout.logical, inputs[i].dtype});
    input_layouts.push_back(std::move(layout));
  }
  absl::StatusOr<std::vector<TensorType>> output_types = definition->infer(logical_types, attrs);
  if (!output_types.ok()) {
    return absl::Status(output_types.status().code(),
                        absl::StrCat(where, ": ", output_types.status().message()));
  }
  std::vector<TensorLayout> output_layouts = context.outputs;
  if (output_layouts.empty()) {
    for (const TensorType& type : *output_types) {
      output_layouts.push_back({type.shape, TensorSlice::Whole(type.shape)});
    }
  }
  if (output_layouts.size() != output_types->size()) {
    return absl::InvalidArgumentError(absl::StrCat(where, ": has ", output_types->size(),
                                                   " outputs, got ", output_layouts.size(),
                                                   " output layouts"));
  }
  std::vector<DType> output_dtypes;
  for (const TensorType& type : *output_types) output_dtypes.push_back(type.dtype);
  const reference::KernelArgs args{inputs,         attrs,         std::move(input_layouts),
                                   std::move(output_layouts), std::move(output_dtypes),
                                   context.step};
  absl::StatusOr<std::vector<Dense>> outputs = kernel->second(args);
  if (!outputs.ok()) {
    return absl::Status(outputs.status().code(),
                        absl::StrCat(where, ": ", outputs.status().message()));
  }
  return outputs;
}

}  // namespace oneflow
