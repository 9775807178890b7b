#include "examples/common/compile_driver.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstring>
#include <algorithm>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "compiler/auto_parallel/host_terms.h"
#include "compiler/passes/pipeline_schedule_pass.h"
#include "kernels/device_backend.h"
#include "oneflow_core/dsl/graph.h"
#include "oneflow_core/status.h"
#include "sbp/calibration.h"
#include "sbp/link_model.h"

namespace oneflow::examples {

namespace {

// CompileSettings::collective_call_seconds, or the host terms of --codec_calibration's file
// for the layout's cluster (read and checked by ApplyCalibrationToCluster before).
absl::StatusOr<double> CollectiveCallSeconds(const ParallelLayout& layout, const CompileSettings& settings) {
  if (settings.collective_call_seconds.has_value()) {
    const double seconds = *settings.collective_call_seconds;
    if (!std::isfinite(seconds) || seconds < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("a collective call's cost of ", seconds, " s is not a finite number of seconds >= 0"));
    }
    return seconds;
  }
  const std::string& file = settings.compression.codec_calibration;
  if (file.empty()) return 0.0;
  OF_ASSIGN_OR_RETURN(const Calibration calibration, ReadCalibrationFile(file));
  const std::optional<proto::AutoParallelHostTerms> terms = auto_parallel::HostTermsFor(
      calibration, layout.cluster().num_nodes(), layout.cluster().num_nodes() * layout.cluster().devices_per_node(),
      file);
  return terms.has_value() ? terms->collective_call_seconds() : 0.0;
}

// The cores' worth of CPU time every node shares when --codec_calibration's "machine" line
// found the layout's nodes on one machine (CompileOptions::shared_machine_cores): the
// core share its turns measured, else its cores; 0 otherwise.
absl::StatusOr<double> SharedMachineCores(const ParallelLayout& layout, const CompileSettings& settings) {
  const std::string& file = settings.compression.codec_calibration;
  if (file.empty()) return 0.0;
  OF_ASSIGN_OR_RETURN(const Calibration calibration, ReadCalibrationFile(file));
  const std::optional<SharedMachineMeasurement>& machine = calibration.shared_machine;
  if (!machine.has_value() || machine->nodes != layout.cluster().num_nodes()) return 0.0;
  if (machine->turns.has_value() && machine->turns->core_share > 0) return machine->turns->core_share;
  return static_cast<double>(machine->cores);
}

}  // namespace

absl::StatusOr<CompileOptions> CompileOptionsFor(const ParallelLayout& layout, const CompileSettings& settings,
                                                 std::string* dump) {
  CompileOptions options;
  options.cluster = layout.cluster();
  OF_RETURN_IF_ERROR(CheckThreadsPerDevice(settings.threads_per_device, "--threads_per_device"));
  // 1 stays unset (0 reads as 1), so one-thread plans are byte-identical to earlier ones.
  if (settings.threads_per_device > 1) options.cluster.set_threads_per_device(settings.threads_per_device);
  if (!(settings.bucket_mb >= 0) || settings.bucket_mb > 1e6) {
    return absl::InvalidArgumentError(
        absl::StrCat("--bucket_mb=", settings.bucket_mb,
                     " is not a bucket size: give MiB >= 0 (0 turns gradient buckets off, 25 is the default)"));
  }
  options.bucket_mb = settings.bucket_mb;
  options.bucket_mb_given = settings.bucket_mb_given;
  if (settings.sparse_boxing != "auto" && settings.sparse_boxing != "off") {
    return absl::InvalidArgumentError(
        absl::StrCat("--sparse_boxing=", settings.sparse_boxing, " is not one of: auto, off"));
  }
  options.sparse_boxing = settings.sparse_boxing == "auto";
  options.fuse_epilogues = settings.fuse_epilogues;
  options.search_sbp = settings.sbp_search;
  options.zero3_regather = settings.zero3_regather;
  if (settings.communication_streams != "auto" && settings.communication_streams != "one") {
    return absl::InvalidArgumentError(absl::StrCat("--communication_streams=", settings.communication_streams,
                                                   " is not one of: auto, one"));
  }
  options.one_communication_stream = settings.communication_streams == "one";
  if (settings.reduction_tail != "next_forward" && settings.reduction_tail != "backward") {
    return absl::InvalidArgumentError(absl::StrCat("--reduction_tail=", settings.reduction_tail,
                                                   " is not one of: next_forward, backward"));
  }
  options.reorder_reduction_tail = settings.reduction_tail == "next_forward";
  absl::StatusOr<proto::RecomputeMode> recompute = ParseRecomputeMode(settings.recompute);
  if (!recompute.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("--recompute=", settings.recompute, " is not one of: none, selective, full"));
  }
  options.recompute = *recompute;
  OF_ASSIGN_OR_RETURN(options.pp_schedule, ParsePipelineSchedule(settings.pp_schedule));
  options.virtual_stages = layout.virtual_stages();
  if (options.pp_schedule == proto::PIPELINE_SCHEDULE_INTERLEAVED && layout.virtual_stages() < 2) {
    return absl::InvalidArgumentError(absl::StrCat("--pp_schedule=interleaved needs --virtual_stages >= 2 (got --virtual_stages=",
                                                   layout.virtual_stages(), ")"));
  }
  if (layout.virtual_stages() > 1 && options.pp_schedule != proto::PIPELINE_SCHEDULE_INTERLEAVED &&
      options.pp_schedule != proto::PIPELINE_SCHEDULE_AUTO) {
    return absl::InvalidArgumentError(absl::StrCat("--virtual_stages=", layout.virtual_stages(),
                                                   " is for --pp_schedule=interleaved or auto, not --pp_schedule=",
                                                   settings.pp_schedule));
  }
  if (settings.device_memory < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("--device_memory=", settings.device_memory, " must be >= 0 bytes (0: no limit)"));
  }
  options.device_memory = settings.device_memory;
  OF_ASSIGN_OR_RETURN(options.precision, ParsePrecision(settings.precision));
  OF_RETURN_IF_ERROR(
      CheckPrecisionSupported(options.precision, settings.cpu.has_value() ? *settings.cpu : ProbeCpuBf16Support()));
  OF_ASSIGN_OR_RETURN(options.compression, CompressionPolicyFromFlags(settings.compression));
  OF_ASSIGN_OR_RETURN(options.codec_rounding, CodecRoundingFromFlags(settings.compression));
  OF_ASSIGN_OR_RETURN(options.compression_warmup_iterations, CompressionWarmupFromFlags(settings.compression));
  OF_ASSIGN_OR_RETURN(options.error_feedback, ErrorFeedbackFromFlags(settings.compression));
  OF_ASSIGN_OR_RETURN(options.fit_int4_gradient_scale, Int4GradientScaleFromFlags(settings.compression));
  OF_RETURN_IF_ERROR(
      ApplyCalibrationToCluster(settings.compression.codec_calibration, settings.links, &options.cluster));
  OF_ASSIGN_OR_RETURN(options.collective_call_seconds, CollectiveCallSeconds(layout, settings));
  OF_ASSIGN_OR_RETURN(options.shared_machine_cores, SharedMachineCores(layout, settings));
  if (!settings.dump_after.empty()) {
    options.dump_after = settings.dump_after;
    options.dump = dump;
  }
  return options;
}

namespace {

// The kind of a file source as the example flags and the graph text name it.
const char* FileKind(proto::FileSource::Format format) {
  switch (format) {
    case proto::FileSource::TOKENS_I32:
      return "token_file";
    case proto::FileSource::RECORDS_F32:
      return "record_file";
    case proto::FileSource::TEXT_BYTES:
      return "text_file";
    default:
      return "file";
  }
}

}  // namespace

absl::Status ResolveDataFiles(proto::Job* job) {
  for (proto::DataSourceDef& source : *job->mutable_data_sources()) {
    if (!source.has_file()) continue;
    const std::string written = source.file().path();
    const std::string what = absl::StrCat(FileKind(source.file().format()), " '", written, "' of data source '",
                                          source.name(), "'");
    if (written.empty()) return absl::InvalidArgumentError(absl::StrCat(what, " is empty; give a file"));
    std::error_code error;
    const std::filesystem::path absolute = std::filesystem::absolute(written, error);
    if (error) {
      return absl::InvalidArgumentError(absl::StrCat(what, ": cannot make it absolute: ", error.message()));
    }
    const std::string shown = absolute.string() == written ? what : absl::StrCat(what, " (", absolute.string(), ")");
    struct stat info;
    if (stat(absolute.c_str(), &info) != 0) {
      if (errno == ENOENT) return absl::NotFoundError(absl::StrCat(shown, " does not exist"));
      return absl::InvalidArgumentError(absl::StrCat(shown, ": ", std::strerror(errno)));
    }
    if (S_ISDIR(info.st_mode)) {
      return absl::InvalidArgumentError(absl::StrCat(shown, " is a directory; give a regular file"));
    }
    if (!S_ISREG(info.st_mode)) {
      return absl::InvalidArgumentError(absl::StrCat(shown, " is not a regular file"));
    }
    if (access(absolute.c_str(), R_OK) != 0) {
      return absl::PermissionDeniedError(absl::StrCat(shown, " cannot be read: ", std::strerror(errno)));
    }
    source.mutable_file()->set_path(absolute.lexically_normal().string());
  }
  return absl::OkStatus();
}

std::vector<std::string> LayoutWarnings(const proto::Job& job, const ParallelLayout& layout) {
  std::vector<std::string> warnings;
  const int64_t micro_batches = std::max<int64_t>(1, job.micro_batches());
  const int64_t rows = job.batch_size() / micro_batches;
  if (job.batch_size() > 0 && rows < layout.dp()) {
    warnings.push_back(absl::StrCat(
        "--batch=", job.batch_size(),
        micro_batches > 1 ? absl::StrCat(" is ", rows, " rows per micro-batch (--micro_batches=", micro_batches, ")") : "",
        ", fewer rows than --dp=", layout.dp(), ": ", layout.dp() - rows, " of the ", layout.dp(),
        " data-parallel devices get no rows and only wait for the others; use --batch >= ",
        layout.dp() * micro_batches));
  } else if (job.batch_size() > 0 && layout.dp() > 1 && rows % layout.dp() != 0 &&
             std::any_of(job.ops().begin(), job.ops().end(),
                         [](const proto::OpDef& op) { return op.type() == "reshape"; })) {
    // What the examples refuse without --uneven_batch (ParallelLayout::
    // CheckEvenDataParallelBatch); a graph text's batch is its own, compiled as written. A
    // model without reshapes (the mlp) splits any batch at no cost: no warning.
    std::vector<std::string> per_device;
    for (int64_t d = 0; d < layout.dp(); ++d) {
      per_device.push_back(absl::StrCat(rows / layout.dp() + (d < rows % layout.dp() ? 1 : 0)));
    }
    std::vector<std::string> even;
    for (int64_t dp = 2; dp <= rows; ++dp) {
      if (rows % dp == 0) even.push_back(absl::StrCat(dp));
    }
    warnings.push_back(absl::StrCat(
        "--batch=", job.batch_size(),
        micro_batches > 1 ? absl::StrCat(" is ", rows, " rows per micro-batch (--micro_batches=", micro_batches, "), which") : "",
        " does not split evenly over --dp=", layout.dp(), ": the data-parallel devices hold ",
        absl::StrJoin(per_device, ", "),
        " rows, and the model's reshapes of an uneven split need activation boxing (dozens of collectives a step "
        "instead of a few gradient reductions); ",
        even.empty() ? std::string("no --dp above 1 splits it evenly")
                     : absl::StrCat("--dp=", absl::StrJoin(even, ", "), " split", even.size() > 1 ? "" : "s", " it evenly")));
  }
  return warnings;
}

std::vector<std::string> SettingsWarnings(const proto::Job& job, const ParallelLayout& layout,
                                          const CompileSettings& settings) {
  std::vector<std::string> warnings;
  if (job.optimizer().zero_stage() != 3 || !settings.zero3_regather || layout.dp() == 1) return warnings;
  bool crosses_nodes = false;
  for (int64_t stage = 0; stage < layout.pp(); ++stage) {
    crosses_nodes |= AxisCrossesNodes(layout.StagePlacement(stage), layout.dp_axis());
  }
  if (crosses_nodes) {
    // Measured on 3 emulated hosts at 1 Gbit/s (gpt_dp3tp2, dense): 993.6 ms re-gathering
    // against 622.2 ms keeping the copies (docs/zero.md).
    warnings.push_back(
        "--zero=3 gathers every parameter again for backward over data-parallel groups that cross nodes: 1.5x "
        "the bytes of --zero=0 on the links between them; --zero3_regather=false keeps forward's gathered copies "
        "(--zero=0's bytes, a higher planned peak; docs/zero.md)");
  }
  return warnings;
}

namespace {

// The index in plan.devices() of the first device of `placement`, or -1.
int FirstDeviceIndex(const proto::Plan& plan, const Placement& placement) {
  const DeviceId& first = placement.devices().front();
  for (int i = 0; i < plan.devices_size(); ++i) {
    const proto::DeviceId& id = plan.devices(i).device();
    if (id.node() == first.node && id.device() == first.device) return i;
  }
  return -1;
}

}  // namespace

std::string CompileSummary(const proto::Job& job, const ParallelLayout& layout, const proto::Plan& plan,
                           double seconds) {
  int64_t actors = 0;
  for (const proto::DevicePlan& device : plan.devices()) actors += device.actors_size();
  std::string where = layout.placement().ToString();
  if (layout.pp() > 1) {
    where = absl::StrCat(layout.pp(), " pipeline stages (");
    for (int64_t stage = 0; stage < layout.pp(); ++stage) {
      absl::StrAppend(&where, stage == 0 ? "" : ", ", "stage ", stage, ": ",
                      layout.StagePlacement(stage).ToString());
    }
    absl::StrAppend(&where, ")");
  }
  std::string text = absl::StrFormat(
      "compiled '%s' for %s in %.3f s: %d logical ops, %d boxings, %d collectives, %lld actors\n", job.name(),
      where, seconds, plan.job().ops_size(), plan.boxings_size(), plan.collectives_size(),
      static_cast<long long>(actors));
  for (int64_t stage = 0; stage < layout.pp(); ++stage) {
    const int index = FirstDeviceIndex(plan, layout.StagePlacement(stage));
    if (index < 0) continue;
    const proto::DevicePlan& device = plan.devices(index);
    absl::StrAppendFormat(&text,
                          "%sdevice %lld:%lld: %d actors, %d registers, %d collectives, peak %lld B (lower bound %lld B), "
                          "sends %lld B/iter, receives %lld B/iter\n",
                          layout.pp() > 1 ? absl::StrCat("stage ", stage, " ") : "", static_cast<long long>(device.device().node()),
                          static_cast<long long>(device.device().device()),
                          device.actors_size(), device.registers_size(), device.collective_order_size(),
                          static_cast<long long>(device.peak_bytes()),
                          static_cast<long long>(device.lower_bound_bytes()),
                          static_cast<long long>(device.bytes_sent_per_iter()),
                          static_cast<long long>(device.bytes_received_per_iter()));
  }
  return text;
}

}  // namespace oneflow::examples
