// The reference kernels, one function per op type, listed in reference.cc. Internal to
// the reference library: callers use EvaluateReference.
#ifndef ONEFLOW_CORE_OPS_REFERENCE_KERNELS_H_
#define ONEFLOW_CORE_OPS_REFERENCE_KERNELS_H_

#include <functional>
#include <vector>

#include "absl/status/statusor.h"
#include "oneflow_core/ops/attr.h"
#include "oneflow_core/ops/reference/dense.h"
#include "oneflow_core/ops/reference/reference.h"

namespace oneflow {
namespace reference {

// What a kernel sees: physical inputs, attributes, and the layout of every input and
// output (always filled in; whole tensors when evaluating logically).
struct KernelArgs {
  const std::vector<Dense>& inputs;
  const AttrMap& attrs;
  std::vector<TensorLayout> input_layouts;
  std::vector<TensorLayout> output_layouts;
  std::vector<DType> output_dtypes;
  int64_t step = 0;

  const Dense& in(size_t i) const { return inputs[i]; }
  // A zero-filled output `i` of its physical shape and dtype.
  Dense NewOutput(size_t i) const {
    return Dense::Zeros(output_layouts[i].slice.shape(), output_dtypes[i]);
  }
};

using Outputs = absl::StatusOr<std::vector<Dense>>;
using Kernel = std::function<Outputs(const KernelArgs&)>;

// Elementwise out = fn(x, y) with numpy broadcasting of the (physical) input shapes.
Dense BroadcastBinary(const Dense& x, const Dense& y, const Shape& out_shape,
                      const std::function<double(double, double)>& fn);
// Applies fn to every element.
Dense Map(const Dense& x, const std::function<double(double)>& fn);

// elementwise.cc
Outputs Add(const KernelArgs& args);
Outputs Sub(const KernelArgs& args);
Outputs Mul(const KernelArgs& args);
Outputs Div(const KernelArgs& args);
Outputs BiasAdd(const KernelArgs& args);
Outputs Relu(const KernelArgs& args);
Outputs Gelu(const KernelArgs& args);
Outputs ScalarMul(const KernelArgs& args);
Outputs ScalarAdd(const KernelArgs& args);
Outputs Dropout(const KernelArgs& args);
Outputs Identity(const KernelArgs& args);
Outputs OnesLike(const KernelArgs& args);
Outputs CausalMask(const KernelArgs& args);
Outputs ReluGrad(const KernelArgs& args);
Outputs GeluGrad(const KernelArgs& args);
Outputs DropoutGrad(const KernelArgs& args);
// matmul.cc
Outputs MatMul(const KernelArgs& args);
Outputs FusedMatMulBias(const KernelArgs& args);
// normalization.cc
Outputs Softmax(const KernelArgs& args);
Outputs LogSoftmax(const KernelArgs& args);
Outputs LayerNorm(const KernelArgs& args);
Outputs SparseSoftmaxCrossEntropy(const KernelArgs& args);
Outputs SoftmaxGrad(const KernelArgs& args);
Outputs LogSoftmaxGrad(const KernelArgs& args);
Outputs LayerNormGrad(const KernelArgs& args);
Outputs SparseSoftmaxCrossEntropyGrad(const KernelArgs& args);
// shape.cc
Outputs Reshape(const KernelArgs& args);
Outputs Transpose(const KernelArgs& args);
Outputs ReduceSum(const KernelArgs& args);
Outputs ReduceMean(const KernelArgs& args);
Outputs Slice(const KernelArgs& args);
Outputs SliceGrad(const KernelArgs& args);
Outputs Concat(const KernelArgs& args);
Outputs ReduceSumLike(const KernelArgs& args);
Outputs BroadcastLike(const KernelArgs& args);
// embedding.cc
Outputs Embedding(const KernelArgs& args);
Outputs EmbeddingGrad(const KernelArgs& args);
// moe.cc
Outputs MoeRoute(const KernelArgs& args);
Outputs MoeDispatch(const KernelArgs& args);
Outputs ExpertMatMul(const KernelArgs& args);
Outputs MoeCombine(const KernelArgs& args);
Outputs MoeAuxLoss(const KernelArgs& args);
Outputs MoeDispatchGrad(const KernelArgs& args);
Outputs ExpertMatMulGradData(const KernelArgs& args);
Outputs ExpertMatMulGradWeight(const KernelArgs& args);
Outputs MoeCombineGradBuf(const KernelArgs& args);
Outputs MoeCombineGradProbs(const KernelArgs& args);
Outputs MoeAuxLossGrad(const KernelArgs& args);
// rms_norm.cc, rotary_embedding.cc, silu.cc
Outputs RmsNorm(const KernelArgs& args);
Outputs RmsNormGrad(const KernelArgs& args);
Outputs RotaryEmbedding(const KernelArgs& args);
// cast.cc
Outputs Cast(const KernelArgs& args);
Outputs Silu(const KernelArgs& args);
Outputs SiluGrad(const KernelArgs& args);
// vocab_cross_entropy.cc
Outputs ReduceMax(const KernelArgs& args);
Outputs Log(const KernelArgs& args);
Outputs VocabCrossEntropy(const KernelArgs& args);
Outputs VocabCrossEntropyGrad(const KernelArgs& args);
// ring_attention.cc
Outputs RingShift(const KernelArgs& args);
Outputs RingCausalMask(const KernelArgs& args);
Outputs RingAttention(const KernelArgs& args);
Outputs RingAttentionGrad(const KernelArgs& args);
Outputs RingAttentionMerge(const KernelArgs& args);
Outputs RingAttentionResult(const KernelArgs& args);
// optimizer.cc
Outputs SgdUpdate(const KernelArgs& args);
Outputs AdamWUpdate(const KernelArgs& args);
// The out-of-place steps (sgd_step, adamw_step) return what the updates return, the new
// parameter then the new state, which are their outputs; assign returns the value.
Outputs Assign(const KernelArgs& args);

}  // namespace reference
}  // namespace oneflow

#endif  // ONEFLOW_CORE_OPS_REFERENCE_KERNELS_H_
