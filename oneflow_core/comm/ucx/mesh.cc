#include "oneflow_core/comm/ucx/mesh.h"

#include <errno.h>
#include <signal.h>
#include <unistd.h>

#include <fstream>
#include <iterator>
#include <sstream>
#include <utility>

#include "absl/strings/escaping.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "oneflow_core/comm/collective_arguments.h"
#include "oneflow_core/comm/gloo/store_adapter.h"
#include "oneflow_core/comm/ucx/context.h"
#include "oneflow_core/comm/ucx/peer_check.h"
#include "oneflow_core/comm/ucx/process_record.h"

namespace oneflow {
namespace ucx_backend {
namespace {

// How long a rank that saw a transfer break waits for the peer's record.
constexpr absl::Duration kRecordGrace = absl::Milliseconds(500);
// Closing endpoints is local (forced): bound the progress it needs.
constexpr absl::Duration kCloseBound = absl::Seconds(1);

// Whether process `pid` (one this process can see) has ended: gone, or a zombie its
// parent has not reaped yet (kill(pid, 0) still succeeds on those).
bool ProcessEnded(pid_t pid) {
  if (kill(pid, 0) != 0) return errno == ESRCH;
  std::ifstream stat(absl::StrCat("/proc/", pid, "/stat"));
  std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
  const size_t name_end = text.rfind(')');
  if (name_end == std::string::npos || name_end + 2 >= text.size()) return false;
  const char state = text[name_end + 2];
  return state == 'Z' || state == 'X';
}

}  // namespace

Mesh::Mesh(UcxGroupOptions options)
    : options_(std::move(options)), local_pids_(options_.size, 0),
      departures_(options_.rank, options_.size, Key("")) {}

Mesh::~Mesh() {
  bool depart = false;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    depart = connected_ && !failure_.has_value() && options_.store != nullptr;
  }
  if (depart) {
    departures_.Write(*options_.store, departure_);
  }
  CloseEndpoints();
  if (worker_ != nullptr) ucp_worker_destroy(worker_);
}

void Mesh::CloseEndpoints() {
  std::vector<void*> closing;
  ucp_request_param_t param = {};
  param.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
  // Forced: a flush would wait for peers that may be gone.
  param.flags = UCP_EP_CLOSE_FLAG_FORCE;
  for (ucp_ep_h& endpoint : endpoints_) {
    if (endpoint == nullptr) continue;
    const ucs_status_ptr_t request = ucp_ep_close_nbx(endpoint, &param);
    if (request != nullptr && !UCS_PTR_IS_ERR(request)) closing.push_back(request);
    endpoint = nullptr;
  }
  const absl::Time stop = absl::Now() + kCloseBound;
  while (!closing.empty() && absl::Now() < stop) {
    ucp_worker_progress(worker_);
    for (size_t i = 0; i < closing.size();) {
      if (ucp_request_check_status(closing[i]) != UCS_INPROGRESS) {
        ucp_request_free(closing[i]);
        closing[i] = closing.back();
        closing.pop_back();
      } else {
        ++i;
      }
    }
  }
  for (void* request : closing) ucp_request_free(request);
}

std::string Mesh::Key(const std::string& what) const {
  return absl::StrCat(options_.group_name, "/", what);
}

std::string Mesh::RecordKey(int64_t rank) const { return Key(absl::StrCat("failure/", rank)); }

std::optional<Failure> Mesh::failure() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return failure_;
}

void Mesh::Fail(Failure failure) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (failure_.has_value()) return;
    failure_ = failure;
    gloo_backend::NoteProcessFailure(failure);
    failed_.store(true, std::memory_order_release);
  }
  WriteRecord(failure);
}

void Mesh::WriteRecord(const Failure& failure) {
  if (options_.store == nullptr) return;
  Failure told = failure;
  if (told.source == Failure::Source::kThisRank) {
    told.source = Failure::Source::kPeer;
    told.rank = rank();
  }
  // Best effort: without the record, peers still fail by their deadline.
  (void)options_.store->Set(RecordKey(rank()), gloo_backend::EncodeFailureRecord(told));
  (void)options_.store->Set(Key("failed"), absl::StrCat(rank()));
}

std::optional<Failure> Mesh::ReadRecord(const std::vector<int64_t>& ranks, absl::Duration grace) {
  if (options_.store == nullptr) return std::nullopt;
  const absl::Time deadline = absl::Now() + grace;
  for (;;) {
    for (int64_t rank : ranks) {
      if (rank < 0) continue;
      const absl::StatusOr<std::string> text = options_.store->Get(RecordKey(rank));
      if (!text.ok()) continue;
      std::optional<Failure> record = gloo_backend::DecodeFailureRecord(*text);
      if (record.has_value()) return record;
    }
    if (absl::Now() >= deadline || failed()) return std::nullopt;
    absl::SleepFor(absl::Milliseconds(5));
  }
}

void Mesh::FailForBrokenConnection(const std::vector<int64_t>& peers, const std::string& detail) {
  if (failed()) return;
  std::optional<Failure> record = ReadRecord(peers, kRecordGrace);
  if (record.has_value()) {
    Fail(*std::move(record));
    return;
  }
  Fail(Failure{Failure::Source::kLostConnection, peers.empty() ? -1 : peers.front(),
               absl::StatusCode::kUnavailable, detail});
}

void Mesh::ReadDepartures() {
  if (options_.store != nullptr) departures_.Read(*options_.store);
}

void Mesh::CheckPeers(absl::Time now) {
  if (now < next_check_ || options_.store == nullptr) return;
  LookForFailedPeers();
  // peer_check.h: the next check waits in proportion to what this one cost.
  next_check_ = now + PeerCheckInterval(absl::Now() - now);
}

void Mesh::LookForFailedPeers() {
  const absl::StatusOr<std::string> failed_rank = options_.store->Get(Key("failed"));
  int64_t peer = -1;
  if (failed_rank.ok() && absl::SimpleAtoi(*failed_rank, &peer) && peer != rank()) {
    std::optional<Failure> record = ReadRecord({peer}, kRecordGrace);
    Fail(record.has_value() ? *std::move(record)
                            : Failure{Failure::Source::kPeer, peer, absl::StatusCode::kUnknown,
                                      "it failed without saying why"});
    return;
  }
  // Read after the failure key and before the processes: a departed peer writes its
  // record before its process can end.
  ReadDepartures();
  for (int64_t other = 0; other < size(); ++other) {
    const pid_t pid = static_cast<pid_t>(local_pids_[other]);
    if (pid <= 0 || departures_.departed(other) != nullptr || !ProcessEnded(pid)) continue;
    FailForBrokenConnection({other}, absl::StrCat("its process (pid ", pid, ") on this host exited"));
    return;
  }
}

absl::Status Mesh::StoppedWaiting(const std::string& prefix, const std::string& waiting_for) const {
  const std::optional<Failure> failed = failure();
  if (!failed.has_value())
    return absl::InternalError(absl::StrCat(prefix, ": stopped without a failure"));
  return absl::Status(failed->code, absl::StrCat(prefix, ": stopped waiting for ", waiting_for,
                                                 ": ", failed->WhileWaiting()));
}

absl::Status Mesh::StopConnecting() {
  if (failed()) return absl::CancelledError("the group failed");
  const absl::StatusOr<std::string> failed_rank = options_.store->Get(Key("failed"));
  int64_t peer = -1;
  if (!failed_rank.ok() || !absl::SimpleAtoi(*failed_rank, &peer)) return absl::OkStatus();
  std::optional<Failure> record = ReadRecord({peer}, kRecordGrace);
  Fail(record.has_value() ? *std::move(record)
                          : Failure{Failure::Source::kPeer, peer, absl::StatusCode::kUnknown,
                                    "it failed without saying why"});
  return absl::CancelledError("the group failed");
}

absl::Status Mesh::Connect(absl::Time deadline, absl::Duration timeout, const std::string& prefix) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (connected_) return absl::OkStatus();
  }
  absl::Status status = JoinGroup(deadline, timeout, prefix);
  if (status.ok()) status = CreateEndpoints(prefix);
  if (!status.ok()) return status;
  std::lock_guard<std::mutex> lock(mutex_);
  connected_ = true;
  if (failure_.has_value()) {
    // Aborted while connecting.
    return absl::Status(failure_->code, absl::StrCat(prefix, ": stopped waiting for its peers to connect: ",
                                                     failure_->WhileWaiting()));
  }
  return absl::OkStatus();
}

absl::Status Mesh::JoinGroup(absl::Time deadline, absl::Duration timeout,
                             const std::string& prefix) {
  auto fail = [&](absl::Status status) {
    Fail(Failure{Failure::Source::kThisRank, rank(), status.code(), std::string(status.message())});
    return status;
  };
  KeyValueStore& store = *options_.store;
  if (absl::Status status = store.Set(Key(absl::StrCat("ucx/process/", rank())), ProcessRecord()); !status.ok()) {
    return fail(absl::UnavailableError(
        absl::StrCat(prefix, ": connecting: cannot write to the rendezvous store: ", status.message())));
  }
  if (absl::Status peers = AwaitPeers("process", deadline, timeout, prefix); !peers.ok()) return peers;
  if (worker_ == nullptr) {
    // Which context: are any peers on this host (context.h)?
    PeerPlacement placement = PeerPlacement::kAllOnOtherHosts;
    for (int64_t peer = 0; peer < size(); ++peer) {
      if (peer == rank()) continue;
      const absl::StatusOr<std::string> record = store.Get(Key(absl::StrCat("ucx/process/", peer)));
      if (record.ok() && ReadProcessRecord(*record).same_host) placement = PeerPlacement::kSomeOnThisHost;
    }
    const absl::StatusOr<ucp_context_h> context = SharedContext(placement);
    if (!context.ok()) {
      return fail(absl::UnavailableError(
          absl::StrCat(prefix, ": connecting: ", context.status().message())));
    }
    ucp_worker_params_t params = {};
    params.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
    // One communication thread uses the worker; its creator and destroyer are others, in
    // turn, never at once.
    params.thread_mode = UCS_THREAD_MODE_SERIALIZED;
    const ucs_status_t created = ucp_worker_create(*context, &params, &worker_);
    if (created != UCS_OK) {
      worker_ = nullptr;
      return fail(absl::UnavailableError(absl::StrCat(
          prefix, ": connecting: creating a UCX worker failed: ", ucs_status_string(created))));
    }
    if (ucp_worker_get_efd(worker_, &event_fd_) != UCS_OK) event_fd_ = -1;
  }
  ucp_address_t* address = nullptr;
  size_t address_length = 0;
  const ucs_status_t got = ucp_worker_get_address(worker_, &address, &address_length);
  if (got != UCS_OK) {
    return fail(absl::UnavailableError(absl::StrCat(
        prefix, ": connecting: reading the UCX worker address failed: ", ucs_status_string(got))));
  }
  const std::string hex = absl::BytesToHexString(
      absl::string_view(reinterpret_cast<const char*>(address), address_length));
  ucp_worker_release_address(worker_, address);

  if (absl::Status status = store.Set(Key(absl::StrCat("ucx/address/", rank())), hex); !status.ok()) {
    return fail(absl::UnavailableError(absl::StrCat(
        prefix, ": connecting: cannot write to the rendezvous store: ", status.message())));
  }
  return AwaitPeers("address", deadline, timeout, prefix);
}

absl::Status Mesh::AwaitPeers(const std::string& kind, absl::Time deadline, absl::Duration timeout,
                              const std::string& prefix) {
  auto fail = [&](absl::Status status) {
    Fail(Failure{Failure::Source::kThisRank, rank(), status.code(), std::string(status.message())});
    return status;
  };
  KeyValueStore& store = *options_.store;
  std::vector<std::string> keys;
  for (int64_t peer = 0; peer < size(); ++peer) {
    keys.push_back(Key(absl::StrCat("ucx/", kind, "/", peer)));
  }
  absl::Status joined = StopConnecting();
  if (joined.ok()) {
    joined = gloo_backend::WaitForKeys(store, keys, deadline, [this] { return StopConnecting(); });
  }
  if (joined.ok()) return joined;
  std::vector<int64_t> missing;
  for (int64_t peer = 0; peer < size(); ++peer) {
    if (!store.Get(keys[peer]).ok()) missing.push_back(peer);
  }
  const std::string waiting_for = missing.empty()
                                      ? std::string("its peers to connect")
                                      : absl::StrCat(RanksText(missing), " to join the group");
  if (failed()) return StoppedWaiting(prefix, waiting_for);
  if (absl::IsDeadlineExceeded(joined)) {
    return fail(absl::DeadlineExceededError(
        absl::StrCat(prefix, ": waited ", absl::FormatDuration(timeout), " for ", waiting_for)));
  }
  return fail(absl::UnavailableError(
      absl::StrCat(prefix, ": connecting: the rendezvous store failed: ", joined.message())));
}

absl::Status Mesh::CreateEndpoints(const std::string& prefix) {
  auto fail = [&](const std::string& what) {
    const absl::Status status = absl::UnavailableError(absl::StrCat(prefix, ": connecting: ", what));
    Fail(Failure{Failure::Source::kThisRank, rank(), status.code(), std::string(status.message())});
    return status;
  };
  endpoints_.assign(size(), nullptr);
  for (int64_t peer = 0; peer < size(); ++peer) {
    if (peer == rank()) continue;
    const absl::StatusOr<std::string> hex =
        options_.store->Get(Key(absl::StrCat("ucx/address/", peer)));
    if (!hex.ok()) return fail(absl::StrCat("reading rank ", peer, "'s address: ", hex.status().message()));
    const std::string address = absl::HexStringToBytes(*hex);
    ucp_ep_params_t params = {};
    params.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS;
    params.address = reinterpret_cast<const ucp_address_t*>(address.data());
    const ucs_status_t created = ucp_ep_create(worker_, &params, &endpoints_[peer]);
    if (created != UCS_OK) {
      endpoints_[peer] = nullptr;
      return fail(absl::StrCat("creating the UCX endpoint to rank ", peer,
                               " failed: ", ucs_status_string(created)));
    }
    const absl::StatusOr<std::string> process =
        options_.store->Get(Key(absl::StrCat("ucx/process/", peer)));
    if (process.ok()) {
      const int64_t pid = ReadProcessRecord(*process).visible_pid;
      if (pid != getpid()) local_pids_[peer] = pid;
    }
  }
  return absl::OkStatus();
}

}  // namespace ucx_backend
}  // namespace oneflow
