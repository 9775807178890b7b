// A cluster's compute rates as the cost model reads them (sbp/compute_cost.h): the GEMM
// and memory rates and the GEMM shape model the plan's Cluster carries (the calibration
// file's "gemm", "memory" and "gemm_shape" lines), defaults where not measured. For the
// compiler's SBP search, the predicted step of a plan and the auto-parallel search alike.
#ifndef COMPILER_CLUSTER_COMPUTE_RATES_H_
#define COMPILER_CLUSTER_COMPUTE_RATES_H_

#include "proto/plan.pb.h"
#include "sbp/compute_cost.h"

namespace oneflow {

inline GemmShapeModel ClusterGemmShapeModel(const proto::Cluster& cluster) {
  GemmShapeModel model;
  model.flops_per_second = cluster.gemm_shape_flops_per_second();
  model.operand_bytes_per_second = cluster.gemm_shape_operand_bytes_per_second();
  model.call_seconds = cluster.gemm_shape_call_seconds();
  return model;
}

inline void SetClusterGemmShapeModel(const GemmShapeModel& model, proto::Cluster* cluster) {
  cluster->set_gemm_shape_flops_per_second(model.flops_per_second);
  cluster->set_gemm_shape_operand_bytes_per_second(model.operand_bytes_per_second);
  cluster->set_gemm_shape_call_seconds(model.call_seconds);
}

// `memory_cached_bytes_per_second` and `cache_bytes`: the search's cache term (its
// PriceOptions; a plan's Cluster does not carry it: 0).
inline ComputeRates ClusterComputeRates(const proto::Cluster& cluster, double memory_cached_bytes_per_second = 0,
                                        double cache_bytes = 0) {
  return WithDefaults(ComputeRates{cluster.gemm_flops_per_second(), cluster.memory_bytes_per_second(),
                                   memory_cached_bytes_per_second, cache_bytes, ClusterGemmShapeModel(cluster)});
}

}  // namespace oneflow

#endif  // COMPILER_CLUSTER_COMPUTE_RATES_H_
