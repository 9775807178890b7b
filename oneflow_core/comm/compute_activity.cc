#include "oneflow_core/comm/compute_activity.h"

#include <atomic>

namespace oneflow {
namespace {

std::atomic<int>& Running() {
  static std::atomic<int> running{0};
  return running;
}

}  // namespace

int ComputeActsRunning() { return Running().load(std::memory_order_relaxed); }

ComputeActScope::ComputeActScope(bool counted) : counted_(counted) {
  if (counted_) Running().fetch_add(1, std::memory_order_relaxed);
}

ComputeActScope::~ComputeActScope() {
  if (counted_) Running().fetch_sub(1, std::memory_order_relaxed);
}

}  // namespace oneflow
