#include "compiler/passes/sbp_candidates.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "oneflow_core/dtype.h"
#include "oneflow_core/ops/attr.h"
#include "oneflow_core/status.h"

namespace oneflow {
namespace {

// Attributes of an op as the definition functions take them.
absl::StatusOr<AttrMap> AttrsOf(const proto::OpDef& def) {
  AttrMap attrs;
  for (const auto& [key, value] : def.attrs()) {
    OF_ASSIGN_OR_RETURN(attrs[key], AttrFromProto(value));
  }
  return attrs;
}

// A signature valid only for some device counts (devices_must_divide) must hold for the
// devices of all hierarchy axes that use it together.
bool FitsHierarchy(const SbpCandidate& candidate, const std::vector<SbpSignature>& signatures,
                   const Shape& hierarchy) {
  if (candidate.judged_locally) return true;
  for (size_t a = 0; a < candidate.picks.size(); ++a) {
    const SbpSignature& signature = signatures[candidate.picks[a]];
    if (signature.devices_must_divide == 0) continue;
    int64_t devices = 1;
    for (size_t b = 0; b < candidate.picks.size(); ++b) {
      if (candidate.picks[b] == candidate.picks[a]) devices *= hierarchy.dim(static_cast<int64_t>(b));
    }
    if (!signature.ValidFor(devices)) return false;
  }
  return true;
}

// Every combination of 1-D signatures over `axes` hierarchy axes, axis 0 outermost.
std::vector<SbpCandidate> Combine(const std::vector<SbpSignature>& signatures, int64_t axes) {
  std::vector<SbpCandidate> candidates;
  std::vector<size_t> pick(axes, 0);
  while (true) {
    SbpCandidate candidate;
    candidate.picks = pick;
    const SbpSignature& first = signatures[0];
    candidate.inputs.assign(first.inputs.size(), NdSbp());
    candidate.outputs.assign(first.outputs.size(), NdSbp());
    for (size_t k = 0; k < first.inputs.size(); ++k) {
      std::vector<Sbp> per_axis;
      for (int64_t a = 0; a < axes; ++a) per_axis.push_back(signatures[pick[a]].inputs[k]);
      candidate.inputs[k] = NdSbp(std::move(per_axis));
    }
    for (size_t k = 0; k < first.outputs.size(); ++k) {
      std::vector<Sbp> per_axis;
      for (int64_t a = 0; a < axes; ++a) per_axis.push_back(signatures[pick[a]].outputs[k]);
      candidate.outputs[k] = NdSbp(std::move(per_axis));
    }
    candidates.push_back(std::move(candidate));
    int64_t a = axes - 1;
    while (a >= 0 && ++pick[a] == signatures.size()) pick[a--] = 0;
    if (a < 0) break;
  }
  return candidates;
}

// `types` as one device of `devices` holds them along one hierarchy axis under `sbps`
// (one per type), or nothing when a split axis does not divide evenly: the slices of
// an uneven split differ between devices, and a signature judged on one would not hold
// for the others.
std::optional<std::vector<TensorType>> SplitTypes(std::vector<TensorType> types, const std::vector<Sbp>& sbps,
                                                  int64_t devices) {
  for (size_t k = 0; k < types.size(); ++k) {
    if (!sbps[k].is_split()) continue;
    std::vector<int64_t> dims = types[k].shape.dims();
    const int64_t axis = sbps[k].axis();
    if (axis >= static_cast<int64_t>(dims.size()) || dims[axis] % devices != 0) return std::nullopt;
    dims[axis] /= devices;
    types[k].shape = Shape(std::move(dims));
  }
  return types;
}

// The candidates of an op whose signatures depend on the shapes
// (OpDefinition::attrs_for_local_shapes): hierarchy axis 0's signatures judged on the
// logical types, each inner axis's on the slice the outer axes' choices leave. A flatten
// of [dp, s, b, h] (S(0), S(1)) into rows is (S(0), S(0)) this way, which the whole
// tensor's signatures cannot say (their S(1) lands on no axis of the rows).
struct LocalPartial {
  std::vector<std::vector<Sbp>> inputs;   // Per input, the SBPs of the axes chosen so far.
  std::vector<std::vector<Sbp>> outputs;
};

void LocalCandidates(const OpDefinition& definition, const AttrMap& attrs, const Shape& hierarchy,
                     const std::vector<TensorType>& inputs, const std::vector<TensorType>& outputs, int64_t axis,
                     LocalPartial* partial, std::vector<SbpCandidate>* candidates) {
  if (axis == hierarchy.rank()) {
    SbpCandidate candidate;
    candidate.judged_locally = true;
    for (const std::vector<Sbp>& sbps : partial->inputs) candidate.inputs.push_back(NdSbp(sbps));
    for (const std::vector<Sbp>& sbps : partial->outputs) candidate.outputs.push_back(NdSbp(sbps));
    candidates->push_back(std::move(candidate));
    return;
  }
  const AttrMap local_attrs = axis == 0 ? attrs : definition.attrs_for_local_shapes(attrs, outputs);
  const int64_t devices = hierarchy.dim(axis);
  for (const SbpSignature& signature : definition.signatures(inputs, local_attrs)) {
    if (!signature.ValidFor(devices)) continue;
    const std::optional<std::vector<TensorType>> local_inputs = SplitTypes(inputs, signature.inputs, devices);
    const std::optional<std::vector<TensorType>> local_outputs = SplitTypes(outputs, signature.outputs, devices);
    if (!local_inputs || !local_outputs) continue;
    for (size_t k = 0; k < inputs.size(); ++k) partial->inputs[k].push_back(signature.inputs[k]);
    for (size_t k = 0; k < outputs.size(); ++k) partial->outputs[k].push_back(signature.outputs[k]);
    LocalCandidates(definition, attrs, hierarchy, *local_inputs, *local_outputs, axis + 1, partial, candidates);
    for (size_t k = 0; k < inputs.size(); ++k) partial->inputs[k].pop_back();
    for (size_t k = 0; k < outputs.size(); ++k) partial->outputs[k].pop_back();
  }
}

// `sbp` with every partial axis replaced by B: the layout a reduction makes.
NdSbp Reduced(const NdSbp& sbp) {
  std::vector<Sbp> axes = sbp.sbps();
  for (Sbp& axis : axes) {
    if (axis.is_partial()) axis = Sbp::Broadcast();
  }
  return NdSbp(std::move(axes));
}

bool HasPartialAxis(const NdSbp& sbp) {
  for (const Sbp& axis : sbp.sbps()) {
    if (axis.is_partial()) return true;
  }
  return false;
}

// Elements of one device's slice of a tensor of `logical_elements` under `sbp`.
double LocalElements(double logical_elements, const NdSbp& sbp, const Shape& hierarchy) {
  for (int64_t a = 0; a < sbp.size(); ++a) {
    if (sbp.at(a).is_split()) logical_elements /= static_cast<double>(hierarchy.dim(a));
  }
  return logical_elements;
}

}  // namespace

InputPriceMemo::Key InputPriceMemo::KeyOf(int64_t t, const NdSbp& from, int64_t from_placement, const NdSbp& to,
                                          int64_t to_placement, int64_t scale) {
  Key key = {t, from_placement, to_placement, scale, from.size()};
  for (const NdSbp* sbp : {&from, &to}) {
    for (const Sbp& axis : sbp->sbps()) {
      key.push_back(static_cast<int64_t>(axis.kind()) * 1024 + (axis.is_split() ? axis.axis() : 0) * 8 +
                    (axis.is_partial() ? static_cast<int64_t>(axis.reduce_op()) : 0));
    }
  }
  return key;
}

std::optional<InputPriceMemo::Price> InputPriceMemo::Find(int64_t t, const NdSbp& from, int64_t from_placement,
                                                          const NdSbp& to, int64_t to_placement,
                                                          int64_t scale) const {
  auto found = prices_.find(KeyOf(t, from, from_placement, to, to_placement, scale));
  if (found == prices_.end()) return std::nullopt;
  return found->second;
}

void InputPriceMemo::Insert(int64_t t, const NdSbp& from, int64_t from_placement, const NdSbp& to,
                            int64_t to_placement, int64_t scale, Price price) {
  prices_.insert_or_assign(KeyOf(t, from, from_placement, to, to_placement, scale), price);
}

absl::StatusOr<OpSbpCandidates> SbpCandidatesOf(const LogicalGraph& graph, const LogicalOp& op) {
  const Placement& placement = graph.placements[op.placement];
  const int64_t axes = placement.hierarchy().rank();
  std::vector<TensorType> input_types;
  for (int64_t t : op.inputs) input_types.push_back(graph.tensors[t].type);
  OF_ASSIGN_OR_RETURN(AttrMap attrs, AttrsOf(*op.def));
  OpSbpCandidates result;
  result.signatures = op.definition->signatures(input_types, attrs);
  if (result.signatures.empty()) {
    return absl::InternalError(absl::StrCat("op '", op.name, "' (", op.type, ") offers no SBP signature"));
  }
  std::vector<SbpCandidate> candidates = Combine(result.signatures, axes);
  if (op.definition->attrs_for_local_shapes && axes > 1) {
    // Appended after the whole-tensor combinations, so that among equal prices those
    // keep winning; only layouts the whole tensor cannot say are new.
    std::vector<TensorType> output_types;
    for (int64_t t : op.outputs) output_types.push_back(graph.tensors[t].type);
    std::vector<SbpCandidate> local;
    LocalPartial partial{std::vector<std::vector<Sbp>>(op.inputs.size()),
                         std::vector<std::vector<Sbp>>(op.outputs.size())};
    LocalCandidates(*op.definition, attrs, placement.hierarchy(), input_types, output_types, 0, &partial, &local);
    // Keyed by their printed layouts: comparing each with every whole-tensor candidate
    // was quadratic (512 x 512 on a three-axis hierarchy, per reshape).
    auto key = [](const SbpCandidate& candidate) {
      std::string text;
      for (const NdSbp& sbp : candidate.inputs) absl::StrAppend(&text, sbp.ToString(), ";");
      for (const NdSbp& sbp : candidate.outputs) absl::StrAppend(&text, sbp.ToString(), ";");
      return text;
    };
    absl::flat_hash_set<std::string> known;
    for (const SbpCandidate& existing : candidates) known.insert(key(existing));
    for (SbpCandidate& candidate : local) {
      if (known.insert(key(candidate)).second) candidates.push_back(std::move(candidate));
    }
  }
  for (SbpCandidate& candidate : candidates) {
    bool allowed = FitsHierarchy(candidate, result.signatures, placement.hierarchy());
    for (size_t k = 0; k < op.outputs.size() && allowed; ++k) {
      const LogicalTensor& out = graph.tensors[op.outputs[k]];
      if (out.hint && *out.hint != candidate.outputs[k]) allowed = false;
    }
    if (allowed) result.candidates.push_back(std::move(candidate));
  }
  return result;
}

std::optional<InputBoxingPrice> PriceCandidateInputs(const LogicalGraph& graph, BoxingCache& cache,
                                                     const LogicalOp& op, const SbpCandidate& candidate,
                                                     const std::vector<BoxingOptions>& input_options,
                                                     int64_t gradient_bucket_bytes, InputPriceMemo* memo) {
  const Placement& placement = graph.placements[op.placement];
  InputBoxingPrice price;
  for (size_t k = 0; k < op.inputs.size(); ++k) {
    const LogicalTensor& in = graph.tensors[op.inputs[k]];
    if (in.placement == op.placement && SameLayout(in.sbp, candidate.inputs[k], placement.hierarchy())) {
      continue;
    }
    ++price.conversions;
    const std::string& arg = op.definition->inputs[k];
    const auto& updated = op.definition->updated_inputs;
    if (std::find(updated.begin(), updated.end(), arg) != updated.end()) {
      return std::nullopt;  // Updated in place: must run on the variable's own slices.
    }
    // A bucket member: the conversion priced on a tensor as large as the bucket (its
    // leading dimension scaled, so every split stays even) and charged its share.
    int64_t scale = 1;
    const int64_t bytes = in.type.shape.NumElements() * SizeOf(in.type.dtype);
    if (gradient_bucket_bytes > 0 && in.is_gradient && in.type.shape.rank() > 0 && bytes > 0) {
      scale = std::max<int64_t>(1, gradient_bucket_bytes / bytes);
    }
    const int64_t t = op.inputs[k];
    std::optional<InputPriceMemo::Price> conversion;
    if (memo != nullptr) conversion = memo->Find(t, in.sbp, in.placement, candidate.inputs[k], op.placement, scale);
    if (!conversion) {
      Shape shape = in.type.shape;
      if (scale > 1) {
        std::vector<int64_t> dims = shape.dims();
        dims[0] *= scale;
        shape = Shape(std::move(dims));
      }
      const absl::StatusOr<BoxingPlan>& plan =
          cache.Plan(shape, in.type.dtype, in.sbp, in.placement, candidate.inputs[k], op.placement, input_options[k]);
      conversion = InputPriceMemo::Price{std::numeric_limits<double>::infinity(), 0};
      if (plan.ok()) {
        conversion->seconds = plan->seconds / static_cast<double>(scale);
        for (const BoxingStep& step : plan->steps) {
          if (IsCollective(step.kind)) conversion->calls += 1.0 / static_cast<double>(scale);
        }
      }
      if (memo != nullptr) memo->Insert(t, in.sbp, in.placement, candidate.inputs[k], op.placement, scale, *conversion);
    }
    // A conversion the boxing planner cannot do (e.g. P(max)).
    if (std::isinf(conversion->seconds)) return std::nullopt;
    price.seconds += conversion->seconds;
    price.collective_calls += conversion->calls;
  }
  // A partial integer output (labels, token ids, indices) is never consumed as P:
  // no op takes a partial index, so its reduction is certain and is charged here.
  // Without this, the greedy choice sees S -> P as free (split_to_partial) and
  // moves e.g. the int32 targets of a reshape over an unevenly split batch through
  // a partial sum, where gathering the same few bytes costs less. A floating P
  // output is not charged: linear consumers keep it partial and defer the reduction.
  for (size_t k = 0; k < op.outputs.size(); ++k) {
    const LogicalTensor& out = graph.tensors[op.outputs[k]];
    if (IsFloating(out.type.dtype) || !HasPartialAxis(candidate.outputs[k]) || out.hint) continue;
    // Integer: never compressed, so dense options.
    const absl::StatusOr<BoxingPlan>& reduction =
        cache.Plan(out.type.shape, out.type.dtype, candidate.outputs[k], op.placement,
                   Reduced(candidate.outputs[k]), op.placement, BoxingOptions());
    if (!reduction.ok()) return std::nullopt;
    price.seconds += reduction->seconds;
    for (const BoxingStep& step : reduction->steps) {
      if (IsCollective(step.kind)) price.collective_calls += 1;
    }
  }
  return price;
}

// Per-device elements of a tensor under `sbp`, a partial one counted double: it will
// need a reduction, which the greedy choice cannot see yet.
double OutputWeight(const LogicalTensor& tensor, const NdSbp& sbp, const Placement& placement) {
  double elements = static_cast<double>(tensor.type.shape.NumElements());
  for (int64_t a = 0; a < sbp.size(); ++a) {
    if (sbp.at(a).is_split()) elements /= static_cast<double>(placement.hierarchy().dim(a));
    if (sbp.at(a).is_partial()) elements *= 2;
  }
  return elements;
}


double CandidateComputeSeconds(const LogicalGraph& graph, const LogicalOp& op, const SbpCandidate& candidate,
                               const ComputeRates& rates) {
  const Shape& hierarchy = graph.placements[op.placement].hierarchy();
  auto local_elements = [&](int64_t t, const NdSbp& sbp) {
    return LocalElements(static_cast<double>(graph.tensors[t].type.shape.NumElements()), sbp, hierarchy);
  };
  if (IsGemmKernel(op.type) && !op.inputs.empty() && !op.outputs.empty()) {
    // 2 m n k = 2 x elements(a) x n, each on the device's slices (input "a" first).
    const LogicalTensor& out = graph.tensors[op.outputs[0]];
    const int64_t rank = out.type.shape.rank();
    double n = rank == 0 ? 1.0 : static_cast<double>(out.type.shape.dim(rank - 1));
    const NdSbp& out_sbp = candidate.outputs[0];
    for (int64_t a = 0; a < out_sbp.size(); ++a) {
      if (out_sbp.at(a).is_split() && out_sbp.at(a).axis() == rank - 1) n /= static_cast<double>(hierarchy.dim(a));
    }
    const double a_elements = local_elements(op.inputs[0], candidate.inputs[0]);
    if (!rates.gemm_shape.measured()) return GemmSeconds(rates, 2.0 * a_elements * n);
    // By the product's shape on the device's slices (sbp/gemm_shape_model.h): `batch`
    // products of the output's last two dims when both operands are batched, else one of
    // every row; k from a's slice.
    std::vector<double> dims(out.type.shape.dims().begin(), out.type.shape.dims().end());
    for (int64_t a = 0; a < out_sbp.size(); ++a) {
      if (out_sbp.at(a).is_split()) dims[out_sbp.at(a).axis()] /= static_cast<double>(hierarchy.dim(a));
    }
    double elements = 1;
    for (double d : dims) elements *= d;
    const bool batched = op.inputs.size() > 1 && graph.tensors[op.inputs[1]].type.shape.rank() > 2 && rank > 2;
    GemmShape shape;
    shape.n = n;
    shape.m = batched ? dims[rank - 2] : elements / std::max(1.0, n);
    shape.batch = batched ? elements / std::max(1.0, shape.m * n) : 1;
    shape.k = a_elements / std::max(1.0, shape.batch * shape.m);
    return GemmShapeSeconds(rates, shape);
  }
  double bytes = 0;
  for (size_t k = 0; k < op.inputs.size(); ++k) {
    bytes += local_elements(op.inputs[k], candidate.inputs[k]) * SizeOf(graph.tensors[op.inputs[k]].type.dtype);
  }
  for (size_t k = 0; k < op.outputs.size(); ++k) {
    bytes += local_elements(op.outputs[k], candidate.outputs[k]) * SizeOf(graph.tensors[op.outputs[k]].type.dtype);
  }
  return MemoryBoundSeconds(rates, bytes);
}

}  // namespace oneflow
