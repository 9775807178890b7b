#include "compiler/auto_parallel/host_terms.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace oneflow::auto_parallel {
namespace {

double Median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  const size_t n = values.size();
  return n % 2 == 1 ? values[n / 2] : 0.5 * (values[n / 2 - 1] + values[n / 2]);
}

// One pair of runs of a reference: its extra acts of each kind and extra CPU seconds.
struct Pair {
  double other = 0;
  double boxing = 0;
  double cpu = 0;
  int64_t reference = 0;
};

// Two pairs whose extra acts are boxing acts in proportions closer than this tell the two
// costs apart too poorly to solve for them (their determinant is near 0: noise of a few
// ms in a pair's CPU time would swing the costs by far more than they are).
constexpr double kDistinctBoxingFraction = 0.05;

}  // namespace

absl::StatusOr<SharedHostTerms> FitSharedHostTerms(const std::vector<RunSample>& runs, int64_t host_cores) {
  std::vector<double> shares;
  for (const RunSample& run : runs) {
    if (run.boxing_acts < 0 || run.boxing_acts > run.acts) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "shared-host terms need 0 to %d boxing acts in a run of %d acts, not %d", run.acts, run.acts,
          run.boxing_acts));
    }
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
  std::vector<Pair> pairs;
  for (size_t i = 0; i < runs.size(); ++i) {
    for (size_t j = i + 1; j < runs.size(); ++j) {
      if (runs[i].reference != runs[j].reference || runs[i].acts == runs[j].acts) continue;
      slopes.push_back((runs[j].cpu_seconds - runs[i].cpu_seconds) / static_cast<double>(runs[j].acts - runs[i].acts));
      const double boxing = static_cast<double>(runs[j].boxing_acts - runs[i].boxing_acts);
      pairs.push_back({static_cast<double>(runs[j].acts - runs[i].acts) - boxing, boxing,
                       runs[j].cpu_seconds - runs[i].cpu_seconds, runs[i].reference});
    }
  }
  if (slopes.empty()) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "shared-host terms need two runs of one reference with other act counts; %d runs give none", runs.size()));
  }
  SharedHostTerms terms;
  terms.act_seconds = std::max(0.0, Median(slopes));
  terms.one_cost_act_seconds = terms.act_seconds;
  terms.host_core_share = std::clamp(Median(shares), 1e-3, static_cast<double>(host_cores));
  terms.slopes = static_cast<int64_t>(slopes.size());
  std::vector<double> others, boxings;
  for (size_t i = 0; i < pairs.size(); ++i) {
    for (size_t j = i + 1; j < pairs.size(); ++j) {
      const Pair& a = pairs[i];
      const Pair& b = pairs[j];
      // Pairs of one reference add both kinds in one proportion: they tell nothing apart.
      if (a.reference == b.reference) continue;
      const double fraction_a = a.boxing / (a.other + a.boxing);
      const double fraction_b = b.boxing / (b.other + b.boxing);
      if (std::abs(fraction_a - fraction_b) < kDistinctBoxingFraction) continue;
      // Cramer's rule on  a.cpu = other a.other + boxing a.boxing  (and b's).
      const double determinant = a.other * b.boxing - a.boxing * b.other;
      others.push_back((a.cpu * b.boxing - a.boxing * b.cpu) / determinant);
      boxings.push_back((a.other * b.cpu - a.cpu * b.other) / determinant);
    }
  }
  if (!others.empty()) {
    terms.act_seconds = std::max(0.0, Median(others));
    terms.boxing_act_seconds = std::max(0.0, Median(boxings));
    terms.solutions = static_cast<int64_t>(others.size());
  }
  return terms;
}

absl::StatusOr<double> FitOwnCoreActSeconds(const std::vector<RunSample>& runs, int64_t devices) {
  if (devices < 1) {
    return absl::InvalidArgumentError(absl::StrFormat("an act's cost on its own core needs devices >= 1, not %d", devices));
  }
  // FitSharedHostTerms' slopes of "CPU" over every device's acts, with every device's step
  // as its CPU time (a core each: each device's acts fill its own step), are the step's
  // slope over one device's acts.
  std::vector<RunSample> steps = runs;
  for (RunSample& run : steps) run.cpu_seconds = run.wall_seconds * static_cast<double>(devices);
  absl::StatusOr<SharedHostTerms> terms = FitSharedHostTerms(steps, devices);
  if (!terms.ok()) {
    return absl::Status(terms.status().code(),
                        absl::StrCat("an act's cost on its own core: ", terms.status().message()));
  }
  return terms->act_seconds;
}

void ApplyHostMeasurement(const HostMeasurement& measurement, PriceOptions* options) {
  options->act_seconds = measurement.act_seconds;
  options->collective_call_seconds = measurement.collective_call_seconds;
  options->host_cores = measurement.cores;
  options->host_core_share = measurement.core_share;
  options->boxing_act_seconds = measurement.boxing_act_seconds;
}

std::optional<proto::AutoParallelHostTerms> HostTermsFor(const Calibration& calibration, int64_t nodes,
                                                        int64_t devices, const std::string& file) {
  const HostMeasurement* nearest = NearestHostMeasurement(calibration, devices);
  if (nearest == nullptr) {
    // The nodes are processes of one machine: their devices take turns on its cores. Only
    // the cores are known (no per-act cost or share was measured across the processes).
    if (!calibration.shared_machine.has_value() || calibration.shared_machine->nodes != nodes) return std::nullopt;
    const SharedMachineMeasurement& machine = *calibration.shared_machine;
    proto::AutoParallelHostTerms terms;
    terms.set_host_cores(machine.cores);
    terms.set_shared_machine_nodes(nodes);
    terms.set_measured_devices(devices);
    terms.set_calibration_file(file);
    // The measured costs of devices taking turns on the cores, when they do. With a core
    // each, the processes' calls are the links' (measured between the daemons), and a
    // share below the cores measured in one process is its devices waiting on their own
    // collectives, which the model prices as communication.
    if (machine.turns.has_value() && devices > machine.cores) {
      terms.set_act_seconds(machine.turns->act_seconds);
      terms.set_collective_call_seconds(machine.turns->collective_call_seconds);
      terms.set_host_core_share(machine.turns->core_share);
      if (machine.turns->boxing_act_seconds.has_value()) {
        terms.set_boxing_act_seconds(*machine.turns->boxing_act_seconds);
      }
      terms.set_measured_devices(machine.turns->devices);
    } else if (machine.own_core_act_seconds.has_value() && devices <= machine.cores) {
      // A core each: an act costs its device's step what was measured with a core each;
      // the collectives' calls are the links' (measured between the daemons).
      terms.set_act_seconds(*machine.own_core_act_seconds);
      terms.set_host_core_share(static_cast<double>(devices));
      terms.set_measured_devices(nodes);
    }
    return terms;
  }
  proto::AutoParallelHostTerms terms;
  terms.set_act_seconds(nearest->act_seconds);
  terms.set_collective_call_seconds(nearest->collective_call_seconds);
  terms.set_host_cores(nearest->cores);
  terms.set_host_core_share(nearest->core_share);
  if (nearest->boxing_act_seconds.has_value()) terms.set_boxing_act_seconds(*nearest->boxing_act_seconds);
  terms.set_measured_devices(nearest->devices);
  terms.set_calibration_file(file);
  return terms;
}

void ApplyHostTerms(const proto::AutoParallelHostTerms& terms, PriceOptions* options) {
  options->act_seconds = terms.act_seconds();
  options->collective_call_seconds = terms.collective_call_seconds();
  options->host_cores = terms.host_cores();
  options->host_core_share = terms.host_core_share();
  options->boxing_act_seconds =
      terms.has_boxing_act_seconds() ? std::optional<double>(terms.boxing_act_seconds()) : std::nullopt;
}

std::string HostTermsText(const proto::AutoParallelDecision& decision) {
  if (!decision.has_host_terms()) return "none: acts free, every device its own core";
  const proto::AutoParallelHostTerms& terms = decision.host_terms();
  const std::string boxing_act = terms.has_boxing_act_seconds()
                                     ? absl::StrFormat(", boxing act %.3g us", terms.boxing_act_seconds() * 1e6)
                                     : std::string();
  const std::string share =
      terms.host_core_share() > 0 ? absl::StrFormat(", core share %.3g", terms.host_core_share()) : std::string();
  if (terms.shared_machine_nodes() > 0) {
    const std::string machine =
        absl::StrFormat("%d nodes on one machine of %d cores", terms.shared_machine_nodes(), terms.host_cores());
    // HostTermsFor records a share only with the machine line's measured terms.
    if (terms.host_core_share() <= 0) return absl::StrFormat("%s, acts free (%s)", machine, terms.calibration_file());
    // HostTermsFor measures a core each across one process per node.
    if (terms.measured_devices() <= terms.host_cores()) {
      return absl::StrFormat("%s, a core each: act %.3g us of wall time (measured across %d processes, %s)", machine,
                             terms.act_seconds() * 1e6, terms.measured_devices(), terms.calibration_file());
    }
    return absl::StrFormat("%s: act %.3g us%s, collective call %.3g us%s (measured for %d devices, %s)", machine,
                           terms.act_seconds() * 1e6, boxing_act, terms.collective_call_seconds() * 1e6, share,
                           terms.measured_devices(), terms.calibration_file());
  }
  return absl::StrFormat("act %.3g us%s, collective call %.3g us, %d host cores%s (measured for %d devices, %s)",
                         terms.act_seconds() * 1e6, boxing_act, terms.collective_call_seconds() * 1e6,
                         terms.host_cores(), share, terms.measured_devices(), terms.calibration_file());
}

bool DevicesOutnumberCores(const PriceOptions& options) {
  const int64_t devices = options.cluster.num_nodes() * options.cluster.devices_per_node();
  return options.host_cores > 0 && devices > options.host_cores;
}

double SharedCores(const PriceOptions& options) {
  return options.host_core_share > 0 ? std::min(options.host_core_share, static_cast<double>(options.host_cores))
                                     : static_cast<double>(options.host_cores);
}

double LockstepStretch(const PriceOptions& options, const proto::AutoParallelLayout& layout) {
  if (options.host_cores <= 0 || layout.pp() != 1) return 1.0;
  return std::max(1.0, static_cast<double>(layout.dp() * layout.tp()) / SharedCores(options));
}

}  // namespace oneflow::auto_parallel
