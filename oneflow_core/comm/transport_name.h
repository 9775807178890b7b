// The transports a group of processes can run over, by the names `--transport=` takes.
// Apart from transport.h (which makes their communicators and links their libraries) so
// that the launch and the daemons can check a name without linking any transport.
#ifndef ONEFLOW_CORE_COMM_TRANSPORT_NAME_H_
#define ONEFLOW_CORE_COMM_TRANSPORT_NAME_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace oneflow {

enum class Transport {
  kUcx,   // UCX: shared memory within a host, TCP across hosts (ucx/communicator.h)
  kGloo,  // Gloo's TCP pairs (gloo/communicator.h)
};

constexpr Transport kDefaultTransport = Transport::kUcx;

// "ucx", "gloo".
const char* TransportName(Transport transport);
// Every transport's name, default first.
std::vector<std::string> TransportNames();
// The transport called `name`; INVALID_ARGUMENT naming `name` and listing the valid names
// otherwise: `unknown transport 'tcp'; valid: ucx, gloo`.
absl::StatusOr<Transport> ParseTransport(absl::string_view name);

}  // namespace oneflow

#endif  // ONEFLOW_CORE_COMM_TRANSPORT_NAME_H_
