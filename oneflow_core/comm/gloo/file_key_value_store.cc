#include "oneflow_core/comm/gloo/file_key_value_store.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "oneflow_core/files/atomic_write.h"
#include "oneflow_core/files/file_descriptor.h"

namespace oneflow {

FileKeyValueStore::FileKeyValueStore(std::string directory) : directory_(std::move(directory)) {}

std::string FileKeyValueStore::PathOf(const std::string& key) const {
  std::string name;
  for (unsigned char c : key) {
    if (std::isalnum(c) || c == '.' || c == '_' || c == '-') {
      name.push_back(static_cast<char>(c));
    } else {
      absl::StrAppendFormat(&name, "%%%02X", c);
    }
  }
  return absl::StrCat(directory_, "/", name);
}

absl::Status FileKeyValueStore::WriteFile(const std::string& path, const std::string& value) {
  // A reader polls for `path` and must never see a part of the value.
  const absl::Status written = WriteFileAtomically(path, value, WriteFileOptions{absl::StrCat("key file '", path, "'")});
  if (!written.ok()) return absl::UnavailableError(written.message());
  return absl::OkStatus();
}

absl::Status FileKeyValueStore::Set(const std::string& key, const std::string& value) {
  return WriteFile(PathOf(key), value);
}

absl::StatusOr<std::string> FileKeyValueStore::Get(const std::string& key) {
  std::ifstream in(PathOf(key), std::ios::binary);
  if (!in.is_open()) return absl::NotFoundError(absl::StrCat("key '", key, "' is not set"));
  std::ostringstream value;
  value << in.rdbuf();
  return value.str();
}

absl::Status FileKeyValueStore::Wait(const std::vector<std::string>& keys, absl::Duration timeout) {
  const absl::Time deadline = absl::Now() + timeout;
  absl::Duration pause = absl::Milliseconds(1);
  for (;;) {
    std::vector<std::string> missing;
    for (const std::string& key : keys) {
      if (access(PathOf(key).c_str(), F_OK) != 0) missing.push_back(key);
    }
    if (missing.empty()) return absl::OkStatus();
    const absl::Time now = absl::Now();
    if (now >= deadline) {
      return absl::DeadlineExceededError(
          absl::StrCat("waited ", absl::FormatDuration(timeout),
                       " for keys that were never set: ", absl::StrJoin(missing, ", ")));
    }
    absl::SleepFor(std::min(pause, deadline - now));
    pause = std::min(pause * 2, absl::Milliseconds(10));
  }
}

absl::StatusOr<int64_t> FileKeyValueStore::Add(const std::string& key, int64_t delta) {
  const std::string lock_path = absl::StrCat(directory_, "/.lock");
  const FileDescriptor lock(open(lock_path.c_str(), O_CREAT | O_RDWR, 0644));
  if (!lock.valid()) {
    return absl::UnavailableError(
        absl::StrCat("cannot open ", lock_path, ": ", std::strerror(errno)));
  }
  absl::StatusOr<int64_t> result;
  if (flock(lock.get(), LOCK_EX) != 0) {
    result =
        absl::UnavailableError(absl::StrCat("cannot lock ", lock_path, ": ", std::strerror(errno)));
  } else {
    int64_t value = 0;
    const absl::StatusOr<std::string> old = Get(key);
    if (old.ok() && !absl::SimpleAtoi(*old, &value)) {
      result = absl::FailedPreconditionError(
          absl::StrCat("key '", key, "' holds '", *old, "', not an integer to add to"));
    } else {
      value += delta;
      const absl::Status written = WriteFile(PathOf(key), absl::StrCat(value));
      result = written.ok() ? absl::StatusOr<int64_t>(value) : absl::StatusOr<int64_t>(written);
    }
    flock(lock.get(), LOCK_UN);
  }
  return result;
}

}  // namespace oneflow
