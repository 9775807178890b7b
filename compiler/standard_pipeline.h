// The compiler's standard pass pipeline (compiler.h's Compile runs it).
#ifndef COMPILER_STANDARD_PIPELINE_H_
#define COMPILER_STANDARD_PIPELINE_H_

#include "compiler/pass_pipeline.h"

namespace oneflow {

// The passes in order. The body of this function in standard_pipeline.cc is the one list
// of them: docs/overview.md walks through it, and `--dump_after` with an unknown name prints it.
PassPipeline StandardPipeline();

}  // namespace oneflow

#endif  // COMPILER_STANDARD_PIPELINE_H_
