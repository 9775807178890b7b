// Every op definition of the project, one function each. registry.cc lists them all.
#ifndef ONEFLOW_CORE_OPS_DEFINITIONS_H_
#define ONEFLOW_CORE_OPS_DEFINITIONS_H_

#include "oneflow_core/ops/op_definition.h"

namespace oneflow {

// matmul.cc
OpDefinition MatMulDefinition();
// elementwise.cc
OpDefinition ReluDefinition();
OpDefinition GeluDefinition();
OpDefinition ScalarMulDefinition();
OpDefinition ScalarAddDefinition();
OpDefinition DropoutDefinition();
OpDefinition AddDefinition();
OpDefinition SubDefinition();
OpDefinition MulDefinition();
OpDefinition DivDefinition();
OpDefinition BiasAddDefinition();
// normalization.cc
OpDefinition SoftmaxDefinition();
OpDefinition LogSoftmaxDefinition();
OpDefinition LayerNormDefinition();
OpDefinition SparseSoftmaxCrossEntropyDefinition();
// shape_ops.cc
OpDefinition ReshapeDefinition();
OpDefinition TransposeDefinition();
OpDefinition ReduceSumDefinition();
OpDefinition ReduceMeanDefinition();
OpDefinition EmbeddingDefinition();

}  // namespace oneflow

#endif  // ONEFLOW_CORE_OPS_DEFINITIONS_H_
