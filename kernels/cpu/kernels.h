// The CPU kernel functions, one per kernel name, grouped by the file that defines them.
// Internal to //kernels/cpu: callers find them by name through registry.h.
#ifndef KERNELS_CPU_KERNELS_H_
#define KERNELS_CPU_KERNELS_H_

#include "absl/status/status.h"
#include "kernels/kernel.h"

namespace oneflow {
namespace cpu {

// matmul.cc
absl::Status MatMul(const KernelContext& context);
// matmul + bias_add (+ relu) with the bias and relu as the GEMM's epilogue.
absl::Status FusedMatMulBias(const KernelContext& context);
// elementwise.cc
absl::Status Add(const KernelContext& context);
absl::Status Sub(const KernelContext& context);
absl::Status Mul(const KernelContext& context);
absl::Status Div(const KernelContext& context);
absl::Status BiasAdd(const KernelContext& context);
absl::Status Relu(const KernelContext& context);
absl::Status Gelu(const KernelContext& context);
absl::Status ScalarMul(const KernelContext& context);
absl::Status ScalarAdd(const KernelContext& context);
absl::Status OnesLike(const KernelContext& context);
absl::Status ReluGrad(const KernelContext& context);
absl::Status GeluGrad(const KernelContext& context);
// masking.cc: values that depend on logical positions.
absl::Status Dropout(const KernelContext& context);
absl::Status DropoutGrad(const KernelContext& context);
absl::Status CausalMask(const KernelContext& context);
// normalization.cc
absl::Status Softmax(const KernelContext& context);
absl::Status LogSoftmax(const KernelContext& context);
absl::Status LayerNorm(const KernelContext& context);
absl::Status SparseSoftmaxCrossEntropy(const KernelContext& context);
// normalization_grad.cc
absl::Status SoftmaxGrad(const KernelContext& context);
absl::Status LogSoftmaxGrad(const KernelContext& context);
absl::Status LayerNormGrad(const KernelContext& context);
absl::Status SparseSoftmaxCrossEntropyGrad(const KernelContext& context);
// shape.cc
absl::Status Reshape(const KernelContext& context);
absl::Status Identity(const KernelContext& context);
// accumulate (oneflow_core/ops/accumulate.cc): micro-batch m = step mod micro_batches.
absl::Status Accumulate(const KernelContext& context);
absl::Status Transpose(const KernelContext& context);
absl::Status Slice(const KernelContext& context);
absl::Status SliceGrad(const KernelContext& context);
absl::Status Concat(const KernelContext& context);
// reduce.cc
absl::Status ReduceSum(const KernelContext& context);
absl::Status ReduceMean(const KernelContext& context);
absl::Status ReduceSumLike(const KernelContext& context);
absl::Status BroadcastLike(const KernelContext& context);
// embedding.cc
absl::Status Embedding(const KernelContext& context);
absl::Status EmbeddingGrad(const KernelContext& context);
// moe.cc: mixture-of-experts routing, dispatch, expert products, combine, aux loss.
absl::Status MoeRoute(const KernelContext& context);
absl::Status MoeDispatch(const KernelContext& context);
absl::Status ExpertMatMul(const KernelContext& context);
absl::Status MoeCombine(const KernelContext& context);
absl::Status MoeAuxLoss(const KernelContext& context);
absl::Status MoeDispatchGrad(const KernelContext& context);
absl::Status ExpertMatMulGradData(const KernelContext& context);
absl::Status ExpertMatMulGradWeight(const KernelContext& context);
absl::Status MoeCombineGradBuf(const KernelContext& context);
absl::Status MoeCombineGradProbs(const KernelContext& context);
absl::Status MoeAuxLossGrad(const KernelContext& context);
// rms_norm.cc, rotary_embedding.cc; silu in elementwise.cc (Llama's ops).
absl::Status RmsNorm(const KernelContext& context);
absl::Status RmsNormGrad(const KernelContext& context);
absl::Status RotaryEmbedding(const KernelContext& context);
// cast.cc: f32 <-> f16/bf16 storage.
absl::Status Cast(const KernelContext& context);
absl::Status Silu(const KernelContext& context);
absl::Status SiluGrad(const KernelContext& context);
// vocab_cross_entropy.cc: the vocab-parallel cross-entropy's ops.
absl::Status ReduceMax(const KernelContext& context);
absl::Status Log(const KernelContext& context);
absl::Status VocabCrossEntropy(const KernelContext& context);
absl::Status VocabCrossEntropyGrad(const KernelContext& context);
// ring_attention.cc (ring attention under context parallelism).
absl::Status RingShift(const KernelContext& context);
absl::Status RingCausalMask(const KernelContext& context);
absl::Status RingAttention(const KernelContext& context);
absl::Status RingAttentionGrad(const KernelContext& context);
absl::Status RingAttentionMerge(const KernelContext& context);
absl::Status RingAttentionResult(const KernelContext& context);
// optimizer.cc
absl::Status SgdUpdate(const KernelContext& context);
absl::Status AdamWUpdate(const KernelContext& context);
absl::Status SgdStep(const KernelContext& context);
absl::Status AdamWStep(const KernelContext& context);
absl::Status Assign(const KernelContext& context);

}  // namespace cpu
}  // namespace oneflow

#endif  // KERNELS_CPU_KERNELS_H_
