#include "tests/cluster/process.h"

#include <dirent.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

extern char** environ;

namespace oneflow::testing {

Process::Process(const std::vector<std::string>& argv, const std::map<std::string, std::string>& environment) {
  int out[2], err[2];
  if (pipe2(out, O_CLOEXEC) != 0 || pipe2(err, O_CLOEXEC) != 0) std::abort();
  // Everything the child needs is prepared before fork: only async-signal-safe calls after.
  std::vector<std::string> env_strings;
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string entry(*e);
    const std::string name = entry.substr(0, entry.find('='));
    if (!environment.count(name)) env_strings.push_back(entry);
  }
  for (const auto& [name, value] : environment) env_strings.push_back(name + "=" + value);
  std::vector<char*> args, envs;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  for (const std::string& e : env_strings) envs.push_back(const_cast<char*>(e.c_str()));
  envs.push_back(nullptr);
  pid_ = fork();
  if (pid_ < 0) std::abort();
  if (pid_ == 0) {
    dup2(out[1], STDOUT_FILENO);
    dup2(err[1], STDERR_FILENO);
    execve(args[0], args.data(), envs.data());
    _exit(127);
  }
  close(out[1]);
  close(err[1]);
  stdout_thread_ = std::thread([this, fd = out[0]] { Reader(FileDescriptor(fd), true); });
  stderr_thread_ = std::thread([this, fd = err[0]] { Reader(FileDescriptor(fd), false); });
}

Process::~Process() {
  if (!reaped_) {
    kill(pid_, SIGKILL);
    Wait(std::chrono::milliseconds(10000));
  }
  if (stdout_thread_.joinable()) stdout_thread_.join();
  if (stderr_thread_.joinable()) stderr_thread_.join();
}

void Process::Signal(int signal_number) const { kill(pid_, signal_number); }

void Process::Reader(FileDescriptor pipe, bool is_stdout) {
  std::string pending;
  char buffer[4096];
  while (true) {
    const ssize_t n = read(pipe.get(), buffer, sizeof(buffer));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    std::lock_guard<std::mutex> lock(mutex_);
    if (!is_stdout) {
      stderr_.append(buffer, n);
      continue;
    }
    pending.append(buffer, n);
    size_t newline;
    while ((newline = pending.find('\n')) != std::string::npos) {
      stdout_lines_.push_back(pending.substr(0, newline));
      pending.erase(0, newline + 1);
    }
    changed_.notify_all();
  }
  pipe.Reset();
  std::lock_guard<std::mutex> lock(mutex_);
  if (is_stdout && !pending.empty()) stdout_lines_.push_back(pending);
  if (is_stdout) {
    stdout_open_ = false;
  } else {
    stderr_open_ = false;
  }
  changed_.notify_all();
}

bool Process::Wait(std::chrono::milliseconds timeout) {
  if (reaped_) return true;
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (true) {
    int status = 0;
    struct rusage usage {};
    const pid_t done = wait4(pid_, &status, WNOHANG, &usage);
    if (done == pid_) {
      reaped_ = true;
      peak_resident_bytes_ = static_cast<int64_t>(usage.ru_maxrss) * 1024;  // Linux counts kilobytes.
      exit_code_ = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      // The readers may still be draining the pipes: what the process wrote before it
      // exited is part of its output (a bounded wait: a child it left behind may hold
      // the pipes open).
      std::unique_lock<std::mutex> lock(mutex_);
      changed_.wait_for(lock, std::chrono::seconds(5), [this] { return !stdout_open_ && !stderr_open_; });
      return true;
    }
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

std::optional<std::string> Process::WaitForLine(const std::function<bool(const std::string&)>& match,
                                                std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock(mutex_);
  size_t checked = 0;
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (true) {
    for (; checked < stdout_lines_.size(); ++checked) {
      if (match(stdout_lines_[checked])) return stdout_lines_[checked];
    }
    if (!stdout_open_) return std::nullopt;
    if (changed_.wait_until(lock, deadline) == std::cv_status::timeout) {
      for (; checked < stdout_lines_.size(); ++checked) {
        if (match(stdout_lines_[checked])) return stdout_lines_[checked];
      }
      return std::nullopt;
    }
  }
}

std::vector<std::string> Process::StdoutLines() {
  std::lock_guard<std::mutex> lock(mutex_);
  return stdout_lines_;
}

std::string Process::Stderr() {
  std::lock_guard<std::mutex> lock(mutex_);
  return stderr_;
}

std::vector<pid_t> ProcessesWithArgument(const std::string& needle) {
  std::vector<pid_t> found;
  DIR* proc = opendir("/proc");
  if (proc == nullptr) return found;
  while (dirent* entry = readdir(proc)) {
    char* end = nullptr;
    const long pid = std::strtol(entry->d_name, &end, 10);
    if (*end != '\0' || pid <= 0) continue;
    std::ifstream cmdline("/proc/" + std::string(entry->d_name) + "/cmdline", std::ios::binary);
    std::stringstream text;
    text << cmdline.rdbuf();
    std::string arguments = text.str();
    if (arguments.find(needle) == std::string::npos) continue;
    std::ifstream stat("/proc/" + std::string(entry->d_name) + "/stat");
    std::string stat_line;
    std::getline(stat, stat_line);
    const size_t paren = stat_line.rfind(')');
    if (paren != std::string::npos && paren + 2 < stat_line.size() && stat_line[paren + 2] == 'Z') continue;
    found.push_back(static_cast<pid_t>(pid));
  }
  closedir(proc);
  return found;
}

bool ProcessExists(pid_t pid) { return kill(pid, 0) == 0; }

int UnusedLocalPort() {
  for (int attempt = 0; attempt < 1000; ++attempt) {
    const int port = 20000 + (getpid() * 7919 + attempt * 104729) % 12000;
    const FileDescriptor socket_fd(socket(AF_INET, SOCK_STREAM, 0));
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    address.sin_port = htons(static_cast<uint16_t>(port));
    const bool free = bind(socket_fd.get(), reinterpret_cast<sockaddr*>(&address), sizeof(address)) == 0;
    if (free) return port;
  }
  return 29500;
}

}  // namespace oneflow::testing
