// Figures the benchmarks report over repeated measurements, defined once so every JSON
// line means the same by "median".
#ifndef BENCH_LIB_STATISTICS_H_
#define BENCH_LIB_STATISTICS_H_

#include <algorithm>
#include <vector>

namespace oneflow {

// The middle value of `values`, or the mean of the two middle ones for an even count;
// 0 for none.
inline double Median(std::vector<double> values) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  const size_t middle = values.size() / 2;
  return values.size() % 2 == 1 ? values[middle] : (values[middle - 1] + values[middle]) / 2;
}

}  // namespace oneflow

#endif  // BENCH_LIB_STATISTICS_H_
