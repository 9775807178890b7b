// Autograd: adds the backward pass of a loss to a graph, built from the gradient
// functions of gradient.h, so backward ops are ordinary ops of the same graph.
//
//   OF_ASSIGN_OR_RETURN(std::vector<Tensor> grads, AddBackward(graph, loss, {w1, w2}));
//   // grads[0] is d(loss)/d(w1), of w1's type.
#ifndef ONEFLOW_CORE_DSL_GRADIENTS_BACKWARD_H_
#define ONEFLOW_CORE_DSL_GRADIENTS_BACKWARD_H_

#include <vector>

#include "absl/status/statusor.h"
#include "oneflow_core/dsl/graph.h"

namespace oneflow {

// Seeds d(loss) = ones_like(loss), then walks the graph's ops in reverse (they are in
// topological order), visiting only ops on a path from a `wrt` tensor to the loss, and
// calls each op's gradient function inside Graph::NameScope "<op>_grad". A tensor that
// feeds several ops gets the sum of their contributions (add ops in its producer's
// scope, or "<tensor>_grad" for the wrt tensors themselves).
//
// Returns one gradient per wrt tensor, of its type, or an invalid Tensor where the loss
// does not depend on it. Errors: the loss or a wrt tensor not of this graph or not
// floating; an op on the way with no gradient (named, with the path to the loss); an
// error recorded in the graph while adding backward ops (the graph's status).
absl::StatusOr<std::vector<Tensor>> AddBackward(Graph& graph, Tensor loss,
                                                const std::vector<Tensor>& wrt);

}  // namespace oneflow

#endif  // ONEFLOW_CORE_DSL_GRADIENTS_BACKWARD_H_
