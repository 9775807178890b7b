#include "oneflow_core/comm/gloo/failure.h"

#include <mutex>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace oneflow {
namespace gloo_backend {
namespace {

std::string PeerText(int64_t rank) { return rank < 0 ? "a peer" : absl::StrCat("rank ", rank); }

struct ProcessFailure {
  std::mutex mutex;
  std::optional<Failure> first ABSL_GUARDED_BY(mutex);
};

ProcessFailure& TheProcessFailure() {
  static ProcessFailure* failure = new ProcessFailure;
  return *failure;
}

}  // namespace

void NoteProcessFailure(const Failure& failure) {
  ProcessFailure& process = TheProcessFailure();
  std::lock_guard<std::mutex> lock(process.mutex);
  if (!process.first.has_value()) process.first = failure;
}

std::optional<Failure> FirstProcessFailure() {
  ProcessFailure& process = TheProcessFailure();
  std::lock_guard<std::mutex> lock(process.mutex);
  return process.first;
}

absl::string_view VerbText(Exchange::Verb verb) {
  switch (verb) {
    case Exchange::Verb::kArrive:
      return "to arrive";
    case Exchange::Verb::kSend:
      return "to send";
    case Exchange::Verb::kReceive:
      return "to receive";
  }
  return "";
}

std::string EncodeFailureRecord(const Failure& failure) {
  return absl::StrCat(static_cast<int>(failure.source), "\n", failure.rank, "\n",
                      static_cast<int>(failure.code), "\n", failure.message);
}

std::optional<Failure> DecodeFailureRecord(const std::string& text) {
  std::vector<std::string> parts = absl::StrSplit(text, absl::MaxSplits('\n', 3));
  int source = 0;
  int code = 0;
  Failure failure;
  if (parts.size() != 4 || !absl::SimpleAtoi(parts[0], &source) ||
      !absl::SimpleAtoi(parts[1], &failure.rank) || !absl::SimpleAtoi(parts[2], &code) ||
      source < 0 || source > static_cast<int>(Failure::Source::kLostConnection)) {
    return std::nullopt;
  }
  failure.source = static_cast<Failure::Source>(source);
  failure.code = static_cast<absl::StatusCode>(code);
  failure.message = std::move(parts[3]);
  return failure;
}

std::string Failure::WhileWaiting() const {
  switch (source) {
    case Source::kThisRank:
      return absl::StrCat("the group was aborted: ", message);
    case Source::kPeer:
      return absl::StrCat("the group was aborted by rank ", rank, ": ", message);
    case Source::kLostConnection:
      return absl::StrCat("lost the connection to ", PeerText(rank), ": ", message);
  }
  return message;
}

std::string Failure::Earlier() const {
  switch (source) {
    case Source::kThisRank:
      return absl::StrCat("the group was aborted earlier: ", message);
    case Source::kPeer:
      return absl::StrCat("the group was aborted earlier by rank ", rank, ": ", message);
    case Source::kLostConnection:
      return absl::StrCat("the group was aborted earlier: lost the connection to ", PeerText(rank),
                          ": ", message);
  }
  return message;
}

}  // namespace gloo_backend
}  // namespace oneflow
