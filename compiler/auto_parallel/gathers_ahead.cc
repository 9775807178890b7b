#include "compiler/auto_parallel/gathers_ahead.h"

#include <algorithm>

namespace oneflow::auto_parallel {
namespace {

// `seconds` of gathers behind what is left of the forward, at least `floor`; the forward
// they take off `left`.
double Behind(double seconds, double floor, double* left) {
  const double exposed = std::max(seconds - *left, floor);
  *left = std::max(0.0, *left - (seconds - exposed));
  return exposed;
}

double OneCallsShare(double seconds, int64_t calls) {
  return seconds / static_cast<double>(std::max<int64_t>(1, calls));
}

}  // namespace

ExposedGathers ExposeGathersAhead(const GathersAhead& gathers, double forward_seconds) {
  double left = std::max(0.0, forward_seconds);
  ExposedGathers exposed;
  exposed.shard_seconds = gathers.shard_ahead
                              ? Behind(gathers.shard_seconds, OneCallsShare(gathers.shard_seconds, gathers.shard_calls), &left)
                              : gathers.shard_seconds;
  exposed.zero3_forward_seconds =
      gathers.zero3_forward_ahead ? Behind(gathers.zero3_forward_seconds, 0, &left) : gathers.zero3_forward_seconds;
  exposed.tp_weight_seconds =
      gathers.tp_weight_ahead
          ? Behind(gathers.tp_weight_seconds, OneCallsShare(gathers.tp_weight_seconds, gathers.tp_weight_calls), &left)
          : gathers.tp_weight_seconds;
  return exposed;
}

}  // namespace oneflow::auto_parallel
