#include "sbp/boxing/context.h"

namespace oneflow {
namespace boxing {

WireBytes StepWireBytes(const BoxingContext& context, int64_t elements, bool crosses_nodes,
                        bool compressible) {
  const bool compress = compressible && (crosses_nodes || context.options.compress_intra_node);
  return CountWireBytes(elements, context.dtype,
                        compress ? context.options.compression : BoxingOptions::Compression::kNone,
                        context.options.compression_block_elements);
}

}  // namespace boxing
}  // namespace oneflow
