#include "compiler/compiler.h"

#include "absl/strings/str_cat.h"
#include "compiler/compilation.h"
#include "compiler/pass_pipeline.h"
#include "compiler/standard_pipeline.h"
#include "oneflow_core/status.h"

namespace oneflow {
namespace {

absl::Status CheckOptions(const CompileOptions& options) {
  const proto::Cluster& cluster = options.cluster;
  if (cluster.num_nodes() < 1 || cluster.devices_per_node() < 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "cluster has ", cluster.num_nodes(), " nodes x ", cluster.devices_per_node(),
        " devices; both must be >= 1"));
  }
  if (options.register_count < 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "register_count is ", options.register_count, "; it must be >= 1 (2 overlaps iterations)"));
  }
  if (!(options.bucket_mb >= 0) || options.bucket_mb > 1e6) {
    return absl::InvalidArgumentError(absl::StrCat(
        "bucket_mb is ", options.bucket_mb,
        "; it must be >= 0 MiB (0 turns gradient buckets off, 25 is the default) and at most 1e6"));
  }
  if (options.compression_warmup_iterations < 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "compression_warmup_iterations is ", options.compression_warmup_iterations,
        "; it must be >= 0 (0: compressed from the first iteration; N: the first N iterations dense)"));
  }
  return CheckLinkModel(LinkModelOf(cluster));
}

}  // namespace

LinkModel LinkModelOf(const proto::Cluster& cluster) {
  LinkModel links{cluster.intra_node_bandwidth(), cluster.inter_node_bandwidth(), cluster.intra_node_latency(),
                  cluster.inter_node_latency()};
  if (cluster.has_inter_node_transfer_latency()) {
    links.inter_node_transfer_latency = cluster.inter_node_transfer_latency();
  }
  return links;
}

absl::Status PrepareCompilation(const proto::Job& job, const CompileOptions& options, Compilation* compilation) {
  OF_RETURN_IF_ERROR(CheckOptions(options));
  compilation->job = job;
  compilation->options = options;
  const proto::Cluster& cluster = options.cluster;
  compilation->links = LinkModelOf(cluster);
  const DeviceType type = cluster.device_type() == proto::DEVICE_CUDA ? DeviceType::kCuda : DeviceType::kCpu;
  OF_ASSIGN_OR_RETURN(compilation->cluster_placement,
                      Placement::Grid(type, cluster.num_nodes(), cluster.devices_per_node()));
  compilation->default_placement = compilation->cluster_placement;
  if (job.has_default_placement()) {
    absl::StatusOr<Placement> placement = Placement::FromProto(job.default_placement());
    if (!placement.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("default placement of job '", job.name(), "': ", placement.status().message()));
    }
    compilation->default_placement = *placement;
  }
  return absl::OkStatus();
}

absl::StatusOr<proto::Plan> Compile(const proto::Job& job, const CompileOptions& options) {
  Compilation compilation;
  OF_RETURN_IF_ERROR(PrepareCompilation(job, options, &compilation));
  OF_RETURN_IF_ERROR(StandardPipeline().Run(&compilation));
  return std::move(compilation.plan);
}

}  // namespace oneflow
