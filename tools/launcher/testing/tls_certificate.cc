#include "tools/launcher/testing/tls_certificate.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "tools/launcher/testing/daemon_process.h"

extern char** environ;

namespace oneflow::launcher::testing {

absl::StatusOr<TlsCertificate> MakeSelfSignedCertificate(const std::string& name, const std::string& openssl) {
  const std::string directory = TestDirectory(name);
  TlsCertificate files;
  files.cert_file = directory + "/cert.pem";
  files.key_file = directory + "/key.pem";
  const std::string log_file = directory + "/openssl.log";
  std::vector<std::string> arguments = {
      openssl,    "req",           "-x509",   "-newkey",
      "rsa:2048", "-nodes",        "-days",   "1",
      "-subj",    "/CN=localhost", "-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost",
      "-keyout",  files.key_file,  "-out",    files.cert_file};
  std::vector<char*> argv;
  for (std::string& argument : arguments) argv.push_back(argument.data());
  argv.push_back(nullptr);

  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, log_file.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_adddup2(&actions, STDOUT_FILENO, STDERR_FILENO);
  pid_t pid = -1;
  // glibc's posix_spawnp reports a failed exec (no such program) as its result.
  const int spawned = posix_spawnp(&pid, openssl.c_str(), &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (spawned == ENOENT) {
    return absl::FailedPreconditionError(
        absl::StrCat("no '", openssl,
                     "' to run: the TLS tests make their certificates with the openssl CLI; install the Debian "
                     "package 'openssl' (`tools/dev.sh deps` does)"));
  }
  if (spawned != 0) return absl::InternalError(absl::StrCat("posix_spawnp openssl: ", std::strerror(spawned)));
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    std::ifstream log(log_file);
    std::stringstream output;
    output << log.rdbuf();
    return absl::InternalError(
        absl::StrCat("`", absl::StrJoin(arguments, " "), "` failed (wait status ", status, "): ", output.str()));
  }
  return files;
}

}  // namespace oneflow::launcher::testing
