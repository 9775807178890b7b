#include "tools/launcher/auth.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace oneflow::launcher {
namespace {

constexpr char kAuthorizationKey[] = "authorization";
constexpr char kBearerPrefix[] = "Bearer ";

}  // namespace

absl::StatusOr<std::string> ReadTokenFile(const std::string& path) {
  const std::string where = absl::StrCat("token file '", path, "'");
  if (path.empty()) {
    return absl::InvalidArgumentError("no token file given (--token_file); see docs/launcher.md");
  }
  struct stat info;
  if (stat(path.c_str(), &info) != 0) {
    const int error = errno;
    const std::string message = absl::StrCat(where, ": ", std::strerror(error));
    return error == ENOENT ? absl::NotFoundError(message) : absl::PermissionDeniedError(message);
  }
  if (!S_ISREG(info.st_mode)) return absl::InvalidArgumentError(absl::StrCat(where, " is not a regular file"));
  if ((info.st_mode & (S_IROTH | S_IWOTH)) != 0) {
    return absl::PermissionDeniedError(absl::StrFormat(
        "%s can be read or written by every user (mode %04o); the token is a secret: chmod 600 it",
        where, info.st_mode & 07777));
  }
  std::ifstream file(path, std::ios::binary);
  if (!file) return absl::PermissionDeniedError(absl::StrCat(where, ": cannot open: ", std::strerror(errno)));
  std::stringstream contents;
  contents << file.rdbuf();
  std::string token(absl::StripAsciiWhitespace(contents.str()));
  if (token.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(where, " is empty; write a secret into it, e.g. `openssl rand -hex 32 > ", path, "`"));
  }
  for (size_t i = 0; i < token.size(); ++i) {
    const unsigned char c = static_cast<unsigned char>(token[i]);
    if (c < 0x20 || c > 0x7e) {
      return absl::InvalidArgumentError(absl::StrCat(
          where, ": byte ", i, " of the token is not printable ASCII, which gRPC metadata cannot carry"));
    }
  }
  return token;
}

bool ConstantTimeEquals(absl::string_view a, absl::string_view b) {
  // Every byte of `a` is compared whatever matched so far; the length difference is
  // folded in, not returned early.
  volatile unsigned char difference = a.size() == b.size() ? 0 : 1;
  for (size_t i = 0; i < a.size(); ++i) {
    const unsigned char other = b.empty() ? 0 : static_cast<unsigned char>(b[i % b.size()]);
    difference = difference | (static_cast<unsigned char>(a[i]) ^ other);
  }
  return difference == 0;
}

void AttachToken(grpc::ClientContext* context, const std::string& token) {
  context->AddMetadata(kAuthorizationKey, absl::StrCat(kBearerPrefix, token));
}

TokenAuthorizer::TokenAuthorizer(std::string token, std::string log_prefix)
    : expected_(absl::StrCat(kBearerPrefix, token)), log_prefix_(std::move(log_prefix)) {}

grpc::Status TokenAuthorizer::Check(const grpc::ServerContext& context, absl::string_view method) const {
  const auto& metadata = context.client_metadata();
  const auto found = metadata.find(kAuthorizationKey);
  const char* problem = nullptr;
  if (found == metadata.end()) {
    problem = "no authorization metadata";
  } else if (!ConstantTimeEquals(expected_, absl::string_view(found->second.data(), found->second.size()))) {
    problem = "wrong token";
  }
  if (problem == nullptr) return grpc::Status::OK;
  std::fprintf(stderr, "%s: refused %s from %s: %s\n", log_prefix_.c_str(), std::string(method).c_str(),
               context.peer().c_str(), problem);
  return grpc::Status(grpc::StatusCode::UNAUTHENTICATED,
                      absl::StrCat(method, ": ", problem,
                                   "; every call needs 'authorization: Bearer <token>' with the token of "
                                   "the daemons' --token_file"));
}

}  // namespace oneflow::launcher
