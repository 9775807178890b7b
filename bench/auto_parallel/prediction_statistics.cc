#include "bench/auto_parallel/prediction_statistics.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

namespace oneflow::prediction {

double Median(std::vector<double> values) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  const size_t n = values.size();
  return n % 2 == 1 ? values[n / 2] : 0.5 * (values[n / 2 - 1] + values[n / 2]);
}

std::vector<double> Ranks(const std::vector<double>& values) {
  std::vector<size_t> order(values.size());
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return values[a] < values[b]; });
  std::vector<double> ranks(values.size());
  for (size_t i = 0; i < order.size();) {
    size_t j = i;
    while (j + 1 < order.size() && values[order[j + 1]] == values[order[i]]) ++j;
    for (size_t k = i; k <= j; ++k) ranks[order[k]] = 0.5 * static_cast<double>(i + j) + 1;
    i = j + 1;
  }
  return ranks;
}

double Spearman(const std::vector<double>& a, const std::vector<double>& b) {
  const std::vector<double> ra = Ranks(a), rb = Ranks(b);
  const double n = static_cast<double>(ra.size());
  const double mean = (n + 1) / 2;
  double covariance = 0, va = 0, vb = 0;
  for (size_t i = 0; i < ra.size(); ++i) {
    covariance += (ra[i] - mean) * (rb[i] - mean);
    va += (ra[i] - mean) * (ra[i] - mean);
    vb += (rb[i] - mean) * (rb[i] - mean);
  }
  return va > 0 && vb > 0 ? covariance / std::sqrt(va * vb) : 0;
}

double OfRounds(const std::vector<double>& rounds, RoundStatistic statistic) {
  if (rounds.empty()) return 0;
  return statistic == RoundStatistic::kLeast ? *std::min_element(rounds.begin(), rounds.end()) : Median(rounds);
}

double RepeatabilitySpearman(const std::vector<std::vector<double>>& rounds_per_layout, RoundStatistic statistic) {
  if (rounds_per_layout.size() < 2) return 0;
  std::vector<double> even, odd;
  for (const std::vector<double>& rounds : rounds_per_layout) {
    if (rounds.size() < 2) return 0;
    std::vector<double> halves[2];
    for (size_t r = 0; r < rounds.size(); ++r) halves[r % 2].push_back(rounds[r]);
    even.push_back(OfRounds(halves[0], statistic));
    odd.push_back(OfRounds(halves[1], statistic));
  }
  return Spearman(even, odd);
}

}  // namespace oneflow::prediction
