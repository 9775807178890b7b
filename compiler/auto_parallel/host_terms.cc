#include "compiler/auto_parallel/host_terms.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace oneflow::auto_parallel {

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
