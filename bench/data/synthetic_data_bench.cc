// Cost of the synthetic classification batch (features + labels, what the mlp's data
// source fills each iteration) next to memcpy of the same bytes, one thread, one JSON
// line per generator:
//   {"bench":"synthetic_data","path":"after","batch":256,"features":1024,"classes":10,
//    "features_ms":..,"labels_ms":..,"total_ms":..,"ns_per_element":..,"memcpy_ms":..,
//    "ratio_to_memcpy":..,"threads":1}
// ns_per_element = total / (batch * features + batch); ratio_to_memcpy = total / the time
// to memcpy batch * (features + 1) * 4 bytes. "after" is the runtime's generator
// (actors/behaviors/synthetic_data.h); "before" is the generator it replaced, kept here
// only to measure it: one Philox block and a double Box-Muller per feature, labels from
// every feature of the row and a teacher regenerated per row (O(B F C) Philox blocks).
// Each generator call is followed by ten memcpy calls and each side keeps its fastest, so
// a busy neighbour on a shared machine or clock drift does not favour either.
//
//   bazel run -c opt //bench/data:synthetic_data_bench
//   bazel run -c opt //bench/data:synthetic_data_bench -- --batch=64 --skip_before
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "actors/behaviors/synthetic_data.h"
#include "kernels/cpu/blas_core.h"
#include "oneflow_core/random.h"

ABSL_FLAG(int64_t, batch, 256, "rows of the batch");
ABSL_FLAG(int64_t, features, 1024, "features per row");
ABSL_FLAG(int64_t, classes, 10, "label classes");
ABSL_FLAG(double, min_seconds, 0.5, "time spent on each generator, at least");
ABSL_FLAG(int, min_calls, 5, "calls of each generator, at least");
ABSL_FLAG(bool, skip_before, false, "do not run the old generator (~0.1 s a call)");

namespace oneflow {
namespace {

// The generator before bench/data existed (FillNormal per feature; labels from the whole
// row and a teacher entry per (f, c), both regenerated for every row).
void BeforeFeatures(uint64_t seed, int64_t iteration, const TensorLayout& layout, float* out) {
  FillNormal(layout.logical, layout.slice, LogicalRandom(seed, 2 * static_cast<uint64_t>(iteration)), 0.0f,
             1.0f, out);
}

void BeforeLabels(uint64_t seed, int64_t iteration, int64_t features, int64_t classes,
                  const TensorLayout& layout, int32_t* out) {
  const LogicalRandom data(seed, 2 * static_cast<uint64_t>(iteration));
  const LogicalRandom teacher(seed, 1);
  std::vector<float> row(features);
  std::vector<float> scores(classes);
  int64_t k = 0;
  ForEachContiguousRun(layout.logical, layout.slice, [&](int64_t, int64_t logical, int64_t length) {
    for (int64_t b = logical; b < logical + length; ++b) {
      for (int64_t f = 0; f < features; ++f) row[f] = data.Normal(b * features + f);
      std::fill(scores.begin(), scores.end(), 0.0f);
      for (int64_t f = 0; f < features; ++f) {
        for (int64_t c = 0; c < classes; ++c) scores[c] += row[f] * teacher.Normal(f * classes + c);
      }
      int32_t best = 0;
      for (int64_t c = 1; c < classes; ++c) {
        if (scores[c] > scores[best]) best = static_cast<int32_t>(c);
      }
      out[k++] = best;
    }
  });
}

using FeaturesFn = void (*)(uint64_t, int64_t, const TensorLayout&, float*);
using LabelsFn = void (*)(uint64_t, int64_t, int64_t, int64_t, const TensorLayout&, int32_t*);

struct Generator {
  std::string path;
  FeaturesFn features;
  LabelsFn labels;
};

template <typename Fn>
double Seconds(Fn&& fn) {
  const auto start = std::chrono::steady_clock::now();
  fn();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

int Run() {
  const int64_t batch = absl::GetFlag(FLAGS_batch), features = absl::GetFlag(FLAGS_features);
  const int64_t classes = absl::GetFlag(FLAGS_classes);
  const Shape x_shape{batch, features}, label_shape{batch};
  const TensorLayout x_layout{x_shape, TensorSlice::Whole(x_shape)};
  const TensorLayout label_layout{label_shape, TensorSlice::Whole(label_shape)};
  std::vector<float> x(batch * features);
  std::vector<int32_t> labels(batch);
  // memcpy's source and destination: the same bytes as x and the labels together.
  const int64_t bytes = batch * (features + 1) * 4;
  std::vector<char> source(bytes, 1), destination(bytes);

  std::vector<Generator> generators;
  if (!absl::GetFlag(FLAGS_skip_before)) generators.push_back({"before", BeforeFeatures, BeforeLabels});
  generators.push_back({"after", actors::FillClassificationFeatures, actors::FillClassificationLabels});
  for (const Generator& generator : generators) {
    int64_t iteration = 0;
    auto fill_features = [&] { generator.features(/*seed=*/1, iteration, x_layout, x.data()); };
    auto fill_labels = [&] {
      generator.labels(/*seed=*/1, iteration, features, classes, label_layout, labels.data());
    };
    auto copy = [&] { std::memcpy(destination.data(), source.data(), bytes); };
    // Warm up (page faults), then alternate single calls and keep each one's fastest.
    fill_features();
    fill_labels();
    copy();
    double features_seconds = 1e30, labels_seconds = 1e30, copy_seconds = 1e30, spent = 0;
    for (int calls = 0; calls < absl::GetFlag(FLAGS_min_calls) || spent < absl::GetFlag(FLAGS_min_seconds);
         ++calls) {
      ++iteration;  // A new batch each call, as in training.
      const double features_call = Seconds(fill_features);
      const double labels_call = Seconds(fill_labels);
      features_seconds = std::min(features_seconds, features_call);
      labels_seconds = std::min(labels_seconds, labels_call);
      for (int copies = 0; copies < 10; ++copies) copy_seconds = std::min(copy_seconds, Seconds(copy));
      spent += features_call + labels_call;
    }
    const double total = features_seconds + labels_seconds;
    std::printf(
        "{\"bench\":\"synthetic_data\",\"path\":\"%s\",\"batch\":%lld,\"features\":%lld,\"classes\":%lld,"
        "\"features_ms\":%.4f,\"labels_ms\":%.4f,\"total_ms\":%.4f,\"ns_per_element\":%.3f,"
        "\"memcpy_ms\":%.4f,\"ratio_to_memcpy\":%.1f,\"threads\":1}\n",
        generator.path.c_str(), static_cast<long long>(batch), static_cast<long long>(features),
        static_cast<long long>(classes), features_seconds * 1e3, labels_seconds * 1e3, total * 1e3,
        total * 1e9 / static_cast<double>(batch * features + batch), copy_seconds * 1e3, total / copy_seconds);
    std::fflush(stdout);
  }
  return 0;
}

}  // namespace
}  // namespace oneflow

int main(int argc, char** argv) {
  oneflow::cpu::UseBestBlasCore();  // First: it may restart the program.
  absl::ParseCommandLine(argc, argv);
  return oneflow::Run();
}
