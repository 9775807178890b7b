#include "compiler/auto_parallel/host_terms.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace oneflow::auto_parallel {
namespace {

double Median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  const size_t n = values.size();
  return n % 2 == 1 ? values[n / 2] : 0.5 * (values[n / 2 - 1] + values[n / 2]);
}

}  // namespace

absl::StatusOr<SharedHostTerms> FitSharedHostTerms(const std::vector<RunSample>& runs, int64_t host_cores) {
  std::vector<double> shares;
  for (const RunSample& run : runs) {
    if (!(run.cpu_seconds > 0) || !(run.wall_seconds > 0)) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "shared-host terms need positive CPU and wall times, not %g s of CPU in a %g s step", run.cpu_seconds,
          run.wall_seconds));
    }
    shares.push_back(run.cpu_seconds / run.wall_seconds);
  }
  if (host_cores < 1) {
    return absl::InvalidArgumentError(absl::StrFormat("shared-host terms need host cores >= 1, not %d", host_cores));
  }
  std::vector<double> slopes;
  for (size_t i = 0; i < runs.size(); ++i) {
    for (size_t j = i + 1; j < runs.size(); ++j) {
      if (runs[i].reference != runs[j].reference || runs[i].acts == runs[j].acts) continue;
      slopes.push_back((runs[j].cpu_seconds - runs[i].cpu_seconds) / static_cast<double>(runs[j].acts - runs[i].acts));
    }
  }
  if (slopes.empty()) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "shared-host terms need two runs of one reference with other act counts; %d runs give none", runs.size()));
  }
  SharedHostTerms terms;
  terms.act_seconds = std::max(0.0, Median(slopes));
  terms.host_core_share = std::clamp(Median(shares), 1e-3, static_cast<double>(host_cores));
  terms.slopes = static_cast<int64_t>(slopes.size());
  return terms;
}

void ApplyHostMeasurement(const HostMeasurement& measurement, PriceOptions* options) {
  options->act_seconds = measurement.act_seconds;
  options->collective_call_seconds = measurement.collective_call_seconds;
  options->host_cores = measurement.cores;
  options->host_core_share = measurement.core_share;
}

std::optional<proto::AutoParallelHostTerms> HostTermsFor(const Calibration& calibration, int64_t devices,
                                                        const std::string& file) {
  const HostMeasurement* nearest = NearestHostMeasurement(calibration, devices);
  if (nearest == nullptr) return std::nullopt;
  proto::AutoParallelHostTerms terms;
  terms.set_act_seconds(nearest->act_seconds);
  terms.set_collective_call_seconds(nearest->collective_call_seconds);
  terms.set_host_cores(nearest->cores);
  terms.set_host_core_share(nearest->core_share);
  terms.set_measured_devices(nearest->devices);
  terms.set_calibration_file(file);
  return terms;
}

void ApplyHostTerms(const proto::AutoParallelHostTerms& terms, PriceOptions* options) {
  options->act_seconds = terms.act_seconds();
  options->collective_call_seconds = terms.collective_call_seconds();
  options->host_cores = terms.host_cores();
  options->host_core_share = terms.host_core_share();
}

std::string HostTermsText(const proto::AutoParallelDecision& decision) {
  if (!decision.has_host_terms()) return "none: acts free, every device its own core";
  const proto::AutoParallelHostTerms& terms = decision.host_terms();
  const std::string share =
      terms.host_core_share() > 0 ? absl::StrFormat(", core share %.3g", terms.host_core_share()) : std::string();
  return absl::StrFormat("act %.3g us, collective call %.3g us, %d host cores%s (measured for %d devices, %s)",
                         terms.act_seconds() * 1e6, terms.collective_call_seconds() * 1e6, terms.host_cores(), share,
                         terms.measured_devices(), terms.calibration_file());
}

}  // namespace oneflow::auto_parallel
