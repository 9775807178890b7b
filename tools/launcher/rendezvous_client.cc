#include "tools/launcher/rendezvous_client.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "tools/launcher/address.h"
#include "tools/launcher/auth.h"
#include "tools/launcher/credentials.h"
#include "tools/launcher/grpc_status.h"
#include "tools/launcher/rendezvous_service.h"

namespace oneflow::launcher {

absl::StatusOr<std::unique_ptr<RendezvousClient>> RendezvousClient::Create(const RendezvousClientOptions& options) {
  absl::StatusOr<HostPort> address = ParseHostPort(options.address, "--rendezvous");
  if (!address.ok()) return address.status();
  if (options.job_id.empty()) return absl::InvalidArgumentError("the rendezvous client needs a job id");
  if (options.token.empty()) return absl::InvalidArgumentError("the rendezvous client needs a token");
  absl::StatusOr<std::shared_ptr<grpc::Channel>> channel = MakeChannel(options.address, options.tls_ca_file);
  if (!channel.ok()) return channel.status();
  return std::unique_ptr<RendezvousClient>(new RendezvousClient(options, proto::Rendezvous::NewStub(*channel)));
}

RendezvousClient::RendezvousClient(RendezvousClientOptions options, std::unique_ptr<proto::Rendezvous::Stub> stub)
    : options_(std::move(options)), stub_(std::move(stub)) {}

void RendezvousClient::Prepare(grpc::ClientContext* context, absl::Duration extra) const {
  AttachToken(context, options_.token);
  context->set_deadline(absl::ToChronoTime(absl::Now() + options_.rpc_timeout + extra));
  context->set_wait_for_ready(options_.wait_for_server);
}

absl::Status RendezvousClient::Error(const grpc::Status& status, const std::string& call) const {
  return FromGrpcStatus(status, absl::StrCat("rendezvous server ", options_.address, ": ", call));
}

absl::Status RendezvousClient::Set(const std::string& key, const std::string& value) {
  grpc::ClientContext context;
  Prepare(&context);
  proto::KvSetRequest request;
  request.set_job_id(options_.job_id);
  request.set_key(key);
  request.set_value(value);
  proto::KvSetResponse response;
  return Error(stub_->KvSet(&context, request, &response), absl::StrCat("KvSet '", key, "'"));
}

absl::StatusOr<std::string> RendezvousClient::Get(const std::string& key) {
  grpc::ClientContext context;
  Prepare(&context);
  proto::KvGetRequest request;
  request.set_job_id(options_.job_id);
  request.set_key(key);
  proto::KvGetResponse response;
  const grpc::Status status = stub_->KvGet(&context, request, &response);
  if (!status.ok()) return Error(status, absl::StrCat("KvGet '", key, "'"));
  if (!response.found()) {
    return absl::NotFoundError(absl::StrCat("rendezvous server ", options_.address, ": key '", key,
                                            "' is not set for job '", options_.job_id, "'"));
  }
  return std::move(*response.mutable_value());
}

absl::Status RendezvousClient::Wait(const std::vector<std::string>& keys, absl::Duration timeout) {
  // The server answers one call after at most kMaxWaitPerCall, so a longer wait is a
  // series of calls, each for what is left.
  const absl::Time deadline = absl::Now() + timeout;
  while (true) {
    const absl::Duration slice = std::clamp(deadline - absl::Now(), absl::ZeroDuration(), kMaxWaitPerCall);
    grpc::ClientContext context;
    Prepare(&context, slice);
    proto::KvWaitRequest request;
    request.set_job_id(options_.job_id);
    for (const std::string& key : keys) request.add_keys(key);
    request.set_timeout_s(absl::ToDoubleSeconds(slice));
    proto::KvWaitResponse response;
    const grpc::Status status = stub_->KvWait(&context, request, &response);
    if (status.ok()) return absl::OkStatus();
    const bool more_time = absl::Now() < deadline;
    if (status.error_code() != grpc::StatusCode::DEADLINE_EXCEEDED || !more_time) {
      if (status.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED) {
        return absl::DeadlineExceededError(absl::StrCat(
            "rendezvous server ", options_.address, ": waited ", absl::FormatDuration(timeout), " for keys [",
            absl::StrJoin(keys, ", "), "] of job '", options_.job_id, "': ", status.error_message()));
      }
      return Error(status, absl::StrCat("KvWait [", absl::StrJoin(keys, ", "), "]"));
    }
  }
}

absl::StatusOr<int64_t> RendezvousClient::Add(const std::string& key, int64_t delta) {
  grpc::ClientContext context;
  Prepare(&context);
  proto::KvAddRequest request;
  request.set_job_id(options_.job_id);
  request.set_key(key);
  request.set_delta(delta);
  proto::KvAddResponse response;
  const grpc::Status status = stub_->KvAdd(&context, request, &response);
  if (!status.ok()) return Error(status, absl::StrCat("KvAdd '", key, "'"));
  return response.value();
}

}  // namespace oneflow::launcher
