// The ring attention kernel alone against plain causal attention (issue 27: "ring
// attention kernel alone against the reference attention on every block split"): for
// blocks in {2, 3, 4}, contiguous and zig-zag, the CPU ring_attention kernel is run for
// every ring step t on whole tensors whose key/value block r holds block r - t (what
// ring_shift leaves after t steps), the steps' outputs are merged one by one into a
// running result by the CPU ring_attention_merge kernel (online softmax, as
// BlockwiseRingAttention in oneflow_core/dsl/ops.h), and the
// result must equal softmax(scale q.k over the keys at or before the query's logical
// position) v, computed here directly from the positions, within 1e-5. A step that
// attends to a wrong block, a mask edge off by one chunk, a zig-zag position mixed up or
// a wrong log-sum-exp or merge changes the merged result.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "kernels/cpu/kernel_testing.h"
#include "kernels/cpu/registry.h"
#include "kernels/kernel.h"
#include "oneflow_core/ops/ring_blocks.h"

namespace oneflow {
namespace {

constexpr int64_t kBatch = 2, kGroup = 2, kHeadDim = 3;
constexpr double kScale = 0.45;

// Deterministic values of both signs, different per tensor.
Dense Values(const Shape& shape, int64_t seed) {
  Dense dense = Dense::Zeros(shape);
  for (size_t i = 0; i < dense.values.size(); ++i) {
    dense.values[i] = std::sin(0.37 * static_cast<double>(i) + 1.3 * static_cast<double>(seed)) * 1.5;
  }
  return RoundToFloat(std::move(dense));
}

// k or v with block r replaced by block (r - step) mod blocks: what device r holds at
// ring step `step`.
Dense Rotated(const Dense& x, int64_t blocks, int64_t step) {
  Dense out = x;
  for (size_t i = 0; i < x.values.size(); ++i) {
    std::vector<int64_t> c = Unravel(static_cast<int64_t>(i), x.shape);
    c[1] = RingKeyBlock(c[1], step, blocks);
    out.values[i] = x.values[Ravel(c, x.shape)];
  }
  return out;
}

void ExpectRingEqualsCausalAttention(int64_t blocks, bool zigzag, int64_t block_length) {
  SCOPED_TRACE(absl::StrCat(blocks, " blocks of ", block_length, ", ", zigzag ? "zig-zag" : "contiguous"));
  // q [b, blocks, group x s, hd]: a block's query rows are its s positions once per group
  // member (grouped-query attention); k, v [b, blocks, s, hd].
  const Dense q = Values(Shape{kBatch, blocks, kGroup * block_length, kHeadDim}, 1);
  const Dense k = Values(Shape{kBatch, blocks, block_length, kHeadDim}, 2);
  const Dense v = Values(Shape{kBatch, blocks, block_length, kHeadDim}, 3);
  const int64_t rows = kGroup * block_length;
  auto at = [](const Dense& x, int64_t b, int64_t block, int64_t row, int64_t d) {
    return x.values[Ravel({b, block, row, d}, x.shape)];
  };

  // Every step's output [b, blocks, rows, hd + 1] from the kernel.
  std::vector<Dense> steps;
  for (int64_t step = 0; step < blocks; ++step) {
    const AttrMap attrs = {{"axis", int64_t{1}}, {"step", step}, {"scale", kScale}, {"zigzag", zigzag}};
    absl::StatusOr<std::vector<Dense>> out =
        RunCpuKernel("ring_attention", {q, Rotated(k, blocks, step), Rotated(v, blocks, step)}, attrs);
    ASSERT_TRUE(out.ok()) << out.status();
    ASSERT_EQ(out->at(0).shape, (Shape{kBatch, blocks, rows, kHeadDim + 1}));
    steps.push_back(std::move(out->at(0)));
  }
  // The running merge, step by step.
  Dense merged = steps[0];
  for (int64_t step = 1; step < blocks; ++step) {
    absl::StatusOr<std::vector<Dense>> out = RunCpuKernel("ring_attention_merge", {merged, steps[step]}, {});
    ASSERT_TRUE(out.ok()) << out.status();
    merged = std::move(out->at(0));
  }

  for (int64_t b = 0; b < kBatch; ++b) {
    for (int64_t r = 0; r < blocks; ++r) {
      for (int64_t i = 0; i < rows; ++i) {
        const int64_t position = RingPosition(r, i % block_length, block_length, blocks, zigzag);
        // Plain causal attention over every key block by logical positions.
        double most = -INFINITY;
        std::vector<double> scores;
        std::vector<std::pair<int64_t, int64_t>> keys;  // (block, index)
        for (int64_t j = 0; j < blocks; ++j) {
          for (int64_t m = 0; m < block_length; ++m) {
            if (RingPosition(j, m, block_length, blocks, zigzag) > position) continue;
            double score = 0;
            for (int64_t d = 0; d < kHeadDim; ++d) score += at(q, b, r, i, d) * at(k, b, j, m, d);
            scores.push_back(kScale * score);
            keys.push_back({j, m});
            most = std::max(most, scores.back());
          }
        }
        double sum = 0;
        for (double s : scores) sum += std::exp(s - most);
        std::vector<double> want(kHeadDim, 0.0);
        for (size_t n = 0; n < scores.size(); ++n) {
          const double p = std::exp(scores[n] - most) / sum;
          for (int64_t d = 0; d < kHeadDim; ++d) want[d] += p * at(v, b, keys[n].first, keys[n].second, d);
        }
        for (int64_t d = 0; d < kHeadDim; ++d) {
          EXPECT_NEAR(at(merged, b, r, i, d), want[d], 1e-5)
              << "batch " << b << " block " << r << " row " << i << " (position " << position << ") dim " << d;
        }
        // The steps' log-sum-exps merge to the whole row's: lse = log sum exp(scores).
        EXPECT_NEAR(at(merged, b, r, i, kHeadDim), most + std::log(sum), 1e-4)
            << "batch " << b << " block " << r << " row " << i;
      }
    }
  }
}

TEST(RingAttentionKernelTest, EveryStepMergedEqualsCausalAttentionOnEveryBlockSplit) {
  for (int64_t blocks : {2, 3, 4}) {
    for (bool zigzag : {false, true}) ExpectRingEqualsCausalAttention(blocks, zigzag, /*block_length=*/4);
  }
}

// Blocks longer than a tile: the kernel cuts each query chunk into tiles of
// kRingRowsPerTile rows (its bounded workspace), contiguous into 5 tiles per leading index
// (the last partial), zig-zag chunks of 67 rows into 64 + 3. A tile's rows at the wrong
// positions (the causal triangle shifted) or a tile skipped changes the result.
TEST(RingAttentionKernelTest, BlocksLongerThanATileEqualCausalAttention) {
  const int64_t block_length = 2 * kRingRowsPerTile + 6;
  for (int64_t blocks : {2, 3}) {
    for (bool zigzag : {false, true}) ExpectRingEqualsCausalAttention(blocks, zigzag, block_length);
  }
}

// The kernel computes in the workspace its context gives (the plan's workspace block),
// exactly RingAttentionWorkspaceFloats of it: it writes inside those floats and not past
// them, and a context with less is refused naming the bytes, since a kernel that fell
// back to its own allocation would use memory the plan does not count.
TEST(RingAttentionKernelTest, ComputesInTheGivenWorkspaceAndRefusesLess) {
  const int64_t blocks = 2, block_length = 2 * kRingRowsPerTile;
  const Shape q_shape{1, blocks, kGroup * block_length, kHeadDim}, kv_shape{1, blocks, block_length, kHeadDim};
  const Dense q = Values(q_shape, 1), k = Values(kv_shape, 2), v = Values(kv_shape, 3);
  for (bool grad : {false, true}) {
    SCOPED_TRACE(grad ? "ring_attention_grad" : "ring_attention");
    const AttrMap attrs = {{"axis", int64_t{1}}, {"step", int64_t{0}}, {"scale", kScale}, {"zigzag", true}, {"wrt", int64_t{1}}};
    absl::StatusOr<std::vector<Dense>> forward = RunCpuKernel("ring_attention", {q, k, v}, attrs);
    ASSERT_TRUE(forward.ok()) << forward.status();
    std::vector<std::vector<float>> values;
    const Dense& out0 = forward->at(0);
    for (const Dense* dense : {&q, &k, &v, &out0, &out0}) {
      values.emplace_back(dense->values.begin(), dense->values.end());
    }
    KernelContext context;
    context.attrs = &attrs;
    const int inputs = grad ? 5 : 3;
    for (int i = 0; i < inputs; ++i) {
      const Shape& shape = i < 3 ? (i == 0 ? q_shape : kv_shape) : forward->at(0).shape;
      context.inputs.push_back({values[i].data(), DType::kF32, shape, {shape, TensorSlice::Whole(shape)}});
    }
    const Shape out_shape = grad ? kv_shape : forward->at(0).shape;
    std::vector<float> out(static_cast<size_t>(out_shape.NumElements()));
    context.outputs.push_back({out.data(), DType::kF32, out_shape, {out_shape, TensorSlice::Whole(out_shape)}});
    // Zig-zag chunks of 64 positions: tiles of 64 rows against a block of 128 keys.
    const int64_t floats = RingAttentionWorkspaceFloats(kGroup * block_length, block_length, kHeadDim, true, grad);
    EXPECT_EQ(floats, grad ? 2 * 64 * 128 + 64 * kHeadDim : 64 * 128 + 64 * kHeadDim);
    constexpr float kUnwritten = -12345.0f;
    std::vector<float> workspace(static_cast<size_t>(floats + 16), kUnwritten);
    context.workspace = workspace.data();
    context.workspace_bytes = floats * 4;
    const KernelFunction kernel = *FindCpuKernel(grad ? "ring_attention_grad" : "ring_attention");
    ASSERT_TRUE(kernel(context).ok());
    // The scores of a tile fill the front; the products' scratch ends at the last float.
    EXPECT_NE(workspace[0], kUnwritten);
    EXPECT_NE(workspace[floats - 1], kUnwritten);
    for (int64_t i = floats; i < floats + 16; ++i) EXPECT_EQ(workspace[i], kUnwritten) << "float " << i;
    // The same result as through RunCpuKernel's declared workspace.
    std::vector<Dense> inputs_dense = {q, k, v};
    if (grad) inputs_dense.insert(inputs_dense.end(), {forward->at(0), forward->at(0)});
    absl::StatusOr<std::vector<Dense>> want = RunCpuKernel(grad ? "ring_attention_grad" : "ring_attention", inputs_dense, attrs);
    ASSERT_TRUE(want.ok()) << want.status();
    for (size_t i = 0; i < out.size(); ++i) ASSERT_EQ(out[i], static_cast<float>(want->at(0).values[i])) << i;

    context.workspace_bytes = floats * 4 - 4;
    const absl::Status refused = kernel(context);
    EXPECT_EQ(refused.code(), absl::StatusCode::kInvalidArgument);
    EXPECT_NE(refused.message().find(absl::StrCat("needs ", floats * 4, " bytes of workspace")), std::string::npos)
        << refused;
    EXPECT_NE(refused.message().find(absl::StrCat("the context gives ", floats * 4 - 4)), std::string::npos) << refused;
  }
}

}  // namespace
}  // namespace oneflow
