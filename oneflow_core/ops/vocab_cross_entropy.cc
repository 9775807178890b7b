// Megatron's vocab-parallel cross-entropy, decomposed into ops whose SBP signatures let
// the logits stay split on the class (vocabulary) axis (docs/llama.md, "The loss"):
//
//   shift               = reduce_max(logits)                 S(last) -> P(max)
//   sum_exp, target     = vocab_cross_entropy(logits, labels, shift)
//                                                            S(last), B, B -> P, P
//   loss                = log(sum_exp) - target
//
// sum_exp = sum_j exp(logits_j - shift) and target = logits[label] - shift, each a sum
// over the class axis, so a device holding classes [begin, end) computes its part: the
// sum of its own exponentials, and its logit of the label when it owns the label (0
// otherwise). The compiler's boxing adds the parts (two all-reduces of one float per row)
// and the maxima (one P(max) all-reduce), which is what Megatron writes by hand; the
// [rows, vocab] logits are never gathered. The shift keeps exp from overflowing and
// cancels in the loss (log(sum_exp) - target does not depend on it), so its gradient is
// zero and vocab_cross_entropy's gradient treats it as a constant.
//
// reduce_max(x [..., c]) -> [...]: the maximum over the last axis.
// log(x): the natural logarithm, elementwise.
// vocab_cross_entropy(logits [..., c], labels [...] i32/i64, shift [...]) -> sum_exp [...],
//   target [...]: labels are LOGICAL class indices in [0, c); the kernel reads its slice's
//   offset on the class axis from the layout.
// vocab_cross_entropy_grad(logits, labels, shift, dsum_exp, dtarget) -> dlogits:
//   dsum_exp * exp(logits - shift) + dtarget * one_hot(labels), on any slice of the
//   class axis.
#include "absl/strings/str_cat.h"
#include "oneflow_core/ops/definitions.h"
#include "oneflow_core/ops/op_util.h"
#include "oneflow_core/status.h"

namespace oneflow {
namespace {

Shape WithoutLastAxis(const Shape& shape) {
  const std::vector<int64_t>& dims = shape.dims();
  return Shape(std::vector<int64_t>(dims.begin(), dims.end() - 1));
}

absl::StatusOr<std::vector<TensorType>> InferReduceMax(const std::vector<TensorType>& inputs,
                                                       const AttrMap&) {
  OF_RETURN_IF_ERROR(op_util::ExpectRankAtLeast("x", inputs[0], 1));
  OF_RETURN_IF_ERROR(op_util::ExpectFloating("x", inputs[0]));
  return std::vector<TensorType>{{WithoutLastAxis(inputs[0].shape), inputs[0].dtype}};
}

// Rows split stay split; a split of the reduced axis leaves each device the maximum of
// its part: P(max).
std::vector<SbpSignature> ReduceMaxSignatures(const std::vector<TensorType>& inputs,
                                              const AttrMap&) {
  const int64_t rank = inputs[0].shape.rank();
  std::vector<SbpSignature> signatures;
  for (int64_t axis = 0; axis < rank - 1; ++axis) {
    signatures.push_back({{Sbp::Split(axis)}, {Sbp::Split(axis)}});
  }
  signatures.push_back({{Sbp::Split(rank - 1)}, {Sbp::Partial(ReduceOp::kMax)}});
  signatures.push_back({{Sbp::Broadcast()}, {Sbp::Broadcast()}});
  return signatures;
}

absl::StatusOr<std::vector<TensorType>> InferLog(const std::vector<TensorType>& inputs,
                                                 const AttrMap&) {
  OF_RETURN_IF_ERROR(op_util::ExpectFloating("x", inputs[0]));
  return inputs;
}

// logits [..., c], labels [...] (the rows), then float tensors of the rows' shape (shift;
// the gradients of the two outputs), named as the op names them.
absl::Status CheckVocabArguments(const std::vector<TensorType>& inputs,
                                 const std::vector<std::string>& names) {
  const TensorType& logits = inputs[0];
  OF_RETURN_IF_ERROR(op_util::ExpectRankAtLeast("logits", logits, 1));
  OF_RETURN_IF_ERROR(op_util::ExpectFloating("logits", logits));
  OF_RETURN_IF_ERROR(op_util::ExpectIndices("labels", inputs[1]));
  const Shape rows = WithoutLastAxis(logits.shape);
  for (size_t k = 1; k < inputs.size(); ++k) {
    if (inputs[k].shape != rows) {
      return absl::InvalidArgumentError(absl::StrCat(
          names[k], " ", inputs[k].shape.ToString(), " must have the shape of logits ",
          logits.shape.ToString(), " without its last (class) axis: ", rows.ToString()));
    }
    if (k >= 2) OF_RETURN_IF_ERROR(op_util::ExpectSameDType("logits", logits, names[k], inputs[k]));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<TensorType>> InferVocabCrossEntropy(
    const std::vector<TensorType>& inputs, const AttrMap&) {
  OF_RETURN_IF_ERROR(CheckVocabArguments(inputs, {"logits", "labels", "shift"}));
  const TensorType rows{WithoutLastAxis(inputs[0].shape), inputs[0].dtype};
  return std::vector<TensorType>{rows, rows};
}

absl::StatusOr<std::vector<TensorType>> InferVocabCrossEntropyGrad(
    const std::vector<TensorType>& inputs, const AttrMap&) {
  OF_RETURN_IF_ERROR(
      CheckVocabArguments(inputs, {"logits", "labels", "shift", "dsum_exp", "dtarget"}));
  return std::vector<TensorType>{inputs[0]};
}

// Every input split on the same row axis (the class axis: S(rank-1) of logits, nothing
// else has it) or all whole; plus the vocab-parallel one: logits split on the class axis,
// the row tensors whole, the forward's outputs partial sums, the gradient split as the
// logits are.
std::vector<SbpSignature> VocabSignatures(const std::vector<TensorType>& inputs, bool gradient) {
  const int64_t rank = inputs[0].shape.rank();
  const size_t num_inputs = inputs.size();
  const size_t num_outputs = gradient ? 1 : 2;
  std::vector<SbpSignature> signatures;
  for (int64_t axis = 0; axis < rank - 1; ++axis) {
    signatures.push_back({std::vector<Sbp>(num_inputs, Sbp::Split(axis)),
                          std::vector<Sbp>(num_outputs, Sbp::Split(axis))});
  }
  std::vector<Sbp> vocab_inputs(num_inputs, Sbp::Broadcast());
  vocab_inputs[0] = Sbp::Split(rank - 1);
  signatures.push_back({vocab_inputs, gradient ? std::vector<Sbp>{Sbp::Split(rank - 1)}
                                               : std::vector<Sbp>(2, Sbp::Partial())});
  signatures.push_back({std::vector<Sbp>(num_inputs, Sbp::Broadcast()),
                        std::vector<Sbp>(num_outputs, Sbp::Broadcast())});
  return signatures;
}

}  // namespace

OpDefinition ReduceMaxDefinition() {
  return {"reduce_max", {"x"}, {"out"}, InferReduceMax, ReduceMaxSignatures, "reduce_max"};
}

OpDefinition LogDefinition() {
  return {"log", {"x"}, {"out"}, InferLog,
          [](const std::vector<TensorType>& inputs, const AttrMap&) {
            return op_util::UnarySignatures(inputs[0].shape.rank(), /*linear=*/false);
          },
          "log"};
}

OpDefinition VocabCrossEntropyDefinition() {
  return {"vocab_cross_entropy",
          {"logits", "labels", "shift"},
          {"sum_exp", "target"},
          InferVocabCrossEntropy,
          [](const std::vector<TensorType>& inputs, const AttrMap&) {
            return VocabSignatures(inputs, /*gradient=*/false);
          },
          "vocab_cross_entropy"};
}

OpDefinition VocabCrossEntropyGradDefinition() {
  return {"vocab_cross_entropy_grad",
          {"logits", "labels", "shift", "dsum_exp", "dtarget"},
          {"dlogits"},
          InferVocabCrossEntropyGrad,
          [](const std::vector<TensorType>& inputs, const AttrMap&) {
            return VocabSignatures(inputs, /*gradient=*/true);
          },
          "vocab_cross_entropy_grad"};
}

}  // namespace oneflow
