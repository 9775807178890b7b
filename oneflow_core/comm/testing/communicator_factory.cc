#include "oneflow_core/comm/testing/communicator_factory.h"

#include "absl/strings/str_cat.h"

namespace oneflow {
namespace comm_testing {

std::string ShapeName(const GroupShape& shape) {
  return absl::StrCat(shape.nodes, "x", shape.local_size);
}

std::vector<std::shared_ptr<CommunicatorFactory>> AllCommunicatorFactories() {
  return {InProcessFactory(), GlooFactory(), UcxFactory(), HierarchicalFactory()};
}

// Flat backends are named by their rank count; the hierarchical one by its shape, which
// decides its routing.
std::string CaseName(const BackendCase& backend_case) {
  if (backend_case.shape.nodes == 1 && backend_case.factory->name() != "hierarchical") {
    return absl::StrCat(backend_case.factory->name(), "_", backend_case.shape.size(), "ranks");
  }
  return absl::StrCat(backend_case.factory->name(), "_", ShapeName(backend_case.shape));
}

void PrintTo(const std::shared_ptr<CommunicatorFactory>& factory, std::ostream* os) {
  *os << factory->name();
}

void PrintTo(const BackendCase& backend_case, std::ostream* os) { *os << CaseName(backend_case); }

}  // namespace comm_testing
}  // namespace oneflow
