// A self-signed TLS certificate for tests of the launcher's TLS (oneflowd --tls_cert
// --tls_key, `oneflow launch --tls_ca`, RendezvousClient's tls_ca_file), made by the
// openssl CLI. tools/dev.sh installs the openssl package; a machine without it fails
// these tests with a message saying so rather than skipping them.
#ifndef TOOLS_LAUNCHER_TESTING_TLS_CERTIFICATE_H_
#define TOOLS_LAUNCHER_TESTING_TLS_CERTIFICATE_H_

#include <string>

#include "absl/status/statusor.h"

namespace oneflow::launcher::testing {

struct TlsCertificate {
  std::string cert_file;  // PEM certificate: a server's --tls_cert and, being self-signed, a client's --tls_ca
  std::string key_file;   // PEM private key (unencrypted): a server's --tls_key
};

// A fresh RSA-2048 key and a certificate for it, valid one day, for the names the tests
// dial: subjectAltName IP:127.0.0.1 and DNS:localhost. Each call makes a new key, so the
// certificate of one call does not verify a server using another's (a wrong CA).
// The files go to a fresh TestDirectory(name). `openssl` is the program run (looked up
// on PATH unless it has a '/'). FAILED_PRECONDITION, saying what to install, when there
// is no such program; INTERNAL with openssl's output when it fails.
absl::StatusOr<TlsCertificate> MakeSelfSignedCertificate(const std::string& name,
                                                         const std::string& openssl = "openssl");

}  // namespace oneflow::launcher::testing

#endif  // TOOLS_LAUNCHER_TESTING_TLS_CERTIFICATE_H_
