// Damaged and crafted plans are refused at load time, never a crash or a hang.
//
// Two kinds of damage, from a fixed seed so every run tries the same cases:
//  - accidents: random bit flips, truncations and splices of a valid plan file's bytes,
//    read back through ReadPlanFile (what inspect, run and launch do). A file is either
//    refused with a message naming it, or it still means exactly the original plan
//    (a flip that protobuf parses back to the same values);
//  - a hostile or buggy tool: random edits of the plan's ids, lists, offsets and
//    counts, resealed so the checksum matches. Each is refused by the verifier, or, when
//    the edit leaves a consistent plan, runs to the end or fails with an error: never
//    the engine's "made no progress" (a deadlock) and never a crash.
#include <cstdio>
#include <random>
#include <string>

#include "actors/runtime.h"
#include "compiler/compiler.h"
#include "plan/plan_checksum.h"
#include "plan/plan_verifier.h"
#include "gtest/gtest.h"
#include "tests/mlp_plan.h"
#include "plan/plan_io.h"

namespace oneflow {
namespace {

proto::Plan DataParallelMlp() {
  testing::MlpPlanSpec spec;
  spec.layout = testing::OnOneNode(/*dp=*/2);
  spec.model.in_features = 8;
  spec.model.hidden = 16;
  spec.model.classes = 4;
  // One collective per gradient (no buckets), so edits of the collective order have
  // several entries to swap.
  spec.options.bucket_mb = 0;
  absl::StatusOr<proto::Plan> plan = testing::CompileMlpPlan(spec);
  EXPECT_TRUE(plan.ok()) << plan.status();
  return *plan;
}

std::string Mutate(const std::string& bytes, std::mt19937_64& random) {
  std::string out = bytes;
  auto position = [&](size_t size) { return static_cast<size_t>(random() % std::max<size_t>(size, 1)); };
  switch (random() % 3) {
    case 0: {  // 1-8 flipped bits
      const int flips = 1 + static_cast<int>(random() % 8);
      for (int f = 0; f < flips; ++f) out[position(out.size())] ^= static_cast<char>(1 << (random() % 8));
      break;
    }
    case 1:  // truncation
      out.resize(position(out.size()));
      break;
    default: {  // splice: a piece copied over another place
      const size_t length = 1 + position(64);
      const size_t from = position(out.size() - std::min(length, out.size()));
      const size_t to = position(out.size() - std::min(length, out.size()));
      out.replace(to, std::min(length, out.size() - to), bytes.substr(from, length));
      break;
    }
  }
  return out;
}

TEST(PlanFuzzTest, DamagedFilesAreRefusedOrMeanTheSamePlan) {
  const proto::Plan plan = DataParallelMlp();
  const std::string original = *SerializePlanDeterministically(plan);
  const std::string path = std::string(getenv("TEST_TMPDIR")) + "/damaged.plan";
  std::mt19937_64 random(20261123);
  int refused = 0, same = 0;
  for (int i = 0; i < 300; ++i) {
    const std::string damaged = Mutate(original, random);
    FILE* file = fopen(path.c_str(), "wb");
    ASSERT_NE(file, nullptr);
    ASSERT_EQ(fwrite(damaged.data(), 1, damaged.size(), file), damaged.size());
    fclose(file);
    const absl::StatusOr<proto::Plan> read = ReadPlanFile(path);
    if (!read.ok()) {
      ++refused;
      EXPECT_EQ(read.status().code(), absl::StatusCode::kInvalidArgument) << read.status();
      EXPECT_EQ(read.status().message().rfind("plan file '" + path + "': ", 0), 0u) << read.status();
      continue;
    }
    ++same;
    EXPECT_EQ(*SerializePlanDeterministically(*read), original) << "mutation " << i << " was accepted as another plan";
  }
  printf("damaged files: %d refused, %d accepted as the same plan\n", refused, same);
  EXPECT_GT(refused, 280) << same << " accepted";
}

// One random edit of the kind a buggy tool makes: an id, a list entry, an offset, a count.
void Edit(proto::Plan* plan, std::mt19937_64& random) {
  proto::DevicePlan* device = plan->mutable_devices(static_cast<int>(random() % plan->devices_size()));
  const int actors = device->actors_size();
  const int registers = device->registers_size();
  proto::ActorDef* actor = device->mutable_actors(static_cast<int>(random() % actors));
  proto::RegisterDef* reg = device->mutable_registers(static_cast<int>(random() % registers));
  const int64_t some_register = static_cast<int64_t>(random() % registers);
  const int64_t some_actor = device->actors(0).id() + static_cast<int64_t>(random() % actors);
  switch (random() % 10) {
    case 0:  // An actor also waits for some register, which names it as a consumer.
      actor->add_consumed_registers(some_register);
      device->mutable_registers(static_cast<int>(some_register))->add_consumer_actors(actor->id());
      break;
    case 1:
      if (!actor->consumed_registers().empty()) actor->set_consumed_registers(0, some_register);
      break;
    case 2:
      reg->set_producer_actor(some_actor);
      break;
    case 3:
      reg->set_offset(reg->offset() + static_cast<int64_t>(random() % 4096) - 2048);
      break;
    case 4:
      reg->set_count(static_cast<int64_t>(random() % 4));
      break;
    case 5:
      reg->set_size_bytes(reg->size_bytes() + static_cast<int64_t>(random() % 64) - 32);
      break;
    case 6:
      if (device->collective_order_size() > 1) {
        device->mutable_collective_order()->SwapElements(0, device->collective_order_size() - 1);
      }
      break;
    case 7:
      actor->add_control_predecessors(some_actor);
      break;
    case 8:
      actor->set_collective_id(static_cast<int64_t>(random() % (plan->collectives_size() + 1)) - 1);
      break;
    default:
      plan->set_register_count(static_cast<int64_t>(random() % 5));
      break;
  }
}

TEST(PlanFuzzTest, CraftedPlansAreRefusedOrRunWithoutHanging) {
  const proto::Plan original = DataParallelMlp();
  std::mt19937_64 random(7);
  int refused = 0, ran = 0;
  for (int i = 0; i < 300; ++i) {
    proto::Plan plan = original;
    Edit(&plan, random);
    ASSERT_TRUE(SealPlan(&plan).ok());
    const absl::Status verified = VerifyPlan(plan);
    if (!verified.ok()) {
      ++refused;
      EXPECT_EQ(verified.code(), absl::StatusCode::kFailedPrecondition) << verified;
      continue;
    }
    ++ran;
    actors::TrainOptions options;
    options.iterations = 2;
    options.progress_timeout = std::chrono::milliseconds(5000);
    options.collective_timeout = absl::Seconds(5);
    const absl::StatusOr<actors::TrainResult> result = actors::TrainPlan(plan, options);
    if (!result.ok()) {
      EXPECT_EQ(result.status().message().find("made no progress"), std::string::npos)
          << "edit " << i << " passed the verifier and deadlocked: " << result.status();
    }
  }
  // Most edits break an invariant; a few (an offset into free arena space, a swap of
  // equal entries) leave a consistent plan that must then run.
  printf("crafted plans: %d refused, %d ran\n", refused, ran);
  EXPECT_GT(refused, 200) << ran << " ran";
}

}  // namespace
}  // namespace oneflow
