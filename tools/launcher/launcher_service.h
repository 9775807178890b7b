// The Launcher gRPC service of `oneflowd` (proto/launcher.proto): starts this node's
// worker for a job and streams its events; Cancel, Status, List, Health.
//
// Submit checks the request (submit_validation.h) before anything happens on the node,
// then writes the plan to <work_dir>/<job_id>/node<rank>/plan.pb (atomically), starts
// the worker (worker_job.h) with the flags of the worker contract (docs/launcher.md),
// and streams Started, the worker's metrics and log lines, a Heartbeat every 0.5 s (the
// status file's progress, docs/diagnosis.md), and one terminal event. Dump returns the
// worker's flight recorder dump, asking a running worker for a fresh one (SIGUSR1). A
// client that goes away cancels the job (a worker nobody watches would hold the devices
// and, through its collectives, the other nodes' workers).
//
// The daemon remembers ended jobs, with their directories (plan, status file,
// worker.log), for debugging: the last `keep_finished_jobs`, each for at most
// `keep_finished_for` after it ended; others are forgotten, their directories and
// rendezvous keys removed, when a new job is submitted and by a janitor thread once a
// second (so a daemon nobody submits to keeps to the limits too). List says what is kept.
#ifndef TOOLS_LAUNCHER_LAUNCHER_SERVICE_H_
#define TOOLS_LAUNCHER_LAUNCHER_SERVICE_H_

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/notification.h"
#include "absl/time/time.h"
#include "proto/launcher.grpc.pb.h"
#include "tools/launcher/auth.h"
#include "tools/launcher/rendezvous_store.h"
#include "tools/launcher/worker_job.h"

namespace oneflow::launcher {

inline constexpr char kOneflowdVersion[] = "oneflowd 0.1 (launcher.proto: Launcher + Rendezvous)";
// RunOptions.collective_timeout_s = 0 means this many seconds.
inline constexpr double kDefaultCollectiveTimeoutS = 60;

struct LauncherOptions {
  // Absolute; exists. Jobs' directories go under it.
  std::string work_dir;
  // The worker program, or why there is none (every Submit then fails with that reason).
  absl::StatusOr<std::string> worker_binary = std::string();
  int64_t max_plan_bytes = int64_t{512} << 20;
  // Absolute path of the token file, passed on to workers for the rendezvous.
  std::string token_file;
  // Passed to workers as --tls_ca when not empty (the rendezvous daemon uses TLS).
  std::string worker_tls_ca;
  // The daemon's listening host: the worker host when the request names none (unless a
  // wildcard, then 127.0.0.1).
  std::string listen_host;
  int keep_finished_jobs = 8;
  absl::Duration keep_finished_for = absl::InfiniteDuration();
};

class LauncherService final : public proto::Launcher::Service {
 public:
  // `rendezvous` (not owned) is the daemon's key store, whose keys of forgotten jobs are
  // dropped; may be null.
  LauncherService(LauncherOptions options, std::shared_ptr<const TokenAuthorizer> authorizer,
                  RendezvousStore* rendezvous);
  ~LauncherService() override;

  grpc::Status Submit(grpc::ServerContext* context, const proto::SubmitRequest* request,
                      grpc::ServerWriter<proto::JobEvent>* writer) override;
  grpc::Status Cancel(grpc::ServerContext* context, const proto::CancelRequest* request,
                      proto::CancelResponse* response) override;
  grpc::Status Status(grpc::ServerContext* context, const proto::StatusRequest* request,
                      proto::JobStatus* response) override;
  grpc::Status List(grpc::ServerContext* context, const proto::ListRequest* request,
                    proto::ListResponse* response) override;
  grpc::Status Health(grpc::ServerContext* context, const proto::HealthRequest* request,
                      proto::HealthResponse* response) override;
  grpc::Status Dump(grpc::ServerContext* context, const proto::DumpRequest* request,
                    proto::DumpResponse* response) override;

  // Refuses new jobs, cancels every running one and waits until their workers are gone
  // (at most the cancel grace plus a few seconds).
  void Shutdown();

 private:
  absl::StatusOr<std::shared_ptr<WorkerJob>> StartJob(const proto::SubmitRequest& request);
  std::string JobDirectory(const std::string& job_id, int64_t node_rank) const;
  // Forgets ended jobs beyond the newest keep_finished_jobs (and `replacing`, an ended
  // job whose id is submitted again). Their directories are removed after the lock.
  void ForgetOldJobs(const std::string& replacing);
  void RemoveJobDirectory(const std::string& job_id, int64_t node_rank) const;
  // Applies the retention limits once a second until Shutdown.
  void Janitor();
  // NOT_FOUND for Status and Cancel of an id this daemon does not know (any more).
  grpc::Status NoSuchJob(const std::string& job_id) const;

  const LauncherOptions options_;
  const std::shared_ptr<const TokenAuthorizer> authorizer_;
  RendezvousStore* const rendezvous_;

  // Held through a whole ForgetOldJobs, removals included, so that a Submit of an id the
  // janitor is forgetting starts only once the old directory is gone (before mutex_).
  std::mutex forget_mutex_;
  std::mutex mutex_;
  std::map<std::string, std::shared_ptr<WorkerJob>> jobs_ ABSL_GUARDED_BY(mutex_);
  // Ids between the duplicate check and the job's entry in jobs_.
  std::set<std::string> starting_ ABSL_GUARDED_BY(mutex_);
  bool shutting_down_ ABSL_GUARDED_BY(mutex_) = false;
  absl::Notification stop_janitor_;
  std::thread janitor_;
};

}  // namespace oneflow::launcher

#endif  // TOOLS_LAUNCHER_LAUNCHER_SERVICE_H_
