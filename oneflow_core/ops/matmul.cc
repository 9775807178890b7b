// matmul: out = op(a) * op(b), op = transpose when transpose_a / transpose_b.
// Batched when rank > 2: leading (batch) dimensions must be equal.
//
// fused_matmul_bias: out = op(a) * op(b) + bias (bias [n] along the last axis), then
// max(0, .) when the attribute relu is true. The compiler's epilogue_fusion pass makes it
// from a matmul -> bias_add (-> relu) chain whose SBPs line up (compiler/passes/
// epilogue_fusion_pass.h), so that the sum and the activation are applied while the
// product's output is still in cache instead of in two more passes over memory.
#include "absl/strings/str_cat.h"
#include "oneflow_core/ops/definitions.h"
#include "oneflow_core/ops/op_util.h"
#include "oneflow_core/status.h"

namespace oneflow {
namespace {

absl::StatusOr<std::vector<TensorType>> InferMatMul(const std::vector<TensorType>& inputs,
                                                    const AttrMap& attrs) {
  const TensorType& a = inputs[0];
  const TensorType& b = inputs[1];
  OF_RETURN_IF_ERROR(op_util::ExpectRankAtLeast("a", a, 2));
  OF_RETURN_IF_ERROR(op_util::ExpectRank("b", b, a.shape.rank()));
  OF_RETURN_IF_ERROR(op_util::ExpectFloating("a", a));
  OF_RETURN_IF_ERROR(op_util::ExpectSameDType("a", a, "b", b));
  const int64_t rank = a.shape.rank();
  for (int64_t axis = 0; axis < rank - 2; ++axis) {
    if (a.shape.dim(axis) != b.shape.dim(axis)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "batch dimensions differ: a ", a.shape.ToString(), " vs b ", b.shape.ToString(),
          "; all but the last two dimensions must be equal"));
    }
  }
  const bool transpose_a = GetBoolAttr(attrs, "transpose_a", false);
  const bool transpose_b = GetBoolAttr(attrs, "transpose_b", false);
  const int64_t m = a.shape.dim(transpose_a ? rank - 1 : rank - 2);
  const int64_t k_a = a.shape.dim(transpose_a ? rank - 2 : rank - 1);
  const int64_t k_b = b.shape.dim(transpose_b ? rank - 1 : rank - 2);
  const int64_t n = b.shape.dim(transpose_b ? rank - 2 : rank - 1);
  if (k_a != k_b) {
    return absl::InvalidArgumentError(absl::StrCat(
        "inner dimensions differ: a ", a.shape.ToString(),
        " (transpose_a=", transpose_a ? "true" : "false",
        ") has k=", k_a, ", b ", b.shape.ToString(),
        " (transpose_b=", transpose_b ? "true" : "false",
        ") has k=", k_b, "; they must be equal"));
  }
  std::vector<int64_t> dims(a.shape.dims().begin(), a.shape.dims().end() - 2);
  dims.push_back(m);
  dims.push_back(n);
  return std::vector<TensorType>{{Shape(std::move(dims)), a.dtype}};
}

std::vector<SbpSignature> MatMulSignatures(const std::vector<TensorType>& inputs,
                                           const AttrMap& attrs) {
  const int64_t rank = inputs[0].shape.rank();
  const bool transpose_a = GetBoolAttr(attrs, "transpose_a", false);
  const bool transpose_b = GetBoolAttr(attrs, "transpose_b", false);
  // Physical axes of a's m and k, and b's k and n.
  const int64_t a_m = transpose_a ? rank - 1 : rank - 2;
  const int64_t a_k = transpose_a ? rank - 2 : rank - 1;
  const int64_t b_k = transpose_b ? rank - 1 : rank - 2;
  const int64_t b_n = transpose_b ? rank - 2 : rank - 1;
  const Sbp B = Sbp::Broadcast();
  const Sbp P = Sbp::Partial();
  std::vector<SbpSignature> signatures;
  for (int64_t axis = 0; axis < rank - 2; ++axis) {  // Batch parallel.
    signatures.push_back({{Sbp::Split(axis), Sbp::Split(axis)}, {Sbp::Split(axis)}});
  }
  signatures.push_back({{Sbp::Split(a_m), B}, {Sbp::Split(rank - 2)}});  // Rows of a.
  signatures.push_back({{B, Sbp::Split(b_n)}, {Sbp::Split(rank - 1)}});  // Columns of b.
  signatures.push_back({{Sbp::Split(a_k), Sbp::Split(b_k)}, {P}});       // Contraction.
  signatures.push_back({{P, B}, {P}});
  signatures.push_back({{B, P}, {P}});
  signatures.push_back({{B, B}, {B}});
  return signatures;
}

absl::StatusOr<std::vector<TensorType>> InferFusedMatMulBias(const std::vector<TensorType>& inputs,
                                                             const AttrMap& attrs) {
  OF_ASSIGN_OR_RETURN(std::vector<TensorType> out, InferMatMul({inputs[0], inputs[1]}, attrs));
  const TensorType& bias = inputs[2];
  OF_RETURN_IF_ERROR(op_util::ExpectRank("bias", bias, 1));
  OF_RETURN_IF_ERROR(op_util::ExpectSameDType("a", inputs[0], "bias", bias));
  const int64_t n = out[0].shape.dim(out[0].shape.rank() - 1);
  if (bias.shape.dim(0) != n) {
    return absl::InvalidArgumentError(absl::StrCat("bias ", bias.shape.ToString(),
                                                   " does not match the product's last dimension ",
                                                   out[0].shape.ToString(), "; expected [", n, "]"));
  }
  return out;
}

// Matmul's signatures, each with the bias laid out as bias_add needs it beside that
// output: whole (B) beside rows or batches, S(0) beside columns, partial beside a partial
// product (each device adds its part of the bias). max(0, .) does not commute with the
// sum of partial values, so with relu there is no partial signature.
std::vector<SbpSignature> FusedMatMulBiasSignatures(const std::vector<TensorType>& inputs,
                                                    const AttrMap& attrs) {
  const int64_t rank = inputs[0].shape.rank();
  const bool relu = GetBoolAttr(attrs, "relu", false);
  std::vector<SbpSignature> signatures;
  for (SbpSignature signature : MatMulSignatures(inputs, attrs)) {
    const Sbp& out = signature.outputs[0];
    if (out.is_partial()) {
      if (relu) continue;
      signature.inputs.push_back(Sbp::Partial());
    } else if (out.is_split() && out.axis() == rank - 1) {
      signature.inputs.push_back(Sbp::Split(0));
    } else {
      signature.inputs.push_back(Sbp::Broadcast());
    }
    signatures.push_back(std::move(signature));
  }
  return signatures;
}

}  // namespace

OpDefinition FusedMatMulBiasDefinition() {
  return {"fused_matmul_bias", {"a", "b", "bias"}, {"out"}, InferFusedMatMulBias, FusedMatMulBiasSignatures,
          "fused_matmul_bias"};
}

OpDefinition MatMulDefinition() {
  return {"matmul", {"a", "b"}, {"out"}, InferMatMul, MatMulSignatures, "matmul"};
}

}  // namespace oneflow
