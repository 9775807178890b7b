// What a boxing may do to the bytes on the wire: dense, compressed or sparse.
//
// The graph compiler picks dense, compressed or sparse per edge from a user policy and
// the link cost model (docs/design.md). This header is the seam for that choice:
// PlanBoxing takes a BoxingOptions, and every BoxingStep records the compression its
// bytes were counted with, so the cost model and the plan inspector never have to guess.
//
// What is modelled today (docs/sbp_and_boxing.md, "Compressed and sparse boxing"):
//  - Dense: bytes = elements * SizeOf(dtype).
//  - Compressed: the step still moves the same elements, each in `bits` bits, plus one
//    f32 scale per block of `compression_block_elements` elements:
//      bytes = ceil(elements * bits / 8) + ceil(elements / block) * 4.
//    Only floating tensors compress, and by default only hops that cross nodes (where
//    links are slow enough for the quantization cost to pay). A format that would not
//    shrink the dtype (fp8 of an f8 tensor) leaves the step dense.
//  - Sparse (only the used rows travel): not implemented; PlanBoxing returns
//    UNIMPLEMENTED naming the edge rather than pretending the dense bytes are sparse.
#ifndef SBP_BOXING_OPTIONS_H_
#define SBP_BOXING_OPTIONS_H_

#include <cstdint>

#include "absl/strings/string_view.h"
#include "oneflow_core/dtype.h"

namespace oneflow {

struct BoxingOptions {
  enum class Compression { kNone, kFp8E4M3, kFp8E5M2, kInt4, kInt8 };
  enum class Sparsity { kDense, kSparseRows };

  Compression compression = Compression::kNone;
  // Compress steps whose devices share a node too (default: only node-crossing hops).
  bool compress_intra_node = false;
  // Elements covered by one f32 scale of a compressed buffer; must be >= 1.
  int64_t compression_block_elements = 128;
  // `compression` only where it pays: a step compresses when the modelled link time it
  // saves exceeds the modelled time to encode and decode it, at `codec_bytes_per_second`
  // (dense f32 bytes a device encodes + decodes per second; an input like the link
  // bandwidths, never measured by the compiler, so the same inputs give the same plan).
  bool automatic = false;
  double codec_bytes_per_second = 1e9;
  // kSparseRows: only the rows that are used travel (embeddings, experts). Reserved.
  Sparsity sparsity = Sparsity::kDense;
};

// "none", "fp8e4m3", "fp8e5m2", "int4", "int8".
absl::string_view CompressionName(BoxingOptions::Compression compression);

// Bits per element on the wire: 8, 8, 4, 8 (0 for kNone, which means "the dtype's size").
int64_t CompressionBits(BoxingOptions::Compression compression);

// The bytes that carry `elements` elements of `dtype` on the wire.
struct WireBytes {
  int64_t bytes = 0;
  // True when the bytes were counted compressed (a non-kNone format that does shrink
  // the dtype, and elements > 0).
  bool compressed = false;
};

// Dense bytes, or compressed bytes as described at the top of this file when
// `compression` is not kNone and shrinks `dtype`. Preconditions (checked by PlanBoxing):
// elements >= 0, block_elements >= 1, and `dtype` floating when compression != kNone.
WireBytes CountWireBytes(int64_t elements, DType dtype, BoxingOptions::Compression compression,
                         int64_t block_elements);

}  // namespace oneflow

#endif  // SBP_BOXING_OPTIONS_H_
