// The rendezvous store, its server and RendezvousClient (the KeyValueStore workers use).
#include <cstdlib>
#include <fstream>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tools/launcher/auth.h"
#include "tools/launcher/rendezvous_client.h"
#include "tools/launcher/rendezvous_service.h"
#include "tools/launcher/rendezvous_store.h"
#include "tools/launcher/testing/daemon_process.h"
#include "tools/launcher/testing/tls_certificate.h"

namespace oneflow::launcher {
namespace {

using ::testing::HasSubstr;

constexpr char kToken[] = "rendezvous-test-token";

TEST(RendezvousStoreTest, KeysAreScopedByJob) {
  RendezvousStore store;
  ASSERT_TRUE(store.Set("a", "k", "v").ok());
  EXPECT_EQ(*store.Get("a", "k"), "v");
  EXPECT_EQ(store.Get("b", "k").status().code(), absl::StatusCode::kNotFound);
  store.DropJob("a");
  EXPECT_EQ(store.Get("a", "k").status().code(), absl::StatusCode::kNotFound);
}

TEST(RendezvousStoreTest, WaitTimesOutNamingMissingKeys) {
  RendezvousStore store;
  ASSERT_TRUE(store.Set("j", "here", "1").ok());
  const absl::Status status = store.Wait("j", {"here", "absent"}, absl::Milliseconds(150), nullptr);
  EXPECT_EQ(status.code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_THAT(status.message(), HasSubstr("never set: absent"));
}

TEST(RendezvousStoreTest, WaitReturnsWhenSetElsewhere) {
  RendezvousStore store;
  std::thread setter([&] {
    absl::SleepFor(absl::Milliseconds(50));
    (void)store.Set("j", "k", "v");
  });
  EXPECT_TRUE(store.Wait("j", {"k"}, absl::Seconds(10), nullptr).ok());
  setter.join();
}

TEST(RendezvousStoreTest, ShutdownAndGoneCallersEndWaits) {
  RendezvousStore store;
  EXPECT_EQ(store.Wait("j", {"k"}, absl::Seconds(30), [] { return true; }).code(), absl::StatusCode::kCancelled);
  std::thread stopper([&] {
    absl::SleepFor(absl::Milliseconds(50));
    store.Shutdown();
  });
  const absl::Time start = absl::Now();
  EXPECT_EQ(store.Wait("j", {"k"}, absl::Seconds(30), nullptr).code(), absl::StatusCode::kUnavailable);
  EXPECT_LT(absl::Now() - start, absl::Seconds(5));
  stopper.join();
}

TEST(RendezvousStoreTest, ConcurrentAddsAllCount) {
  RendezvousStore store;
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 1000; ++i) (void)store.Add("j", "counter", 1);
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(*store.Get("j", "counter"), "8000");
  ASSERT_TRUE(store.Set("j", "text", "hello").ok());
  EXPECT_EQ(store.Add("j", "text", 1).status().code(), absl::StatusCode::kFailedPrecondition);
  ASSERT_TRUE(store.Set("j", "big", "9223372036854775807").ok());
  EXPECT_EQ(store.Add("j", "big", 1).status().code(), absl::StatusCode::kOutOfRange);
}

class RendezvousServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ServerOptions options;
    options.address = "127.0.0.1:0";
    options.token = kToken;
    absl::StatusOr<std::unique_ptr<RendezvousServer>> server = StartRendezvousServer(options);
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = *std::move(server);
  }

  std::unique_ptr<RendezvousClient> Client(const std::string& token = kToken, const std::string& job = "job") {
    RendezvousClientOptions options;
    options.address = server_->address();
    options.job_id = job;
    options.token = token;
    options.rpc_timeout = absl::Seconds(5);
    return *RendezvousClient::Create(options);
  }

  std::unique_ptr<RendezvousServer> server_;
};

TEST_F(RendezvousServerTest, ReportsThePortItPicked) {
  EXPECT_THAT(server_->address(), ::testing::StartsWith("127.0.0.1:"));
  EXPECT_NE(server_->address(), "127.0.0.1:0");
}

TEST_F(RendezvousServerTest, SetGetWaitAdd) {
  std::unique_ptr<RendezvousClient> client = Client();
  ASSERT_TRUE(client->Set("rank0", "10.0.0.1:7000").ok());
  EXPECT_EQ(*client->Get("rank0"), "10.0.0.1:7000");
  const absl::Status missing = client->Get("rank9").status();
  EXPECT_EQ(missing.code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(missing.message(), HasSubstr("key 'rank9' is not set for job 'job'"));
  EXPECT_TRUE(client->Wait({"rank0"}, absl::Seconds(1)).ok());
  const absl::Status timeout = client->Wait({"rank0", "rank1"}, absl::Milliseconds(200));
  EXPECT_EQ(timeout.code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_THAT(timeout.message(), HasSubstr("rank1"));
  EXPECT_EQ(*client->Add("n", 5), 5);
  EXPECT_EQ(*client->Add("n", -2), 3);
  EXPECT_EQ(Client(kToken, "other-job")->Get("rank0").status().code(), absl::StatusCode::kNotFound);
}

TEST_F(RendezvousServerTest, WaitSeesAnotherClientsSet) {
  std::unique_ptr<RendezvousClient> waiter = Client();
  std::thread setter([&] {
    absl::SleepFor(absl::Milliseconds(100));
    (void)Client()->Set("late", "x");
  });
  EXPECT_TRUE(waiter->Wait({"late"}, absl::Seconds(10)).ok());
  setter.join();
}

TEST_F(RendezvousServerTest, ConcurrentAddsFromManyClients) {
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      std::unique_ptr<RendezvousClient> client = Client();
      for (int i = 0; i < 50; ++i) ASSERT_TRUE(client->Add("barrier", 1).ok());
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(*Client()->Add("barrier", 0), 200);
}

TEST_F(RendezvousServerTest, EveryMethodNeedsTheToken) {
  std::unique_ptr<RendezvousClient> wrong = Client("not-the-token");
  EXPECT_EQ(wrong->Set("k", "v").code(), absl::StatusCode::kUnauthenticated);
  EXPECT_EQ(wrong->Get("k").status().code(), absl::StatusCode::kUnauthenticated);
  EXPECT_EQ(wrong->Wait({"k"}, absl::Seconds(1)).code(), absl::StatusCode::kUnauthenticated);
  EXPECT_EQ(wrong->Add("k", 1).status().code(), absl::StatusCode::kUnauthenticated);
  // No metadata at all.
  auto stub = testing::RendezvousStub(server_->address());
  proto::KvGetRequest request;
  request.set_job_id("job");
  request.set_key("k");
  proto::KvGetResponse response;
  const grpc::Status status = stub->KvGet(testing::Context("").get(), request, &response);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_THAT(status.error_message(), HasSubstr("no authorization metadata"));
}

TEST_F(RendezvousServerTest, ShutdownEndsAPendingWait) {
  std::unique_ptr<RendezvousClient> client = Client();
  absl::Status status;
  std::thread waiter([&] { status = client->Wait({"never"}, absl::Seconds(20)); });
  absl::SleepFor(absl::Milliseconds(200));
  const absl::Time start = absl::Now();
  server_->Shutdown();
  waiter.join();
  EXPECT_LT(absl::Now() - start, absl::Seconds(5));
  EXPECT_EQ(status.code(), absl::StatusCode::kUnavailable) << status;
}

TEST_F(RendezvousServerTest, UnreachableServerIsUnavailableNamingTheAddress) {
  const std::string address = server_->address();
  server_->Shutdown();
  RendezvousClientOptions options;
  options.address = address;
  options.job_id = "job";
  options.token = kToken;
  const absl::Status status = (*RendezvousClient::Create(options))->Set("k", "v");
  EXPECT_EQ(status.code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(status.message(), HasSubstr(absl::StrCat("rendezvous server ", address, ": KvSet 'k'")));
}

TEST(RendezvousClientTest, CreateRefusesBadOptions) {
  RendezvousClientOptions options;
  options.address = "no-port";
  options.job_id = "j";
  options.token = "t";
  EXPECT_EQ(RendezvousClient::Create(options).status().code(), absl::StatusCode::kInvalidArgument);
  options.address = "127.0.0.1:1";
  options.tls_ca_file = "/nonexistent/ca.pem";
  EXPECT_THAT(RendezvousClient::Create(options).status().message(), HasSubstr("--tls_ca='/nonexistent/ca.pem'"));
}

// TLS with a self-signed certificate for 127.0.0.1, made by the openssl CLI (a machine
// without it fails here: tools/dev.sh installs it).
TEST(RendezvousTlsTest, ServesTlsToClientsTrustingTheCertificate) {
  const absl::StatusOr<testing::TlsCertificate> certificate = testing::MakeSelfSignedCertificate("tls");
  ASSERT_TRUE(certificate.ok()) << certificate.status();
  const std::string& cert = certificate->cert_file;
  const std::string& key = certificate->key_file;
  ServerOptions server_options;
  server_options.address = "127.0.0.1:0";
  server_options.token = kToken;
  server_options.tls_cert_file = cert;
  server_options.tls_key_file = key;
  absl::StatusOr<std::unique_ptr<RendezvousServer>> server = StartRendezvousServer(server_options);
  ASSERT_TRUE(server.ok()) << server.status();

  RendezvousClientOptions options;
  options.address = (*server)->address();
  options.job_id = "job";
  options.token = kToken;
  options.rpc_timeout = absl::Seconds(5);
  options.tls_ca_file = cert;
  std::unique_ptr<RendezvousClient> tls = *RendezvousClient::Create(options);
  ASSERT_TRUE(tls->Set("k", "over tls").ok());
  EXPECT_EQ(*tls->Get("k"), "over tls");

  options.tls_ca_file.clear();  // Plaintext to a TLS server: no connection.
  EXPECT_EQ((*RendezvousClient::Create(options))->Get("k").status().code(), absl::StatusCode::kUnavailable);

  server_options.tls_key_file.clear();
  EXPECT_THAT(StartRendezvousServer(server_options).status().message(), HasSubstr("--tls_cert and --tls_key"));
}

// Without the openssl CLI the certificate helper fails, saying what to install, so the
// TLS tests fail rather than pass without testing anything.
TEST(RendezvousTlsTest, NoOpensslIsAClearFailure) {
  const absl::StatusOr<testing::TlsCertificate> certificate =
      testing::MakeSelfSignedCertificate("no-openssl", "/nonexistent/openssl");
  EXPECT_EQ(certificate.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(certificate.status().message(), HasSubstr("no '/nonexistent/openssl' to run"));
  EXPECT_THAT(certificate.status().message(), HasSubstr("install the Debian package 'openssl' (`tools/dev.sh deps`"));
}

}  // namespace
}  // namespace oneflow::launcher
