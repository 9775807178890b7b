// TLS between `oneflow launch` and oneflowd, with real processes: daemons serving
// --tls_cert/--tls_key (a self-signed certificate for 127.0.0.1, made by openssl) train a
// plan launched with --tls_ca exactly as `oneflow run` does (the workers meet at node 0's
// daemon over TLS too), and a launch that does not trust the certificate (plaintext, or
// another CA) fails at once naming the node, with no worker started and the daemons
// still serving.
#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/cluster/cluster_harness.h"
#include "tests/cluster/process.h"
#include "tools/launcher/testing/tls_certificate.h"

namespace oneflow::testing {
namespace {

using launcher::testing::MakeSelfSignedCertificate;
using launcher::testing::TlsCertificate;
using std::chrono::milliseconds;
using ::testing::ContainsRegex;
using ::testing::HasSubstr;

constexpr int kIterations = 6;

class TlsLaunchTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<TlsCertificate> certificate = MakeSelfSignedCertificate("daemons-cert");
    ASSERT_TRUE(certificate.ok()) << certificate.status();
    certificate_ = *std::move(certificate);
    daemons_ = std::make_unique<Daemons>(
        2, std::vector<std::string>{"--tls_cert=" + certificate_.cert_file, "--tls_key=" + certificate_.key_file});
    ASSERT_EQ(daemons_->size(), 2);
    for (int i = 0; i < 2; ++i) ASSERT_THAT(daemons_->Stderr(i), HasSubstr("; TLS")) << "daemon " << i;
    plan_ = CompilePlan("mlp",
                        {"--batch=16", "--in_features=8", "--hidden=16", "--classes=4", "--layers=2", "--nodes=2",
                         "--devices_per_node=1", "--dp=2"},
                        "tls");
  }

  // `oneflow launch --tls_ca=<the daemons' certificate>` trains like `oneflow run`.
  void ExpectTrainsOverTls(const std::string& job_id) {
    const std::vector<double> reference = RunInOneProcess(plan_, kIterations);
    std::unique_ptr<Process> launch =
        Launch(*daemons_, plan_, kIterations, job_id, {"--tls_ca=" + certificate_.cert_file});
    ASSERT_TRUE(launch->Wait(milliseconds(60000))) << job_id;
    ASSERT_EQ(launch->exit_code(), 0) << job_id << ": " << launch->Stderr();
    EXPECT_TRUE(MatchesReference(Losses(launch->StdoutLines()), reference, kIterations)) << job_id << " over TLS";
    EXPECT_TRUE(NoWorkersLeft(job_id, milliseconds(5000))) << job_id;
  }

  // A launch that must be refused before any worker starts: exit code 1, a headline
  // naming a node that could not be reached, both nodes in the report, no worker.
  // Returns the launch's stderr.
  std::string ExpectRefused(const std::string& job_id, const std::vector<std::string>& extra, const std::string& what) {
    std::unique_ptr<Process> launch = Launch(*daemons_, plan_, kIterations, job_id, extra);
    if (!launch->Wait(milliseconds(20000))) {
      ADD_FAILURE() << what << ": the client did not give up";
      return "";
    }
    EXPECT_EQ(launch->exit_code(), 1) << what;
    const std::string error = launch->Stderr();
    EXPECT_THAT(error, ContainsRegex(absl::StrCat("job '", job_id, R"(' failed: node [01] \(127\.0\.0\.1:[0-9]+\) )",
                                                  "is unreachable: ")))
        << what;
    for (int i = 0; i < 2; ++i) {
      EXPECT_THAT(error, HasSubstr(absl::StrCat("\n  node ", i, " (", daemons_->address(i), "): did not start")))
          << what;
    }
    EXPECT_TRUE(Losses(launch->StdoutLines()).empty()) << what;
    EXPECT_TRUE(NoWorkersLeft(job_id, milliseconds(2000))) << what;
    return error;
  }

  TlsCertificate certificate_;
  std::unique_ptr<Daemons> daemons_;
  std::string plan_;
};

TEST_F(TlsLaunchTest, LaunchTrustingTheCertificateTrainsLikeOneProcess) { ExpectTrainsOverTls("tls-trusted"); }

TEST_F(TlsLaunchTest, PlaintextLaunchIsRefusedNamingTheNode) {
  ExpectRefused("tls-plaintext", {}, "no --tls_ca");
  ExpectTrainsOverTls("tls-after-plaintext");
}

TEST_F(TlsLaunchTest, LaunchTrustingAnotherCertificateIsRefusedNamingTheNode) {
  absl::StatusOr<TlsCertificate> other = MakeSelfSignedCertificate("other-cert");
  ASSERT_TRUE(other.ok()) << other.status();
  const std::string error = ExpectRefused("tls-wrong-ca", {"--tls_ca=" + other->cert_file}, "another certificate");
  EXPECT_THAT(error, HasSubstr("certificate verify failed"));
  ExpectTrainsOverTls("tls-after-wrong-ca");
}

}  // namespace
}  // namespace oneflow::testing
