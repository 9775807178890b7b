// The statistics prediction_bench judges the cost model by (issue 26's goals): the median
// of the relative errors and the Spearman rank correlation of predicted and measured steps,
// and how steady its measured steps are (their rounds against each other).
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

// How a layout's step is taken from its rounds (each round's median step).
enum class RoundStatistic {
  kMedian,  // the median of the rounds: what the bench reports since session 48
  kLeast,   // the least round: what it reported through session 47
};

// The statistic of `rounds` (one layout's round medians); 0 for none.
double OfRounds(const std::vector<double>& rounds, RoundStatistic statistic);

// How well the measurement ranks the layouts against itself: the Spearman of each layout's
// `statistic` over its rounds 0, 2, 4, ... against the same over its rounds 1, 3, 5, ...
// (`rounds_per_layout[i]`: layout i's round medians in round order). The ceiling of the
// predicted-versus-measured Spearman at this noise with half the rounds. 0 when a layout has
// fewer than 2 rounds or there are fewer than 2 layouts.
double RepeatabilitySpearman(const std::vector<std::vector<double>>& rounds_per_layout, RoundStatistic statistic);

}  // namespace oneflow::prediction

#endif  // BENCH_AUTO_PARALLEL_PREDICTION_STATISTICS_H_
