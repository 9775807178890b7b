#include "actors/behaviors/synthetic_data.h"

#include <algorithm>

#include "oneflow_core/random.h"

namespace oneflow::actors {

void FillClassificationFeatures(uint64_t seed, int64_t iteration, const TensorLayout& layout, float* out) {
  FillBlockNormal(layout.logical, layout.slice, LogicalRandom(seed, 2 * static_cast<uint64_t>(iteration)), out);
}

void FillClassificationLabels(uint64_t seed, int64_t iteration, int64_t features, int64_t classes,
                              const TensorLayout& layout, int32_t* out) {
  const LogicalRandom data(seed, 2 * static_cast<uint64_t>(iteration));
  const int64_t used = std::min(features, kLabelFeatures);
  std::vector<float> teacher(used * classes);
  BlockNormals(LogicalRandom(seed, 1), 0, used * classes, teacher.data());
  std::vector<float> row(used);
  std::vector<float> scores(classes);
  int64_t k = 0;
  ForEachContiguousRun(layout.logical, layout.slice, [&](int64_t, int64_t logical, int64_t length) {
    for (int64_t b = logical; b < logical + length; ++b) {
      // The row's first `used` features, regenerated: labels do not depend on how x is split.
      BlockNormals(data, b * features, used, row.data());
      std::fill(scores.begin(), scores.end(), 0.0f);
      for (int64_t f = 0; f < used; ++f) {
        for (int64_t c = 0; c < classes; ++c) scores[c] += row[f] * teacher[f * classes + c];
      }
      out[k++] = static_cast<int32_t>(std::max_element(scores.begin(), scores.end()) - scores.begin());
    }
  });
}

void FillSyntheticTokens(uint64_t seed, int64_t iteration, int64_t vocab, int64_t shift,
                         const TensorLayout& layout, int32_t* out) {
  const LogicalRandom random(seed, static_cast<uint64_t>(iteration));
  const int64_t seq = layout.logical.dim(layout.logical.rank() - 1);
  int64_t k = 0;
  ForEachContiguousRun(layout.logical, layout.slice, [&](int64_t, int64_t logical, int64_t length) {
    for (int64_t index = logical; index < logical + length; ++index) {
      const int64_t b = index / seq, s = index % seq;
      // A random first token per window, then each next token is the previous plus one:
      // a rule a model can learn, computed in O(1) from the position.
      const float u = random.Uniform(b);
      const int64_t first = std::min<int64_t>(vocab - 1, static_cast<int64_t>(u * vocab));
      out[k++] = static_cast<int32_t>((first + s + shift) % vocab);
    }
  });
}

void FillFileTokens(const std::vector<int32_t>& file, int64_t iteration, int64_t shift,
                    const TensorLayout& layout, int32_t* out) {
  const int64_t batch = layout.logical.dim(0);
  const int64_t seq = layout.logical.dim(layout.logical.rank() - 1);
  const int64_t windows = static_cast<int64_t>(file.size()) / (seq + 1);
  int64_t k = 0;
  ForEachContiguousRun(layout.logical, layout.slice, [&](int64_t, int64_t logical, int64_t length) {
    for (int64_t index = logical; index < logical + length; ++index) {
      const int64_t b = index / seq, s = index % seq;
      const int64_t window = (iteration * batch + b) % windows;
      out[k++] = file[window * (seq + 1) + s + shift];
    }
  });
}

namespace {

// Calls `emit(k, value)` for the k-th element of this device's slice, in slice order.
template <typename Emit>
void ForEachRecordValue(const RecordFile& file, int64_t offset, int64_t iteration, const TensorLayout& layout,
                        Emit emit) {
  const int64_t batch = layout.logical.dim(0);
  const int64_t per_sample = batch == 0 ? 0 : layout.logical.NumElements() / batch;
  const int64_t records = file.records();
  int64_t k = 0;
  ForEachContiguousRun(layout.logical, layout.slice, [&](int64_t, int64_t logical, int64_t length) {
    for (int64_t index = logical; index < logical + length; ++index) {
      const int64_t b = index / per_sample, e = index % per_sample;
      const int64_t record = (iteration * batch + b) % records;
      emit(k++, file.values[record * file.record_floats + offset + e]);
    }
  });
}

}  // namespace

void FillFileRecords(const RecordFile& file, int64_t offset, int64_t iteration, const TensorLayout& layout,
                     float* out) {
  ForEachRecordValue(file, offset, iteration, layout, [out](int64_t k, float value) { out[k] = value; });
}

void FillFileRecordLabels(const RecordFile& file, int64_t offset, int64_t iteration, const TensorLayout& layout,
                          int32_t* out) {
  ForEachRecordValue(file, offset, iteration, layout,
                     [out](int64_t k, float value) { out[k] = static_cast<int32_t>(value); });
}

}  // namespace oneflow::actors
