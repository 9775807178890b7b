// The daemons' MemoryCheckpoints service through its client: a part larger than one
// piece comes back byte for byte, a daemon keeps the two newest iterations per owner
// node, lists what it holds, refuses another token, and a drop frees everything.
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"

#include "gtest/gtest.h"
#include "tools/launcher/auth.h"
#include "tools/launcher/memory_checkpoint_client.h"
#include "tools/launcher/memory_checkpoint_service.h"
#include "tools/launcher/server.h"

namespace oneflow::launcher {
namespace {

class MemoryCheckpointTest : public testing::Test {
 protected:
  void SetUp() override { Start(MemoryCheckpointLimits()); }
  // Restarts the service with `limits` (the daemon's --memory_checkpoint_* flags).
  void Start(MemoryCheckpointLimits limits) {
    if (server_ != nullptr) server_->Shutdown();
    service_ = std::make_unique<MemoryCheckpointService>(std::make_shared<TokenAuthorizer>("secret", "test"),
                                                         std::move(limits));
    ServerOptions options;
    options.address = "127.0.0.1:0";
    options.token = "secret";
    absl::StatusOr<StartedServer> started = StartGrpcServer(options, {service_.get()});
    ASSERT_TRUE(started.ok()) << started.status();
    server_ = std::move(started->server);
    address_ = started->address;
  }
  void TearDown() override {
    if (server_ != nullptr) server_->Shutdown();
  }

  std::unique_ptr<MemoryCheckpointClient> Client(const std::string& token = "secret") {
    absl::StatusOr<std::unique_ptr<MemoryCheckpointClient>> client =
        MemoryCheckpointClient::Create(address_, token, "", absl::Seconds(10));
    EXPECT_TRUE(client.ok()) << client.status();
    return std::move(*client);
  }

  // Two shards: 2.5 pieces and 3 bytes, filled from `seed`.
  static MemoryCheckpointPart Part(int64_t owner, int64_t iteration, char seed) {
    MemoryCheckpointPart part;
    part.owner_node = owner;
    part.iteration = iteration;
    part.saving_nodes = {0, 1, 2};
    part.part.set_iteration(iteration);
    for (int64_t size : {kMemoryCheckpointPieceBytes * 5 / 2, int64_t{3}}) {
      std::string bytes(static_cast<size_t>(size), '\0');
      for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<char>(seed + i * 7);
      proto::CheckpointShard* shard = part.part.add_shards();
      shard->set_file(absl::StrCat("device-", owner, "-", part.shards.size(), ".shard"));
      shard->set_size_bytes(size);
      part.shards.push_back(std::move(bytes));
    }
    return part;
  }

  std::unique_ptr<MemoryCheckpointService> service_;
  std::unique_ptr<grpc::Server> server_;
  std::string address_;
};

TEST_F(MemoryCheckpointTest, APartComesBackWholeAndTheTwoNewestAreKept) {
  std::unique_ptr<MemoryCheckpointClient> client = Client();
  for (int64_t iteration : {10, 20, 30}) {
    ASSERT_TRUE(client->Put("job", Part(1, iteration, static_cast<char>(iteration))).ok());
  }
  ASSERT_TRUE(client->Put("job", Part(2, 30, 'x')).ok());
  absl::StatusOr<std::vector<proto::MemoryCheckpointEntry>> entries = client->List("job");
  ASSERT_TRUE(entries.ok()) << entries.status();
  ASSERT_EQ(entries->size(), 3u);  // node 1: 20 and 30 (10 was dropped); node 2: 30.
  EXPECT_EQ((*entries)[0].owner_node(), 1);
  EXPECT_EQ((*entries)[0].iteration(), 20);
  EXPECT_EQ((*entries)[1].iteration(), 30);
  EXPECT_EQ((*entries)[2].owner_node(), 2);
  EXPECT_EQ((*entries)[2].saving_nodes_size(), 3);
  const int64_t part_bytes = kMemoryCheckpointPieceBytes * 5 / 2 + 3;
  EXPECT_EQ((*entries)[0].bytes(), part_bytes);

  absl::StatusOr<MemoryCheckpointPart> got = client->Get("job", 1, 20);
  ASSERT_TRUE(got.ok()) << got.status();
  const MemoryCheckpointPart want = Part(1, 20, 20);
  ASSERT_EQ(got->shards.size(), 2u);
  EXPECT_TRUE(got->shards[0] == want.shards[0]);
  EXPECT_EQ(got->shards[1], want.shards[1]);
  EXPECT_EQ(got->part.shards(1).file(), "device-1-1.shard");
  EXPECT_EQ(got->saving_nodes, want.saving_nodes);

  const absl::StatusOr<MemoryCheckpointPart> dropped_iteration = client->Get("job", 1, 10);
  EXPECT_EQ(dropped_iteration.status().code(), absl::StatusCode::kNotFound);
  EXPECT_NE(dropped_iteration.status().message().find("node 1's part of the in-memory checkpoint after iteration 10"),
            std::string::npos)
      << dropped_iteration.status();
  // Another scope sees nothing.
  EXPECT_TRUE(client->List("other")->empty());

  EXPECT_EQ(service_->held_bytes(), 3 * part_bytes);
  absl::StatusOr<int64_t> freed = client->Drop("job");
  ASSERT_TRUE(freed.ok()) << freed.status();
  EXPECT_EQ(*freed, 3 * part_bytes);
  EXPECT_EQ(service_->held_bytes(), 0);
  EXPECT_TRUE(client->List("job")->empty());
}

// --memory_checkpoint_limit_bytes: room for three parts. The third fits; a fourth is
// refused naming the limit and nothing of it is kept; a newer iteration of an owner that
// already holds two replaces the oldest and fits.
TEST_F(MemoryCheckpointTest, APutAboveTheLimitIsRefusedNamingIt) {
  const int64_t part_bytes = kMemoryCheckpointPieceBytes * 5 / 2 + 3;
  MemoryCheckpointLimits limits;
  limits.limit_bytes = 3 * part_bytes + 10;
  Start(limits);
  std::unique_ptr<MemoryCheckpointClient> client = Client();
  ASSERT_TRUE(client->Put("job", Part(0, 10, 'a')).ok());
  ASSERT_TRUE(client->Put("job", Part(0, 20, 'b')).ok());
  ASSERT_TRUE(client->Put("job", Part(1, 20, 'c')).ok());
  const absl::Status refused = client->Put("job", Part(2, 20, 'd'));
  EXPECT_EQ(refused.code(), absl::StatusCode::kResourceExhausted) << refused;
  EXPECT_TRUE(absl::EndsWith(
      refused.message(),
      absl::StrCat("node 2's part of the in-memory checkpoint after iteration 20 of 'job' (", part_bytes,
                         " bytes) is refused: this daemon holds ", 3 * part_bytes,
                         " bytes of in-memory checkpoints, and with it would hold ", 4 * part_bytes,
                         ", above its --memory_checkpoint_limit_bytes=", 3 * part_bytes + 10,
                         "; valid: a larger limit on the daemon, or a smaller --memory_checkpoint_every state")))
      << refused;
  EXPECT_EQ(service_->held_bytes(), 3 * part_bytes);
  EXPECT_EQ(client->Get("job", 2, 20).status().code(), absl::StatusCode::kNotFound);
  // Node 0's iteration 30 takes the place of its iteration 10.
  ASSERT_TRUE(client->Put("job", Part(0, 30, 'e')).ok());
  EXPECT_EQ(service_->held_bytes(), 3 * part_bytes);
  EXPECT_EQ(client->Get("job", 0, 10).status().code(), absl::StatusCode::kNotFound);
  EXPECT_TRUE(client->Get("job", 0, 30).ok());
}

// --memory_checkpoint_idle: a scope nobody used for that long (its launch was killed
// before it could drop it) is dropped by the next call of another launch, and said so;
// a scope in use is kept.
TEST_F(MemoryCheckpointTest, AnIdleLaunchsPartsAreDroppedByTheNextCall) {
  const int64_t part_bytes = kMemoryCheckpointPieceBytes * 5 / 2 + 3;
  auto now = std::make_shared<absl::Time>(absl::FromUnixSeconds(1000));
  auto said = std::make_shared<std::vector<std::string>>();
  MemoryCheckpointLimits limits;
  limits.idle = absl::Minutes(30);
  limits.now = [now] { return *now; };
  limits.log = [said](const std::string& line) { said->push_back(line); };
  Start(limits);
  std::unique_ptr<MemoryCheckpointClient> client = Client();
  ASSERT_TRUE(client->Put("killed", Part(0, 10, 'a')).ok());
  ASSERT_TRUE(client->Put("running", Part(0, 10, 'b')).ok());
  *now += absl::Minutes(20);
  ASSERT_TRUE(client->List("running").ok());  // "running" used at 20 min.
  *now += absl::Minutes(15);                   // "killed" idle 35 min, "running" 15.
  EXPECT_EQ(service_->held_bytes(), 2 * part_bytes);  // Nothing dropped without a call.
  ASSERT_TRUE(client->Put("next", Part(0, 10, 'c')).ok());
  EXPECT_EQ(service_->held_bytes(), 2 * part_bytes);
  EXPECT_TRUE(client->List("killed")->empty());
  EXPECT_EQ(client->List("running")->size(), 1u);
  ASSERT_EQ(said->size(), 1u);
  EXPECT_EQ((*said)[0], absl::StrCat("dropped the in-memory checkpoints of 'killed' (", part_bytes,
                                     " bytes): none of its parts was put, listed or fetched for 35m, at least "
                                     "--memory_checkpoint_idle=30m (a launch that ended without dropping them)"));
}

TEST_F(MemoryCheckpointTest, AnotherTokenIsRefused) {
  const absl::Status status = Client("wrong")->Put("job", Part(0, 10, 'a'));
  EXPECT_EQ(status.code(), absl::StatusCode::kUnauthenticated) << status;
  EXPECT_EQ(service_->held_bytes(), 0);
}

}  // namespace
}  // namespace oneflow::launcher
