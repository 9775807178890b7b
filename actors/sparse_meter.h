// What sparse boxing moved, per iteration: the row-sparse boxing acts of this process's
// devices hand the meter each act's bytes (kernels/boxing/sparse_rows.h counts them); the
// runtime takes an iteration's sums once every local device has finished it and puts them
// on that iteration's metrics line ("sparse": payload, metadata and the dense bytes the
// same calls would have sent). docs/sparse_boxing.md.
#ifndef ACTORS_SPARSE_METER_H_
#define ACTORS_SPARSE_METER_H_

#include <cstdint>
#include <map>
#include <mutex>

#include "actors/metrics.h"
#include "kernels/boxing/sparse_rows.h"

namespace oneflow::actors {

// Thread-safe: devices' threads record, the runtime takes.
class SparseMeter {
 public:
  // Adds one act's traffic (the difference of a step's running totals) to `iteration`.
  void Record(int64_t iteration, const RowSparseTraffic& act);
  // The sums of `iteration`, forgotten here; all zero (calls == 0) when nothing was recorded.
  SparseMetrics TakeIteration(int64_t iteration);

 private:
  std::mutex mutex_;
  std::map<int64_t, SparseMetrics> pending_;
};

// `after` - `before` of a step's running totals: one act's traffic.
RowSparseTraffic SparseTrafficSince(const RowSparseTraffic& after, const RowSparseTraffic& before);

}  // namespace oneflow::actors

#endif  // ACTORS_SPARSE_METER_H_
