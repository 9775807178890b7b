// Synthetic training data as a pure function of (seed, iteration, logical index), so a
// device generating its slice gets exactly the values of the whole batch generated on
// one device (the loss-equivalence oracle depends on it).
//
//   classification  x[b, f] = N(0, 1) from LogicalRandom(seed, 2 * iteration) at index
//                   b * F + f; labels[b] = argmax_c sum_f x[b, f] * T[f, c], with the
//                   fixed teacher T[f, c] = N(0, 1) from LogicalRandom(seed, 1) (odd
//                   streams are never data), so a model can learn it.
//   tokens          row b of iteration i is a window of S + 1 ids: a first id uniform in
//                   [0, vocab) from LogicalRandom(seed, i) at index b, then each id the
//                   previous plus one (mod vocab), a rule a model can learn; tokens are
//                   its first S, targets its last S (the next token).
#ifndef ACTORS_BEHAVIORS_SYNTHETIC_DATA_H_
#define ACTORS_BEHAVIORS_SYNTHETIC_DATA_H_

#include <cstdint>
#include <vector>

#include "oneflow_core/tensor_slice.h"

namespace oneflow::actors {

// `layout`: of x [B, F].
void FillClassificationFeatures(uint64_t seed, int64_t iteration, const TensorLayout& layout, float* out);

// `layout`: of labels [B]; `features` is F.
void FillClassificationLabels(uint64_t seed, int64_t iteration, int64_t features, int64_t classes,
                              const TensorLayout& layout, int32_t* out);

// `layout`: of tokens or targets [B, S]; `shift` 0 for tokens, 1 for targets.
void FillSyntheticTokens(uint64_t seed, int64_t iteration, int64_t vocab, int64_t shift,
                         const TensorLayout& layout, int32_t* out);

// The same windows read from a token file's ids: window (iteration * B + b) mod the
// number of whole windows in the file.
void FillFileTokens(const std::vector<int32_t>& file, int64_t iteration, int64_t shift,
                    const TensorLayout& layout, int32_t* out);

// A record file: fixed-size records of little-endian f32, one record per sample. A record
// is every output of the data source in declaration order, each its per-sample elements
// (the shape without the batch axis) row-major; integer outputs (labels) are stored as
// f32 holding exact integers. Sample b of iteration i reads record (i * B + b) mod the
// number of records. `offset` is where this output starts inside a record, in floats;
// `record_floats` the record's size.
struct RecordFile {
  std::vector<float> values;
  int64_t record_floats = 0;
  int64_t records() const { return static_cast<int64_t>(values.size()) / record_floats; }
};
void FillFileRecords(const RecordFile& file, int64_t offset, int64_t iteration, const TensorLayout& layout,
                     float* out);
void FillFileRecordLabels(const RecordFile& file, int64_t offset, int64_t iteration, const TensorLayout& layout,
                          int32_t* out);

}  // namespace oneflow::actors

#endif  // ACTORS_BEHAVIORS_SYNTHETIC_DATA_H_
