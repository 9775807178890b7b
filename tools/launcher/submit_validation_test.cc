#include "tools/launcher/submit_validation.h"

#include "plan/plan_checksum.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tools/launcher/testing/test_plans.h"

namespace oneflow::launcher {
namespace {

using ::testing::HasSubstr;

constexpr int64_t kLimit = 1 << 20;

proto::SubmitRequest Request(int64_t nodes = 2, int64_t rank = 1) {
  proto::SubmitRequest request;
  request.set_job_id("job-1");
  *request.mutable_plan() = testing::FakeJobPlan("fake:finish", nodes);
  request.set_node_rank(rank);
  request.mutable_options()->set_iterations(3);
  request.mutable_options()->set_rendezvous_address("127.0.0.1:5001");
  return request;
}

TEST(SubmitValidationTest, AcceptsAValidRequest) {
  EXPECT_TRUE(ValidateSubmitRequest(Request(), kLimit).ok()) << ValidateSubmitRequest(Request(), kLimit);
}

TEST(SubmitValidationTest, JobIdsMustBeSafeDirectoryNames) {
  for (const char* bad : {"", "../etc", "a/b", ".hidden", "a b"}) {
    proto::SubmitRequest request = Request();
    request.set_job_id(bad);
    const absl::Status status = ValidateSubmitRequest(request, kLimit);
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << bad;
  }
  EXPECT_TRUE(ValidateJobId("job-2024.01_a").ok());
}

TEST(SubmitValidationTest, OversizedPlanNamesSizeAndLimit) {
  const proto::SubmitRequest request = Request();
  const int64_t size = static_cast<int64_t>(request.plan().ByteSizeLong());
  const absl::Status status = ValidateSubmitRequest(request, 100);
  EXPECT_EQ(status.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(status.message(), HasSubstr(absl::StrCat("the plan is ", size, " bytes")));
  EXPECT_THAT(status.message(), HasSubstr("--max_plan_bytes=100"));
}

TEST(SubmitValidationTest, QuotesTheVerifier) {
  proto::SubmitRequest request = Request();
  // Device 1 issues the two collectives in the other order: a deadlock the verifier names.
  request.mutable_plan()->mutable_devices(1)->set_collective_order(0, 1);
  request.mutable_plan()->mutable_devices(1)->set_collective_order(1, 0);
  // Resealed, as a buggy tool would: the verifier must still refuse the order.
  ASSERT_TRUE(SealPlan(request.mutable_plan()).ok());
  const absl::Status status = ValidateSubmitRequest(request, kLimit);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  // (Since communication streams the verifier checks each group's order, not one total
  // order per device: it names the device, its order and the collective out of place.)
  EXPECT_THAT(status.message(), HasSubstr("the plan fails verification: device 1:0 issues collective 0"));
  EXPECT_THAT(status.message(), HasSubstr("of its order [1, 0], after collective 1 of the same group"));
}

// A compressed step the runtime cannot run: the two-level form on a group with one
// device per node (the fake plan's [0:0, 1:0]) has no in-node level.
TEST(SubmitValidationTest, RefusesACompressionTheRuntimeCannotRun) {
  proto::SubmitRequest request = Request();
  proto::Compression* compression = request.mutable_plan()->mutable_boxings(0)->mutable_steps(0)->mutable_compression();
  compression->set_kind(proto::Compression::INT8);
  compression->set_block_size(512);
  compression->set_cross_node_kind(proto::Compression::INT4);
  compression->set_cross_node_block_size(128);
  ASSERT_TRUE(SealPlan(request.mutable_plan()).ok());
  const absl::Status status = ValidateSubmitRequest(request, kLimit);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(status.message(),
            "the plan fails verification: boxing 0 of 'grad0' ( -> ) step 0 (all_reduce) is compressed in two "
            "levels, but the group of collective 0, [0:0, 1:0], cannot run them: its members are on nodes [0, 1]; "
            "a two-level step needs more than one node and more than one member per node (2 nodes of 1)");
}

TEST(SubmitValidationTest, NodeRankMustBeInTheCluster) {
  for (int64_t rank : {-1, 2}) {
    const absl::Status status = ValidateSubmitRequest(Request(2, rank), kLimit);
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(status.message(), HasSubstr(absl::StrCat("node_rank ", rank, " is outside the plan's cluster of 2 nodes")));
  }
}

TEST(SubmitValidationTest, OptionsAreChecked) {
  proto::SubmitRequest no_iterations = Request();
  no_iterations.mutable_options()->set_iterations(0);
  EXPECT_THAT(ValidateSubmitRequest(no_iterations, kLimit).message(), HasSubstr("options.iterations=0"));
  proto::SubmitRequest no_rendezvous = Request();
  no_rendezvous.mutable_options()->clear_rendezvous_address();
  EXPECT_THAT(ValidateSubmitRequest(no_rendezvous, kLimit).message(), HasSubstr("options.rendezvous_address"));
  proto::SubmitRequest bad_host = Request();
  bad_host.mutable_options()->set_worker_host("h; rm -rf /");
  EXPECT_THAT(ValidateSubmitRequest(bad_host, kLimit).message(), HasSubstr("options.worker_host"));
  proto::SubmitRequest bad_timeout = Request();
  bad_timeout.mutable_options()->set_collective_timeout_s(-1);
  EXPECT_THAT(ValidateSubmitRequest(bad_timeout, kLimit).message(), HasSubstr("collective_timeout_s=-1"));
}

}  // namespace
}  // namespace oneflow::launcher

namespace oneflow::launcher {
namespace {

// In-memory checkpoints (docs/elastic.md): K >= 0, a daemon per node, a valid scope.
TEST(SubmitValidationTest, MemoryCheckpointFieldsAreChecked) {
  proto::SubmitRequest request = Request();
  proto::RunOptions* options = request.mutable_options();
  options->set_memory_checkpoint_every(10);
  options->set_memory_checkpoint_scope("job-1");
  options->add_memory_checkpoint_daemons("127.0.0.1:5001");
  options->add_memory_checkpoint_daemons("127.0.0.1:5002");
  EXPECT_TRUE(ValidateSubmitRequest(request, kLimit).ok()) << ValidateSubmitRequest(request, kLimit);

  proto::SubmitRequest negative = request;
  negative.mutable_options()->set_memory_checkpoint_every(-1);
  absl::Status status = ValidateSubmitRequest(negative, kLimit);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("options.memory_checkpoint_every=-1 must be >= 0"));

  proto::SubmitRequest one_daemon = request;
  one_daemon.mutable_options()->mutable_memory_checkpoint_daemons()->RemoveLast();
  status = ValidateSubmitRequest(one_daemon, kLimit);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("options.memory_checkpoint_daemons lists 1 daemons; the plan has 2 nodes"));

  proto::SubmitRequest no_scope = request;
  no_scope.mutable_options()->clear_memory_checkpoint_scope();
  status = ValidateSubmitRequest(no_scope, kLimit);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("options.memory_checkpoint_scope: the job id is empty"));

  proto::SubmitRequest resume = Request();
  resume.mutable_options()->set_memory_resume_iteration(20);
  resume.mutable_options()->set_memory_checkpoint_scope("job-1");
  resume.mutable_options()->add_memory_resume_holders("127.0.0.1:5001");
  status = ValidateSubmitRequest(resume, kLimit);
  EXPECT_THAT(status.message(), HasSubstr("options.memory_resume_holders lists 1 daemons; the plan has 2 nodes"));
  resume.mutable_options()->add_memory_resume_holders("");  // Node 1 saves no part.
  EXPECT_TRUE(ValidateSubmitRequest(resume, kLimit).ok()) << ValidateSubmitRequest(resume, kLimit);
}

}  // namespace
}  // namespace oneflow::launcher
