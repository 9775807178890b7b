#include "kernels/cpu/registry.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "kernels/cpu/kernels.h"

namespace oneflow {
namespace {

struct NamedKernel {
  const char* name;
  KernelFunction kernel;
};

// Every CPU kernel, in the order of oneflow_core/ops/registry.cc. A plain array of
// function pointers: lookup is a short scan done once per physical op when the runtime
// builds its actors, not per act.
constexpr NamedKernel kKernels[] = {
    {"matmul", cpu::MatMul},
    {"fused_matmul_bias", cpu::FusedMatMulBias},
    {"add", cpu::Add},
    {"sub", cpu::Sub},
    {"mul", cpu::Mul},
    {"div", cpu::Div},
    {"bias_add", cpu::BiasAdd},
    {"relu", cpu::Relu},
    {"gelu", cpu::Gelu},
    {"scalar_mul", cpu::ScalarMul},
    {"scalar_add", cpu::ScalarAdd},
    {"dropout", cpu::Dropout},
    {"softmax", cpu::Softmax},
    {"log_softmax", cpu::LogSoftmax},
    {"layer_norm", cpu::LayerNorm},
    {"sparse_softmax_cross_entropy", cpu::SparseSoftmaxCrossEntropy},
    {"reshape", cpu::Reshape},
    {"transpose", cpu::Transpose},
    {"reduce_sum", cpu::ReduceSum},
    {"reduce_mean", cpu::ReduceMean},
    {"embedding", cpu::Embedding},
    {"slice", cpu::Slice},
    {"concat", cpu::Concat},
    {"identity", cpu::Identity},
    {"accumulate", cpu::Accumulate},
    {"ones_like", cpu::OnesLike},
    {"causal_mask", cpu::CausalMask},
    {"moe_route", cpu::MoeRoute},
    {"moe_dispatch", cpu::MoeDispatch},
    {"expert_matmul", cpu::ExpertMatMul},
    {"moe_combine", cpu::MoeCombine},
    {"moe_aux_loss", cpu::MoeAuxLoss},
    {"rms_norm", cpu::RmsNorm},
    {"rotary_embedding", cpu::RotaryEmbedding},
    {"silu", cpu::Silu},
    {"reduce_max", cpu::ReduceMax},
    {"log", cpu::Log},
    {"vocab_cross_entropy", cpu::VocabCrossEntropy},
    {"cast", cpu::Cast},
    {"ring_shift", cpu::RingShift},
    {"ring_causal_mask", cpu::RingCausalMask},
    {"ring_attention", cpu::RingAttention},
    {"ring_attention_grad", cpu::RingAttentionGrad},
    {"ring_attention_merge", cpu::RingAttentionMerge},
    {"ring_attention_result", cpu::RingAttentionResult},
    // Backward kernels.
    {"relu_grad", cpu::ReluGrad},
    {"gelu_grad", cpu::GeluGrad},
    {"dropout_grad", cpu::DropoutGrad},
    {"softmax_grad", cpu::SoftmaxGrad},
    {"log_softmax_grad", cpu::LogSoftmaxGrad},
    {"layer_norm_grad", cpu::LayerNormGrad},
    {"sparse_softmax_cross_entropy_grad", cpu::SparseSoftmaxCrossEntropyGrad},
    {"embedding_grad", cpu::EmbeddingGrad},
    {"slice_grad", cpu::SliceGrad},
    {"reduce_sum_like", cpu::ReduceSumLike},
    {"broadcast_like", cpu::BroadcastLike},
    {"moe_dispatch_grad", cpu::MoeDispatchGrad},
    {"expert_matmul_grad_data", cpu::ExpertMatMulGradData},
    {"expert_matmul_grad_weight", cpu::ExpertMatMulGradWeight},
    {"moe_combine_grad_buf", cpu::MoeCombineGradBuf},
    {"moe_combine_grad_probs", cpu::MoeCombineGradProbs},
    {"moe_aux_loss_grad", cpu::MoeAuxLossGrad},
    {"rms_norm_grad", cpu::RmsNormGrad},
    {"silu_grad", cpu::SiluGrad},
    {"vocab_cross_entropy_grad", cpu::VocabCrossEntropyGrad},
    // Optimizer updates (in place).
    {"sgd_update", cpu::SgdUpdate},
    {"adamw_update", cpu::AdamWUpdate},
    // Out-of-place steps and the copy into a variable (in place).
    {"sgd_step", cpu::SgdStep},
    {"adamw_step", cpu::AdamWStep},
    {"assign", cpu::Assign},
};

}  // namespace

absl::StatusOr<KernelFunction> FindCpuKernel(absl::string_view kernel_name) {
  for (const NamedKernel& entry : kKernels) {
    if (kernel_name == entry.name) return entry.kernel;
  }
  return absl::NotFoundError(absl::StrCat("no CPU kernel named '", kernel_name,
                                          "'; known: ", absl::StrJoin(CpuKernelNames(), ", ")));
}

std::vector<std::string> CpuKernelNames() {
  std::vector<std::string> names;
  for (const NamedKernel& entry : kKernels) names.push_back(entry.name);
  return names;
}

}  // namespace oneflow
