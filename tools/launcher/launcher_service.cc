#include "tools/launcher/launcher_service.h"

#include <malloc.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "plan/plan_io.h"
#include "tools/launcher/address.h"
#include "tools/launcher/grpc_status.h"
#include "tools/launcher/submit_validation.h"
#include "tools/launcher/worker_status_file.h"

namespace oneflow::launcher {
namespace {

// How often a Submit stream with nothing to send looks whether its client went away.
constexpr absl::Duration kStreamPollInterval = absl::Milliseconds(200);
// How often the janitor applies --keep_jobs and --keep_jobs_for.
constexpr absl::Duration kJanitorInterval = absl::Seconds(1);
// How often a Submit stream sends a Heartbeat while the worker runs.
constexpr absl::Duration kHeartbeatInterval = absl::Milliseconds(500);

absl::Status MakeDirectory(const std::string& path) {
  if (mkdir(path.c_str(), 0700) == 0 || errno == EEXIST) return absl::OkStatus();
  return absl::UnavailableError(absl::StrCat("cannot create directory '", path, "': ", std::strerror(errno)));
}

std::string FormatSeconds(double seconds) { return absl::StrCat(seconds); }

// Hands the pages the ended stream's events left free back to the system. A client that
// read slowly made the job's queue hold up to 10,000 events (~1.5 MB); once drained,
// glibc keeps those pages (in the arena of the thread that read the worker's events) until
// trimmed, so a long-lived daemon's resident memory would keep the highest backlog of any
// job and `oneflow status` would report it as in use. It runs once per job, not per event.
struct ReturnFreedMemoryOnExit {
  ~ReturnFreedMemoryOnExit() { malloc_trim(0); }
};

}  // namespace

LauncherService::LauncherService(LauncherOptions options, std::shared_ptr<const TokenAuthorizer> authorizer,
                                 RendezvousStore* rendezvous)
    : options_(std::move(options)), authorizer_(std::move(authorizer)), rendezvous_(rendezvous) {
  janitor_ = std::thread(&LauncherService::Janitor, this);
}

LauncherService::~LauncherService() { Shutdown(); }

void LauncherService::Janitor() {
  while (!stop_janitor_.WaitForNotificationWithTimeout(kJanitorInterval)) ForgetOldJobs("");
}

std::string LauncherService::JobDirectory(const std::string& job_id, int64_t node_rank) const {
  return absl::StrCat(options_.work_dir, "/", job_id, "/node", node_rank);
}

void LauncherService::RemoveJobDirectory(const std::string& job_id, int64_t node_rank) const {
  std::error_code ignored;
  std::filesystem::remove_all(JobDirectory(job_id, node_rank), ignored);
  // Only once empty: another node of the same job may share the work directory.
  std::filesystem::remove(absl::StrCat(options_.work_dir, "/", job_id), ignored);
}

void LauncherService::ForgetOldJobs(const std::string& replacing) {
  std::lock_guard<std::mutex> forgetting(forget_mutex_);
  std::vector<std::shared_ptr<WorkerJob>> forgotten;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    std::vector<std::shared_ptr<WorkerJob>> ended;
    for (const auto& [id, job] : jobs_) {
      if (!job->done()) continue;
      if (id == replacing) {
        forgotten.push_back(job);
      } else {
        ended.push_back(job);
      }
    }
    std::sort(ended.begin(), ended.end(), [](const auto& a, const auto& b) { return a->end_time() > b->end_time(); });
    const size_t keep = static_cast<size_t>(std::max(0, options_.keep_finished_jobs));
    const absl::Time now = absl::Now();
    for (size_t i = 0; i < ended.size(); ++i) {
      if (i >= keep || now - ended[i]->end_time() > options_.keep_finished_for) forgotten.push_back(ended[i]);
    }
    for (const auto& job : forgotten) jobs_.erase(job->job_id());
  }
  for (const auto& job : forgotten) {
    RemoveJobDirectory(job->job_id(), job->node_rank());
    if (rendezvous_ != nullptr) rendezvous_->DropJob(job->job_id());
  }
}

absl::StatusOr<std::shared_ptr<WorkerJob>> LauncherService::StartJob(const proto::SubmitRequest& request) {
  if (!options_.worker_binary.ok()) {
    return absl::FailedPreconditionError(
        absl::StrCat("this daemon has no worker to run: ", options_.worker_binary.status().message()));
  }
  const std::string& job_id = request.job_id();
  const int64_t rank = request.node_rank();
  const std::string directory = JobDirectory(job_id, rank);
  std::error_code ignored;
  std::filesystem::remove_all(directory, ignored);  // A previous run of this id on this node.
  if (absl::Status status = MakeDirectory(absl::StrCat(options_.work_dir, "/", job_id)); !status.ok()) return status;
  if (absl::Status status = MakeDirectory(directory); !status.ok()) return status;
  const std::string plan_file = absl::StrCat(directory, "/plan.pb");
  if (absl::Status status = WritePlanFile(plan_file, request.plan()); !status.ok()) {
    RemoveJobDirectory(job_id, rank);
    return absl::UnavailableError(status.message());
  }
  const proto::RunOptions& run = request.options();
  std::string worker_host = run.worker_host();
  if (worker_host.empty()) worker_host = IsWildcardHost(options_.listen_host) ? "127.0.0.1" : options_.listen_host;
  const double collective_timeout_s =
      run.collective_timeout_s() > 0 ? run.collective_timeout_s() : kDefaultCollectiveTimeoutS;

  WorkerJobConfig config;
  config.job_id = job_id;
  config.node_rank = rank;
  config.status_file = absl::StrCat(directory, "/status");
  config.log_file = absl::StrCat(directory, "/worker.log");
  config.node_devices = static_cast<int64_t>(NodeDeviceIndices(request.plan(), rank).size());
  config.iterations = run.iterations();
  config.recoveries.assign(run.recoveries().begin(), run.recoveries().end());
  config.flight_dump_file = absl::StrCat(directory, "/flight-node", rank, ".json");
  config.command.binary = *options_.worker_binary;
  config.command.working_directory = directory;
  // THE WORKER CONTRACT (docs/launcher.md): these flags and nothing from the request
  // beyond their values.
  std::vector<std::string>& arguments = config.command.arguments;
  arguments = {
      absl::StrCat("--plan=", plan_file),
      absl::StrCat("--job_id=", job_id),
      absl::StrCat("--node_rank=", rank),
      absl::StrCat("--iters=", run.iterations()),
      absl::StrCat("--rendezvous=", run.rendezvous_address()),
      absl::StrCat("--token_file=", options_.token_file),
  };
  if (!options_.worker_tls_ca.empty()) arguments.push_back(absl::StrCat("--tls_ca=", options_.worker_tls_ca));
  arguments.push_back(absl::StrCat("--collective_timeout_s=", FormatSeconds(collective_timeout_s)));
  arguments.push_back(absl::StrCat("--worker_host=", worker_host));
  arguments.push_back(absl::StrCat("--events_fd=", kWorkerEventsFd));
  arguments.push_back(absl::StrCat("--status_file=", config.status_file));
  if (!run.checkpoint_dir().empty()) {
    arguments.push_back(absl::StrCat("--checkpoint_dir=", run.checkpoint_dir()));
    arguments.push_back(absl::StrCat("--checkpoint_every=", run.checkpoint_every()));
    arguments.push_back(absl::StrCat("--keep_checkpoints=", run.keep_checkpoints()));
    arguments.push_back(absl::StrCat("--keep_checkpoint_every=", run.keep_checkpoint_every()));
  }
  if (!run.resume_from().empty()) arguments.push_back(absl::StrCat("--resume_from=", run.resume_from()));
  if (run.memory_checkpoint_every() > 0) {
    arguments.push_back(absl::StrCat("--memory_checkpoint_every=", run.memory_checkpoint_every()));
    arguments.push_back(absl::StrCat("--memory_checkpoint_daemons=", absl::StrJoin(run.memory_checkpoint_daemons(), ",")));
  }
  if (run.memory_resume_iteration() > 0) {
    arguments.push_back(absl::StrCat("--memory_resume_iteration=", run.memory_resume_iteration()));
    arguments.push_back(absl::StrCat("--memory_resume_holders=", absl::StrJoin(run.memory_resume_holders(), ",")));
  }
  if (run.memory_checkpoint_every() > 0 || run.memory_resume_iteration() > 0) {
    arguments.push_back(absl::StrCat("--memory_checkpoint_scope=", run.memory_checkpoint_scope()));
  }
  if (run.record_trace()) arguments.push_back("--record_trace");
  if (run.measure_links()) arguments.push_back("--measure_links");
  if (!run.transport().empty()) arguments.push_back(absl::StrCat("--transport=", run.transport()));
  if (run.has_communication_priority_levels()) {
    arguments.push_back(absl::StrCat("--communication_priority_levels=", run.communication_priority_levels()));
  }

  absl::StatusOr<std::unique_ptr<WorkerJob>> job = WorkerJob::Start(std::move(config));
  if (!job.ok()) {
    RemoveJobDirectory(job_id, rank);
    return job.status();
  }
  return std::shared_ptr<WorkerJob>(*std::move(job));
}

grpc::Status LauncherService::Submit(grpc::ServerContext* context, const proto::SubmitRequest* request,
                                     grpc::ServerWriter<proto::JobEvent>* writer) {
  if (grpc::Status denied = authorizer_->Check(*context, "Launcher.Submit"); !denied.ok()) return denied;
  if (absl::Status invalid = ValidateSubmitRequest(*request, options_.max_plan_bytes); !invalid.ok()) {
    return ToGrpcStatus(invalid);
  }
  const std::string& job_id = request->job_id();
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (shutting_down_) return grpc::Status(grpc::StatusCode::UNAVAILABLE, "the daemon is shutting down");
    const auto existing = jobs_.find(job_id);
    if (starting_.count(job_id) > 0 || (existing != jobs_.end() && !existing->second->done())) {
      return grpc::Status(grpc::StatusCode::ALREADY_EXISTS,
                          absl::StrCat("job '", job_id, "' is already running on this daemon"));
    }
    starting_.insert(job_id);
  }
  ForgetOldJobs(job_id);
  absl::StatusOr<std::shared_ptr<WorkerJob>> started = StartJob(*request);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    starting_.erase(job_id);
    if (started.ok()) jobs_[job_id] = *started;
    // A shutdown that began meanwhile did not see this job: cancel it here.
    if (started.ok() && shutting_down_) (*started)->Cancel("the daemon is shutting down");
  }
  if (!started.ok()) return ToGrpcStatus(started.status());
  WorkerJob& job = **started;
  const ReturnFreedMemoryOnExit return_freed_memory;
  const bool heartbeats = !request->options().disable_heartbeats();
  absl::Time next_heartbeat = absl::Now() + kHeartbeatInterval;
  while (true) {
    std::optional<proto::JobEvent> event;
    // A heartbeat goes out on schedule even behind a backlog of queued events (metrics,
    // log lines on a slow connection): the launch's progress monitor times hangs by them.
    if (heartbeats && absl::Now() >= next_heartbeat) {
      next_heartbeat = absl::Now() + kHeartbeatInterval;
      event = job.Heartbeat();
    }
    if (!event.has_value()) {
      event = job.NextEvent(heartbeats ? std::min(kStreamPollInterval, std::max(absl::ZeroDuration(),
                                                                                 next_heartbeat - absl::Now()))
                                       : kStreamPollInterval);
    }
    if (event.has_value()) {
      const bool terminal = event->has_finished() || event->has_failed();
      if (!writer->Write(*event)) {
        job.Cancel("the client went away");
        job.StopQueueing();
        return grpc::Status(grpc::StatusCode::CANCELLED, "the client went away");
      }
      if (terminal) return grpc::Status::OK;
    } else if (context->IsCancelled()) {
      job.Cancel("the client went away");
      job.StopQueueing();
      return grpc::Status(grpc::StatusCode::CANCELLED, "the client went away");
    }
  }
}

grpc::Status LauncherService::NoSuchJob(const std::string& job_id) const {
  return grpc::Status(grpc::StatusCode::NOT_FOUND,
                      absl::StrCat("no job '", job_id, "' on this daemon (it keeps its running jobs and the last ",
                                   options_.keep_finished_jobs, " ended ones)"));
}

grpc::Status LauncherService::Cancel(grpc::ServerContext* context, const proto::CancelRequest* request,
                                     proto::CancelResponse*) {
  if (grpc::Status denied = authorizer_->Check(*context, "Launcher.Cancel"); !denied.ok()) return denied;
  std::shared_ptr<WorkerJob> job;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    const auto found = jobs_.find(request->job_id());
    if (found != jobs_.end()) job = found->second;
  }
  if (job == nullptr) return NoSuchJob(request->job_id());
  job->Cancel("a Cancel call");
  return grpc::Status::OK;
}

grpc::Status LauncherService::Status(grpc::ServerContext* context, const proto::StatusRequest* request,
                                     proto::JobStatus* response) {
  if (grpc::Status denied = authorizer_->Check(*context, "Launcher.Status"); !denied.ok()) return denied;
  std::shared_ptr<WorkerJob> job;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    const auto found = jobs_.find(request->job_id());
    if (found != jobs_.end()) job = found->second;
  }
  if (job == nullptr) return NoSuchJob(request->job_id());
  *response = job->Status();  // Outside the lock: it reads the worker's status file.
  return grpc::Status::OK;
}

grpc::Status LauncherService::List(grpc::ServerContext* context, const proto::ListRequest*,
                                   proto::ListResponse* response) {
  if (grpc::Status denied = authorizer_->Check(*context, "Launcher.List"); !denied.ok()) return denied;
  std::vector<std::shared_ptr<WorkerJob>> jobs;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    for (const auto& [id, job] : jobs_) jobs.push_back(job);
  }
  for (const auto& job : jobs) *response->add_jobs() = job->Status();
  response->set_keep_jobs(options_.keep_finished_jobs);
  if (options_.keep_finished_for != absl::InfiniteDuration()) {
    response->set_keep_jobs_for_s(absl::ToDoubleSeconds(options_.keep_finished_for));
  }
  response->set_work_dir(options_.work_dir);
  return grpc::Status::OK;
}

grpc::Status LauncherService::Health(grpc::ServerContext* context, const proto::HealthRequest*,
                                     proto::HealthResponse* response) {
  if (grpc::Status denied = authorizer_->Check(*context, "Launcher.Health"); !denied.ok()) return denied;
  std::lock_guard<std::mutex> lock(mutex_);
  response->set_version(kOneflowdVersion);
  int64_t running = 0;
  for (const auto& [id, job] : jobs_) running += job->done() ? 0 : 1;
  response->set_running_jobs(running);
  return grpc::Status::OK;
}

grpc::Status LauncherService::Dump(grpc::ServerContext* context, const proto::DumpRequest* request,
                                   proto::DumpResponse* response) {
  if (grpc::Status denied = authorizer_->Check(*context, "Launcher.Dump"); !denied.ok()) return denied;
  std::shared_ptr<WorkerJob> job;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    const auto found = jobs_.find(request->job_id());
    if (found != jobs_.end()) job = found->second;
  }
  if (job == nullptr) return NoSuchJob(request->job_id());
  const double timeout_s = request->timeout_s() > 0 ? std::min(request->timeout_s(), 30.0) : 5.0;
  WorkerDump dump = job->RequestDump(absl::Seconds(timeout_s));
  response->set_node_rank(job->node_rank());
  response->set_dump_json(std::move(dump.json));
  response->set_path(dump.path);
  response->set_note(dump.note);
  return grpc::Status::OK;
}

void LauncherService::Shutdown() {
  std::vector<std::shared_ptr<WorkerJob>> jobs;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    shutting_down_ = true;
    for (const auto& [id, job] : jobs_) jobs.push_back(job);
  }
  for (const auto& job : jobs) job->Cancel("the daemon is shutting down");
  for (const auto& job : jobs) job->WaitDone(kCancelGrace + absl::Seconds(5));
  if (!stop_janitor_.HasBeenNotified()) stop_janitor_.Notify();
  if (janitor_.joinable()) janitor_.join();
}

}  // namespace oneflow::launcher
