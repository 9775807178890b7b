// The support predicate of boxing steps and the kind names; the contract is in step_support.h.
#include "kernels/boxing/step_support.h"

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace oneflow {
namespace {

constexpr BoxingKind kKinds[] = {
    BoxingKind::kIdentity,     BoxingKind::kAllReduce,      BoxingKind::kReduceScatter,
    BoxingKind::kAllGather,    BoxingKind::kAllToAll,       BoxingKind::kLocalSlice,
    BoxingKind::kLocalPartial, BoxingKind::kSplitToPartial, BoxingKind::kSendRecv};

// In the order error messages list them.
constexpr DType kReducibleDTypes[] = {DType::kF32, DType::kI32, DType::kI64, DType::kU8};

// "f32, i32, i64 and u8".
std::string ReducibleDTypeList() {
  std::vector<std::string> names;
  for (DType dtype : kReducibleDTypes) names.emplace_back(DTypeName(dtype));
  const std::string last = names.back();
  names.pop_back();
  return absl::StrCat(absl::StrJoin(names, ", "), " and ", last);
}

bool IsReducingKind(BoxingKind kind) {
  return kind == BoxingKind::kAllReduce || kind == BoxingKind::kReduceScatter;
}

bool IsReducibleDType(DType dtype) {
  for (DType reducible : kReducibleDTypes) {
    if (dtype == reducible) return true;
  }
  return false;
}

}  // namespace

absl::Status CheckStepSupported(BoxingKind kind, DType dtype, const Sbp& from, const Sbp& to) {
  auto unsupported = [&](absl::string_view why) {
    return absl::UnimplementedError(absl::StrCat(BoxingKindName(kind), " ", from.ToString(), " -> ",
                                                 to.ToString(), " of ", DTypeName(dtype),
                                                 " is not supported: ", why));
  };
  if (IsReducingKind(kind)) {
    if (!IsReducibleDType(dtype)) {
      return unsupported(absl::StrCat("reductions are implemented for ", ReducibleDTypeList()));
    }
    return absl::OkStatus();
  }
  // A non-reducing kind that makes a P from a value writes zeros on the devices that do
  // not hold it: right for P(sum) only.
  if (to.is_partial() && !from.is_partial() && to.reduce_op() != ReduceOp::kSum) {
    return unsupported(
        absl::StrCat("making ", to.ToString(), " locally needs its identity element; only P(sum)"));
  }
  return absl::OkStatus();
}

absl::StatusOr<NodeLayout> TwoLevelLayout(absl::Span<const int64_t> member_nodes) {
  NodeLayout layout;
  std::vector<int64_t> node_order;  // each node once, in order of first appearance
  std::vector<int64_t> counts;
  bool node_by_node = true;
  for (size_t g = 0; g < member_nodes.size(); ++g) {
    if (g == 0 || member_nodes[g] != member_nodes[g - 1]) {
      for (int64_t seen : node_order) node_by_node &= seen != member_nodes[g];
      node_order.push_back(member_nodes[g]);
      counts.push_back(0);
    }
    ++counts.back();
  }
  const std::string nodes = absl::StrCat("its members are on nodes [", absl::StrJoin(member_nodes, ", "), "]");
  if (!node_by_node) {
    return absl::InvalidArgumentError(absl::StrCat(nodes, "; a two-level step needs them listed node by node"));
  }
  layout.nodes = static_cast<int64_t>(counts.size());
  layout.local_size = counts.empty() ? 0 : counts[0];
  for (int64_t count : counts) {
    if (count != layout.local_size) {
      return absl::InvalidArgumentError(
          absl::StrCat(nodes, "; a two-level step needs the same number of members on every node"));
    }
  }
  if (layout.nodes < 2 || layout.local_size < 2) {
    return absl::InvalidArgumentError(absl::StrCat(
        nodes, "; a two-level step needs more than one node and more than one member per node (", layout.nodes,
        layout.nodes == 1 ? " node" : " nodes", " of ", layout.local_size, ")"));
  }
  return layout;
}

absl::StatusOr<BoxingKind> ParseBoxingKind(absl::string_view name) {
  std::vector<std::string> names;
  for (BoxingKind kind : kKinds) {
    if (BoxingKindName(kind) == name) return kind;
    names.emplace_back(BoxingKindName(kind));
  }
  return absl::InvalidArgumentError(
      absl::StrCat("unknown step kind '", name, "'; the kinds are ", absl::StrJoin(names, ", ")));
}

}  // namespace oneflow
