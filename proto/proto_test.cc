// Checks that the cc_proto macro produced working libraries: messages from every proto
// (including cross-file imports) round-trip through the wire format, and the launcher
// service has its generated gRPC stubs.
#include <string>

#include "gtest/gtest.h"
#include "google/protobuf/io/coded_stream.h"
#include "google/protobuf/io/zero_copy_stream_impl_lite.h"
#include "google/protobuf/util/message_differencer.h"
#include "proto/launcher.grpc.pb.h"
#include "proto/plan.pb.h"

namespace oneflow::proto {
namespace {

std::string DeterministicBytes(const google::protobuf::Message& message) {
  std::string bytes;
  google::protobuf::io::StringOutputStream stream(&bytes);
  google::protobuf::io::CodedOutputStream coded(&stream);
  coded.SetSerializationDeterministic(true);
  message.SerializeToCodedStream(&coded);
  coded.Trim();
  return bytes;
}

Plan SmallPlan() {
  Plan plan;
  plan.set_format_version(1);
  plan.mutable_cluster()->set_num_nodes(1);
  plan.mutable_cluster()->set_devices_per_node(2);
  TensorDef* x = plan.mutable_job()->add_tensors();
  x->set_name("x");
  x->add_shape(64);
  x->add_shape(32);
  x->set_dtype(DTYPE_F32);
  x->mutable_sbp_hint()->add_sbp()->mutable_split()->set_axis(0);
  OpDef* op = plan.mutable_job()->add_ops();
  op->set_name("mm");
  op->set_type("matmul");
  (*op->mutable_inputs())["a"] = "x";
  (*op->mutable_inputs())["b"] = "w";
  (*op->mutable_attrs())["transpose_b"].set_b(true);
  CollectiveDef* all_reduce = plan.add_collectives();
  all_reduce->set_kind(ALL_REDUCE);
  all_reduce->mutable_src_sbp()->add_sbp()->mutable_partial()->set_op(REDUCE_SUM);
  all_reduce->mutable_dst_sbp()->add_sbp()->mutable_broadcast();
  all_reduce->mutable_compression()->set_kind(Compression::FP8_E4M3);
  DevicePlan* device = plan.add_devices();
  device->mutable_device()->set_device(1);
  RegisterDef* reg = device->add_registers();
  reg->set_count(2);
  reg->set_size_bytes(4096);
  reg->add_consumer_actors(3);
  return plan;
}

TEST(ProtoTest, PlanRoundTripsThroughTheWireFormat) {
  const Plan plan = SmallPlan();
  Plan parsed;
  ASSERT_TRUE(parsed.ParseFromString(DeterministicBytes(plan)));
  EXPECT_TRUE(google::protobuf::util::MessageDifferencer::Equals(plan, parsed));
  EXPECT_EQ(parsed.job().ops(0).inputs().at("a"), "x");
  EXPECT_EQ(parsed.collectives(0).compression().kind(), Compression::FP8_E4M3);
  EXPECT_EQ(parsed.devices(0).registers(0).size_bytes(), 4096);
}

TEST(ProtoTest, DeterministicSerializationIsStableAcrossMapInsertionOrder) {
  // Maps serialize in hash order unless deterministic; plans must be byte-identical.
  Plan first = SmallPlan();
  Plan second = SmallPlan();
  OpDef* a = first.mutable_job()->mutable_ops(0);
  OpDef* b = second.mutable_job()->mutable_ops(0);
  for (int i = 0; i < 50; ++i) (*a->mutable_attrs())["k" + std::to_string(i)].set_i(i);
  for (int i = 49; i >= 0; --i) (*b->mutable_attrs())["k" + std::to_string(i)].set_i(i);
  EXPECT_EQ(DeterministicBytes(first), DeterministicBytes(second));
}

TEST(ProtoTest, TruncatedPlanDoesNotParse) {
  const std::string bytes = DeterministicBytes(SmallPlan());
  Plan parsed;
  EXPECT_FALSE(parsed.ParseFromString(bytes.substr(0, bytes.size() / 2)));
}

TEST(ProtoTest, LauncherServiceHasGeneratedStubs) {
  // The gRPC plugin ran: the service's full name and method set exist.
  EXPECT_STREQ(Launcher::service_full_name(), "oneflow.proto.Launcher");
  const google::protobuf::ServiceDescriptor* service =
      google::protobuf::DescriptorPool::generated_pool()->FindServiceByName(
          "oneflow.proto.Launcher");
  ASSERT_NE(service, nullptr);
  EXPECT_NE(service->FindMethodByName("Submit"), nullptr);
  EXPECT_TRUE(service->FindMethodByName("Submit")->server_streaming());
  EXPECT_NE(service->FindMethodByName("Health"), nullptr);
  EXPECT_STREQ(Rendezvous::service_full_name(), "oneflow.proto.Rendezvous");
  const google::protobuf::ServiceDescriptor* rendezvous =
      google::protobuf::DescriptorPool::generated_pool()->FindServiceByName("oneflow.proto.Rendezvous");
  ASSERT_NE(rendezvous, nullptr);
  EXPECT_NE(rendezvous->FindMethodByName("KvWait"), nullptr);
  EXPECT_NE(rendezvous->FindMethodByName("KvAdd"), nullptr);
}

}  // namespace
}  // namespace oneflow::proto
