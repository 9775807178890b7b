#include "oneflow_core/ops/testing/op_cases.h"

#include <algorithm>
#include <random>

#include "oneflow_core/ops/reference/reference.h"
#include "oneflow_core/ops/ring_blocks.h"

namespace oneflow {

std::vector<Dense> RandomInputs(const OpCase& c) {
  std::mt19937 rng(42);
  std::uniform_real_distribution<double> uniform(0.5, 2.0);
  std::vector<Dense> inputs;
  for (size_t k = 0; k < c.inputs.size(); ++k) {
    const TensorType& type = c.inputs[k];
    Dense dense = Dense::Zeros(type.shape, type.dtype);
    const bool index = !IsFloating(type.dtype);
    const bool positive = std::count(c.positive.begin(), c.positive.end(), k) > 0;
    for (double& v : dense.values) {
      v = index ? static_cast<double>(rng() % c.index_limit)
                : uniform(rng) * (rng() % 2 && !positive ? -1 : 1);
    }
    inputs.push_back(std::move(dense));
  }
  if (c.prepare) c.prepare(&inputs);
  return inputs;
}

PrepareInputs MaskedRingRows(std::vector<int64_t> every) {
  return [every](std::vector<Dense>* inputs) {
    for (size_t i = 0; i < every.size() && i < inputs->size(); ++i) {
      Dense& x = (*inputs)[i];
      const int64_t width = x.shape.dim(x.shape.rank() - 1);
      for (int64_t row = 0; row < x.shape.NumElements() / width; row += every[i]) {
        std::fill(x.values.begin() + row * width, x.values.begin() + (row + 1) * width - 1, 0.0);
        x.values[(row + 1) * width - 1] = kMaskedRowLse;
      }
    }
  };
}

PrepareInputs Routed(size_t at, int64_t experts, int64_t top_k, int64_t capacity) {
  return [=](std::vector<Dense>* inputs) {
    const Shape& shape = (*inputs)[at].shape;
    std::mt19937 rng(11);
    std::uniform_real_distribution<double> uniform(0.0, 1.0);
    Dense probs = Dense::Zeros(Shape{shape.dim(0), shape.dim(1), experts});
    for (double& v : probs.values) v = uniform(rng);
    const std::vector<Dense> routing =
        *EvaluateReference("moe_route", {probs}, {{"top_k", top_k}, {"capacity", capacity}});
    for (size_t i = 0; i < 2; ++i) {
      const DType dtype = (*inputs)[at + i].dtype;
      (*inputs)[at + i] = routing[i];
      (*inputs)[at + i].dtype = dtype;
    }
  };
}

PrepareInputs UnusedSlots(std::vector<size_t> ks, int64_t offset) {
  return [=](std::vector<Dense>* inputs) {
    for (size_t k : ks) {
      Dense& d = (*inputs)[k];
      const int64_t experts = d.shape.dim(1), capacity = d.shape.dim(2), width = d.shape.dim(3);
      for (int64_t block = 0; block < d.shape.dim(0) * experts; ++block) {
        const int64_t kept = (block + offset + static_cast<int64_t>(k)) % (capacity + 1);
        for (int64_t i = kept * width; i < capacity * width; ++i) {
          d.values[block * capacity * width + i] = 0.0;
        }
      }
    }
  };
}

void MakePartial(Dense* local, int64_t rank, int64_t devices) {
  const double weight = (rank + 1) * 2.0 / (devices * (devices + 1));
  const double noise = rank - (devices - 1) / 2.0;
  for (size_t i = 0; i < local->values.size(); ++i) {
    local->values[i] = local->values[i] * weight + noise * (0.7 + static_cast<double>(i % 5));
  }
}

}  // namespace oneflow
