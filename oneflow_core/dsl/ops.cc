#include "oneflow_core/dsl/ops.h"

namespace oneflow {
namespace {

// The graph of the first valid input; an invalid tensor means an error was already
// recorded (or the user passed a default Tensor), so nothing is added.
Tensor Apply(const std::string& type, const std::vector<Tensor>& inputs, AttrMap attrs,
             Loc location) {
  for (const Tensor& input : inputs) {
    if (!input.valid()) return Tensor();
  }
  return inputs[0].graph()->AddOp1(type, inputs, std::move(attrs), location);
}

}  // namespace

Tensor MatMul(Tensor a, Tensor b, bool transpose_a, bool transpose_b, Loc location) {
  AttrMap attrs;
  if (transpose_a) attrs["transpose_a"] = true;
  if (transpose_b) attrs["transpose_b"] = true;
  return Apply("matmul", {a, b}, std::move(attrs), location);
}

Tensor Add(Tensor x, Tensor y, Loc location) { return Apply("add", {x, y}, {}, location); }
Tensor Sub(Tensor x, Tensor y, Loc location) { return Apply("sub", {x, y}, {}, location); }
Tensor Mul(Tensor x, Tensor y, Loc location) { return Apply("mul", {x, y}, {}, location); }
Tensor Div(Tensor x, Tensor y, Loc location) { return Apply("div", {x, y}, {}, location); }

Tensor BiasAdd(Tensor x, Tensor bias, Loc location) {
  return Apply("bias_add", {x, bias}, {}, location);
}

Tensor Relu(Tensor x, Loc location) { return Apply("relu", {x}, {}, location); }
Tensor Gelu(Tensor x, Loc location) { return Apply("gelu", {x}, {}, location); }

Tensor ScalarMul(Tensor x, double scalar, Loc location) {
  return Apply("scalar_mul", {x}, {{"scalar", scalar}}, location);
}

Tensor ScalarAdd(Tensor x, double scalar, Loc location) {
  return Apply("scalar_add", {x}, {{"scalar", scalar}}, location);
}

Tensor Dropout(Tensor x, double rate, uint64_t seed, Loc location) {
  return Apply("dropout", {x}, {{"rate", rate}, {"seed", static_cast<int64_t>(seed)}},
               location);
}

Tensor Softmax(Tensor x, Loc location) { return Apply("softmax", {x}, {}, location); }
Tensor LogSoftmax(Tensor x, Loc location) { return Apply("log_softmax", {x}, {}, location); }

Tensor LayerNorm(Tensor x, Tensor gamma, Tensor beta, double epsilon, Loc location) {
  return Apply("layer_norm", {x, gamma, beta}, {{"epsilon", epsilon}}, location);
}

Tensor SparseSoftmaxCrossEntropy(Tensor logits, Tensor labels, Loc location) {
  return Apply("sparse_softmax_cross_entropy", {logits, labels}, {}, location);
}

Tensor Reshape(Tensor x, std::vector<int64_t> shape, Loc location) {
  return Apply("reshape", {x}, {{"shape", std::move(shape)}}, location);
}

Tensor Transpose(Tensor x, std::vector<int64_t> perm, Loc location) {
  return Apply("transpose", {x}, {{"perm", std::move(perm)}}, location);
}

Tensor ReduceSum(Tensor x, std::vector<int64_t> axes, bool keep_dims, Loc location) {
  return Apply("reduce_sum", {x}, {{"axes", std::move(axes)}, {"keep_dims", keep_dims}},
               location);
}

Tensor ReduceMean(Tensor x, std::vector<int64_t> axes, bool keep_dims, Loc location) {
  return Apply("reduce_mean", {x}, {{"axes", std::move(axes)}, {"keep_dims", keep_dims}},
               location);
}

Tensor Embedding(Tensor table, Tensor ids, Loc location) {
  return Apply("embedding", {table, ids}, {}, location);
}

}  // namespace oneflow
