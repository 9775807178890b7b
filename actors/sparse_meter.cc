#include "actors/sparse_meter.h"

namespace oneflow::actors {

void SparseMeter::Record(int64_t iteration, const RowSparseTraffic& act) {
  std::lock_guard<std::mutex> lock(mutex_);
  SparseMetrics& sums = pending_[iteration];
  sums.payload_bytes += act.payload_bytes;
  sums.metadata_bytes += act.metadata_bytes;
  sums.dense_bytes += act.dense_bytes;
  sums.rows_sent += act.rows_sent;
  sums.sparse_calls += act.sparse_calls;
  sums.dense_calls += act.dense_calls;
}

SparseMetrics SparseMeter::TakeIteration(int64_t iteration) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = pending_.find(iteration);
  if (it == pending_.end()) return {};
  SparseMetrics sums = it->second;
  pending_.erase(it);
  return sums;
}

RowSparseTraffic SparseTrafficSince(const RowSparseTraffic& after, const RowSparseTraffic& before) {
  RowSparseTraffic act;
  act.payload_bytes = after.payload_bytes - before.payload_bytes;
  act.metadata_bytes = after.metadata_bytes - before.metadata_bytes;
  act.dense_bytes = after.dense_bytes - before.dense_bytes;
  act.rows_sent = after.rows_sent - before.rows_sent;
  act.sparse_calls = after.sparse_calls - before.sparse_calls;
  act.dense_calls = after.dense_calls - before.dense_calls;
  return act;
}

}  // namespace oneflow::actors
