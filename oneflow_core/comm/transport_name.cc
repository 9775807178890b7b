#include "oneflow_core/comm/transport_name.h"

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace oneflow {

const char* TransportName(Transport transport) {
  switch (transport) {
    case Transport::kUcx:
      return "ucx";
    case Transport::kGloo:
      return "gloo";
  }
  return "unknown";
}

std::vector<std::string> TransportNames() {
  return {TransportName(Transport::kUcx), TransportName(Transport::kGloo)};
}

absl::StatusOr<Transport> ParseTransport(absl::string_view name) {
  for (Transport transport : {Transport::kUcx, Transport::kGloo}) {
    if (name == TransportName(transport)) return transport;
  }
  return absl::InvalidArgumentError(absl::StrCat("unknown transport '", name,
                                                 "'; valid: ", absl::StrJoin(TransportNames(), ", ")));
}

}  // namespace oneflow
