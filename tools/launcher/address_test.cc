#include "tools/launcher/address.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace oneflow::launcher {
namespace {

using ::testing::HasSubstr;

TEST(ParseHostPortTest, AcceptsNamesIpv4AndBracketedIpv6) {
  absl::StatusOr<HostPort> a = ParseHostPort("node1:5001", "--listen");
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(a->host, "node1");
  EXPECT_EQ(a->port, 5001);
  absl::StatusOr<HostPort> b = ParseHostPort("[::1]:0", "--listen");
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_EQ(b->host, "[::1]");
  EXPECT_EQ(b->port, 0);
}

TEST(ParseHostPortTest, RefusalsNameTheFlagAndText) {
  EXPECT_THAT(ParseHostPort("node1", "--nodes entry 1").status().message(),
              HasSubstr("--nodes entry 1='node1': no ':PORT'"));
  EXPECT_THAT(ParseHostPort(":5001", "--listen").status().message(), HasSubstr("no host"));
  EXPECT_THAT(ParseHostPort("h:70000", "--listen").status().message(), HasSubstr("port '70000'"));
  EXPECT_THAT(ParseHostPort("h:x", "--listen").status().message(), HasSubstr("port 'x'"));
  EXPECT_THAT(ParseHostPort("::1:5001", "--listen").status().message(), HasSubstr("IPv6"));
}

TEST(IsWildcardHostTest, KnowsTheWildcards) {
  EXPECT_TRUE(IsWildcardHost("0.0.0.0"));
  EXPECT_TRUE(IsWildcardHost("[::]"));
  EXPECT_FALSE(IsWildcardHost("127.0.0.1"));
}

}  // namespace
}  // namespace oneflow::launcher
