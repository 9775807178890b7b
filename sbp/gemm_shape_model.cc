#include "sbp/gemm_shape_model.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace oneflow {
namespace {

// Solves the `size` x `size` system in place by Gaussian elimination with partial
// pivoting; false when it is singular.
bool Solve(int size, double matrix[3][3], double rhs[3], double solution[3]) {
  for (int column = 0; column < size; ++column) {
    int pivot = column;
    for (int row = column + 1; row < size; ++row) {
      if (std::abs(matrix[row][column]) > std::abs(matrix[pivot][column])) pivot = row;
    }
    if (std::abs(matrix[pivot][column]) < 1e-300) return false;
    std::swap(matrix[pivot], matrix[column]);
    std::swap(rhs[pivot], rhs[column]);
    for (int row = column + 1; row < size; ++row) {
      const double factor = matrix[row][column] / matrix[column][column];
      for (int c = column; c < size; ++c) matrix[row][c] -= factor * matrix[column][c];
      rhs[row] -= factor * rhs[column];
    }
  }
  for (int row = size - 1; row >= 0; --row) {
    double value = rhs[row];
    for (int c = row + 1; c < size; ++c) value -= matrix[row][c] * solution[c];
    solution[row] = value / matrix[row][row];
  }
  return true;
}

}  // namespace

const std::vector<GemmShape> kGemmCalibrationShapes = {
    // Square.
    {1, 64, 64, 64}, {1, 128, 128, 128}, {1, 256, 256, 256}, {1, 512, 512, 512},
    // Projections: a few hundred rows through hidden 64-512 and 4x widths, and backward's
    // transposed shapes (the weight gradient contracts over the rows).
    {1, 256, 64, 64}, {1, 256, 256, 64}, {1, 256, 64, 256}, {1, 512, 128, 128}, {1, 512, 512, 128},
    {1, 512, 128, 512}, {1, 128, 128, 512}, {1, 128, 512, 512}, {1, 1024, 256, 256}, {1, 2048, 512, 128},
    {1, 512, 2048, 512},
    // Per-head products: tokens x head width by head width x tokens and back.
    {32, 32, 32, 8}, {32, 32, 8, 32}, {64, 64, 64, 16}, {64, 64, 16, 64}, {16, 128, 128, 64}, {16, 128, 64, 128},
};

double GemmShapeModel::Seconds(const GemmShape& shape) const {
  double seconds = shape.Flops() / flops_per_second + call_seconds;
  if (operand_bytes_per_second > 0) seconds += shape.OperandBytes() / operand_bytes_per_second;
  return seconds;
}

GemmShapeModel FitGemmShapeModel(const std::vector<GemmTiming>& timings) {
  GemmShapeModel best;
  if (timings.size() < 3) return best;
  double best_residual = std::numeric_limits<double>::infinity();
  // Term 0 (the FLOPs) is in every subset: a model without a peak is no GEMM rate.
  for (int mask = 1; mask < 8; mask += 2) {
    int terms[3];
    int size = 0;
    for (int term = 0; term < 3; ++term) {
      if (mask & (1 << term)) terms[size++] = term;
    }
    // Each row divided by its measured seconds: the relative error is the residual.
    auto feature = [&](const GemmTiming& timing, int term) {
      const double value = term == 0 ? timing.shape.Flops() : term == 1 ? timing.shape.OperandBytes() : 1.0;
      return value / timing.seconds;
    };
    double normal[3][3] = {};
    double rhs[3] = {};
    for (const GemmTiming& timing : timings) {
      if (!(timing.seconds > 0)) continue;
      for (int i = 0; i < size; ++i) {
        rhs[i] += feature(timing, terms[i]);
        for (int j = 0; j < size; ++j) normal[i][j] += feature(timing, terms[i]) * feature(timing, terms[j]);
      }
    }
    double solution[3] = {};
    if (!Solve(size, normal, rhs, solution)) continue;
    double inverse[3] = {};
    bool feasible = true;
    for (int i = 0; i < size; ++i) {
      feasible = feasible && std::isfinite(solution[i]) && solution[i] >= 0;
      inverse[terms[i]] = solution[i];
    }
    if (!feasible || inverse[0] <= 0) continue;
    GemmShapeModel model;
    model.flops_per_second = 1 / inverse[0];
    model.operand_bytes_per_second = inverse[1] > 0 ? 1 / inverse[1] : 0;
    model.call_seconds = inverse[2];
    double residual = 0;
    for (const GemmTiming& timing : timings) {
      if (!(timing.seconds > 0)) continue;
      const double error = model.Seconds(timing.shape) / timing.seconds - 1;
      residual += error * error;
    }
    if (residual < best_residual) {
      best_residual = residual;
      best = model;
    }
  }
  return best;
}

double MedianRelativeError(const GemmShapeModel& model, const std::vector<GemmTiming>& timings) {
  std::vector<double> errors;
  for (const GemmTiming& timing : timings) {
    if (timing.seconds > 0 && model.measured()) errors.push_back(std::abs(model.Seconds(timing.shape) / timing.seconds - 1));
  }
  if (errors.empty()) return 0;
  std::sort(errors.begin(), errors.end());
  const size_t middle = errors.size() / 2;
  return errors.size() % 2 == 1 ? errors[middle] : (errors[middle - 1] + errors[middle]) / 2;
}

}  // namespace oneflow
