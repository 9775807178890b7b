// Transport security for the launcher's gRPC channels: plaintext unless TLS files are
// given. TLS is server-authenticated only (the shared token authenticates clients):
//   server  --tls_cert=CERT.pem --tls_key=KEY.pem   (grpc::SslServerCredentials)
//   client  --tls_ca=CA.pem, the certificate that signed the server's (for a
//           self-signed certificate, the certificate itself); the server's name as the
//           client dials it (host or IP) must be in the certificate's subjectAltName.
#ifndef TOOLS_LAUNCHER_CREDENTIALS_H_
#define TOOLS_LAUNCHER_CREDENTIALS_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "grpcpp/channel.h"
#include "grpcpp/security/server_credentials.h"

namespace oneflow::launcher {

// The whole of a small file (a certificate or key); errors name `flag` and the file.
absl::StatusOr<std::string> ReadSmallFile(const std::string& path, const std::string& flag);

// Plaintext when both are empty; TLS with the PEM files otherwise. INVALID_ARGUMENT when
// only one is given; errors name the flag and file that could not be read.
absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> MakeServerCredentials(
    const std::string& tls_cert_file, const std::string& tls_key_file);

// A channel to `address` (host:port): plaintext when `tls_ca_file` is empty, TLS trusting
// the PEM certificates in it otherwise. Keepalive pings every 10 s notice a daemon that
// vanished without closing its connection (a dead machine) within ~20 s, so a stream
// waiting on it fails with UNAVAILABLE instead of hanging.
absl::StatusOr<std::shared_ptr<grpc::Channel>> MakeChannel(const std::string& address,
                                                            const std::string& tls_ca_file);

}  // namespace oneflow::launcher

#endif  // TOOLS_LAUNCHER_CREDENTIALS_H_
