#include "tools/launcher/memory_checkpoint_client.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "tools/launcher/address.h"
#include "tools/launcher/auth.h"
#include "tools/launcher/credentials.h"
#include "tools/launcher/grpc_status.h"
#include "tools/launcher/memory_checkpoint_service.h"

namespace oneflow::launcher {
namespace {

std::string PartName(int64_t owner, int64_t iteration) {
  return absl::StrCat("node ", owner, "'s part of the in-memory checkpoint after iteration ", iteration);
}

}  // namespace

absl::StatusOr<std::unique_ptr<MemoryCheckpointClient>> MemoryCheckpointClient::Create(
    const std::string& address, const std::string& token, const std::string& tls_ca_file, absl::Duration timeout) {
  absl::StatusOr<HostPort> parsed = ParseHostPort(address, "daemon address");
  if (!parsed.ok()) return parsed.status();
  absl::StatusOr<std::shared_ptr<grpc::Channel>> channel = MakeChannel(address, tls_ca_file);
  if (!channel.ok()) return channel.status();
  return std::unique_ptr<MemoryCheckpointClient>(
      new MemoryCheckpointClient(address, token, timeout, proto::MemoryCheckpoints::NewStub(*channel)));
}

MemoryCheckpointClient::MemoryCheckpointClient(std::string address, std::string token, absl::Duration timeout,
                                               std::unique_ptr<proto::MemoryCheckpoints::Stub> stub)
    : address_(std::move(address)), token_(std::move(token)), timeout_(timeout), stub_(std::move(stub)) {}

void MemoryCheckpointClient::Prepare(grpc::ClientContext* context) const {
  AttachToken(context, token_);
  context->set_deadline(absl::ToChronoTime(absl::Now() + timeout_));
}

absl::Status MemoryCheckpointClient::Put(const std::string& scope, const MemoryCheckpointPart& part) {
  grpc::ClientContext context;
  Prepare(&context);
  proto::MemoryPutResponse response;
  std::unique_ptr<grpc::ClientWriter<proto::MemoryCheckpointPiece>> writer = stub_->Put(&context, &response);
  proto::MemoryCheckpointPiece header;
  header.set_scope(scope);
  header.set_owner_node(part.owner_node);
  header.set_iteration(part.iteration);
  *header.mutable_part() = part.part;
  for (int64_t node : part.saving_nodes) header.add_saving_nodes(node);
  bool first = true, sent = true;
  auto send = [&](std::string data) {
    proto::MemoryCheckpointPiece piece;
    if (first) piece = header;
    first = false;
    piece.set_data(std::move(data));
    sent = sent && writer->Write(piece);
  };
  for (const std::string& shard : part.shards) {
    for (size_t offset = 0; offset < shard.size() && sent; offset += kMemoryCheckpointPieceBytes) {
      send(shard.substr(offset, std::min(shard.size() - offset, static_cast<size_t>(kMemoryCheckpointPieceBytes))));
    }
  }
  if (first) send("");  // No shard bytes: the header alone.
  writer->WritesDone();
  return FromGrpcStatus(writer->Finish(),
                        absl::StrCat("daemon ", address_, ": MemoryCheckpoints.Put of ",
                                     PartName(part.owner_node, part.iteration)));
}

absl::StatusOr<std::vector<proto::MemoryCheckpointEntry>> MemoryCheckpointClient::List(const std::string& scope) {
  grpc::ClientContext context;
  Prepare(&context);
  proto::MemoryListRequest request;
  request.set_scope(scope);
  proto::MemoryListResponse response;
  const grpc::Status status = stub_->List(&context, request, &response);
  if (!status.ok()) return FromGrpcStatus(status, absl::StrCat("daemon ", address_, ": MemoryCheckpoints.List"));
  return std::vector<proto::MemoryCheckpointEntry>(response.entries().begin(), response.entries().end());
}

absl::StatusOr<MemoryCheckpointPart> MemoryCheckpointClient::Get(const std::string& scope, int64_t owner_node,
                                                                 int64_t iteration) {
  grpc::ClientContext context;
  Prepare(&context);
  proto::MemoryGetRequest request;
  request.set_scope(scope);
  request.set_owner_node(owner_node);
  request.set_iteration(iteration);
  std::unique_ptr<grpc::ClientReader<proto::MemoryCheckpointPiece>> reader = stub_->Get(&context, request);
  MemoryCheckpointPart part;
  part.owner_node = owner_node;
  part.iteration = iteration;
  std::string data;
  proto::MemoryCheckpointPiece piece;
  bool first = true;
  while (reader->Read(&piece)) {
    if (first) {
      part.part = std::move(*piece.mutable_part());
      part.saving_nodes.assign(piece.saving_nodes().begin(), piece.saving_nodes().end());
      first = false;
    }
    data.append(piece.data());
  }
  const std::string what = absl::StrCat("daemon ", address_, ": MemoryCheckpoints.Get of ",
                                        PartName(owner_node, iteration));
  if (const grpc::Status status = reader->Finish(); !status.ok()) return FromGrpcStatus(status, what);
  size_t offset = 0;
  for (const proto::CheckpointShard& shard : part.part.shards()) {
    const size_t size = static_cast<size_t>(shard.size_bytes());
    if (offset + size > data.size()) break;
    part.shards.push_back(data.substr(offset, size));
    offset += size;
  }
  if (first || part.shards.size() != static_cast<size_t>(part.part.shards_size()) || offset != data.size()) {
    return absl::DataLossError(absl::StrCat(what, ": ", data.size(), " bytes arrived, which do not match the ",
                                            part.part.shards_size(), " shards it lists"));
  }
  return part;
}

absl::StatusOr<int64_t> MemoryCheckpointClient::Drop(const std::string& scope) {
  grpc::ClientContext context;
  Prepare(&context);
  proto::MemoryDropRequest request;
  request.set_scope(scope);
  proto::MemoryDropResponse response;
  const grpc::Status status = stub_->Drop(&context, request, &response);
  if (!status.ok()) return FromGrpcStatus(status, absl::StrCat("daemon ", address_, ": MemoryCheckpoints.Drop"));
  return response.bytes();
}

}  // namespace oneflow::launcher
