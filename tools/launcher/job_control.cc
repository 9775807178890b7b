#include "tools/launcher/job_control.h"

#include <thread>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "grpcpp/client_context.h"
#include "tools/launcher/auth.h"
#include "tools/launcher/submit_validation.h"

namespace oneflow::launcher {
namespace {

constexpr absl::Duration kCancelPollInterval = absl::Milliseconds(100);

bool Running(const proto::JobStatus& status) {
  return status.state() == proto::JobStatus::PENDING || status.state() == proto::JobStatus::RUNNING;
}

// A failed call to `daemon` as the commands report it: an unknown job names the job (the
// daemon's message) and the node; anything else in `oneflow launch`'s words.
absl::Status CallError(const DaemonNode& daemon, const grpc::Status& status) {
  const auto code = static_cast<absl::StatusCode>(status.error_code());
  if (status.error_code() == grpc::StatusCode::NOT_FOUND) {
    return absl::Status(code, absl::StrCat(NodeName(daemon.rank, daemon.address), ": ", status.error_message()));
  }
  return absl::Status(code, DescribeFailedCall(daemon.rank, daemon.address, status, "the request"));
}

}  // namespace

absl::Status FailuresOf(const std::vector<NodeAnswer>& answers) {
  absl::Status first;
  std::string message;
  for (const NodeAnswer& answer : answers) {
    if (answer.error.ok()) continue;
    if (first.ok()) first = answer.error;
    absl::StrAppend(&message, message.empty() ? "" : "\n  ", answer.error.message());
  }
  return first.ok() ? first : absl::Status(first.code(), message);
}

absl::StatusOr<std::unique_ptr<JobControl>> JobControl::Create(JobControlOptions options) {
  if (options.token.empty()) return absl::InvalidArgumentError("no token (--token_file)");
  absl::StatusOr<std::vector<DaemonNode>> daemons = ConnectToDaemons(options.nodes, options.tls_ca_file);
  if (!daemons.ok()) return daemons.status();
  return std::unique_ptr<JobControl>(new JobControl(std::move(options), *std::move(daemons)));
}

namespace {

// Runs `call(daemon, answer)` for every node at once (an unreachable node costs its
// timeout once, not once per node) and returns the answers in node order.
template <typename Call>
std::vector<NodeAnswer> OnEveryNode(const std::vector<DaemonNode>& daemons, Call call) {
  std::vector<NodeAnswer> answers(daemons.size());
  std::vector<std::thread> threads;
  for (size_t i = 0; i < daemons.size(); ++i) {
    answers[i].rank = daemons[i].rank;
    answers[i].address = daemons[i].address;
    threads.emplace_back([&daemons, &answers, &call, i] { call(daemons[i], answers[i]); });
  }
  for (std::thread& thread : threads) thread.join();
  return answers;
}

}  // namespace

std::vector<NodeAnswer> JobControl::List() {
  return OnEveryNode(daemons_, [this](const DaemonNode& daemon, NodeAnswer& answer) {
    grpc::ClientContext context;
    AttachToken(&context, options_.token);
    context.set_deadline(absl::ToChronoTime(absl::Now() + options_.call_timeout));
    proto::ListResponse response;
    const grpc::Status status = daemon.stub->List(&context, proto::ListRequest(), &response);
    if (!status.ok()) {
      answer.error = CallError(daemon, status);
      return;
    }
    answer.jobs.assign(response.jobs().begin(), response.jobs().end());
    response.clear_jobs();
    answer.retention = std::move(response);
  });
}

absl::StatusOr<std::vector<NodeAnswer>> JobControl::Status(const std::string& job_id) {
  if (absl::Status invalid = ValidateJobId(job_id); !invalid.ok()) return invalid;
  return OnEveryNode(daemons_, [this, &job_id](const DaemonNode& daemon, NodeAnswer& answer) {
    grpc::ClientContext context;
    AttachToken(&context, options_.token);
    context.set_deadline(absl::ToChronoTime(absl::Now() + options_.call_timeout));
    proto::StatusRequest request;
    request.set_job_id(job_id);
    proto::JobStatus response;
    const grpc::Status status = daemon.stub->Status(&context, request, &response);
    if (!status.ok()) {
      answer.error = CallError(daemon, status);
      return;
    }
    answer.jobs.push_back(std::move(response));
  });
}

absl::StatusOr<std::vector<NodeAnswer>> JobControl::Dump(const std::string& job_id, absl::Duration timeout) {
  if (absl::Status invalid = ValidateJobId(job_id); !invalid.ok()) return invalid;
  return OnEveryNode(daemons_, [this, &job_id, timeout](const DaemonNode& daemon, NodeAnswer& answer) {
    grpc::ClientContext context;
    AttachToken(&context, options_.token);
    context.set_deadline(absl::ToChronoTime(absl::Now() + timeout + options_.call_timeout));
    proto::DumpRequest request;
    request.set_job_id(job_id);
    request.set_timeout_s(absl::ToDoubleSeconds(timeout));
    const grpc::Status status = daemon.stub->Dump(&context, request, &answer.dump);
    if (!status.ok()) answer.error = CallError(daemon, status);
  });
}

absl::StatusOr<std::vector<NodeAnswer>> JobControl::Cancel(const std::string& job_id) {
  if (absl::Status invalid = ValidateJobId(job_id); !invalid.ok()) return invalid;
  const absl::Time deadline = absl::Now() + options_.cancel_wait;
  return OnEveryNode(daemons_, [this, &job_id, deadline](const DaemonNode& daemon, NodeAnswer& answer) {
    {
      grpc::ClientContext context;
      AttachToken(&context, options_.token);
      context.set_deadline(absl::ToChronoTime(absl::Now() + options_.call_timeout));
      proto::CancelRequest request;
      request.set_job_id(job_id);
      proto::CancelResponse response;
      const grpc::Status status = daemon.stub->Cancel(&context, request, &response);
      if (!status.ok()) {
        answer.error = CallError(daemon, status);
        return;
      }
    }
    // The daemon sends SIGTERM, SIGKILL after its grace period, and records the end once
    // the worker is reaped: poll until then.
    while (true) {
      grpc::ClientContext context;
      AttachToken(&context, options_.token);
      context.set_deadline(absl::ToChronoTime(absl::Now() + options_.call_timeout));
      proto::StatusRequest request;
      request.set_job_id(job_id);
      proto::JobStatus response;
      const grpc::Status status = daemon.stub->Status(&context, request, &response);
      if (!status.ok()) {
        answer.error = CallError(daemon, status);
        return;
      }
      const bool running = Running(response);
      answer.jobs = {std::move(response)};
      if (!running) return;
      if (absl::Now() >= deadline) {
        answer.error = absl::DeadlineExceededError(
            absl::StrCat("job '", job_id, "' still runs on ", NodeName(daemon.rank, daemon.address), " ",
                         absl::FormatDuration(options_.cancel_wait), " after it was cancelled"));
        return;
      }
      absl::SleepFor(kCancelPollInterval);
    }
  });
}

}  // namespace oneflow::launcher
