#include "actors/behaviors/synthetic_data.h"

#include <algorithm>

#include "gtest/gtest.h"
#include "oneflow_core/placement.h"
#include "oneflow_core/random.h"

namespace oneflow::actors {
namespace {

TensorLayout Layout(const Shape& logical, const std::string& sbp, const std::string& placement, int64_t rank) {
  const Placement where = *Placement::Parse(placement);
  return TensorLayout{logical, *DeviceSlice(logical, *NdSbp::Parse(sbp), where, rank)};
}

// Every device's slice equals the same slice of the single-device batch.
TEST(SyntheticDataTest, SlicesAssembleToTheSingleDeviceBatch) {
  const Shape x{10, 6}, labels{10}, tokens{5, 7};
  std::vector<float> whole_x(60);
  std::vector<int32_t> whole_labels(10), whole_tokens(35), whole_targets(35);
  FillClassificationFeatures(3, 4, Layout(x, "B", "cpu{0:0}", 0), whole_x.data());
  FillClassificationLabels(3, 4, 6, 5, Layout(labels, "B", "cpu{0:0}", 0), whole_labels.data());
  FillSyntheticTokens(3, 4, 100, 0, Layout(tokens, "B", "cpu{0:0}", 0), whole_tokens.data());
  FillSyntheticTokens(3, 4, 100, 1, Layout(tokens, "B", "cpu{0:0}", 0), whole_targets.data());
  for (const char* sbp : {"[S(0), S(1)]", "[S(1), S(0)]", "[B, S(0)]"}) {
    for (int64_t rank = 0; rank < 4; ++rank) {
      const TensorLayout layout = Layout(x, sbp, "cpu{0:0-3}[2, 2]", rank);
      std::vector<float> part(layout.slice.NumElements());
      FillClassificationFeatures(3, 4, layout, part.data());
      int64_t k = 0;
      ForEachContiguousRun(x, layout.slice, [&](int64_t, int64_t logical, int64_t length) {
        for (int64_t i = 0; i < length; ++i) EXPECT_EQ(part[k++], whole_x[logical + i]);
      });
    }
  }
  for (int64_t rank = 0; rank < 3; ++rank) {
    const TensorLayout layout = Layout(labels, "S(0)", "cpu{0:0-2}", rank);
    std::vector<int32_t> part(layout.slice.NumElements());
    FillClassificationLabels(3, 4, 6, 5, layout, part.data());
    for (int64_t i = 0; i < layout.slice.NumElements(); ++i) {
      EXPECT_EQ(part[i], whole_labels[layout.slice.range(0).begin + i]);
    }
    const TensorLayout token_layout = Layout(tokens, "S(1)", "cpu{0:0-2}", rank);
    std::vector<int32_t> token_part(token_layout.slice.NumElements());
    FillSyntheticTokens(3, 4, 100, 1, token_layout, token_part.data());
    int64_t k = 0;
    ForEachContiguousRun(tokens, token_layout.slice, [&](int64_t, int64_t logical, int64_t length) {
      for (int64_t i = 0; i < length; ++i) EXPECT_EQ(token_part[k++], whole_targets[logical + i]);
    });
  }
  // Targets are the next token: row b's target s is token s + 1 of the same window.
  for (int64_t b = 0; b < 5; ++b) {
    for (int64_t s = 0; s + 1 < 7; ++s) EXPECT_EQ(whole_targets[b * 7 + s], whole_tokens[b * 7 + s + 1]);
  }
  // Labels use all classes on a decent sample, and ids stay in range.
  std::vector<int> seen(5, 0);
  for (int32_t label : whole_labels) {
    ASSERT_GE(label, 0);
    ASSERT_LT(label, 5);
    seen[label] = 1;
  }
  EXPECT_GE(std::count(seen.begin(), seen.end(), 1), 3);
  for (int32_t token : whole_tokens) {
    ASSERT_GE(token, 0);
    ASSERT_LT(token, 100);
  }
}

// Records: sample b of iteration i reads record (i * B + b) mod records, each output at
// its offset; slices of any layout read the same values as the whole batch.
TEST(SyntheticDataTest, RecordFileSlicesReadTheirRecords) {
  RecordFile file;
  file.record_floats = 4;  // 3 features, then the label.
  for (int r = 0; r < 7; ++r) {
    for (int f = 0; f < 3; ++f) file.values.push_back(static_cast<float>(10 * r + f));
    file.values.push_back(static_cast<float>(r % 2));
  }
  const Shape x{5, 3}, labels{5};
  std::vector<float> whole(15);
  FillFileRecords(file, 0, 2, Layout(x, "B", "cpu{0:0}", 0), whole.data());
  for (int b = 0; b < 5; ++b) {
    const int record = (2 * 5 + b) % 7;
    for (int f = 0; f < 3; ++f) EXPECT_EQ(whole[b * 3 + f], 10 * record + f);
  }
  for (int64_t rank = 0; rank < 2; ++rank) {
    const TensorLayout layout = Layout(x, "S(1)", "cpu{0:0-1}", rank);
    std::vector<float> part(layout.slice.NumElements());
    FillFileRecords(file, 0, 2, layout, part.data());
    int64_t k = 0;
    ForEachContiguousRun(x, layout.slice, [&](int64_t, int64_t logical, int64_t length) {
      for (int64_t i = 0; i < length; ++i) EXPECT_EQ(part[k++], whole[logical + i]);
    });
    const TensorLayout label_layout = Layout(labels, "S(0)", "cpu{0:0-1}", rank);
    std::vector<int32_t> label_part(label_layout.slice.NumElements());
    FillFileRecordLabels(file, 3, 2, label_layout, label_part.data());
    for (int64_t i = 0; i < label_layout.slice.NumElements(); ++i) {
      EXPECT_EQ(label_part[i], ((10 + label_layout.slice.range(0).begin + i) % 7) % 2);
    }
  }
}

// The documented rule, from the whole batch's x: features are BlockNormals of stream
// 2 * iteration, and label b is the argmax over classes of the first min(F, 32) features
// of row b times the teacher. F = 45 > 32 (labels ignore the rest) and not a multiple of
// 4 (rows start inside Philox blocks); every layout of x and of the labels agrees.
TEST(SyntheticDataTest, ClassificationFollowsTheDocumentedRuleOnEveryLayout) {
  const int64_t batch = 9, features = 45, classes = 7;
  const Shape x{batch, features}, labels{batch};
  std::vector<float> whole_x(batch * features);
  std::vector<int32_t> whole_labels(batch);
  FillClassificationFeatures(8, 2, Layout(x, "B", "cpu{0:0}", 0), whole_x.data());
  FillClassificationLabels(8, 2, features, classes, Layout(labels, "B", "cpu{0:0}", 0), whole_labels.data());
  std::vector<float> expected_x(batch * features);
  BlockNormals(LogicalRandom(8, 4), 0, batch * features, expected_x.data());
  EXPECT_EQ(whole_x, expected_x);
  std::vector<float> teacher(kLabelFeatures * classes);
  BlockNormals(LogicalRandom(8, 1), 0, kLabelFeatures * classes, teacher.data());
  for (int64_t b = 0; b < batch; ++b) {
    std::vector<float> scores(classes, 0.0f);
    for (int64_t f = 0; f < kLabelFeatures; ++f) {
      for (int64_t c = 0; c < classes; ++c) scores[c] += whole_x[b * features + f] * teacher[f * classes + c];
    }
    EXPECT_EQ(whole_labels[b], std::max_element(scores.begin(), scores.end()) - scores.begin()) << "row " << b;
  }
  for (const char* sbp : {"[S(0), S(1)]", "[S(1), S(1)]", "[S(1), S(0)]", "[B, S(1)]"}) {
    for (int64_t rank = 0; rank < 4; ++rank) {
      const TensorLayout layout = Layout(x, sbp, "cpu{0:0-3}[2, 2]", rank);
      std::vector<float> part(layout.slice.NumElements());
      FillClassificationFeatures(8, 2, layout, part.data());
      int64_t k = 0;
      ForEachContiguousRun(x, layout.slice, [&](int64_t, int64_t logical, int64_t length) {
        for (int64_t i = 0; i < length; ++i) ASSERT_EQ(part[k++], whole_x[logical + i]) << sbp << " rank " << rank;
      });
    }
  }
  for (int64_t devices : {2, 4}) {
    for (int64_t rank = 0; rank < devices; ++rank) {
      const TensorLayout layout =
          Layout(labels, "S(0)", "cpu{0:0-" + std::to_string(devices - 1) + "}", rank);
      std::vector<int32_t> part(layout.slice.NumElements());
      FillClassificationLabels(8, 2, features, classes, layout, part.data());
      for (int64_t i = 0; i < layout.slice.NumElements(); ++i) {
        EXPECT_EQ(part[i], whole_labels[layout.slice.range(0).begin + i]) << devices << " devices, rank " << rank;
      }
    }
  }
}

// A model can only learn labels that vary: on 4096 rows of the mlp's shape every class
// gets a fair share (a linear teacher over 32 N(0, 1) features: about 1/C each).
TEST(SyntheticDataTest, LabelsUseEveryClass) {
  const int64_t batch = 4096, features = 1024, classes = 10;
  const Shape labels{batch};
  std::vector<int32_t> values(batch);
  FillClassificationLabels(1, 0, features, classes, TensorLayout{labels, TensorSlice::Whole(labels)}, values.data());
  std::vector<int64_t> count(classes, 0);
  for (int32_t label : values) {
    ASSERT_GE(label, 0);
    ASSERT_LT(label, classes);
    ++count[label];
  }
  for (int64_t c = 0; c < classes; ++c) {
    EXPECT_GE(count[c], batch / classes / 4) << "class " << c;
    EXPECT_LE(count[c], batch / classes * 3) << "class " << c;
  }
}

TEST(SyntheticDataTest, IterationsDiffer) {
  const Shape x{4, 3};
  std::vector<float> a(12), b(12);
  FillClassificationFeatures(3, 0, TensorLayout{x, TensorSlice::Whole(x)}, a.data());
  FillClassificationFeatures(3, 1, TensorLayout{x, TensorSlice::Whole(x)}, b.data());
  EXPECT_NE(a, b);
}

}  // namespace
}  // namespace oneflow::actors
