#include "oneflow_core/comm/ucx/process_record.h"

#include <unistd.h>

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "gtest/gtest.h"

namespace oneflow::ucx_backend {
namespace {

// This process's record with line `line` (0: boot id and pid namespace, 1: pid, 2: network
// namespace) replaced.
std::string OwnRecordWith(int line, const std::string& value) {
  std::vector<std::string> parts = absl::StrSplit(ProcessRecord(), '\n');
  EXPECT_EQ(parts.size(), 3u);
  parts[line] = value;
  return absl::StrJoin(parts, "\n");
}

TEST(ProcessRecordTest, ThisProcessIsVisibleAndOnThisHost) {
  const PeerProcess peer = ReadProcessRecord(ProcessRecord());
  EXPECT_EQ(peer.visible_pid, getpid());
  EXPECT_TRUE(peer.same_host);
}

// The emulated hosts: same boot id and pid namespace, another network namespace. The
// liveness check can watch the peer; its transports are another host's.
TEST(ProcessRecordTest, AnotherNetworkNamespaceIsVisibleButAnotherHost) {
  const PeerProcess peer = ReadProcessRecord(OwnRecordWith(2, "net:[1]"));
  EXPECT_EQ(peer.visible_pid, getpid());
  EXPECT_FALSE(peer.same_host);
}

TEST(ProcessRecordTest, AnotherMachineIsNeitherVisibleNorThisHost) {
  const PeerProcess peer = ReadProcessRecord(OwnRecordWith(0, "another-boot-id/pid:[1]"));
  EXPECT_EQ(peer.visible_pid, 0);
  EXPECT_FALSE(peer.same_host);
}

TEST(ProcessRecordTest, AMalformedRecordIsNeither) {
  for (const std::string& record :
       {std::string(""), OwnRecordWith(1, "not a pid"), OwnRecordWith(1, "0"),
        absl::StrCat(std::vector<std::string>(absl::StrSplit(ProcessRecord(), '\n'))[0], "\n", getpid())}) {
    const PeerProcess peer = ReadProcessRecord(record);
    EXPECT_EQ(peer.visible_pid, 0) << record;
    EXPECT_FALSE(peer.same_host) << record;
  }
}

}  // namespace
}  // namespace oneflow::ucx_backend
