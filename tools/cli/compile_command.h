// `oneflow compile GRAPH.txt --nodes=N --devices_per_node=N --dp=N --tp=N [--pp=N]
// [--micro_batches=N] [--zero=0..3] [--compression=...] [--plan_out=FILE]`: a model written
// in the graph text format (docs/graph_text.md, e.g. what Graph::ToText printed) compiled
// for a layout, with the summary the example binaries print. The same graph and flags give
// the same plan as the C++ model compiled by its example binary (source locations aside:
// here they are GRAPH.txt:LINE). docs/first_model.md walks through it.
#ifndef TOOLS_CLI_COMPILE_COMMAND_H_
#define TOOLS_CLI_COMPILE_COMMAND_H_

#include "tools/cli/subcommand.h"

namespace oneflow::cli {

Subcommand CompileSubcommand();

}  // namespace oneflow::cli

#endif  // TOOLS_CLI_COMPILE_COMMAND_H_
