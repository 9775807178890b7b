// Op attributes: small typed values keyed by name (matmul's transpose_a, slice's begin).
#ifndef ONEFLOW_CORE_OPS_ATTR_H_
#define ONEFLOW_CORE_OPS_ATTR_H_

#include <cstdint>
#include <map>
#include <string>
#include <variant>
#include <vector>

#include "absl/status/statusor.h"
#include "proto/job.pb.h"

namespace oneflow {

using AttrValue = std::variant<int64_t, double, bool, std::string, std::vector<int64_t>>;

// Ordered by name so printing and proto emission are deterministic.
using AttrMap = std::map<std::string, AttrValue>;

// "true", "3", "0.5", "\"gelu\"", "[0, 2]".
std::string AttrToString(const AttrValue& value);
proto::AttrValue AttrToProto(const AttrValue& value);
absl::StatusOr<AttrValue> AttrFromProto(const proto::AttrValue& proto);

// Typed lookups with a default for an absent attribute. A present attribute of the
// wrong type is a programmer error in an op definition, not user input: the DSL
// functions are the only writers, so these CHECK-free helpers just return the default.
int64_t GetIntAttr(const AttrMap& attrs, const std::string& name, int64_t fallback);
double GetFloatAttr(const AttrMap& attrs, const std::string& name, double fallback);
bool GetBoolAttr(const AttrMap& attrs, const std::string& name, bool fallback);
std::vector<int64_t> GetIntsAttr(const AttrMap& attrs, const std::string& name);

}  // namespace oneflow

#endif  // ONEFLOW_CORE_OPS_ATTR_H_
