// Synthetic training data as a pure function of (seed, iteration, logical index), so a
// device generating its slice gets exactly the values of the whole batch generated on
// one device (the loss-equivalence oracle depends on it).
//
//   classification  x[b, f] = N(0, 1): BlockNormals (random.h, four normals per Philox
//                   block, vectorized) of LogicalRandom(seed, 2 * iteration) at logical
//                   index b * F + f. labels[b] = argmax_c sum_{f < K} x[b, f] * T[f, c]
//                   (ties: the lowest c), over the first K = min(F, 32) features only,
//                   with the fixed teacher T[f, c] = BlockNormals of LogicalRandom(seed,
//                   1) (odd streams are never data) at f * C + c: a linear rule a model
//                   can learn, the other F - K features noise. Bounding K keeps labels
//                   at O(B K C) work even where a device holds none of x: it regenerates
//                   the K values of each of its rows (a row's first K, whatever slice of
//                   x this device holds) and the K x C teacher once per call.
//                   Cost (bench/data): 0.6 ms for 256 x 1024 features and their labels
//                   on one core, 2.3 ns per element.
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

// The number of leading features the labels depend on: K above.
constexpr int64_t kLabelFeatures = 32;

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
