#include "tools/launcher/credentials.h"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "grpcpp/create_channel.h"
#include "grpcpp/security/credentials.h"
#include "grpcpp/support/channel_arguments.h"

namespace oneflow::launcher {

absl::StatusOr<std::string> ReadSmallFile(const std::string& path, const std::string& flag) {
  std::ifstream file(path, std::ios::binary);
  if (!file) {
    const std::string message = absl::StrCat(flag, "='", path, "': cannot open: ", std::strerror(errno));
    return errno == ENOENT ? absl::NotFoundError(message) : absl::PermissionDeniedError(message);
  }
  std::stringstream contents;
  contents << file.rdbuf();
  if (contents.str().empty()) return absl::InvalidArgumentError(absl::StrCat(flag, "='", path, "': the file is empty"));
  return contents.str();
}

absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> MakeServerCredentials(
    const std::string& tls_cert_file, const std::string& tls_key_file) {
  if (tls_cert_file.empty() && tls_key_file.empty()) return grpc::InsecureServerCredentials();
  if (tls_cert_file.empty() || tls_key_file.empty()) {
    return absl::InvalidArgumentError("--tls_cert and --tls_key go together: give both or neither");
  }
  absl::StatusOr<std::string> cert = ReadSmallFile(tls_cert_file, "--tls_cert");
  if (!cert.ok()) return cert.status();
  absl::StatusOr<std::string> key = ReadSmallFile(tls_key_file, "--tls_key");
  if (!key.ok()) return key.status();
  grpc::SslServerCredentialsOptions options;
  options.pem_key_cert_pairs.push_back({*key, *cert});
  return grpc::SslServerCredentials(options);
}

absl::StatusOr<std::shared_ptr<grpc::Channel>> MakeChannel(const std::string& address,
                                                            const std::string& tls_ca_file) {
  std::shared_ptr<grpc::ChannelCredentials> credentials = grpc::InsecureChannelCredentials();
  if (!tls_ca_file.empty()) {
    absl::StatusOr<std::string> ca = ReadSmallFile(tls_ca_file, "--tls_ca");
    if (!ca.ok()) return ca.status();
    grpc::SslCredentialsOptions options;
    options.pem_root_certs = *ca;
    credentials = grpc::SslCredentials(options);
  }
  grpc::ChannelArguments arguments;
  arguments.SetInt(GRPC_ARG_KEEPALIVE_TIME_MS, 10000);
  arguments.SetInt(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, 10000);
  arguments.SetInt(GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS, 1);
  arguments.SetInt(GRPC_ARG_HTTP2_MAX_PINGS_WITHOUT_DATA, 0);
  // Plans are sent whole; the daemon enforces its own limit (--max_plan_bytes).
  arguments.SetMaxSendMessageSize(-1);
  return grpc::CreateCustomChannel(address, credentials, arguments);
}

}  // namespace oneflow::launcher
