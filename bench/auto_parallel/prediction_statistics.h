// The statistics prediction_bench judges the cost model by (issue 26's goals): the median
// of the relative errors and the Spearman rank correlation of predicted and measured steps.
#ifndef BENCH_AUTO_PARALLEL_PREDICTION_STATISTICS_H_
#define BENCH_AUTO_PARALLEL_PREDICTION_STATISTICS_H_

#include <vector>

namespace oneflow::prediction {

// The median; 0 for none.
double Median(std::vector<double> values);

// Ranks 1..n, ties sharing their mean rank.
std::vector<double> Ranks(const std::vector<double>& values);

// Pearson correlation of the ranks of `a` and `b` (equal sizes); 0 when either is constant.
double Spearman(const std::vector<double>& a, const std::vector<double>& b);

}  // namespace oneflow::prediction

#endif  // BENCH_AUTO_PARALLEL_PREDICTION_STATISTICS_H_
