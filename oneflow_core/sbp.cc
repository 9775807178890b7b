#include "oneflow_core/sbp.h"

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "oneflow_core/status.h"

namespace oneflow {
namespace {

constexpr absl::string_view kValidSbp = "valid: S(axis) with axis >= 0, B, P, P(max), P(min)";

absl::Status BadSbp(absl::string_view text, absl::string_view why) {
  return absl::InvalidArgumentError(
      absl::StrCat("cannot parse SBP '", text, "': ", why, "; ", kValidSbp));
}

}  // namespace

absl::StatusOr<Sbp> Sbp::Parse(absl::string_view text) {
  absl::string_view body = absl::StripAsciiWhitespace(text);
  if (body == "B") return Broadcast();
  if (body == "P" || body == "P(sum)") return Partial(ReduceOp::kSum);
  if (body == "P(max)") return Partial(ReduceOp::kMax);
  if (body == "P(min)") return Partial(ReduceOp::kMin);
  if (absl::ConsumePrefix(&body, "S(") && absl::ConsumeSuffix(&body, ")")) {
    int64_t axis = 0;
    if (!absl::SimpleAtoi(absl::StripAsciiWhitespace(body), &axis)) {
      return BadSbp(text, "the split axis is not an integer");
    }
    if (axis < 0) return BadSbp(text, "the split axis is negative");
    return Split(axis);
  }
  return BadSbp(text, "unknown form");
}

absl::StatusOr<Sbp> Sbp::FromProto(const proto::SbpParallel& proto) {
  switch (proto.kind_case()) {
    case proto::SbpParallel::kSplit:
      if (proto.split().axis() < 0) {
        return absl::InvalidArgumentError(
            absl::StrCat("SbpParallel has negative split axis ", proto.split().axis()));
      }
      return Split(proto.split().axis());
    case proto::SbpParallel::kBroadcast:
      return Broadcast();
    case proto::SbpParallel::kPartial:
      switch (proto.partial().op()) {
        case proto::REDUCE_SUM:
          return Partial(ReduceOp::kSum);
        case proto::REDUCE_MAX:
          return Partial(ReduceOp::kMax);
        case proto::REDUCE_MIN:
          return Partial(ReduceOp::kMin);
        default:
          return absl::InvalidArgumentError(
              absl::StrCat("SbpParallel has unknown reduce op ", proto.partial().op()));
      }
    case proto::SbpParallel::KIND_NOT_SET:
      break;
  }
  return absl::InvalidArgumentError("SbpParallel has no kind set (split, broadcast, partial)");
}

std::string Sbp::ToString() const {
  switch (kind_) {
    case Kind::kSplit:
      return absl::StrCat("S(", axis_, ")");
    case Kind::kBroadcast:
      return "B";
    case Kind::kPartial:
      switch (reduce_op_) {
        case ReduceOp::kSum:
          return "P";
        case ReduceOp::kMax:
          return "P(max)";
        case ReduceOp::kMin:
          return "P(min)";
      }
  }
  return "?";
}

proto::SbpParallel Sbp::ToProto() const {
  proto::SbpParallel proto;
  switch (kind_) {
    case Kind::kSplit:
      proto.mutable_split()->set_axis(axis_);
      break;
    case Kind::kBroadcast:
      proto.mutable_broadcast();
      break;
    case Kind::kPartial:
      proto.mutable_partial()->set_op(reduce_op_ == ReduceOp::kSum   ? proto::REDUCE_SUM
                                      : reduce_op_ == ReduceOp::kMax ? proto::REDUCE_MAX
                                                                     : proto::REDUCE_MIN);
      break;
  }
  return proto;
}

absl::StatusOr<NdSbp> NdSbp::Parse(absl::string_view text) {
  absl::string_view body = absl::StripAsciiWhitespace(text);
  const bool bracketed = absl::ConsumePrefix(&body, "[");
  if (bracketed && !absl::ConsumeSuffix(&body, "]")) {
    return absl::InvalidArgumentError(
        absl::StrCat("cannot parse N-D SBP '", text, "': missing closing ']'"));
  }
  if (absl::StripAsciiWhitespace(body).empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "cannot parse N-D SBP '", text, "': it needs one SBP per hierarchy axis, e.g. [S(0), B]"));
  }
  std::vector<Sbp> sbps;
  for (absl::string_view item : absl::StrSplit(body, ',')) {
    OF_ASSIGN_OR_RETURN(Sbp sbp, Sbp::Parse(absl::StripAsciiWhitespace(item)));
    sbps.push_back(sbp);
  }
  if (!bracketed && sbps.size() > 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "cannot parse N-D SBP '", text, "': write several axes in brackets, e.g. [S(0), B]"));
  }
  return NdSbp(std::move(sbps));
}

absl::StatusOr<NdSbp> NdSbp::FromProto(const proto::NdSbp& proto) {
  if (proto.sbp_size() == 0) return absl::InvalidArgumentError("NdSbp has no axes");
  std::vector<Sbp> sbps;
  for (const proto::SbpParallel& item : proto.sbp()) {
    OF_ASSIGN_OR_RETURN(Sbp sbp, Sbp::FromProto(item));
    sbps.push_back(sbp);
  }
  return NdSbp(std::move(sbps));
}

bool NdSbp::IsAllBroadcast() const {
  for (const Sbp& sbp : sbps_) {
    if (!sbp.is_broadcast()) return false;
  }
  return true;
}

std::string NdSbp::ToString() const {
  if (sbps_.size() == 1) return sbps_[0].ToString();
  return absl::StrCat("[",
                      absl::StrJoin(sbps_, ", ",
                                    [](std::string* out, const Sbp& sbp) {
                                      absl::StrAppend(out, sbp.ToString());
                                    }),
                      "]");
}

proto::NdSbp NdSbp::ToProto() const {
  proto::NdSbp proto;
  for (const Sbp& sbp : sbps_) *proto.add_sbp() = sbp.ToProto();
  return proto;
}

}  // namespace oneflow
