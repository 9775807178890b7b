#include "tools/launcher/rendezvous_service.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "tools/launcher/grpc_status.h"

namespace oneflow::launcher {
namespace {

grpc::Status InvalidArgument(const std::string& message) {
  return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, message);
}

// A job id and a key are what scope a value; empty ones are a client bug worth naming.
grpc::Status CheckJobAndKey(const std::string& method, const std::string& job_id, const std::string& key) {
  if (job_id.empty()) return InvalidArgument(absl::StrCat(method, ": job_id is empty"));
  if (key.empty()) return InvalidArgument(absl::StrCat(method, ": key is empty"));
  return grpc::Status::OK;
}

}  // namespace

RendezvousService::RendezvousService(std::shared_ptr<const TokenAuthorizer> authorizer)
    : authorizer_(std::move(authorizer)) {}

grpc::Status RendezvousService::KvSet(grpc::ServerContext* context, const proto::KvSetRequest* request,
                                      proto::KvSetResponse*) {
  if (grpc::Status denied = authorizer_->Check(*context, "Rendezvous.KvSet"); !denied.ok()) return denied;
  if (grpc::Status bad = CheckJobAndKey("KvSet", request->job_id(), request->key()); !bad.ok()) return bad;
  return ToGrpcStatus(store_.Set(request->job_id(), request->key(), request->value()));
}

grpc::Status RendezvousService::KvGet(grpc::ServerContext* context, const proto::KvGetRequest* request,
                                      proto::KvGetResponse* response) {
  if (grpc::Status denied = authorizer_->Check(*context, "Rendezvous.KvGet"); !denied.ok()) return denied;
  if (grpc::Status bad = CheckJobAndKey("KvGet", request->job_id(), request->key()); !bad.ok()) return bad;
  absl::StatusOr<std::string> value = store_.Get(request->job_id(), request->key());
  if (absl::IsNotFound(value.status())) {
    response->set_found(false);
    return grpc::Status::OK;
  }
  if (!value.ok()) return ToGrpcStatus(value.status());
  response->set_found(true);
  response->set_value(*std::move(value));
  return grpc::Status::OK;
}

grpc::Status RendezvousService::KvWait(grpc::ServerContext* context, const proto::KvWaitRequest* request,
                                       proto::KvWaitResponse*) {
  if (grpc::Status denied = authorizer_->Check(*context, "Rendezvous.KvWait"); !denied.ok()) return denied;
  if (request->job_id().empty()) return InvalidArgument("KvWait: job_id is empty");
  for (const std::string& key : request->keys()) {
    if (key.empty()) return InvalidArgument("KvWait: a key is empty");
  }
  const double seconds = request->timeout_s();
  if (!std::isfinite(seconds) || seconds < 0) {
    return InvalidArgument(absl::StrCat("KvWait: timeout_s=", seconds, " is not a number of seconds >= 0"));
  }
  const absl::Duration timeout = std::min(absl::Seconds(seconds), kMaxWaitPerCall);
  const std::vector<std::string> keys(request->keys().begin(), request->keys().end());
  return ToGrpcStatus(
      store_.Wait(request->job_id(), keys, timeout, [context] { return context->IsCancelled(); }));
}

grpc::Status RendezvousService::KvAdd(grpc::ServerContext* context, const proto::KvAddRequest* request,
                                      proto::KvAddResponse* response) {
  if (grpc::Status denied = authorizer_->Check(*context, "Rendezvous.KvAdd"); !denied.ok()) return denied;
  if (grpc::Status bad = CheckJobAndKey("KvAdd", request->job_id(), request->key()); !bad.ok()) return bad;
  absl::StatusOr<int64_t> value = store_.Add(request->job_id(), request->key(), request->delta());
  if (!value.ok()) return ToGrpcStatus(value.status());
  response->set_value(*value);
  return grpc::Status::OK;
}

RendezvousServer::RendezvousServer(std::unique_ptr<RendezvousService> service, StartedServer started)
    : service_(std::move(service)), server_(std::move(started.server)), address_(std::move(started.address)) {}

RendezvousServer::~RendezvousServer() { Shutdown(); }

void RendezvousServer::Shutdown() {
  if (server_ == nullptr) return;
  // Waits first: Server::Shutdown waits for running calls, and a KvWait would hold it.
  // The deadline bounds the wait for idle clients to acknowledge the server's goodbye
  // (an idle gRPC client polls its socket only every few seconds); after it the
  // connections are closed.
  service_->store().Shutdown();
  server_->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(2));
  server_->Wait();
  server_.reset();
}

absl::StatusOr<std::unique_ptr<RendezvousServer>> StartRendezvousServer(const ServerOptions& options) {
  auto service = std::make_unique<RendezvousService>(
      std::make_shared<TokenAuthorizer>(options.token, options.log_name));
  absl::StatusOr<StartedServer> started = StartGrpcServer(options, {service.get()});
  if (!started.ok()) return started.status();
  return std::make_unique<RendezvousServer>(std::move(service), *std::move(started));
}

}  // namespace oneflow::launcher
