// A GEMM's time by its shape, for the cost model (sbp/compute_cost.h): one rate for every
// GEMM (a 512^3 SGEMM's) prices a product of small or thin operands as fast as a square
// one, which it is not (the attention core's per-head products of the examples' gpt ran
// at half that rate on one thread: docs/auto_parallel.md, "GEMM by shape"). The model:
//
//   seconds = batch x (2 m n k / flops_per_second + 4 (m k + k n + m n) / operand_bytes_per_second)
//             + call_seconds
//
// for one call of `batch` products of an m x k by a k x n operand: the multiply-adds at the
// kernel's peak, the operands' f32 bytes moved (packed, read, written) at a rate of their
// own, and a fixed cost per call. `oneflow calibrate` times the runtime's kernel
// (kernels/cpu/sgemm.h) on one thread over a set of shapes (kGemmCalibrationShapes) and
// fits the three figures (FitGemmShapeModel), written as its "gemm_shape" compute line
// (the plan's Cluster.gemm_shape_*): the auto-parallel search prices each GEMM of the
// model, forward and backward, by its shape on one device of the layout, the plan's
// predicted step each GEMM kernel by its registers' shapes, and the SBP search each
// candidate's product on the device's slices.
#ifndef SBP_GEMM_SHAPE_MODEL_H_
#define SBP_GEMM_SHAPE_MODEL_H_

#include <cstdint>
#include <string>
#include <vector>

namespace oneflow {

struct GemmShape {
  double batch = 1;
  double m = 0;
  double n = 0;
  double k = 0;
  double Flops() const { return 2 * batch * m * n * k; }
  // f32 bytes of the operands and the result of every product of the call.
  double OperandBytes() const { return 4 * batch * (m * k + k * n + m * n); }
};

struct GemmShapeModel {
  double flops_per_second = 0;  // 0: not measured (the one GEMM rate prices every GEMM)
  // 0 (with flops_per_second measured): the operands' bytes cost nothing the fit saw.
  double operand_bytes_per_second = 0;
  double call_seconds = 0;
  bool measured() const { return flops_per_second > 0; }
  // The model's seconds of one call of `shape`; requires measured().
  double Seconds(const GemmShape& shape) const;
};

// One timed call: the shape and the seconds it took (the fastest of a few).
struct GemmTiming {
  GemmShape shape;
  double seconds = 0;
};

// The shapes `oneflow calibrate` times: square products from 64 to 512, the thin ones of a
// transformer's projections at a few hundred rows (hidden 64-512, widths 4x), and batched
// per-head products (32-128 tokens, head widths 8-64).
extern const std::vector<GemmShape> kGemmCalibrationShapes;

// The three figures that minimize the squared relative error over `timings` with each
// figure's inverse >= 0 (every subset of the three terms solved by least squares, the best
// feasible kept). Deterministic. Fewer than 3 timings, or none feasible: not measured.
GemmShapeModel FitGemmShapeModel(const std::vector<GemmTiming>& timings);

// Over `timings`, the median of |model / measured - 1|: how well the fit holds.
double MedianRelativeError(const GemmShapeModel& model, const std::vector<GemmTiming>& timings);

}  // namespace oneflow

#endif  // SBP_GEMM_SHAPE_MODEL_H_
