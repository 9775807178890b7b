#include "compiler/auto_parallel/host_terms.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace oneflow::auto_parallel {

absl::StatusOr<SharedHostTerms> SharedHostTermsOf(const RunSample& fewer, const RunSample& more, int64_t host_cores) {
  for (const RunSample* run : {&fewer, &more}) {
    if (!(run->cpu_seconds > 0) || !(run->wall_seconds > 0)) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "shared-host terms need positive CPU and wall times, not %g s of CPU in a %g s step", run->cpu_seconds,
          run->wall_seconds));
    }
  }
  if (more.acts <= fewer.acts || host_cores < 1) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "shared-host terms need a second run with more acts (%d, not above %d) and host cores >= 1 (%d)", more.acts,
        fewer.acts, host_cores));
  }
  SharedHostTerms terms;
  terms.act_seconds =
      std::max(0.0, more.cpu_seconds - fewer.cpu_seconds) / static_cast<double>(more.acts - fewer.acts);
  terms.host_core_share = std::clamp((fewer.cpu_seconds + more.cpu_seconds) / (fewer.wall_seconds + more.wall_seconds),
                                     1e-3, static_cast<double>(host_cores));
  return terms;
}

void ApplyHostMeasurement(const HostMeasurement& measurement, PriceOptions* options) {
  options->act_seconds = measurement.act_seconds;
  options->collective_call_seconds = measurement.collective_call_seconds;
  options->host_cores = measurement.cores;
}

std::optional<proto::AutoParallelHostTerms> HostTermsFor(const Calibration& calibration, int64_t devices,
                                                        const std::string& file) {
  const HostMeasurement* nearest = NearestHostMeasurement(calibration, devices);
  if (nearest == nullptr) return std::nullopt;
  proto::AutoParallelHostTerms terms;
  terms.set_act_seconds(nearest->act_seconds);
  terms.set_collective_call_seconds(nearest->collective_call_seconds);
  terms.set_host_cores(nearest->cores);
  terms.set_measured_devices(nearest->devices);
  terms.set_calibration_file(file);
  return terms;
}

void ApplyHostTerms(const proto::AutoParallelHostTerms& terms, PriceOptions* options) {
  options->act_seconds = terms.act_seconds();
  options->collective_call_seconds = terms.collective_call_seconds();
  options->host_cores = terms.host_cores();
}

std::string HostTermsText(const proto::AutoParallelDecision& decision) {
  if (!decision.has_host_terms()) return "none: acts free, every device its own core";
  const proto::AutoParallelHostTerms& terms = decision.host_terms();
  return absl::StrFormat("act %.3g us, collective call %.3g us, %d host cores (measured for %d devices, %s)",
                         terms.act_seconds() * 1e6, terms.collective_call_seconds() * 1e6, terms.host_cores(),
                         terms.measured_devices(), terms.calibration_file());
}

}  // namespace oneflow::auto_parallel
