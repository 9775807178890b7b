// The OpenBLAS core check (blas_core.h): the choice table, and the real thing in child
// processes (blas_core_probe) started with and without OPENBLAS_CORETYPE.
#include "kernels/cpu/blas_core.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "gtest/gtest.h"

extern char** environ;

namespace oneflow {
namespace cpu {
namespace {

constexpr char kProbe[] = "kernels/cpu/blas_core_probe";  // relative to the runfiles root

TEST(BetterBlasCoreTest, RaisesOnlyAPickBelowWhatTheCpuRuns) {
  const CpuVectorSupport avx512{/*avx512=*/true, /*avx2_fma=*/true};
  const CpuVectorSupport avx2{/*avx512=*/false, /*avx2_fma=*/true};
  const CpuVectorSupport older{/*avx512=*/false, /*avx2_fma=*/false};
  // OpenBLAS 0.3.21's fallback for a CPU it does not know.
  EXPECT_STREQ(BetterBlasCore("Prescott", avx512), "SkylakeX");
  EXPECT_STREQ(BetterBlasCore("Prescott", avx2), "Haswell");
  EXPECT_STREQ(BetterBlasCore("Sandybridge", avx2), "Haswell");
  EXPECT_STREQ(BetterBlasCore("Haswell", avx512), "SkylakeX");
  EXPECT_STREQ(BetterBlasCore("zen", avx512), "SkylakeX");
  // Already the class the CPU runs: OpenBLAS's own choice stands.
  EXPECT_EQ(BetterBlasCore("SkylakeX", avx512), nullptr);
  EXPECT_EQ(BetterBlasCore("Cooperlake", avx512), nullptr);
  EXPECT_EQ(BetterBlasCore("COOPERLAKE", avx512), nullptr);
  EXPECT_EQ(BetterBlasCore("Haswell", avx2), nullptr);
  EXPECT_EQ(BetterBlasCore("Zen", avx2), nullptr);
  // Nothing better runs here, or nothing to compare with.
  EXPECT_EQ(BetterBlasCore("Prescott", older), nullptr);
  EXPECT_EQ(BetterBlasCore("Unknown", avx512), nullptr);
}

// No side effect of linking: this test links the library (and OpenBLAS) but is not a
// program of the project, so nothing ran the check before main().
TEST(BlasCoreTest, LinkingTheLibraryRunsNothing) { EXPECT_EQ(BlasCoreSeenAtStartup(), nullptr); }

TEST(DetectCpuVectorSupportTest, AgreesWithLibgcc) {
  const CpuVectorSupport cpu = DetectCpuVectorSupport();
  // The project builds with -march=x86-64-v3: this test could not run without AVX2 and FMA.
  EXPECT_TRUE(cpu.avx2_fma);
  __builtin_cpu_init();
  EXPECT_EQ(cpu.avx512, __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512cd") &&
                            __builtin_cpu_supports("avx512bw") &&
                            __builtin_cpu_supports("avx512dq") &&
                            __builtin_cpu_supports("avx512vl"));
}

struct ProbeRun {
  int exit_code = -1;
  std::map<std::string, std::string> values;  // the probe's key=value lines
  std::string stderr_text;
};

std::string ReadFile(const std::string& path) {
  std::ifstream file(path);
  std::stringstream text;
  text << file.rdbuf();
  return text.str();
}

// Runs the probe with this process's environment minus the OPENBLAS_ variables (bazel
// test sets OPENBLAS_VERBOSE=0), plus `variables` ("NAME=value").
ProbeRun RunProbe(std::vector<std::string> variables, std::vector<std::string> arguments) {
  std::vector<std::string> environment = std::move(variables);
  for (char** variable = environ; *variable != nullptr; ++variable) {
    if (std::string(*variable).rfind("OPENBLAS_", 0) != 0) environment.push_back(*variable);
  }
  std::vector<char*> envp;
  for (std::string& variable : environment) envp.push_back(variable.data());
  envp.push_back(nullptr);
  arguments.insert(arguments.begin(), kProbe);
  std::vector<char*> argv;
  for (std::string& argument : arguments) argv.push_back(argument.data());
  argv.push_back(nullptr);

  const char* directory = std::getenv("TEST_TMPDIR");
  const std::string prefix = std::string(directory != nullptr ? directory : "/tmp") + "/probe";
  const std::string out_path = prefix + ".out", err_path = prefix + ".err";
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, out_path.c_str(),
                                   O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, err_path.c_str(),
                                   O_WRONLY | O_CREAT | O_TRUNC, 0644);
  pid_t pid = 0;
  const int spawned = posix_spawn(&pid, kProbe, &actions, nullptr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  ProbeRun run;
  if (spawned != 0) {
    ADD_FAILURE() << "cannot start " << kProbe << ": " << std::strerror(spawned);
    return run;
  }
  int status = 0;
  EXPECT_EQ(waitpid(pid, &status, 0), pid);
  run.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  std::istringstream lines(ReadFile(out_path));
  for (std::string line; std::getline(lines, line);) {
    const size_t equals = line.find('=');
    if (equals != std::string::npos) run.values[line.substr(0, equals)] = line.substr(equals + 1);
  }
  run.stderr_text = ReadFile(err_path);
  return run;
}

TEST(BlasCoreProbeTest, WithoutTheVariableOpenBlasRunsTheCoreCpuidImplies) {
  const CpuVectorSupport cpu = DetectCpuVectorSupport();
  const ProbeRun run = RunProbe({}, {});
  ASSERT_EQ(run.exit_code, 0) << run.stderr_text;
  const std::string core = run.values.at("openblas_core");
  std::printf("OpenBLAS runs %s here (AVX-512: %s); startup check: %s\n", core.c_str(),
              cpu.avx512 ? "yes" : "no",
              run.stderr_text.empty() ? "nothing to change" : run.stderr_text.c_str());
  EXPECT_NE(core, "Unknown");
  EXPECT_EQ(BetterBlasCore(core, cpu), nullptr) << "OpenBLAS still runs " << core;
  // The check ran after OpenBLAS had initialised, so it compared a real pick.
  EXPECT_EQ(run.values.at("seen_at_startup"), core);
  if (run.stderr_text.empty()) {
    EXPECT_EQ(run.values.at("OPENBLAS_CORETYPE"), "(unset)");
  } else {
    // It restarted, saying so once.
    EXPECT_EQ(run.values.at("OPENBLAS_CORETYPE"), core);
    EXPECT_EQ(run.stderr_text.find("[blas_core] OpenBLAS picked its "), 0u) << run.stderr_text;
    EXPECT_EQ(run.stderr_text.find('\n'), run.stderr_text.size() - 1) << run.stderr_text;
  }
}

TEST(BlasCoreProbeTest, KeepsTheUsersChoiceSilently) {
  for (const std::string core : {"Prescott", "Haswell"}) {
    const ProbeRun run = RunProbe({"OPENBLAS_CORETYPE=" + core}, {});
    ASSERT_EQ(run.exit_code, 0) << run.stderr_text;
    EXPECT_EQ(run.values.at("openblas_core"), core);
    EXPECT_EQ(run.values.at("seen_at_startup"), core);
    EXPECT_EQ(run.values.at("OPENBLAS_CORETYPE"), core);
    EXPECT_EQ(run.stderr_text, "");
  }
}

// The re-exec itself, made to happen on any CPU by pretending OpenBLAS picked Prescott.
TEST(BlasCoreProbeTest, RestartKeepsTheArgumentsAndSwitchesTheCore) {
  const char* expected = BetterBlasCore("Prescott", DetectCpuVectorSupport());
  ASSERT_NE(expected, nullptr);
  const std::vector<std::string> arguments = {"--pretend_openblas_picked=Prescott", "two words", "",
                                              "--flag=x"};
  const ProbeRun run = RunProbe({}, arguments);
  ASSERT_EQ(run.exit_code, 0) << run.stderr_text;
  EXPECT_EQ(run.values.at("openblas_core"), expected);
  EXPECT_EQ(run.values.at("OPENBLAS_CORETYPE"), expected);
  EXPECT_EQ(run.values.at("argv[0]"), kProbe);
  for (size_t i = 0; i < arguments.size(); ++i) {
    EXPECT_EQ(run.values.at("argv[" + std::to_string(i + 1) + "]"), arguments[i]);
  }
  EXPECT_EQ(run.values.count("argv[5]"), 0u);
  EXPECT_EQ(run.stderr_text,
            std::string("[blas_core] OpenBLAS picked its Prescott kernels, but this CPU has ") +
                (std::string(expected) == "SkylakeX" ? "AVX-512" : "AVX2 and FMA") +
                ": restarting with OPENBLAS_CORETYPE=" + expected +
                " (set OPENBLAS_CORETYPE yourself to choose)\n");
}

TEST(BlasCoreProbeTest, OpenBlasVerboseZeroRestartsSilently) {
  const char* expected = BetterBlasCore("Prescott", DetectCpuVectorSupport());
  ASSERT_NE(expected, nullptr);
  const ProbeRun run = RunProbe({"OPENBLAS_VERBOSE=0"}, {"--pretend_openblas_picked=Prescott"});
  ASSERT_EQ(run.exit_code, 0) << run.stderr_text;
  EXPECT_EQ(run.values.at("openblas_core"), expected);
  EXPECT_EQ(run.stderr_text, "");
}

}  // namespace
}  // namespace cpu
}  // namespace oneflow
