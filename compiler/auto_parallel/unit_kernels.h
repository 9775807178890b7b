// The kernel terms of one profile unit on one device of a layout that look at each op
// rather than at the unit's sums (price.cc adds them to its forward and backward): the
// GEMMs by their shapes, and the forward writes that land in cached bytes.
#ifndef COMPILER_AUTO_PARALLEL_UNIT_KERNELS_H_
#define COMPILER_AUTO_PARALLEL_UNIT_KERNELS_H_

#include "compiler/auto_parallel/model_profile.h"
#include "proto/job.pb.h"
#include "sbp/compute_cost.h"

namespace oneflow::auto_parallel {

// A unit's GEMMs on one device, each by its shape (the cluster's GEMM shape model,
// sbp/gemm_shape_model.h; the one rate when it has none): the forward products, backward's
// (each product's two input gradients: m x k contracting n, and k x n contracting m; a
// weight's gradient is the second), and the attention core's forward. `rows`: the
// fraction of the data's rows a device computes (1 / (dp x micro-batches)); `tp` divides
// each GEMM's tensor-parallel dimension (OpWork::gemm_tp_dim).
struct ShapedGemms {
  double forward = 0;
  double backward = 0;
  double core_forward = 0;
  // Of backward, the weights' gradients: each GEMM's second product outside the attention
  // core (whose GEMMs multiply two activations), what ZB-H1 runs as W acts.
  double weight_backward = 0;
};
ShapedGemms ShapedGemmSeconds(const ProfileUnit& unit, const ComputeRates& rates, double tp, double rows);

// What the forward's memory-bound writes into cached bytes save one device of the unit
// (sbp/compute_cost.h): each op's output the layout does not keep for backward (selective
// recomputation: the attention core's; full: every op's but those a later unit reads),
// its rows' share (and tp's) when that fits in the cache, at the cached rate instead of
// the memory rate. 0 without recomputation, outside blocks, or without a measured cache.
double CachedWriteGain(const ProfileUnit& unit, const ComputeRates& rates, proto::RecomputeMode mode, bool in_block,
                       double tp, double rows);

}  // namespace oneflow::auto_parallel

#endif  // COMPILER_AUTO_PARALLEL_UNIT_KERNELS_H_
