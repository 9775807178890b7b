// The DSL's op functions. Each adds one op to the graph of its first input and returns
// its output; errors are recorded in the graph (see graph.h) and name the call site.
//
//   Tensor h = Relu(BiasAdd(MatMul(x, w1), b1));
//   Tensor loss = ReduceMean(SparseSoftmaxCrossEntropy(MatMul(h, w2), labels));
#ifndef ONEFLOW_CORE_DSL_OPS_H_
#define ONEFLOW_CORE_DSL_OPS_H_

#include <cstdint>
#include <vector>

#include "oneflow_core/dsl/graph.h"

namespace oneflow {

using Loc = SourceLocation;

Tensor MatMul(Tensor a, Tensor b, bool transpose_a = false, bool transpose_b = false,
              Loc location = Loc::Current());
Tensor Add(Tensor x, Tensor y, Loc location = Loc::Current());
Tensor Sub(Tensor x, Tensor y, Loc location = Loc::Current());
Tensor Mul(Tensor x, Tensor y, Loc location = Loc::Current());
Tensor Div(Tensor x, Tensor y, Loc location = Loc::Current());
Tensor BiasAdd(Tensor x, Tensor bias, Loc location = Loc::Current());
Tensor Relu(Tensor x, Loc location = Loc::Current());
Tensor Gelu(Tensor x, Loc location = Loc::Current());
Tensor ScalarMul(Tensor x, double scalar, Loc location = Loc::Current());
Tensor ScalarAdd(Tensor x, double scalar, Loc location = Loc::Current());
// Zeroes each element with probability `rate` (mask from seed and logical index) and
// scales the rest by 1 / (1 - rate).
Tensor Dropout(Tensor x, double rate, uint64_t seed, Loc location = Loc::Current());
Tensor Softmax(Tensor x, Loc location = Loc::Current());
Tensor LogSoftmax(Tensor x, Loc location = Loc::Current());
Tensor LayerNorm(Tensor x, Tensor gamma, Tensor beta, double epsilon = 1e-5,
                 Loc location = Loc::Current());
// Per-example loss: logits [..., classes], labels [...] -> [...].
Tensor SparseSoftmaxCrossEntropy(Tensor logits, Tensor labels, Loc location = Loc::Current());
Tensor Reshape(Tensor x, std::vector<int64_t> shape, Loc location = Loc::Current());
Tensor Transpose(Tensor x, std::vector<int64_t> perm, Loc location = Loc::Current());
// `axes` empty reduces over all axes.
Tensor ReduceSum(Tensor x, std::vector<int64_t> axes = {}, bool keep_dims = false,
                 Loc location = Loc::Current());
Tensor ReduceMean(Tensor x, std::vector<int64_t> axes = {}, bool keep_dims = false,
                  Loc location = Loc::Current());
// Rows of table [vocab, hidden] selected by ids [...] -> [..., hidden].
Tensor Embedding(Tensor table, Tensor ids, Loc location = Loc::Current());

}  // namespace oneflow

#endif  // ONEFLOW_CORE_DSL_OPS_H_
