// Gloo's TCP pair reads its peer's address right after accept(2) or a completed connect,
// on the device thread, with GLOO_ENFORCE: when the peer has reset the connection in
// between (a rank that aborts while its group connects closes its pairs with SO_LINGER 0),
// getpeername(2) fails with ENOTCONN and the exception ends the process (std::terminate),
// since nothing can catch on Gloo's thread. This definition takes the place of Gloo's
// (libgloo calls it through its PLT, so the executable's copy wins, as an allocator's
// malloc does): a socket without a peer gets an empty address, the pair goes on to
// register the socket, its first read reports the reset, and the pair fails the way any
// broken connection does (an IoException to its caller). Behaviour is otherwise Gloo's.
// peer_name_test.cc reproduces the race and checks this copy is the one linked.
#include <sys/socket.h>

#include <cstring>

#include "gloo/common/logging.h"
#include "gloo/transport/tcp/address.h"

namespace gloo {
namespace transport {
namespace tcp {

Address Address::fromPeerName(int fd) {
  struct sockaddr_storage storage;
  std::memset(&storage, 0, sizeof(storage));
  socklen_t length = sizeof(storage);
  if (getpeername(fd, reinterpret_cast<struct sockaddr*>(&storage), &length) == -1) {
    GLOO_ENFORCE_EQ(errno, ENOTCONN, "getpeername: ", std::strerror(errno));
    std::memset(&storage, 0, sizeof(storage));  // AF_UNSPEC: no peer
  }
  return Address(storage);
}

}  // namespace tcp
}  // namespace transport
}  // namespace gloo
