// rotary_embedding(x [..., s, d]; base, inverse): rotary position embeddings (RoPE, Su et
// al. 2021, as Llama applies them to queries and keys). Position p is the LOGICAL index of
// x's second-to-last axis, so a device holding positions [a, b) of a sequence split rotates
// them by their own angles and any layout gives the same result. Pairs are the two halves
// of the last axis (the rotate-half convention of Hugging Face's Llama): for i < d/2 with
// theta_i = p * base^(-2i/d),
//   out[i]       = x[i] cos(theta_i) - x[i + d/2] sin(theta_i)
//   out[i + d/2] = x[i + d/2] cos(theta_i) + x[i] sin(theta_i)
// inverse = true rotates by -theta: the transpose of the rotation, hence the op's gradient.
// zigzag_blocks = n > 0: the positions axis holds the sequence in the zig-zag order of n
// blocks (oneflow_core/ops/ring_blocks.h, ring attention's load-balanced split), so
// index i is position SequencePosition(i, length, n, true); 0: index i is position i.
#include "absl/strings/str_cat.h"
#include "oneflow_core/ops/definitions.h"
#include "oneflow_core/ops/op_util.h"
#include "oneflow_core/status.h"

namespace oneflow {
namespace {

absl::StatusOr<std::vector<TensorType>> InferRotaryEmbedding(
    const std::vector<TensorType>& inputs, const AttrMap& attrs) {
  const TensorType& x = inputs[0];
  OF_RETURN_IF_ERROR(op_util::ExpectRankAtLeast("x", x, 2));
  OF_RETURN_IF_ERROR(op_util::ExpectFloating("x", x));
  const int64_t d = x.shape.dim(x.shape.rank() - 1);
  if (d % 2 != 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "x ", x.shape.ToString(), " must be [..., positions, dims] with an even last dimension "
        "(rotated in pairs), got ", d));
  }
  const double base = GetFloatAttr(attrs, "base", 10000.0);
  if (!(base > 1)) {
    return absl::InvalidArgumentError(absl::StrCat("attribute base=", base, " must be > 1"));
  }
  const int64_t zigzag_blocks = GetIntAttr(attrs, "zigzag_blocks", 0);
  const int64_t positions = x.shape.dim(x.shape.rank() - 2);
  if (zigzag_blocks < 0 || (zigzag_blocks > 0 && positions % (2 * zigzag_blocks) != 0)) {
    return absl::InvalidArgumentError(absl::StrCat("attribute zigzag_blocks=", zigzag_blocks, " must be 0 or split the ",
                                                   positions, " positions of x ", x.shape.ToString(),
                                                   " into 2 x zigzag_blocks equal chunks"));
  }
  return inputs;
}

// A rotation of each row of the last axis: linear (P -> P), the last axis whole (its
// halves are paired), every other axis may be split, the position axis included (the
// kernel reads its logical offset).
std::vector<SbpSignature> RotaryEmbeddingSignatures(const std::vector<TensorType>& inputs,
                                                    const AttrMap&) {
  const int64_t rank = inputs[0].shape.rank();
  return op_util::UnarySignatures(rank, /*linear=*/true, {rank - 1});
}

}  // namespace

OpDefinition RotaryEmbeddingDefinition() {
  return {"rotary_embedding", {"x"}, {"out"}, InferRotaryEmbedding, RotaryEmbeddingSignatures,
          "rotary_embedding"};
}

}  // namespace oneflow
