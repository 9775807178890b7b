// Shape: the dimensions of a tensor, logical (whole) or physical (one device's slice).
#ifndef ONEFLOW_CORE_SHAPE_H_
#define ONEFLOW_CORE_SHAPE_H_

#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace oneflow {

// A list of non-negative dimensions. A rank-0 shape ([]) is a scalar with one element.
class Shape {
 public:
  Shape() = default;
  Shape(std::initializer_list<int64_t> dims) : dims_(dims) {}
  explicit Shape(std::vector<int64_t> dims) : dims_(std::move(dims)) {}

  // Builds a shape from user input: every dimension must be >= 0.
  static absl::StatusOr<Shape> FromDims(std::vector<int64_t> dims);

  // Parses "[2, 3]" (spaces optional; "[]" is a scalar). The inverse of ToString.
  static absl::StatusOr<Shape> Parse(absl::string_view text);

  int64_t rank() const { return static_cast<int64_t>(dims_.size()); }
  int64_t dim(int64_t axis) const { return dims_[axis]; }
  void set_dim(int64_t axis, int64_t value) { dims_[axis] = value; }
  const std::vector<int64_t>& dims() const { return dims_; }

  // Product of the dimensions (1 for a scalar).
  int64_t NumElements() const;

  // Row-major strides in elements: the last axis has stride 1.
  std::vector<int64_t> Strides() const;

  // "[2, 3]".
  std::string ToString() const;

  friend bool operator==(const Shape& a, const Shape& b) { return a.dims_ == b.dims_; }
  friend bool operator!=(const Shape& a, const Shape& b) { return !(a == b); }

 private:
  std::vector<int64_t> dims_;
};

}  // namespace oneflow

#endif  // ONEFLOW_CORE_SHAPE_H_
