// Mixture-of-experts ops (docs/moe.md). Shapes: B samples, T tokens per sample, H hidden,
// E experts, K = top_k choices per token, C = capacity (token slots per expert per
// sample), F = the experts' inner size.
//
//   moe_route(probs [B,T,E]; top_k, capacity) -> index i32[B,T,K], slot i32[B,T,K],
//                                                dropped [B]
//   moe_dispatch(x [B,T,H], index, slot; experts, capacity) -> buf [B,E,C,H]
//   expert_matmul(buf [B,E,C,H], w [E,H,F]; parallel) -> [B,E,C,F]
//   moe_combine(ybuf [B,E,C,H], probs [B,T,E], index, slot) -> y [B,T,H]
//   moe_aux_loss(probs [B,T,E]) -> [B]
// and their backward ops. One sample is one routing group: every op works sample by
// sample, so splitting B (S(0), data parallel) never changes a result. A dropped choice
// has index = slot = -1.
#include <string>
#include <variant>

#include "absl/strings/str_cat.h"
#include "oneflow_core/ops/definitions.h"
#include "oneflow_core/ops/op_util.h"
#include "oneflow_core/status.h"

namespace oneflow {
namespace {

using Types = absl::StatusOr<std::vector<TensorType>>;

const Sbp B = Sbp::Broadcast();
const Sbp P = Sbp::Partial();
Sbp S(int64_t axis) { return Sbp::Split(axis); }

absl::Status PositiveAttr(const AttrMap& attrs, const std::string& name, const char* what) {
  const int64_t value = GetIntAttr(attrs, name, 0);
  if (value > 0) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat("attribute ", name, "=", value, " must be > 0 (", what, ")"));
}

// index and slot [B, T, K]: i32/i64, the same shape, and the batch and token axes of
// `like` (x, probs or dy, named `like_name`).
absl::Status CheckRouting(const TensorType& index, const TensorType& slot,
                          const std::string& like_name, const TensorType& like) {
  OF_RETURN_IF_ERROR(op_util::ExpectIndices("index", index));
  OF_RETURN_IF_ERROR(op_util::ExpectIndices("slot", slot));
  OF_RETURN_IF_ERROR(op_util::ExpectRank("index", index, 3));
  if (slot.shape != index.shape) {
    return absl::InvalidArgumentError(absl::StrCat("index ", index.shape.ToString(), " and slot ",
                                                   slot.shape.ToString(),
                                                   " must have the same shape [batch, tokens, "
                                                   "top_k]"));
  }
  if (index.shape.dim(0) != like.shape.dim(0) || index.shape.dim(1) != like.shape.dim(1)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "index ", index.shape.ToString(), " must be [", like.shape.dim(0), ", ",
        like.shape.dim(1), ", top_k]: the batch and token axes of ", like_name, " ",
        like.shape.ToString()));
  }
  return absl::OkStatus();
}

absl::Status ExpectAxis(const std::string& a_name, const TensorType& a, int64_t a_axis,
                        const std::string& b_name, const TensorType& b, int64_t b_axis,
                        const char* what) {
  if (a.shape.dim(a_axis) == b.shape.dim(b_axis)) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(
      a_name, " ", a.shape.ToString(), " has ", a.shape.dim(a_axis), " ", what, " (axis ",
      a_axis, ") but ", b_name, " ", b.shape.ToString(), " has ", b.shape.dim(b_axis),
      " (axis ", b_axis, "); they must be equal"));
}

// ---- moe_route ----

Types InferRoute(const std::vector<TensorType>& inputs, const AttrMap& attrs) {
  const TensorType& probs = inputs[0];
  OF_RETURN_IF_ERROR(op_util::ExpectRank("probs", probs, 3));
  OF_RETURN_IF_ERROR(op_util::ExpectFloating("probs", probs));
  const int64_t experts = probs.shape.dim(2);
  const int64_t top_k = GetIntAttr(attrs, "top_k", 0);
  if (top_k < 1 || top_k > experts) {
    return absl::InvalidArgumentError(absl::StrCat(
        "attribute top_k=", top_k, top_k < 1 ? " < 1" : absl::StrCat(" > experts=", experts),
        " (the last axis of probs ", probs.ToString(), "); valid: 1..", experts));
  }
  OF_RETURN_IF_ERROR(PositiveAttr(attrs, "capacity", "token slots per expert per sample"));
  const Shape choices{probs.shape.dim(0), probs.shape.dim(1), top_k};
  return std::vector<TensorType>{
      {choices, DType::kI32}, {choices, DType::kI32}, {Shape{probs.shape.dim(0)}, probs.dtype}};
}

std::vector<SbpSignature> RouteSignatures(const std::vector<TensorType>&, const AttrMap&) {
  // Capacity counts run over a whole sample: only the batch axis splits.
  return {{{S(0)}, {S(0), S(0), S(0)}}, {{B}, {B, B, B}}};
}

// ---- moe_dispatch and its gradient ----

Types InferDispatch(const std::vector<TensorType>& inputs, const AttrMap& attrs) {
  const TensorType& x = inputs[0];
  OF_RETURN_IF_ERROR(op_util::ExpectRank("x", x, 3));
  OF_RETURN_IF_ERROR(op_util::ExpectFloating("x", x));
  OF_RETURN_IF_ERROR(CheckRouting(inputs[1], inputs[2], "x", x));
  OF_RETURN_IF_ERROR(PositiveAttr(attrs, "experts", "the number of experts"));
  OF_RETURN_IF_ERROR(PositiveAttr(attrs, "capacity", "token slots per expert per sample"));
  return std::vector<TensorType>{{Shape{x.shape.dim(0), GetIntAttr(attrs, "experts", 0),
                                        GetIntAttr(attrs, "capacity", 0), x.shape.dim(2)},
                                  x.dtype}};
}

std::vector<SbpSignature> DispatchSignatures(const std::vector<TensorType>&, const AttrMap&) {
  return {
      {{S(0), S(0), S(0)}, {S(0)}},  // Data parallel: whole samples per device.
      {{S(2), B, B}, {S(3)}},        // Hidden-parallel: a copy moves columns independently.
      {{P, B, B}, {P}},              // Linear in x.
      {{B, B, B}, {B}},
  };
}

Types InferDispatchGrad(const std::vector<TensorType>& inputs, const AttrMap&) {
  const TensorType& dbuf = inputs[0];
  OF_RETURN_IF_ERROR(op_util::ExpectRank("dbuf", dbuf, 4));
  OF_RETURN_IF_ERROR(op_util::ExpectFloating("dbuf", dbuf));
  OF_RETURN_IF_ERROR(op_util::ExpectIndices("index", inputs[1]));
  OF_RETURN_IF_ERROR(op_util::ExpectRank("index", inputs[1], 3));
  OF_RETURN_IF_ERROR(
      ExpectAxis("index", inputs[1], 0, "dbuf", dbuf, 0, "samples"));
  OF_RETURN_IF_ERROR(CheckRouting(inputs[1], inputs[2], "index", inputs[1]));
  return std::vector<TensorType>{
      {Shape{dbuf.shape.dim(0), inputs[1].shape.dim(1), dbuf.shape.dim(3)}, dbuf.dtype}};
}

std::vector<SbpSignature> DispatchGradSignatures(const std::vector<TensorType>&,
                                                 const AttrMap&) {
  return {
      {{S(0), S(0), S(0)}, {S(0)}},
      {{S(3), B, B}, {S(2)}},
      {{P, B, B}, {P}},
      {{B, B, B}, {B}},
  };
}

// ---- expert_matmul and its gradients ----

// "data" (experts replicated, samples split) or "expert" (experts split over devices).
absl::StatusOr<std::string> Parallelism(const AttrMap& attrs) {
  auto it = attrs.find("parallel");
  if (it == attrs.end()) return std::string("data");
  const std::string* value = std::get_if<std::string>(&it->second);
  if (value != nullptr && (*value == "data" || *value == "expert")) return *value;
  return absl::InvalidArgumentError(absl::StrCat("attribute parallel=", AttrToString(it->second),
                                                 " is unknown; valid: \"data\", \"expert\""));
}

bool ExpertParallel(const AttrMap& attrs) {
  absl::StatusOr<std::string> parallel = Parallelism(attrs);
  return parallel.ok() && *parallel == "expert";
}

Types InferExpertMatMul(const std::vector<TensorType>& inputs, const AttrMap& attrs) {
  const TensorType& buf = inputs[0];
  const TensorType& w = inputs[1];
  OF_RETURN_IF_ERROR(op_util::ExpectRank("buf", buf, 4));
  OF_RETURN_IF_ERROR(op_util::ExpectFloating("buf", buf));
  OF_RETURN_IF_ERROR(op_util::ExpectRank("w", w, 3));
  OF_RETURN_IF_ERROR(op_util::ExpectSameDType("buf", buf, "w", w));
  OF_RETURN_IF_ERROR(ExpectAxis("buf", buf, 1, "w", w, 0, "experts"));
  OF_RETURN_IF_ERROR(ExpectAxis("buf", buf, 3, "w", w, 1, "hidden"));
  OF_RETURN_IF_ERROR(Parallelism(attrs).status());
  return std::vector<TensorType>{
      {Shape{buf.shape.dim(0), buf.shape.dim(1), buf.shape.dim(2), w.shape.dim(2)}, buf.dtype}};
}

// The attribute picks the family so a model forces data-parallel experts (every device
// holds every expert's weights, samples split) or expert parallelism (each device holds
// some experts and all samples' slots for them).
std::vector<SbpSignature> ExpertMatMulSignatures(const std::vector<TensorType>&,
                                                 const AttrMap& attrs) {
  if (ExpertParallel(attrs)) return {{{S(1), S(0)}, {S(1)}}, {{B, B}, {B}}};
  return {{{S(0), B}, {S(0)}}, {{B, B}, {B}}};
}

Types InferExpertMatMulGradData(const std::vector<TensorType>& inputs, const AttrMap& attrs) {
  const TensorType& dout = inputs[0];
  const TensorType& w = inputs[1];
  OF_RETURN_IF_ERROR(op_util::ExpectRank("dout", dout, 4));
  OF_RETURN_IF_ERROR(op_util::ExpectFloating("dout", dout));
  OF_RETURN_IF_ERROR(op_util::ExpectRank("w", w, 3));
  OF_RETURN_IF_ERROR(op_util::ExpectSameDType("dout", dout, "w", w));
  OF_RETURN_IF_ERROR(ExpectAxis("dout", dout, 1, "w", w, 0, "experts"));
  OF_RETURN_IF_ERROR(ExpectAxis("dout", dout, 3, "w", w, 2, "outputs"));
  OF_RETURN_IF_ERROR(Parallelism(attrs).status());
  return std::vector<TensorType>{
      {Shape{dout.shape.dim(0), dout.shape.dim(1), dout.shape.dim(2), w.shape.dim(1)},
       dout.dtype}};
}

std::vector<SbpSignature> ExpertMatMulGradDataSignatures(const std::vector<TensorType>&,
                                                         const AttrMap& attrs) {
  if (ExpertParallel(attrs)) return {{{S(1), S(0)}, {S(1)}}, {{B, B}, {B}}};
  return {{{S(0), B}, {S(0)}}, {{B, B}, {B}}};
}

Types InferExpertMatMulGradWeight(const std::vector<TensorType>& inputs, const AttrMap& attrs) {
  const TensorType& buf = inputs[0];
  const TensorType& dout = inputs[1];
  OF_RETURN_IF_ERROR(op_util::ExpectRank("buf", buf, 4));
  OF_RETURN_IF_ERROR(op_util::ExpectFloating("buf", buf));
  OF_RETURN_IF_ERROR(op_util::ExpectRank("dout", dout, 4));
  OF_RETURN_IF_ERROR(op_util::ExpectSameDType("buf", buf, "dout", dout));
  for (int64_t axis = 0; axis < 3; ++axis) {
    if (buf.shape.dim(axis) != dout.shape.dim(axis)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "buf ", buf.shape.ToString(), " and dout ", dout.shape.ToString(),
          " must agree on [samples, experts, capacity]; they differ at axis ", axis));
    }
  }
  OF_RETURN_IF_ERROR(Parallelism(attrs).status());
  return std::vector<TensorType>{
      {Shape{buf.shape.dim(1), buf.shape.dim(3), dout.shape.dim(3)}, buf.dtype}};
}

std::vector<SbpSignature> ExpertMatMulGradWeightSignatures(const std::vector<TensorType>&,
                                                           const AttrMap& attrs) {
  // Data parallel: each device sums its samples, a partial sum of dw.
  if (ExpertParallel(attrs)) return {{{S(1), S(1)}, {S(0)}}, {{B, B}, {B}}};
  return {{{S(0), S(0)}, {P}}, {{B, B}, {B}}};
}

// ---- moe_combine and its gradients ----

Types InferCombine(const std::vector<TensorType>& inputs, const AttrMap&) {
  const TensorType& ybuf = inputs[0];
  const TensorType& probs = inputs[1];
  OF_RETURN_IF_ERROR(op_util::ExpectRank("ybuf", ybuf, 4));
  OF_RETURN_IF_ERROR(op_util::ExpectFloating("ybuf", ybuf));
  OF_RETURN_IF_ERROR(op_util::ExpectRank("probs", probs, 3));
  OF_RETURN_IF_ERROR(op_util::ExpectSameDType("ybuf", ybuf, "probs", probs));
  OF_RETURN_IF_ERROR(ExpectAxis("ybuf", ybuf, 0, "probs", probs, 0, "samples"));
  OF_RETURN_IF_ERROR(ExpectAxis("ybuf", ybuf, 1, "probs", probs, 2, "experts"));
  OF_RETURN_IF_ERROR(CheckRouting(inputs[2], inputs[3], "probs", probs));
  return std::vector<TensorType>{
      {Shape{probs.shape.dim(0), probs.shape.dim(1), ybuf.shape.dim(3)}, ybuf.dtype}};
}

std::vector<SbpSignature> CombineSignatures(const std::vector<TensorType>&, const AttrMap&) {
  return {
      {{S(0), S(0), S(0), S(0)}, {S(0)}},
      {{S(3), B, B, B}, {S(2)}},  // Hidden-parallel expert outputs.
      {{P, B, B, B}, {P}},        // Linear in ybuf.
      {{B, P, B, B}, {P}},        // Linear in probs.
      {{B, B, B, B}, {B}},
  };
}

Types InferCombineGradBuf(const std::vector<TensorType>& inputs, const AttrMap& attrs) {
  const TensorType& dy = inputs[0];
  const TensorType& probs = inputs[1];
  OF_RETURN_IF_ERROR(op_util::ExpectRank("dy", dy, 3));
  OF_RETURN_IF_ERROR(op_util::ExpectFloating("dy", dy));
  OF_RETURN_IF_ERROR(op_util::ExpectRank("probs", probs, 3));
  OF_RETURN_IF_ERROR(op_util::ExpectSameDType("dy", dy, "probs", probs));
  OF_RETURN_IF_ERROR(ExpectAxis("dy", dy, 0, "probs", probs, 0, "samples"));
  OF_RETURN_IF_ERROR(ExpectAxis("dy", dy, 1, "probs", probs, 1, "tokens"));
  OF_RETURN_IF_ERROR(CheckRouting(inputs[2], inputs[3], "probs", probs));
  OF_RETURN_IF_ERROR(PositiveAttr(attrs, "capacity", "token slots per expert per sample"));
  return std::vector<TensorType>{{Shape{dy.shape.dim(0), probs.shape.dim(2),
                                        GetIntAttr(attrs, "capacity", 0), dy.shape.dim(2)},
                                  dy.dtype}};
}

std::vector<SbpSignature> CombineGradBufSignatures(const std::vector<TensorType>&,
                                                   const AttrMap&) {
  return {
      {{S(0), S(0), S(0), S(0)}, {S(0)}},
      {{S(2), B, B, B}, {S(3)}},
      {{P, B, B, B}, {P}},
      {{B, P, B, B}, {P}},
      {{B, B, B, B}, {B}},
  };
}

Types InferCombineGradProbs(const std::vector<TensorType>& inputs, const AttrMap&) {
  const TensorType& dy = inputs[0];
  const TensorType& ybuf = inputs[1];
  OF_RETURN_IF_ERROR(op_util::ExpectRank("dy", dy, 3));
  OF_RETURN_IF_ERROR(op_util::ExpectFloating("dy", dy));
  OF_RETURN_IF_ERROR(op_util::ExpectRank("ybuf", ybuf, 4));
  OF_RETURN_IF_ERROR(op_util::ExpectSameDType("dy", dy, "ybuf", ybuf));
  OF_RETURN_IF_ERROR(ExpectAxis("dy", dy, 0, "ybuf", ybuf, 0, "samples"));
  OF_RETURN_IF_ERROR(ExpectAxis("dy", dy, 2, "ybuf", ybuf, 3, "hidden"));
  OF_RETURN_IF_ERROR(CheckRouting(inputs[2], inputs[3], "dy", dy));
  return std::vector<TensorType>{
      {Shape{dy.shape.dim(0), dy.shape.dim(1), ybuf.shape.dim(1)}, dy.dtype}};
}

std::vector<SbpSignature> CombineGradProbsSignatures(const std::vector<TensorType>&,
                                                     const AttrMap&) {
  return {
      {{S(0), S(0), S(0), S(0)}, {S(0)}},
      {{S(2), S(3), B, B}, {P}},  // Dot products over a split hidden axis: partial sums.
      {{P, B, B, B}, {P}},
      {{B, P, B, B}, {P}},
      {{B, B, B, B}, {B}},
  };
}

// ---- moe_aux_loss and its gradient ----

Types InferAuxLoss(const std::vector<TensorType>& inputs, const AttrMap&) {
  const TensorType& probs = inputs[0];
  OF_RETURN_IF_ERROR(op_util::ExpectRank("probs", probs, 3));
  OF_RETURN_IF_ERROR(op_util::ExpectFloating("probs", probs));
  return std::vector<TensorType>{{Shape{probs.shape.dim(0)}, probs.dtype}};
}

std::vector<SbpSignature> AuxLossSignatures(const std::vector<TensorType>&, const AttrMap&) {
  return {{{S(0)}, {S(0)}}, {{B}, {B}}};
}

Types InferAuxLossGrad(const std::vector<TensorType>& inputs, const AttrMap&) {
  const TensorType& dy = inputs[0];
  const TensorType& probs = inputs[1];
  OF_RETURN_IF_ERROR(op_util::ExpectRank("dy", dy, 1));
  OF_RETURN_IF_ERROR(op_util::ExpectFloating("dy", dy));
  OF_RETURN_IF_ERROR(op_util::ExpectRank("probs", probs, 3));
  OF_RETURN_IF_ERROR(op_util::ExpectSameDType("dy", dy, "probs", probs));
  OF_RETURN_IF_ERROR(ExpectAxis("dy", dy, 0, "probs", probs, 0, "samples"));
  return std::vector<TensorType>{probs};
}

std::vector<SbpSignature> AuxLossGradSignatures(const std::vector<TensorType>&,
                                                const AttrMap&) {
  return {{{S(0), S(0)}, {S(0)}}, {{P, B}, {P}}, {{B, B}, {B}}};
}

}  // namespace

OpDefinition MoeRouteDefinition() {
  return {"moe_route", {"probs"}, {"index", "slot", "dropped"}, InferRoute, RouteSignatures,
          "moe_route"};
}

OpDefinition MoeDispatchDefinition() {
  return {"moe_dispatch", {"x", "index", "slot"}, {"buf"}, InferDispatch, DispatchSignatures,
          "moe_dispatch"};
}

OpDefinition ExpertMatMulDefinition() {
  return {"expert_matmul", {"buf", "w"}, {"out"}, InferExpertMatMul, ExpertMatMulSignatures,
          "expert_matmul"};
}

OpDefinition MoeCombineDefinition() {
  return {"moe_combine", {"ybuf", "probs", "index", "slot"}, {"y"}, InferCombine,
          CombineSignatures, "moe_combine"};
}

OpDefinition MoeAuxLossDefinition() {
  return {"moe_aux_loss", {"probs"}, {"loss"}, InferAuxLoss, AuxLossSignatures, "moe_aux_loss"};
}

OpDefinition MoeDispatchGradDefinition() {
  return {"moe_dispatch_grad", {"dbuf", "index", "slot"}, {"dx"}, InferDispatchGrad,
          DispatchGradSignatures, "moe_dispatch_grad"};
}

OpDefinition ExpertMatMulGradDataDefinition() {
  return {"expert_matmul_grad_data", {"dout", "w"}, {"dbuf"}, InferExpertMatMulGradData,
          ExpertMatMulGradDataSignatures, "expert_matmul_grad_data"};
}

OpDefinition ExpertMatMulGradWeightDefinition() {
  return {"expert_matmul_grad_weight", {"buf", "dout"}, {"dw"}, InferExpertMatMulGradWeight,
          ExpertMatMulGradWeightSignatures, "expert_matmul_grad_weight"};
}

OpDefinition MoeCombineGradBufDefinition() {
  return {"moe_combine_grad_buf", {"dy", "probs", "index", "slot"}, {"dybuf"},
          InferCombineGradBuf, CombineGradBufSignatures, "moe_combine_grad_buf"};
}

OpDefinition MoeCombineGradProbsDefinition() {
  return {"moe_combine_grad_probs", {"dy", "ybuf", "index", "slot"}, {"dprobs"},
          InferCombineGradProbs, CombineGradProbsSignatures, "moe_combine_grad_probs"};
}

OpDefinition MoeAuxLossGradDefinition() {
  return {"moe_aux_loss_grad", {"dy", "probs"}, {"dprobs"}, InferAuxLossGrad,
          AuxLossGradSignatures, "moe_aux_loss_grad"};
}

}  // namespace oneflow
