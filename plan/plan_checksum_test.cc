// The checksum is the CRC of a plan's bytes without its checksum field: these check that a
// plan in memory (PlanChecksum, streamed) and the same plan as bytes read back
// (SerializedPlanChecksum, as a reader computes it) give the CRC of a copy serialized with
// the field cleared, that every field counts, and that damaged bytes are refused.
#include "plan/plan_checksum.h"

#include <zlib.h>

#include <string>

#include "gtest/gtest.h"
#include "proto/plan.pb.h"

namespace oneflow {
namespace {

// CRC-32 of protobuf's deterministic serialization of `plan` without its checksum.
uint32_t ReferenceChecksum(const proto::Plan& plan) {
  proto::Plan unsealed = plan;
  unsealed.clear_checksum();
  const std::string bytes = *SerializePlanDeterministically(unsealed);
  return static_cast<uint32_t>(
      crc32(crc32(0L, Z_NULL, 0), reinterpret_cast<const Bytef*>(bytes.data()), static_cast<uInt>(bytes.size())));
}

// A plan whose devices set every field, with values that are zero, negative, large,
// out of their enum's range, and maps of several keys in no particular order.
proto::Plan EveryDeviceField() {
  proto::Plan plan;
  plan.set_format_version(2);
  plan.set_register_count(2);
  plan.add_collectives()->set_id(0);
  plan.mutable_cluster()->set_num_nodes(1);
  plan.set_checksum(0x12345678);
  plan.set_bucket_bytes_limit(1 << 20);  // Field 21: after the devices and the checksum.
  proto::DevicePlan* device = plan.add_devices();
  device->mutable_device()->set_node(0);  // Present though both fields are 0.
  device->set_peak_bytes(int64_t{1} << 40);
  device->set_lower_bound_bytes(-1);
  device->set_bytes_sent_per_iter(300);
  device->set_bytes_received_per_iter(127);
  device->set_register_count(3);
  device->set_pipeline_stage(0);  // Optional: written because it is set.
  device->add_collective_order(0);
  device->add_collective_order(1 << 20);
  for (int b = 0; b < 2; ++b) {
    proto::MemoryBlock* block = device->add_memory_blocks();
    block->set_id(b);
    block->set_size_bytes(4096 * b);
    block->set_persistent(b == 0);
    block->set_slot_stride_bytes(b == 0 ? 0 : 2048);
  }
  proto::ActorDef* actor = device->add_actors();
  actor->set_id(0);
  actor->set_name("a name longer than the small-string buffer");
  actor->set_kind(proto::ACTOR_COMPUTE);
  actor->set_thread(static_cast<proto::ThreadKind>(-3));  // Written as 10 bytes.
  actor->set_collective_id(-1);
  actor->add_consumed_registers(1);
  actor->add_produced_registers(0);
  actor->add_produced_registers(int64_t{1} << 62);
  actor->add_control_predecessors(-7);
  actor->set_boxing_id(5);
  actor->set_boxing_step(0);
  actor->set_per_iteration(true);
  actor->set_after_micro_batches(true);
  actor->set_bucket_id(0);  // Optional: written because it is set.
  for (int k = 0; k < 2; ++k) {
    proto::KernelDef* kernel = actor->add_kernels();
    kernel->set_name(k == 0 ? "matmul" : "");
    kernel->set_op_name("op");
    (*kernel->mutable_inputs())["b"] = 1;
    (*kernel->mutable_inputs())["a"] = 0;  // Written although 0.
    (*kernel->mutable_inputs())[""] = -2;  // An empty key is written too.
    (*kernel->mutable_inputs())["in_10"] = 3;
    (*kernel->mutable_inputs())["in_9"] = 4;
    (*kernel->mutable_outputs())["out"] = 0;
  }
  device->add_actors()->set_id(1);  // Every field at its default.
  proto::RegisterDef* reg = device->add_registers();
  reg->set_id(0);
  reg->set_tensor("t");
  reg->set_producer_actor(0);
  reg->add_consumer_actors(1);
  reg->add_consumer_actors(0);
  reg->set_count(2);
  reg->set_size_bytes(400);
  reg->add_shape(10);
  reg->add_shape(0);
  reg->add_shape(10);
  reg->set_dtype(proto::DTYPE_F32);
  reg->set_memory_block(1);
  reg->set_offset(128);
  reg->set_persistent(true);
  reg->set_alias_of(0);  // Optional: written because it is set.
  reg->set_per_iteration(true);
  reg->set_alias_offset_bytes(64);
  device->add_registers()->set_dtype(static_cast<proto::DataType>(-1));
  plan.add_devices();  // An empty device: no id, nothing else.
  return plan;
}

TEST(PlanChecksumTest, DevicePlansGiveTheCrcOfTheDeterministicSerialization) {
  const proto::Plan plan = EveryDeviceField();
  EXPECT_EQ(*PlanChecksum(plan), ReferenceChecksum(plan));
}

TEST(PlanChecksumTest, EveryDeviceFieldCounts) {
  const proto::Plan plan = EveryDeviceField();
  const uint32_t sealed = *PlanChecksum(plan);
  auto differs = [&](auto edit) {
    proto::Plan edited = plan;
    edit(edited.mutable_devices(0));
    const uint32_t checksum = *PlanChecksum(edited);
    EXPECT_EQ(checksum, ReferenceChecksum(edited));
    return checksum != sealed;
  };
  EXPECT_TRUE(differs([](proto::DevicePlan* d) { d->mutable_device()->set_device(1); }));
  EXPECT_TRUE(differs([](proto::DevicePlan* d) { d->clear_pipeline_stage(); }));
  EXPECT_TRUE(differs([](proto::DevicePlan* d) { d->mutable_memory_blocks(1)->set_slot_stride_bytes(1); }));
  EXPECT_TRUE(differs([](proto::DevicePlan* d) { d->mutable_actors(0)->clear_bucket_id(); }));
  EXPECT_TRUE(differs([](proto::DevicePlan* d) { d->mutable_actors(0)->set_control_predecessors(0, 7); }));
  EXPECT_TRUE(differs([](proto::DevicePlan* d) {
    (*d->mutable_actors(0)->mutable_kernels(1)->mutable_inputs())["in_9"] = 5;
  }));
  EXPECT_TRUE(differs([](proto::DevicePlan* d) { d->mutable_registers(0)->clear_alias_of(); }));
  EXPECT_TRUE(differs([](proto::DevicePlan* d) { d->mutable_registers(0)->set_alias_offset_bytes(0); }));
  EXPECT_TRUE(differs([](proto::DevicePlan* d) { d->mutable_registers(1)->set_tensor("u"); }));
}

// Kernel attributes and fields this build does not know count like any other.
TEST(PlanChecksumTest, AttributesAndUnknownFieldsCount) {
  proto::Plan with_attrs = EveryDeviceField();
  (*with_attrs.mutable_devices(0)->mutable_actors(0)->mutable_kernels(0)->mutable_attrs())["axis"].set_i(1);
  EXPECT_EQ(*PlanChecksum(with_attrs), ReferenceChecksum(with_attrs));

  proto::Plan with_unknown = EveryDeviceField();
  proto::RegisterDef* reg = with_unknown.mutable_devices(0)->mutable_registers(0);
  reg->GetReflection()->MutableUnknownFields(reg)->AddVarint(99, 1);
  const uint32_t checksum = *PlanChecksum(with_unknown);
  EXPECT_EQ(checksum, ReferenceChecksum(with_unknown));
  EXPECT_NE(checksum, *PlanChecksum(EveryDeviceField()));
}

// A reader's check: the CRC of the bytes it read equals the checksum the writer sealed,
// wherever the checksum field sits among the bytes.
TEST(PlanChecksumTest, TheBytesOfASealedPlanCarryItsChecksum) {
  proto::Plan plan = EveryDeviceField();
  ASSERT_TRUE(SealPlan(&plan).ok());
  const std::string bytes = *SerializePlanDeterministically(plan);
  EXPECT_EQ(*SerializedPlanChecksum(bytes), plan.checksum());
  EXPECT_EQ(plan.checksum(), ReferenceChecksum(plan));
  EXPECT_TRUE(VerifySerializedPlanChecksum(plan, bytes).ok());
  // The checksum field written last instead of between fields 9 and 20: the same CRC.
  proto::Plan unsealed = plan;
  unsealed.clear_checksum();
  std::string moved = *SerializePlanDeterministically(unsealed);
  proto::Plan only_checksum;
  only_checksum.set_checksum(plan.checksum());
  moved += only_checksum.SerializeAsString();
  EXPECT_EQ(*SerializedPlanChecksum(moved), plan.checksum());
}

// Every single flipped byte of a sealed plan's bytes is refused (the parse of most of
// them still succeeds: protobuf reads damage as some other plan).
TEST(PlanChecksumTest, AFlippedByteIsRefused) {
  proto::Plan plan = EveryDeviceField();
  ASSERT_TRUE(SealPlan(&plan).ok());
  const std::string bytes = *SerializePlanDeterministically(plan);
  int parsed = 0;
  for (size_t i = 0; i < bytes.size(); ++i) {
    std::string damaged = bytes;
    damaged[i] = static_cast<char>(damaged[i] ^ 0x10);
    proto::Plan read;
    if (!read.ParseFromString(damaged)) continue;
    ++parsed;
    const absl::Status status = VerifySerializedPlanChecksum(read, damaged);
    EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition) << "byte " << i;
  }
  EXPECT_GT(parsed, static_cast<int>(bytes.size()) / 2);
}

// A plan that is written is sealed by the serialization that is written: the checksum is
// SealPlan's, and the bytes are the sealed plan's deterministic serialization.
TEST(PlanChecksumTest, SealAndSerializeGivesTheSealedPlansBytes) {
  proto::Plan sealed = EveryDeviceField();
  ASSERT_TRUE(SealPlan(&sealed).ok());
  proto::Plan plan = EveryDeviceField();  // Carries a stale checksum (0x12345678).
  const absl::StatusOr<std::string> bytes = SealAndSerializePlan(&plan);
  ASSERT_TRUE(bytes.ok()) << bytes.status();
  EXPECT_EQ(plan.checksum(), sealed.checksum());
  EXPECT_EQ(plan.checksum(), ReferenceChecksum(plan));
  EXPECT_EQ(*bytes, *SerializePlanDeterministically(sealed));
  proto::Plan read;
  ASSERT_TRUE(read.ParseFromString(*bytes));
  EXPECT_EQ(read.checksum(), plan.checksum());
  EXPECT_TRUE(VerifySerializedPlanChecksum(read, *bytes).ok());
}

// The devices are serialized on threads into their places: with more devices than
// threads, devices of different sizes (one empty), and fields the build does not know
// (written last), the bytes are still protobuf's for the whole plan.
TEST(PlanChecksumTest, SealAndSerializeOfManyDevicesIsProtobufsSerialization) {
  proto::Plan plan = EveryDeviceField();
  for (int d = 0; d < 20; ++d) {
    proto::DevicePlan* device = plan.add_devices();
    *device = plan.devices(d % 2);
    for (int a = 0; a < d * 37; ++a) device->add_actors()->set_id(a);  // Lengths of 1 and 2 bytes.
  }
  plan.GetReflection()->MutableUnknownFields(&plan)->AddVarint(3000, 7);
  const absl::StatusOr<std::string> bytes = SealAndSerializePlan(&plan);
  ASSERT_TRUE(bytes.ok()) << bytes.status();
  EXPECT_EQ(*bytes, *SerializePlanDeterministically(plan));
  EXPECT_EQ(plan.checksum(), ReferenceChecksum(plan));
  EXPECT_EQ(*SerializedPlanChecksum(*bytes), plan.checksum());
}

// CRC-32 register after `bytes` (zlib's CRC without its final inversion).
uint32_t CrcRegister(const std::string& bytes) {
  return ~static_cast<uint32_t>(
      crc32(crc32(0L, Z_NULL, 0), reinterpret_cast<const Bytef*>(bytes.data()), static_cast<uInt>(bytes.size())));
}

// The four bytes that, appended to `prefix`, make its CRC-32 zero: the register is run
// backwards from the one a zero CRC ends in (each table entry's top byte is unique).
std::string BytesForZeroCrc(const std::string& prefix) {
  uint32_t table[256];
  for (uint32_t i = 0; i < 256; ++i) {
    uint32_t c = i;
    for (int k = 0; k < 8; ++k) c = (c & 1) ? (c >> 1) ^ 0xEDB88320u : c >> 1;
    table[i] = c;
  }
  uint32_t wanted = ~0u;  // The register of a zero CRC.
  for (int k = 0; k < 4; ++k) {
    uint32_t index = 0;
    while ((table[index] >> 24) != (wanted >> 24)) ++index;
    wanted = ((wanted ^ table[index]) << 8) | index;
  }
  const uint32_t value = wanted ^ CrcRegister(prefix);
  std::string bytes(4, '\0');
  for (int k = 0; k < 4; ++k) bytes[k] = static_cast<char>((value >> (8 * k)) & 0xff);
  return bytes;
}

// proto3 does not write a zero checksum: a plan whose CRC is zero (one in 2^32) is
// written without the field, as SerializePlanDeterministically writes it.
TEST(PlanChecksumTest, SealAndSerializeWritesAZeroChecksumAsProtobufDoes) {
  // The recipe's text is the plan's last bytes: its last four are chosen to make the CRC
  // zero, and kept ASCII (a string field must be UTF-8) by trying other first bytes.
  proto::Plan plan = EveryDeviceField();
  plan.clear_checksum();
  bool found = false;
  for (int attempt = 0; attempt < 256 && !found; ++attempt) {
    const std::string start = "recipe " + std::to_string(attempt) + " ";
    plan.mutable_recipe()->set_graph_text(start + "0000");
    const std::string bytes = *SerializePlanDeterministically(plan);
    const std::string tail = BytesForZeroCrc(bytes.substr(0, bytes.size() - 4));
    found = true;
    for (char c : tail) found = found && static_cast<unsigned char>(c) < 0x80;
    if (found) plan.mutable_recipe()->set_graph_text(start + tail);
  }
  ASSERT_TRUE(found);
  ASSERT_EQ(ReferenceChecksum(plan), 0u);
  plan.set_checksum(0x12345678);
  const absl::StatusOr<std::string> bytes = SealAndSerializePlan(&plan);
  ASSERT_TRUE(bytes.ok()) << bytes.status();
  EXPECT_EQ(plan.checksum(), 0u);
  EXPECT_EQ(*bytes, *SerializePlanDeterministically(plan));
  EXPECT_TRUE(VerifySerializedPlanChecksum(plan, *bytes).ok());
}

TEST(PlanChecksumTest, BytesThatEndInsideAFieldAreRefused) {
  proto::Plan plan = EveryDeviceField();
  ASSERT_TRUE(SealPlan(&plan).ok());
  const std::string bytes = *SerializePlanDeterministically(plan);
  const absl::StatusOr<uint32_t> truncated = SerializedPlanChecksum(bytes.substr(0, bytes.size() - 1));
  EXPECT_EQ(truncated.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(truncated.status().message(),
            "the plan's bytes end inside a field or hold a group: not a serialized plan");
}

}  // namespace
}  // namespace oneflow
