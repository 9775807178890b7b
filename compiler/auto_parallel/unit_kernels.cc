#include "compiler/auto_parallel/unit_kernels.h"

namespace oneflow::auto_parallel {
namespace {

// `shape`'s dimension `dim` divided by `by` (nothing for kNone).
void Divide(OpWork::GemmDim dim, double by, GemmShape* shape) {
  double* value = dim == OpWork::GemmDim::kBatch ? &shape->batch
                  : dim == OpWork::GemmDim::kM   ? &shape->m
                  : dim == OpWork::GemmDim::kN   ? &shape->n
                  : dim == OpWork::GemmDim::kK   ? &shape->k
                                                 : nullptr;
  if (value != nullptr) *value /= by;
}

}  // namespace

ShapedGemms ShapedGemmSeconds(const ProfileUnit& unit, const ComputeRates& rates, double tp, double rows) {
  ShapedGemms total;
  for (const OpWork& work : unit.op_work) {
    if (work.gemm_flops <= 0) continue;
    GemmShape shape = work.gemm_shape;
    Divide(work.gemm_rows_dim, 1 / rows, &shape);
    Divide(work.gemm_tp_dim, tp, &shape);
    const double forward = GemmShapeSeconds(rates, shape);
    total.forward += forward;
    if (work.attention_core) total.core_forward += forward;
    const double weight = GemmShapeSeconds(rates, GemmShape{shape.batch, shape.k, shape.n, shape.m});
    total.backward += GemmShapeSeconds(rates, GemmShape{shape.batch, shape.m, shape.k, shape.n}) + weight;
    if (!work.attention_core) total.weight_backward += weight;
  }
  return total;
}

double CachedWriteGain(const ProfileUnit& unit, const ComputeRates& rates, proto::RecomputeMode mode, bool in_block,
                       double tp, double rows) {
  if (!in_block || mode == proto::RECOMPUTE_NONE) return 0;
  double gain = 0;
  for (const OpWork& work : unit.op_work) {
    const bool kept = mode == proto::RECOMPUTE_FULL ? work.output_leaves_unit : !work.attention_core;
    if (kept || work.written_bytes <= 0) continue;
    const double bytes = (work.written_bytes - work.tp_written_bytes + work.tp_written_bytes / tp) * rows;
    if (!FitsInCache(rates, bytes)) continue;
    gain += MemoryBoundSeconds(rates, bytes) - CachedWriteSeconds(rates, bytes);
  }
  return gain;
}

}  // namespace oneflow::auto_parallel
