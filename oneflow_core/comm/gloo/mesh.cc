#include "oneflow_core/comm/gloo/mesh.h"

#include <signal.h>

#include <algorithm>
#include <chrono>
#include <exception>
#include <mutex>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "gloo/transport/tcp/device.h"
#include "oneflow_core/comm/collective_arguments.h"
#include "oneflow_core/comm/gloo/store_adapter.h"

namespace oneflow {
namespace gloo_backend {
namespace {

// Slots the mesh itself uses, above every call's slots (exchange.h).
constexpr uint64_t kWatchSlot = (uint64_t{1} << 63) | 1;
constexpr uint64_t kProbeSlot = (uint64_t{1} << 63) | 2;
// How long a rank that saw a connection break waits for the peer's record: a peer whose
// own wait expired has its connections closed by Gloo before it can write the record.
constexpr absl::Duration kRecordGrace = absl::Milliseconds(500);
// The watcher's wait: Gloo treats the end of any wait as a timeout that closes every
// connection, so it must outlast the group.
constexpr std::chrono::milliseconds kForever = std::chrono::hours(24 * 365 * 10);

// Gloo writes to its sockets with writev(2), which raises SIGPIPE when the peer has
// closed: by default that kills the process instead of failing the write. So the first
// connecting rank ignores SIGPIPE for the process, unless someone installed a handler.
void IgnoreSigpipe() {
  static std::once_flag once;
  std::call_once(once, [] {
    struct sigaction current = {};
    if (sigaction(SIGPIPE, nullptr, &current) == 0 && current.sa_handler == SIG_DFL) {
      signal(SIGPIPE, SIG_IGN);
    }
  });
}

}  // namespace

Mesh::Mesh(GlooGroupOptions options)
    : options_(std::move(options)), departures_(options_.rank, options_.size, Key("")) {}

Mesh::~Mesh() {
  bool depart = false;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    depart = connected_ && !failure_.has_value() && options_.store != nullptr;
    closing_ = true;
    if (watch_ != nullptr) watch_->abortWaitRecv();
  }
  // The record before the connections close: a peer that sees them break finds it.
  if (depart) departures_.Write(*options_.store, departure_);
  if (watcher_.joinable()) watcher_.join();
  // Buffers hold the transport context; the context's pairs close their sockets (an
  // orderly FIN, so bytes already sent still arrive) when it is destroyed.
  watch_.reset();
  probe_.reset();
  context_.reset();
  device_.reset();
}

std::string Mesh::Key(const std::string& what) const {
  return absl::StrCat(options_.group_name, "/", what);
}

std::string Mesh::RecordKey(int64_t rank) const { return Key(absl::StrCat("failure/", rank)); }

std::optional<Failure> Mesh::failure() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return failure_;
}

bool Mesh::RegisterWait(::gloo::transport::UnboundBuffer* buffer, bool receiving) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (failure_.has_value()) return false;
  waits_[buffer] = receiving;
  return true;
}

void Mesh::UnregisterWait(::gloo::transport::UnboundBuffer* buffer) {
  std::lock_guard<std::mutex> lock(mutex_);
  waits_.erase(buffer);
}

void Mesh::Fail(Failure failure) {
  bool close = false;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (failure_.has_value()) return;
    failure_ = failure;
    NoteProcessFailure(failure);
    // A woken wait returns false; the waiting call then reports this failure.
    for (const auto& [buffer, receiving] : waits_) {
      if (receiving) {
        buffer->abortWaitRecv();
      } else {
        buffer->abortWaitSend();
      }
    }
    if (watch_ != nullptr) watch_->abortWaitRecv();
    close = connected_;
  }
  // The record goes first, so a peer that sees the connections close can read why.
  WriteRecord(failure);
  if (!close) return;  // a connect in progress closes what it opened (OpenConnections)
  try {
    context_->closeConnections();
  } catch (const std::exception&) {
    // Closing is best effort: a connection that cannot close cleanly is broken already.
  }
}

void Mesh::WriteRecord(const Failure& failure) {
  if (options_.store == nullptr) return;
  Failure told = failure;
  if (told.source == Failure::Source::kThisRank) {
    told.source = Failure::Source::kPeer;
    told.rank = rank();
  }
  // Best effort: without the record, peers still fail, as UNAVAILABLE "lost the connection".
  (void)options_.store->Set(RecordKey(rank()), EncodeFailureRecord(told));
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
      std::optional<Failure> record = DecodeFailureRecord(*text);
      if (record.has_value()) return record;
    }
    if (absl::Now() >= deadline || failure().has_value()) return std::nullopt;
    absl::SleepFor(absl::Milliseconds(5));
  }
}

void Mesh::FailForBrokenConnection(const std::vector<int64_t>& peers, const std::string& detail) {
  if (failure().has_value()) return;
  std::optional<Failure> record = ReadRecord(peers, kRecordGrace);
  if (record.has_value()) {
    Fail(*std::move(record));
    return;
  }
  Fail(Failure{Failure::Source::kLostConnection, peers.empty() ? -1 : peers.front(),
               absl::StatusCode::kUnavailable, detail});
}

absl::Status Mesh::StoppedWaiting(const std::string& prefix, const std::string& waiting_for) const {
  const std::optional<Failure> failed = failure();
  if (!failed.has_value())
    return absl::InternalError(absl::StrCat(prefix, ": stopped without a failure"));
  return absl::Status(failed->code, absl::StrCat(prefix, ": stopped waiting for ", waiting_for,
                                                 ": ", failed->WhileWaiting()));
}

absl::Status Mesh::StopConnecting() {
  if (failure().has_value()) return absl::CancelledError("the group failed");
  const absl::StatusOr<std::string> failed = options_.store->Get(Key("failed"));
  int64_t rank = -1;
  if (!failed.ok() || !absl::SimpleAtoi(*failed, &rank)) return absl::OkStatus();
  std::optional<Failure> record = ReadRecord({rank}, kRecordGrace);
  Fail(record.has_value() ? *std::move(record)
                          : Failure{Failure::Source::kPeer, rank, absl::StatusCode::kUnknown,
                                    "it failed without saying why"});
  return absl::CancelledError("the group failed");
}

absl::Status Mesh::Connect(absl::Time deadline, absl::Duration timeout, const std::string& prefix) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (connected_) return absl::OkStatus();
  }
  absl::Status status = JoinGroup(deadline, timeout, prefix);
  if (status.ok()) status = OpenConnections(deadline, prefix);
  return status;
}

absl::Status Mesh::JoinGroup(absl::Time deadline, absl::Duration timeout,
                             const std::string& prefix) {
  KeyValueStore& store = *options_.store;
  absl::Status status = store.Set(Key(absl::StrCat("join/", rank())), "1");
  if (!status.ok()) {
    status = absl::UnavailableError(absl::StrCat(
        prefix, ": connecting: cannot write to the rendezvous store: ", status.message()));
    Fail(Failure{Failure::Source::kThisRank, rank(), status.code(), std::string(status.message())});
    return status;
  }
  std::vector<std::string> keys;
  for (int64_t peer = 0; peer < size(); ++peer) keys.push_back(Key(absl::StrCat("join/", peer)));
  // A rank that comes late to a group that failed meanwhile learns it here, at once.
  absl::Status joined = StopConnecting();
  if (joined.ok()) joined = WaitForKeys(store, keys, deadline, [this] { return StopConnecting(); });
  if (joined.ok()) return joined;
  std::vector<int64_t> missing;
  for (int64_t peer = 0; peer < size(); ++peer) {
    if (!store.Get(keys[peer]).ok()) missing.push_back(peer);
  }
  const std::string waiting_for = missing.empty()
                                      ? std::string("its peers to connect")
                                      : absl::StrCat(RanksText(missing), " to join the group");
  if (failure().has_value()) return StoppedWaiting(prefix, waiting_for);
  if (absl::IsDeadlineExceeded(joined)) {
    status = absl::DeadlineExceededError(
        absl::StrCat(prefix, ": waited ", absl::FormatDuration(timeout), " for ", waiting_for));
  } else {
    status = absl::UnavailableError(
        absl::StrCat(prefix, ": connecting: the rendezvous store failed: ", joined.message()));
  }
  Fail(Failure{Failure::Source::kThisRank, rank(), status.code(), std::string(status.message())});
  return status;
}

absl::Status Mesh::OpenConnections(absl::Time deadline, const std::string& prefix) {
  auto fail = [&](absl::StatusCode code, absl::string_view what) {
    // A peer that failed while the group connected (an Abort, a timeout) closes what it had
    // opened, which breaks this rank's connecting too; its record, written before it closed,
    // tells why, as for a connection that breaks in a call (FailForBrokenConnection).
    (void)StopConnecting();
    if (failure().has_value()) return StoppedWaiting(prefix, "its peers to connect");
    const absl::Status status(code, absl::StrCat(prefix, ": connecting: ", what));
    Fail(Failure{Failure::Source::kThisRank, rank(), code, std::string(status.message())});
    return status;
  };
  IgnoreSigpipe();
  std::shared_ptr<::gloo::transport::Device> device;
  auto context = std::make_shared<::gloo::rendezvous::Context>(rank(), size());
  try {
    ::gloo::transport::tcp::attr attr;
    attr.hostname = options_.host;
    device = ::gloo::transport::tcp::CreateDevice(attr);
    // A pair waits up to 5x the context's timeout for its TCP handshake; everyone has
    // joined by now, so that is quick unless a peer dies in between.
    const absl::Duration left = std::max(deadline - absl::Now(), absl::Milliseconds(500));
    context->setTimeout(std::chrono::milliseconds(absl::ToInt64Milliseconds(left / 5)));
    StoreAdapter adapter(options_.store, Key("gloo/"), deadline,
                         [this] { return StopConnecting(); });
    context->connectFullMesh(adapter, device);
  } catch (const StoreError& error) {
    return fail(error.status().code(), error.status().message());
  } catch (const std::exception& error) {
    return fail(absl::Now() >= deadline ? absl::StatusCode::kDeadlineExceeded
                                        : absl::StatusCode::kUnavailable,
                absl::StrCat("opening TCP connections from ", options_.host,
                             " to the other ranks failed: ", error.what()));
  }

  // The watcher's receive, posted on every connection: see mesh.h.
  watch_bytes_.assign(size(), 0);
  std::unique_ptr<::gloo::transport::UnboundBuffer> watch =
      context->createUnboundBuffer(watch_bytes_.data(), watch_bytes_.size());
  std::unique_ptr<::gloo::transport::UnboundBuffer> probe =
      context->createUnboundBuffer(watch_bytes_.data(), 1);
  try {
    for (int64_t peer = 0; peer < size(); ++peer) {
      if (peer != rank()) watch->recv(static_cast<int>(peer), kWatchSlot, peer, 1);
    }
  } catch (const std::exception& error) {
    return fail(absl::StatusCode::kUnavailable,
                absl::StrCat("a connection broke right after it opened: ", error.what()));
  }
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!failure_.has_value()) {
      device_ = std::move(device);
      context_ = std::move(context);
      watch_ = std::move(watch);
      probe_ = std::move(probe);
      connected_ = true;
    }
  }
  if (context != nullptr) {  // failed (an Abort) while connecting: close what was opened
    context->closeConnections();
    return StoppedWaiting(prefix, "its peers to connect");
  }
  watcher_ = std::thread([this] { Watch(); });
  return absl::OkStatus();
}

void Mesh::ReadDepartures() {
  if (options_.store == nullptr) return;
  std::lock_guard<std::mutex> lock(departures_mutex_);
  departures_.Read(*options_.store);
}

std::optional<Departure> Mesh::departed(int64_t peer) const {
  std::lock_guard<std::mutex> lock(departures_mutex_);
  const Departure* departure = departures_.departed(peer);
  if (departure == nullptr) return std::nullopt;
  return *departure;
}

void Mesh::Watch() {
  std::string broke_rearming;
  for (;;) {
    std::string detail = "a rank sent on the watch slot, which no rank does";
    if (!broke_rearming.empty()) {
      detail = std::move(broke_rearming);
      broke_rearming.clear();
    } else {
      try {
        // watch_ changes only on this thread (WatchAgain).
        if (!watch_->waitRecv(nullptr, kForever)) return;  // this rank failed or is closing
      } catch (const std::exception& error) {
        detail = error.what();
      }
    }
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (failure_.has_value() || closing_) return;
    }
    // A wait of this rank's own call expired: Gloo closed every connection with this
    // message, and that call reports the timeout itself.
    if (absl::StrContains(detail, "Application timeout")) return;
    // A departed peer writes its record before it closes, so it is there to read now.
    const std::vector<int64_t> broken = BrokenPeers();
    ReadDepartures();
    std::vector<int64_t> failed;
    for (int64_t peer : broken) {
      if (!departed(peer).has_value()) failed.push_back(peer);
    }
    if (broken.empty() || !failed.empty()) {
      FailForBrokenConnection(broken.empty() ? broken : failed, detail);
      return;
    }
    // Every broken connection was a peer leaving after its calls: not a failure.
    if (!WatchAgain(&broke_rearming)) return;
  }
}

bool Mesh::WatchAgain(std::string* broke) {
  std::unique_ptr<::gloo::transport::UnboundBuffer> watch =
      context_->createUnboundBuffer(watch_bytes_.data(), watch_bytes_.size());
  bool watching = false;
  try {
    for (int64_t peer = 0; peer < size(); ++peer) {
      if (peer == rank() || departed(peer).has_value()) continue;
      watch->recv(static_cast<int>(peer), kWatchSlot, peer, 1);
      watching = true;
    }
  } catch (const std::exception& error) {
    // A connection that broke meanwhile: judged as the first one was, on the next round.
    *broke = error.what();
    if (broke->empty()) *broke = "a connection broke";
    watching = true;
  }
  std::unique_ptr<::gloo::transport::UnboundBuffer> previous;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!watching || failure_.has_value() || closing_) return false;
    previous = std::move(watch_);
    watch_ = std::move(watch);
  }
  return true;
}

std::vector<int64_t> Mesh::BrokenPeers() {
  // A send on a broken connection throws at once with the connection's error; on a live
  // one it merely announces a send nobody receives, harmless as the group is failing.
  std::vector<int64_t> broken;
  for (int64_t peer = 0; peer < size(); ++peer) {
    if (peer == rank()) continue;
    try {
      probe_->send(static_cast<int>(peer), kProbeSlot, 0, 0);
    } catch (const std::exception&) {
      broken.push_back(peer);
    }
  }
  return broken;
}

}  // namespace gloo_backend
}  // namespace oneflow
