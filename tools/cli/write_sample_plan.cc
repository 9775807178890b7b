// Test helper: writes SampleDataParallelPlan() to the file named by its one argument,
// so that shell tests can run the real `oneflow` binary on a real plan file.
#include <cstdio>
#include <string>

#include "plan/plan_io.h"
#include "tools/cli/sample_plan.h"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: write_sample_plan OUT\n");
    return 2;
  }
  const absl::Status status =
      oneflow::WritePlanFile(argv[1], oneflow::cli::SampleDataParallelPlan());
  if (!status.ok()) {
    std::fprintf(stderr, "write_sample_plan: %s\n", std::string(status.message()).c_str());
    return 1;
  }
  return 0;
}
