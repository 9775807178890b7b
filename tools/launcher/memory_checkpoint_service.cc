#include "tools/launcher/memory_checkpoint_service.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"

namespace oneflow::launcher {
namespace {

grpc::Status InvalidArgument(const std::string& message) {
  return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, message);
}

std::string PartName(const std::string& scope, int64_t owner, int64_t iteration) {
  return absl::StrCat("node ", owner, "'s part of the in-memory checkpoint after iteration ", iteration,
                      " of '", scope, "'");
}

}  // namespace

MemoryCheckpointService::MemoryCheckpointService(std::shared_ptr<const TokenAuthorizer> authorizer,
                                                 MemoryCheckpointLimits limits)
    : authorizer_(std::move(authorizer)), limits_(std::move(limits)) {}

int64_t MemoryCheckpointService::ScopeBytes(const Scope& scope) {
  int64_t bytes = 0;
  for (const auto& [owner, iterations] : scope.owners) {
    for (const auto& [iteration, part] : iterations) bytes += static_cast<int64_t>(part.data->size());
  }
  return bytes;
}

int64_t MemoryCheckpointService::HeldBytes() const {
  int64_t bytes = 0;
  for (const auto& [name, scope] : scopes_) bytes += ScopeBytes(scope);
  return bytes;
}

void MemoryCheckpointService::DropIdleScopes(const std::string& keep) {
  const absl::Time now = limits_.now();
  for (auto scope = scopes_.begin(); scope != scopes_.end();) {
    if (scope->first == keep || now - scope->second.last_used < limits_.idle) {
      ++scope;
      continue;
    }
    if (limits_.log) {
      limits_.log(absl::StrCat("dropped the in-memory checkpoints of '", scope->first, "' (", ScopeBytes(scope->second),
                               " bytes): none of its parts was put, listed or fetched for ",
                               absl::FormatDuration(now - scope->second.last_used),
                               ", at least --memory_checkpoint_idle=", absl::FormatDuration(limits_.idle),
                               " (a launch that ended without dropping them)"));
    }
    scope = scopes_.erase(scope);
  }
  const auto found = scopes_.find(keep);
  if (found != scopes_.end()) found->second.last_used = now;
}

grpc::Status MemoryCheckpointService::Put(grpc::ServerContext* context,
                                          grpc::ServerReader<proto::MemoryCheckpointPiece>* reader,
                                          proto::MemoryPutResponse* response) {
  if (grpc::Status denied = authorizer_->Check(*context, "MemoryCheckpoints.Put"); !denied.ok()) return denied;
  proto::MemoryCheckpointPiece header;
  auto data = std::make_shared<std::string>();
  proto::MemoryCheckpointPiece piece;
  bool first = true;
  while (reader->Read(&piece)) {
    if (first) {
      header = piece;
      header.clear_data();
      first = false;
    }
    data->append(piece.data());
  }
  if (first) return InvalidArgument("MemoryCheckpoints.Put: no piece was sent");
  if (header.scope().empty()) return InvalidArgument("MemoryCheckpoints.Put: scope is empty");
  if (header.owner_node() < 0 || header.iteration() < 0) {
    return InvalidArgument(absl::StrCat("MemoryCheckpoints.Put: owner_node ", header.owner_node(), " and iteration ",
                                        header.iteration(), " must be >= 0"));
  }
  int64_t listed = 0;
  for (const proto::CheckpointShard& shard : header.part().shards()) listed += shard.size_bytes();
  const std::string name = PartName(header.scope(), header.owner_node(), header.iteration());
  if (listed != static_cast<int64_t>(data->size())) {
    // A sender that stopped half-way: nothing of it is kept.
    return InvalidArgument(absl::StrCat(name, ": ", data->size(), " bytes arrived, its shards list ", listed));
  }
  Part part;
  part.part = std::move(*header.mutable_part());
  part.saving_nodes.assign(header.saving_nodes().begin(), header.saving_nodes().end());
  part.data = std::move(data);
  std::lock_guard<std::mutex> lock(mutex_);
  DropIdleScopes(header.scope());
  if (limits_.limit_bytes > 0) {
    // What stays once this part is in: the owner's oldest iteration goes when it would
    // be one more than kept, and a part of the same iteration is replaced.
    int64_t freed = 0;
    const auto scope = scopes_.find(header.scope());
    if (scope != scopes_.end()) {
      const auto owner = scope->second.owners.find(header.owner_node());
      if (owner != scope->second.owners.end()) {
        const auto same = owner->second.find(header.iteration());
        if (same != owner->second.end()) {
          freed = static_cast<int64_t>(same->second.data->size());
        } else if (owner->second.size() >= static_cast<size_t>(kMemoryCheckpointsKept) &&
                   owner->second.begin()->first < header.iteration()) {
          freed = static_cast<int64_t>(owner->second.begin()->second.data->size());
        }
      }
    }
    const int64_t held = HeldBytes();
    if (held - freed + listed > limits_.limit_bytes) {
      return grpc::Status(
          grpc::StatusCode::RESOURCE_EXHAUSTED,
          absl::StrCat(name, " (", listed, " bytes) is refused: this daemon holds ", held,
                       " bytes of in-memory checkpoints, and with it would hold ", held - freed + listed,
                       ", above its --memory_checkpoint_limit_bytes=", limits_.limit_bytes,
                       "; valid: a larger limit on the daemon, or a smaller --memory_checkpoint_every state"));
    }
  }
  Scope& scope = scopes_[header.scope()];
  scope.last_used = limits_.now();
  std::map<int64_t, Part>& iterations = scope.owners[header.owner_node()];
  iterations[header.iteration()] = std::move(part);
  while (iterations.size() > static_cast<size_t>(kMemoryCheckpointsKept)) iterations.erase(iterations.begin());
  response->set_bytes(listed);
  return grpc::Status::OK;
}

grpc::Status MemoryCheckpointService::List(grpc::ServerContext* context, const proto::MemoryListRequest* request,
                                           proto::MemoryListResponse* response) {
  if (grpc::Status denied = authorizer_->Check(*context, "MemoryCheckpoints.List"); !denied.ok()) return denied;
  std::lock_guard<std::mutex> lock(mutex_);
  DropIdleScopes(request->scope());
  const auto scope = scopes_.find(request->scope());
  if (scope == scopes_.end()) return grpc::Status::OK;
  for (const auto& [owner, iterations] : scope->second.owners) {
    for (const auto& [iteration, part] : iterations) {
      proto::MemoryCheckpointEntry* entry = response->add_entries();
      entry->set_owner_node(owner);
      entry->set_iteration(iteration);
      entry->set_bytes(static_cast<int64_t>(part.data->size()));
      for (int64_t node : part.saving_nodes) entry->add_saving_nodes(node);
    }
  }
  return grpc::Status::OK;
}

grpc::Status MemoryCheckpointService::Get(grpc::ServerContext* context, const proto::MemoryGetRequest* request,
                                          grpc::ServerWriter<proto::MemoryCheckpointPiece>* writer) {
  if (grpc::Status denied = authorizer_->Check(*context, "MemoryCheckpoints.Get"); !denied.ok()) return denied;
  Part part;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    DropIdleScopes(request->scope());
    const auto scope = scopes_.find(request->scope());
    if (scope != scopes_.end()) {
      const auto owner = scope->second.owners.find(request->owner_node());
      if (owner != scope->second.owners.end()) {
        const auto found = owner->second.find(request->iteration());
        if (found != owner->second.end()) part = found->second;
      }
    }
  }
  if (part.data == nullptr) {
    return grpc::Status(grpc::StatusCode::NOT_FOUND,
                        absl::StrCat(PartName(request->scope(), request->owner_node(), request->iteration()),
                                     " is not held here"));
  }
  const std::string& data = *part.data;
  size_t offset = 0;
  do {
    proto::MemoryCheckpointPiece piece;
    if (offset == 0) {
      piece.set_scope(request->scope());
      piece.set_owner_node(request->owner_node());
      piece.set_iteration(request->iteration());
      *piece.mutable_part() = part.part;
      for (int64_t node : part.saving_nodes) piece.add_saving_nodes(node);
    }
    const size_t size = std::min(data.size() - offset, static_cast<size_t>(kMemoryCheckpointPieceBytes));
    piece.set_data(data.substr(offset, size));
    offset += size;
    if (!writer->Write(piece)) return grpc::Status(grpc::StatusCode::CANCELLED, "the reader went away");
  } while (offset < data.size());
  return grpc::Status::OK;
}

grpc::Status MemoryCheckpointService::Drop(grpc::ServerContext* context, const proto::MemoryDropRequest* request,
                                           proto::MemoryDropResponse* response) {
  if (grpc::Status denied = authorizer_->Check(*context, "MemoryCheckpoints.Drop"); !denied.ok()) return denied;
  std::lock_guard<std::mutex> lock(mutex_);
  DropIdleScopes(request->scope());
  const auto scope = scopes_.find(request->scope());
  if (scope == scopes_.end()) return grpc::Status::OK;
  response->set_bytes(ScopeBytes(scope->second));
  scopes_.erase(scope);
  return grpc::Status::OK;
}

int64_t MemoryCheckpointService::held_bytes() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return HeldBytes();
}

}  // namespace oneflow::launcher
