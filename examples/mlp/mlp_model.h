// A multi-layer perceptron classifier on synthetic data, written once with the DSL; the
// parallel layout is nothing but SBP hints:
//   data parallel    x and labels split by rows over dp
//   tensor parallel  Megatron-style pairs: even layers column-parallel (weight S(1),
//                    bias S(0)), odd layers row-parallel (weight S(0)); the compiler
//                    inserts the all-reduce after each row-parallel layer.
#ifndef EXAMPLES_MLP_MLP_MODEL_H_
#define EXAMPLES_MLP_MLP_MODEL_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "examples/common/parallel_layout.h"
#include "proto/job.pb.h"

namespace oneflow::examples {

struct MlpConfig {
  int64_t batch = 64;
  int64_t in_features = 64;
  int64_t hidden = 256;
  int64_t classes = 10;
  int64_t layers = 4;  // Linear layers; ReLU between them.
  std::string optimizer = "sgd";  // "sgd" (momentum 0.9) or "adamw".
  double learning_rate = 0.1;
  uint64_t seed = 1;
  // Empty: synthetic data. Otherwise f32 records of in_features values then the label
  // (as an exact f32 integer), one per sample (DataSource::RecordFile).
  std::string record_file;
};

absl::StatusOr<proto::Job> BuildMlp(const MlpConfig& config, const ParallelLayout& layout);

}  // namespace oneflow::examples

#endif  // EXAMPLES_MLP_MLP_MODEL_H_
