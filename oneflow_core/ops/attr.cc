#include "oneflow_core/ops/attr.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace oneflow {

std::string AttrToString(const AttrValue& value) {
  struct Printer {
    std::string operator()(int64_t v) const { return absl::StrCat(v); }
    std::string operator()(double v) const { return absl::StrCat(v); }
    std::string operator()(bool v) const { return v ? "true" : "false"; }
    std::string operator()(const std::string& v) const { return absl::StrCat("\"", v, "\""); }
    std::string operator()(const std::vector<int64_t>& v) const {
      return absl::StrCat("[", absl::StrJoin(v, ", "), "]");
    }
  };
  return std::visit(Printer{}, value);
}

proto::AttrValue AttrToProto(const AttrValue& value) {
  proto::AttrValue proto;
  if (const auto* i = std::get_if<int64_t>(&value)) proto.set_i(*i);
  if (const auto* f = std::get_if<double>(&value)) proto.set_f(*f);
  if (const auto* b = std::get_if<bool>(&value)) proto.set_b(*b);
  if (const auto* s = std::get_if<std::string>(&value)) proto.set_s(*s);
  if (const auto* ints = std::get_if<std::vector<int64_t>>(&value)) {
    proto.mutable_ints();  // An empty list is still a list (reduce over all axes).
    for (int64_t v : *ints) proto.mutable_ints()->add_values(v);
  }
  return proto;
}

absl::StatusOr<AttrValue> AttrFromProto(const proto::AttrValue& proto) {
  switch (proto.value_case()) {
    case proto::AttrValue::kI:
      return AttrValue(proto.i());
    case proto::AttrValue::kF:
      return AttrValue(proto.f());
    case proto::AttrValue::kB:
      return AttrValue(proto.b());
    case proto::AttrValue::kS:
      return AttrValue(proto.s());
    case proto::AttrValue::kInts:
      return AttrValue(std::vector<int64_t>(proto.ints().values().begin(),
                                            proto.ints().values().end()));
    case proto::AttrValue::VALUE_NOT_SET:
      break;
  }
  return absl::InvalidArgumentError("attribute has no value set");
}

int64_t GetIntAttr(const AttrMap& attrs, const std::string& name, int64_t fallback) {
  auto it = attrs.find(name);
  if (it == attrs.end()) return fallback;
  const auto* value = std::get_if<int64_t>(&it->second);
  return value ? *value : fallback;
}

double GetFloatAttr(const AttrMap& attrs, const std::string& name, double fallback) {
  auto it = attrs.find(name);
  if (it == attrs.end()) return fallback;
  const auto* value = std::get_if<double>(&it->second);
  return value ? *value : fallback;
}

bool GetBoolAttr(const AttrMap& attrs, const std::string& name, bool fallback) {
  auto it = attrs.find(name);
  if (it == attrs.end()) return fallback;
  const auto* value = std::get_if<bool>(&it->second);
  return value ? *value : fallback;
}

std::vector<int64_t> GetIntsAttr(const AttrMap& attrs, const std::string& name) {
  auto it = attrs.find(name);
  if (it == attrs.end()) return {};
  const auto* value = std::get_if<std::vector<int64_t>>(&it->second);
  return value ? *value : std::vector<int64_t>{};
}

}  // namespace oneflow
