// A connection that its peer resets before Gloo's device thread has taken it up must fail
// the pair, not the process: Gloo (Debian's 2022 snapshot) reads the peer's address with
// GLOO_ENFORCE on that thread, whose exception nobody can catch (std::terminate). It
// happened when a rank aborted while its group connected (the aborting rank closes its
// pairs with SO_LINGER 0); peer_name.cc is the fix. The test stalls the device thread,
// connects to a listening pair and resets the connection, then lets the thread go on.
#include <arpa/inet.h>
#include <dlfcn.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <future>
#include <memory>
#include <string>

#include "gloo/common/error.h"
#include "gloo/transport/tcp/address.h"
#include "gloo/transport/tcp/device.h"
#include "gloo/transport/tcp/loop.h"
#include "gloo/transport/pair.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace oneflow {
namespace {

using ::gloo::transport::tcp::Address;

// Holds the device thread inside handleEvents until released.
class StallingHandler final : public ::gloo::transport::tcp::Handler {
 public:
  void handleEvents(int) override {
    char byte = 0;
    (void)read(read_fd_, &byte, 1);
    entered_.set_value();
    release_.get_future().wait();
  }
  int read_fd_ = -1;
  std::promise<void> entered_;
  std::promise<void> release_;
};

TEST(GlooPeerNameTest, TheLinkedFromPeerNameIsOursAndToleratesAResetSocket) {
  // The symbol the dynamic linker gives libgloo's own call (through its PLT) is ours: it
  // lives in another object than its neighbour fromSockName, which is still Gloo's.
  auto object_of = [](const char* symbol) {
    void* resolved = dlsym(RTLD_DEFAULT, symbol);
    Dl_info info;
    if (resolved == nullptr || dladdr(resolved, &info) == 0) return std::string("?");
    return std::string(info.dli_fname);
  };
  const std::string gloo = object_of("_ZN4gloo9transport3tcp7Address12fromSockNameEi");
  EXPECT_THAT(gloo, ::testing::HasSubstr("libgloo.so"));
  EXPECT_NE(object_of("_ZN4gloo9transport3tcp7Address12fromPeerNameEi"), gloo);

  // A socket without a peer: an empty address, not an exception.
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(fd, 0);
  const Address unconnected = Address::fromPeerName(fd);
  EXPECT_EQ(unconnected.getSockaddr().ss_family, AF_UNSPEC);
  close(fd);
}

TEST(GlooPeerNameTest, AConnectionResetBeforeTheDeviceThreadAcceptsItFailsThePair) {
  ::gloo::transport::tcp::attr attr;
  attr.hostname = "127.0.0.1";
  std::shared_ptr<::gloo::transport::Device> device = ::gloo::transport::tcp::CreateDevice(attr);
  auto* tcp_device = static_cast<::gloo::transport::tcp::Device*>(device.get());
  std::shared_ptr<::gloo::transport::Context> context = device->createContext(0, 2);
  context->setTimeout(std::chrono::milliseconds(2000));
  std::unique_ptr<::gloo::transport::Pair>& pair = context->createPair(1);
  const Address listening(pair->address().bytes());

  int pipe_fds[2];
  ASSERT_EQ(pipe(pipe_fds), 0);
  StallingHandler stall;
  stall.read_fd_ = pipe_fds[0];
  tcp_device->registerDescriptor(pipe_fds[0], EPOLLIN, &stall);
  ASSERT_EQ(write(pipe_fds[1], "x", 1), 1);
  stall.entered_.get_future().wait();

  // Connect (the kernel completes the handshake from the pair's backlog) and reset.
  const int client = socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(client, 0);
  sockaddr_storage target = listening.getSockaddr();
  ASSERT_EQ(connect(client, reinterpret_cast<sockaddr*>(&target), sizeof(sockaddr_in)), 0)
      << strerror(errno);
  linger reset = {1, 0};
  ASSERT_EQ(setsockopt(client, SOL_SOCKET, SO_LINGER, &reset, sizeof(reset)), 0);
  close(client);

  // The device thread now accepts the reset connection.
  stall.release_.set_value();
  tcp_device->unregisterDescriptor(pipe_fds[0], &stall);
  close(pipe_fds[0]);
  close(pipe_fds[1]);

  // This side of the pair listens (its address is the lower one: a peer on the same host
  // with a higher port), so connect waits for the accepted connection, which is broken.
  sockaddr_in higher;
  std::memcpy(&higher, &listening.getSockaddr(), sizeof(higher));
  higher.sin_port = htons(65535);
  const Address peer(reinterpret_cast<sockaddr*>(&higher), sizeof(higher));
  try {
    pair->connect(peer.bytes());
    ADD_FAILURE() << "connect succeeded over a reset connection";
  } catch (const ::gloo::IoException& error) {
    EXPECT_THAT(std::string(error.what()), ::testing::HasSubstr("Connection reset"));
  }
}

}  // namespace
}  // namespace oneflow
